"""Rich results between toolcycle and pydantic-ai, both ways.

pydantic-ai sends the ``return_value`` of its ``ToolReturn`` to the model in the tool's
result, and a list there may hold its multimodal items (``BinaryContent`` and the
like), which each model class places where its provider takes them. So the parts of a
toolcycle result go there, in order; the value and the metadata of the result, which
the model never sees, go to ``ToolReturn.metadata``, which pydantic-ai keeps for the
application on the ``ToolReturnPart``.

The other way, a pydantic-ai tool's ``ToolReturn`` with ``content`` or ``metadata``
becomes a toolcycle `ToolReturn`. The model saw the return value and then the content,
so the parts are the value as text followed by the content's items; the value is also
the output the host gets, and the metadata stays the host's alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import BinaryContent, CachePoint, FileUrl, TextContent, UploadedFile
from pydantic_ai.messages import ToolReturn as PydanticAiToolReturn
from pydantic_core import to_json, to_jsonable_python

from toolcycle import Audio, File, Image, ResourceLink, Text, ToolReturn
from toolcycle.adapters._links import link_line

if TYPE_CHECKING:
    from toolcycle import ContentPart, ToolResult

__all__ = ["from_tool_return", "tool_return"]


def tool_return(result: ToolResult) -> PydanticAiToolReturn[Any]:
    """A successful result that has content, as a pydantic-ai ``ToolReturn``."""
    return PydanticAiToolReturn(
        return_value=[_item(part) for part in result.content],
        metadata={"output": result.output, "metadata": result.metadata},
    )


def _item(part: ContentPart) -> Any:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ResourceLink):
        return link_line(part)
    # An image, a recording or a file: raw bytes, which pydantic-ai encodes itself.
    name = part.name if isinstance(part, File) else None
    return BinaryContent.narrow_type(
        BinaryContent(part.data, media_type=part.mime_type, identifier=name)
    )


def from_tool_return(answer: PydanticAiToolReturn[Any]) -> Any:
    """A pydantic-ai tool's ``ToolReturn`` as what a toolcycle tool returns.

    Without content or metadata, its value as JSON, as a plain return. Otherwise a
    toolcycle `ToolReturn`: the value, the parts the model sees (the value as text,
    then each item of the content), and metadata that is not a mapping kept under
    the key ``"metadata"``.
    """
    value = to_jsonable_python(answer.return_value)
    if answer.content is None and answer.metadata is None:
        return value
    items = [answer.content] if isinstance(answer.content, str) else answer.content or []
    parts: list[ContentPart] = []
    if answer.return_value is not None:
        parts.append(Text(_text(answer.return_value)))
    parts.extend(part for item in items if (part := _part(item)) is not None)
    metadata = answer.metadata
    if metadata is not None and not isinstance(metadata, Mapping):
        metadata = {"metadata": to_jsonable_python(metadata)}
    return ToolReturn(value, parts, metadata)


def _text(value: Any) -> str:
    """The value as pydantic-ai's tool result shows it to the model: a string as it is."""
    return value if isinstance(value, str) else to_json(value).decode()


def _part(item: Any) -> ContentPart | None:
    """One item of pydantic-ai content as a part; None for a cache point, which has none."""
    if isinstance(item, str):
        return Text(item)
    if isinstance(item, TextContent):  # StructuredContent too: its rendered text
        return Text(item.content)
    if isinstance(item, BinaryContent):
        kind = item.media_type
        if kind.startswith("image/"):
            return Image(item.data, kind)
        if kind.startswith("audio/"):
            return Audio(item.data, kind)
        return File(item.data, kind, name=item.identifier)
    if isinstance(item, FileUrl):
        try:
            return ResourceLink(item.url, mime_type=item.media_type)
        except ValueError:  # no media type given, and none to infer from the URL
            return ResourceLink(item.url)
    if isinstance(item, CachePoint):
        return None
    # No part holds a provider's file id (or a kind newer than this adapter): a line
    # that names it, so the model still knows it was there.
    if isinstance(item, UploadedFile):
        what = f"uploaded file {item.file_id} ({item.media_type})"
    else:
        what = f"{type(item).__name__} item"
    return Text(f"[{what} not shown: toolcycle has no content part for it]")
