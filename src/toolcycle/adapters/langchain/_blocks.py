"""Content parts as the content blocks of a LangChain ``ToolMessage`` (langchain-core 1.x).

A ``ToolMessage`` takes a list of standard content blocks, which each chat model
integration turns into its provider's form: text, and base64 images, audio and files
with their MIME type. Two parts have no block a tool message may hold (LangChain's
``TOOL_MESSAGE_BLOCK_TYPES``; LangGraph's ``ToolNode`` turns a list holding any other
block into JSON text): a resource link (a link is not content) and a recording. Each
is a text block naming it.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from toolcycle import Audio, File, ResourceLink, Text
from toolcycle.adapters._links import audio_line, link_line

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolcycle import ContentPart

__all__ = ["content_blocks"]


def content_blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    """``parts`` as LangChain's standard content blocks, in order."""
    return [_block(part) for part in parts]


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ResourceLink):
        return {"type": "text", "text": link_line(part)}
    if isinstance(part, Audio):
        return {"type": "text", "text": audio_line(part, "a LangChain tool message")}
    block: dict[str, Any] = {
        "type": part.type,
        "base64": base64.b64encode(part.data).decode("ascii"),
        "mime_type": part.mime_type,
    }
    if isinstance(part, File) and part.name:
        block["extras"] = {"filename": part.name}
    return block
