r"""Text a model reads, without the control characters a source may have put in it.

A tool's description comes from wherever the tool does (an MCP server, a
docstring, a framework's tool), and may hold C0 and C1 control characters:
terminal escapes (``"\x1b[2J"``), NUL, DEL, next line (U+0085). They are no text
a model should read, and a terminal or log showing the prompt would obey them.
`plain_text` strips them; tab and line feed stay, and the other line-breaking
controls (carriage return, vertical tab, form feed, next line) become line
feeds, a CRLF pair one. `plain_schema` does the same to the ``description`` and
``title`` of every schema in an input or output schema, which a model reads too.

Both run where a definition or a search answer is built, never on a tool's call, and
the tool's descriptor keeps its text as written.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["plain_schema", "plain_text"]

# C0 and C1 control characters and DEL, but not tab or line feed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BREAK = re.compile(r"\r\n|[\r\x0b\x0c\x85]")
# Keywords whose string is prose for a reader, not part of what the schema accepts.
_PROSE = frozenset({"description", "title"})
# Keywords whose value is data (never cleaned: a const must still match).
_DATA = frozenset({"const", "default", "enum", "examples"})
# Keywords whose value maps names (which may be any word, "default" too) to schemas.
_NAMED = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"})
_REMEMBERED = 4096
# Each schema walked, by id, with the schema itself (so the id stays its own) and the answer.
_seen: dict[int, tuple[Any, Any]] = {}


def plain_text(value: str) -> str:
    """``value`` without control characters; line-breaking ones become line feeds."""
    if _CONTROL.search(value) is None:  # the usual case: one scan, no copy
        return value
    return _CONTROL.sub("", _BREAK.sub("\n", value))


def plain_schema(schema: Any) -> Any:
    """``schema`` with `plain_text` applied to each ``description`` and ``title`` in it.

    Only the parts that change are copied: a schema without control characters
    is returned as it is, the same object. Values (``const``, ``default``,
    ``enum``, ``examples``) are left alone. A schema too deep for the interpreter's
    stack (deeper than registration allows by default) is returned unchanged.

    Each schema object is walked once: the answer is kept for the next
    definitions (a descriptor's schema does not change after registration; its
    validator was compiled from it then), for the last `_REMEMBERED` schemas.
    """
    key = id(schema)
    known = _seen.get(key)
    if known is not None and known[0] is schema:  # the id of a live object is its own
        return known[1]
    try:
        cleaned = _plain(schema)
    except RecursionError:
        cleaned = schema
    if len(_seen) >= _REMEMBERED:
        _seen.clear()
    _seen[key] = (schema, cleaned)
    return cleaned


def _plain(node: Any) -> Any:
    if isinstance(node, list):
        items = [_plain(item) for item in node]
        return node if all(new is old for new, old in zip(items, node, strict=True)) else items
    if not isinstance(node, dict):
        return node
    changed: dict[str, Any] = {}
    for key, value in node.items():
        new: Any
        if key in _PROSE and isinstance(value, str):
            new = plain_text(value)
        elif key in _DATA:
            continue
        elif key in _NAMED and isinstance(value, dict):
            named = {name: _plain(each) for name, each in value.items()}
            same = all(named[name] is each for name, each in value.items())
            new = value if same else named
        else:
            new = _plain(value)
        if new is not value:
            changed[key] = new
    return {**node, **changed} if changed else node
