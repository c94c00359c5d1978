"""A tool's rich return, read apart into output, content and metadata, then capped.

The output goes on through normalisation and the output schema like any other;
the content parts are redacted (text parts lose the call's argument secrets)
and counted against ``max_result_bytes`` together with the output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.content import PART_TYPES, Text, ToolReturn, part_size, parts_of
from toolcycle.errors import ToolOutputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.content import ContentPart

__all__ = ["RICH_TYPES", "Rich", "cap_parts", "read_rich"]

RICH_TYPES: frozenset[type] = PART_TYPES | {ToolReturn}
"""The return types, checked by exact type, that carry content."""


class Rich:
    """A rich return read apart: the output (``value``), the parts and the metadata."""

    __slots__ = ("has_value", "metadata", "parts", "value")

    def __init__(
        self,
        value: Any,
        parts: tuple[ContentPart, ...],
        metadata: dict[str, Any] | None,
        has_value: bool,
    ) -> None:
        self.value = value
        self.parts = parts
        self.metadata = metadata
        self.has_value = has_value


def read_rich(output: Any, tool_name: str, plan_id: str) -> Rich:
    """Split a part, a list of parts or a `ToolReturn` into its output and the rest.

    Raises:
        ToolOutputError: a list mixes content parts with other values.
    """
    if type(output) is ToolReturn:
        metadata = dict(output.metadata) if output.metadata else None
        return Rich(output.value, output.content, metadata, True)
    try:
        parts = parts_of(output, "the returned list")
    except TypeError as exc:
        raise ToolOutputError(
            f"tool {tool_name!r} returned {exc}", tool_name=tool_name, plan_id=plan_id
        ) from None
    return Rich(None, parts, None, False)


def cap_parts(
    parts: tuple[ContentPart, ...],
    budget: int | None,
    limit: int | None,
    scrub: Callable[[str], str] | None,
) -> tuple[tuple[ContentPart, ...], int, bool]:
    """Redact text parts and keep what fits ``budget``; the parts, their bytes, and if cut.

    Parts are kept in order while they fit. The first that does not is cut
    (a text part, to the bytes left) or left out (any other kind), and so is
    every part after it; a last text part says what was left out, so the
    model knows. The marker's own bytes count against the budget: when the
    budget has no room for it, a shorter one ends the content, or none does.
    """
    # One pass redacts and sums: what every call with content does. A text part
    # whose text comes back the same object had nothing to hide and is kept.
    total = 0
    redacted: list[ContentPart] | None = None
    for index, part in enumerate(parts):
        if type(part) is Text and scrub is not None:
            text = scrub(part.text)
            if text is not part.text:
                if redacted is None:
                    redacted = list(parts)
                part = redacted[index] = Text(text)
        total += part_size(part)
    if redacted is not None:
        parts = tuple(redacted)
    if budget is None or total <= budget:
        return parts, total, False
    # The marker's bytes are kept free: its longest form (every part counted), or the
    # short one when that does not fit, or none when not even that does, so that the
    # output and the content together never pass the limit.
    longest = part_size(_marker(total, limit, len(parts)))
    full = longest <= budget
    reserve = longest if full else _SHORT_SIZE if _SHORT_SIZE <= budget else 0
    kept: list[ContentPart] = []
    used = 0
    for part in parts:
        size = part_size(part)
        if used + size + reserve <= budget:
            kept.append(part)
            used += size
            continue
        whole = len(kept)
        room = budget - used - reserve
        if type(part) is Text and room > 0:
            piece = part.text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
            kept.append(Text(piece))
            used += part_size(kept[-1])
        break
    else:  # pragma: no cover - the parts are over the budget, so one of them does not fit
        whole = len(kept)
    if reserve:
        marker = _marker(total, limit, len(parts) - whole) if full else _SHORT
        kept.append(marker)
        used += part_size(marker)
    return tuple(kept), used, True


def _marker(total: int, limit: int | None, left_out: int) -> Text:
    """The text part that ends cut content, saying what was cut."""
    return Text(
        f"[cut: the content was {total} bytes, over the limit of {limit}; "
        f"{left_out} part(s) cut or left out]"
    )


# The marker when the limit leaves no room for the one that says more.
_SHORT = Text("[content cut]")
_SHORT_SIZE = part_size(_SHORT)
