"""A toolcycle result with content parts as the return pydantic-ai expects of a tool.

pydantic-ai sends the ``return_value`` of its ``ToolReturn`` to the model in the tool's
result, and a list there may hold its multimodal items (``BinaryContent`` and the
like), which each model class places where its provider takes them. So the parts go
there, in order; the value and the metadata of the toolcycle result, which the model
never sees, go to ``ToolReturn.metadata``, which pydantic-ai keeps for the application
on the ``ToolReturnPart``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import BinaryContent, ToolReturn

from toolcycle import File, ResourceLink, Text
from toolcycle.adapters._links import link_line

if TYPE_CHECKING:
    from toolcycle import ContentPart, ToolResult

__all__ = ["tool_return"]


def tool_return(result: ToolResult) -> ToolReturn[Any]:
    """A successful result that has content, as a pydantic-ai ``ToolReturn``."""
    return ToolReturn(
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
