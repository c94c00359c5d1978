"""Read a function's docstring: its summary and the text for each parameter.

Three styles are understood, because all three are common in the wild:

- Google: an ``Args:`` (or ``Arguments:``, ``Parameters:``) section with
  ``name (type): text`` entries, continuation lines indented further;
- NumPy: a ``Parameters`` heading underlined with dashes, ``name : type`` lines
  (or ``x, y : type`` for several) followed by indented text;
- Sphinx: ``:param name: text`` (or ``:param type name: text``) fields.

The summary is the first paragraph, cut short only by a section heading the
styles know (``Returns:``, ``Raises:``, a NumPy underlined heading, a Sphinx
field): a first line ending in a colon, such as "one of these:", is prose.
Anything the parser does not recognise is ignored rather than guessed at.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["Docstring", "parse_docstring"]

_GOOGLE_HEADERS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
# One name, or several sharing a description ("x, y : float"); a name may be starred.
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_SPHINX_FIELD = re.compile(r"^:\w+(?:\s[^:]*)?:(?:\s|$)")
# The Google (napoleon) section names; NumPy's are told by their underline.
_SECTION_NAMES = _GOOGLE_HEADERS | {
    "attention", "attributes", "caution", "danger", "error", "example", "examples",
    "hint", "important", "methods", "note", "notes", "other parameters", "raise",
    "raises", "receive", "receives", "references", "return", "returns", "see also",
    "tip", "todo", "warn", "warning", "warnings", "warns", "yield", "yields",
}  # fmt: skip


class Docstring:
    """A parsed docstring."""

    __slots__ = ("params", "summary")

    def __init__(self, summary: str, params: dict[str, str]) -> None:
        self.summary = summary
        self.params = params


def parse_docstring(doc: str | None) -> Docstring:
    """Parse ``doc`` (already a function's ``__doc__``, or None)."""
    if not doc:
        return Docstring("", {})
    lines = _cleaned(doc)
    summary_lines: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _is_section_start(lines, index):
            break
        summary_lines.append(line.strip())
    params = _google(lines) or _numpy(lines) or _sphinx(lines)
    return Docstring(" ".join(summary_lines), params)


def _cleaned(doc: str) -> list[str]:
    """``doc``'s lines, dedented, with a heading on the opening line kept above its entries.

    ``inspect.cleandoc`` strips the first line and dedents the others by their own
    margin, so a docstring that opens with ``Args:`` and holds nothing else leaves
    the heading level with its entries, which would then read as headings too.
    """
    lines = inspect.cleandoc(doc).splitlines()
    header = _SECTION.match(lines[0].strip()) if lines else None
    if header is not None and header.group(1).lower() in _SECTION_NAMES:
        following = next((line for line in lines[1:] if line.strip()), "")
        if following and not following[0].isspace():
            return [lines[0], *(f"    {line}" if line.strip() else line for line in lines[1:])]
    return lines


def _is_section_start(lines: list[str], index: int) -> bool:
    stripped = lines[index].strip()
    header = _SECTION.match(stripped)
    if header is not None and header.group(1).lower() in _SECTION_NAMES:
        return True
    if _SPHINX_FIELD.match(stripped):
        return True
    return index + 1 < len(lines) and _is_underline(lines[index + 1])


def _join(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _google(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    section_indent: int | None = None  # set while inside an Args-like section
    entry_indent = 0
    current: str | None = None
    buffer: list[str] = []

    def flush() -> None:
        nonlocal current, buffer
        if current is not None:
            params[current] = _join(buffer)
        current, buffer = None, []

    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if section_indent is None or indent <= section_indent:
            flush()
            header = _SECTION.match(stripped)
            is_args = header is not None and header.group(1).lower() in _GOOGLE_HEADERS
            section_indent = indent if is_args else None
            continue
        entry = _GOOGLE_ENTRY.match(stripped)
        if entry and (current is None or indent <= entry_indent):
            flush()
            current, buffer, entry_indent = entry.group(1).lstrip("*"), [entry.group(3)], indent
        elif current is not None:
            buffer.append(stripped)
    flush()
    return params


def _is_underline(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {"-"}


def _numpy(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    starts = [
        i + 2
        for i in range(len(lines) - 1)
        if lines[i].strip().lower() in {"parameters", "other parameters"}
        and _is_underline(lines[i + 1])
    ]
    for start in starts:
        current: str | None = None
        buffer: list[str] = []
        body = lines[start:]
        for index, line in enumerate(body):
            if not line.strip():
                continue
            if line.startswith((" ", "\t")):
                if current is not None:
                    buffer.append(line)
                continue
            if index + 1 < len(body) and _is_underline(body[index + 1]):
                break  # the next section's heading
            entry = _NUMPY_ENTRY.match(line.strip())
            if entry is None:
                break
            _numpy_entry(params, current, buffer)
            current, buffer = entry.group(1), []
        _numpy_entry(params, current, buffer)
    return params


def _numpy_entry(params: dict[str, str], names: str | None, buffer: list[str]) -> None:
    """Give each name of a NumPy entry (``"b, c"`` names two) the entry's text."""
    if names is not None:
        text = _join(buffer)
        for name in names.split(","):
            params[name.strip().lstrip("*")] = text


def _sphinx(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    current: str | None = None
    buffer: list[str] = []
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_PARAM.match(stripped)
        if match:
            if current is not None:
                params[current] = _join(buffer)
            current, buffer = match.group(1), [match.group(2)]
        elif stripped.startswith(":"):
            if current is not None:
                params[current] = _join(buffer)
            current, buffer = None, []
        elif current is not None and stripped:
            buffer.append(stripped)
    if current is not None:
        params[current] = _join(buffer)
    return params
