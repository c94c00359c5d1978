"""A call's arguments or result as a span attribute: compact JSON, bounded, valid Unicode.

Payloads are data from the call, so writing one must never fail the span: a
value that cannot be written (nested deeper than the encoder goes, an integer
too long to convert, an object whose ``__str__`` raises) leaves a short note in
its place. A lone surrogate is written as its JSON escape, so the text is valid
Unicode for every exporter, and text past the limit is cut with a marker.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

__all__ = ["capped", "payload_text"]

_log = logging.getLogger("toolcycle.otel")
_SURROGATE = re.compile("[\ud800-\udfff]")


def payload_text(value: Any, limit: int, what: str) -> str:
    """``value`` as compact JSON text of at most ``limit`` characters; ``what`` names it in logs."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except Exception as exc:  # the payload is data from the call, the span must survive it
        _log.debug("could not write %s as JSON: %r", what, type(exc))
        return capped(f"[not recorded: {type(exc).__name__}]", limit)
    if not text.isascii():
        text = _SURROGATE.sub(_escaped, text)
    return capped(text, limit)


def _escaped(found: re.Match[str]) -> str:
    """A lone surrogate as the JSON escape that stands for it."""
    return f"\\u{ord(found.group()):04x}"


def capped(text: str, limit: int) -> str:
    """``text`` if it fits ``limit`` characters, else as much of its start as fits with a marker."""
    if len(text) <= limit:
        return text
    marker = f"...[cut: {len(text)} characters, limit {limit}]"
    if len(marker) > limit:  # a limit this small keeps what it can, with the shortest mark
        marker = "..."[:limit]
    return text[: limit - len(marker)] + marker
