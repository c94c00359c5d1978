"""The text line an adapter shows a model for a part its framework has no block for.

A resource link is an address, not content: no framework's tool result carries it as
such, and fetching it is the host's decision, so the model reads it as a line of text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcycle import Audio, ResourceLink

__all__ = ["audio_line", "link_line"]


def link_line(part: ResourceLink) -> str:
    """A resource link as one line: its URI, then whatever else it says about itself."""
    details = [item for item in (part.name, part.mime_type, part.description) if item]
    return f"[resource link: {part.uri}" + (f" ({'; '.join(details)})]" if details else "]")


def audio_line(part: Audio, framework: str) -> str:
    """A recording that ``framework`` cannot put in a tool result, named with its size."""
    return (
        f"[audio of {len(part.data)} bytes, {part.mime_type}, not shown: "
        f"{framework} takes no audio]"
    )
