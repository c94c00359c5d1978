"""Reading a ``SKILL.md``: the YAML front matter without the body, and the body later.

Discovery must stay fast for folders of large skills, so `read_front_matter`
reads the file in chunks and stops at the line that closes the front matter;
the Markdown body is read only when a skill is activated (`read_body`).

The YAML is read the way the reference library reads it (StrictYAML): every
scalar is a string (``yes``, ``1.0`` and ``null`` stay text), and flow
collections (``{...}``, ``[...]``), tags, anchors, aliases, duplicate keys and
sibling mappings at different indentations are refused. PyYAML's base loader
(libyaml's C parser when present) does the parsing; this module walks its events
and applies those refusals, which costs a fraction of StrictYAML's time.
"""

from __future__ import annotations

import bisect
import codecs
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from toolcycle.sources.skills._files import open_regular, read_capped

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

__all__ = ["MAX_NESTING", "FrontMatterError", "read_body", "read_front_matter", "skill_file"]

_Loader: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
_CHUNK = 8192
# The hint when the SKILL.md read at discovery can no longer be read at activation.
_CHANGED = (
    "it changed since the skill was registered; put it back, or register the skill's source again"
)
# How deep lists and mappings may nest inside the front matter's mapping. Far
# beyond any real skill; it keeps `_node`'s recursion well inside Python's limit.
MAX_NESTING = 64
_BOMS = {
    codecs.BOM_UTF8: "UTF-8 with a byte-order mark",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}
# The front matter opens with a line "---" and closes at the next such line;
# trailing blanks are allowed, except a tab on the opening line, which StrictYAML
# (handed the rest of that line by the reference library) refuses.
_OPENING = re.compile(rb"--- *(?:\n|\Z)")
_CLOSING = re.compile(rb"^---[ \t]*(?:\n|\Z)", re.MULTILINE)


class FrontMatterError(Exception):
    """A ``SKILL.md`` whose front matter cannot be read.

    Attributes:
        rule: the short name of what is wrong, for reports and tests.
        hint: what to change.
    """

    def __init__(self, rule: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.hint = hint


def skill_file(folder: Path) -> Path | None:
    """The skill's ``SKILL.md``, or its lowercase ``skill.md``; None if it has neither.

    The first name that exists wins even if it is not a file (a folder
    ``SKILL.md`` hides a file ``skill.md``), as in the reference library.
    """
    for name in ("SKILL.md", "skill.md"):
        candidate = folder / name
        if candidate.exists():
            return candidate
    return None


def read_front_matter(file: Path, *, max_bytes: int) -> dict[str, Any]:
    """Parse the front matter of ``file``, reading no further than its closing line.

    Args:
        file: the ``SKILL.md``.
        max_bytes: how far to read looking for the closing line before giving up.

    Returns:
        The YAML mapping: string keys; strings, lists and mappings as values.

    Raises:
        FrontMatterError: the file is not a regular file or not UTF-8, has no
            front matter, or its YAML is invalid, refused (see the module
            docstring) or not a mapping.
        OSError: the file cannot be read.
    """
    # The search runs on bytes: "---" and newlines are ASCII, which UTF-8 never
    # uses inside a multi-byte character, so only the front matter is decoded.
    data = b""
    held_cr = False  # a "\r" at a chunk's end may be half of "\r\n"
    opened = open_regular(file)
    if opened is None:
        raise FrontMatterError(
            "file-missing",
            f"{file.name} is not a regular file",
            f"make {file.name} a file holding the front matter and instructions",
        )
    with opened as stream:
        while True:
            chunk = stream.read(_CHUNK)
            if not data and not held_cr:
                _check_bom(chunk)
            at_eof = not chunk
            if held_cr:
                chunk = b"\r" + chunk
            held_cr = chunk.endswith(b"\r") and not at_eof
            if held_cr:
                chunk = chunk[:-1]
            data += _unix_newlines(chunk)
            found = _split(data, at_eof=at_eof)
            # Where the front matter ends, or how far the search has read: a chunk may
            # carry a closing line from past the limit, and that line counts as missing.
            if (len(data) if found is None else found[3]) > max_bytes:
                raise _too_large(max_bytes)
            if found is not None:
                return parse_yaml(_decode(found[0], offset=found[2]))
            if at_eof:
                raise _unclosed()


def read_body(file: Path, *, max_bytes: int) -> str:
    """The Markdown after the front matter, with Unix newlines and without surrounding blanks.

    Args:
        file: the real path of the ``SKILL.md``.
        max_bytes: the largest ``SKILL.md`` to read (`SkillLimits.max_file_bytes`).

    Raises:
        FrontMatterError: the file is no longer UTF-8 or has lost its front matter.
        SkillFileError: the file is missing, not a regular file, unreadable or
            larger than ``max_bytes``.
    """
    data = read_capped(file, file.name, max_bytes=max_bytes, limit="max_file_bytes", hint=_CHANGED)
    _check_bom(data)
    data = _unix_newlines(data)
    found = _split(data, at_eof=True)
    if found is None:
        raise _unclosed()
    return _without_blank_lines_around(_decode(found[1], offset=found[3]))


def _without_blank_lines_around(text: str) -> str:
    """``text`` without its leading and trailing blank lines.

    The first line keeps its indentation: in Markdown it may make a code block.
    """
    content = text.lstrip()
    if not content:
        return ""
    start = text.rfind("\n", 0, len(text) - len(content)) + 1
    return text[start:].rstrip()


def _decode(data: bytes, *, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(offset + exc.start) from None


def _split(data: bytes, *, at_eof: bool) -> tuple[bytes, bytes, int, int] | None:
    """(YAML, body, start of YAML, start of body) once ``data`` holds the front matter.

    Returns None while more of the file is needed to tell.

    Raises:
        FrontMatterError: the data does not open with a line ``---``.
    """
    if not data.startswith(b"---") and (at_eof or len(data) >= 3):
        raise FrontMatterError(
            "frontmatter-missing",
            "SKILL.md does not start with a line '---' opening its YAML front matter",
            "put the fields between a line '---' at the very top and a second line '---'",
        )
    opening = _OPENING.match(data)
    if opening is None:
        if b"\n" in data or at_eof:
            raise FrontMatterError(
                "frontmatter-missing",
                "the first line of SKILL.md must be '---' alone",
                "put the fields on the lines after the opening '---', not on it",
            )
        return None
    closing = _CLOSING.search(data, opening.end())
    if closing is None or (closing.end() == len(data) and not at_eof and data[-1:] != b"\n"):
        # A "---" at the very end of what was read so far may yet become "----".
        return None
    start, end = opening.end(), closing.end()
    return data[start : closing.start()], data[end:], start, end


def _unix_newlines(data: bytes) -> bytes:
    # Universal newlines, as Python's text mode reads the file for the reference library.
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _check_bom(head: bytes) -> None:
    for bom, what in _BOMS.items():
        if head.startswith(bom):
            raise FrontMatterError(
                "encoding",
                f"SKILL.md is saved as {what}, so it does not start with '---'",
                "save it as UTF-8 without a byte-order mark",
            )


def _not_utf8(offset: int) -> FrontMatterError:
    return FrontMatterError(
        "encoding",
        f"SKILL.md is not valid UTF-8 (at byte {offset})",
        "save it as UTF-8",
    )


def _too_large(max_bytes: int) -> FrontMatterError:
    return FrontMatterError(
        "frontmatter-too-large",
        f"no line '---' closes the front matter within its first {max_bytes} bytes",
        "close the front matter with a line '---' after the last field, or raise "
        "SkillLimits(max_front_matter_bytes=...) to allow a longer one",
    )


def _unclosed() -> FrontMatterError:
    return FrontMatterError(
        "frontmatter-unclosed",
        "no line '---' closes the YAML front matter",
        "add a line '---' after the last field, before the instructions",
    )


def parse_yaml(source: str) -> dict[str, Any]:
    """Parse front-matter YAML into a mapping of strings, lists and mappings.

    Raises:
        FrontMatterError: invalid or refused YAML, or a document that is not a mapping.
    """
    padded = "\n" + source
    bom = padded.find("\n\ufeff")
    if bom >= 0:  # libyaml skips a byte-order mark that starts a line; StrictYAML reads it
        raise _yaml_error(
            "a line starts with a byte-order mark (U+FEFF)", _Mark(padded.count("\n", 0, bom), 0)
        )
    try:
        events = list(yaml.parse(source, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        problem = exc.problem or exc.context or "invalid YAML"
        raise _yaml_error(problem, exc.problem_mark) from None
    except yaml.YAMLError as exc:  # the reader's refusal of a control character
        problem = str(exc).splitlines()[0]
        raise _yaml_error(problem, None) from None
    if "\t" in source:
        _check_tabs(source, events)
    return _document(iter(events))


def _document(events: Iterator[Any]) -> dict[str, Any]:
    try:
        next(events)  # StreamStartEvent
        event = next(events)
        if isinstance(event, yaml.StreamEndEvent):
            raise _not_mapping("nothing")
        value = _node(next(events), events)
        next(events)  # DocumentEndEvent
        if not isinstance(next(events), yaml.StreamEndEvent):
            raise _yaml_error("the front matter holds more than one YAML document", None)
    except StopIteration:  # pragma: no cover - libyaml always ends a stream it parsed
        raise _yaml_error("the YAML ends early", None) from None
    if not isinstance(value, dict):
        raise _not_mapping("a list" if isinstance(value, list) else "a single value")
    return value


@dataclass(frozen=True, slots=True)
class _Mark:
    line: int
    column: int


def _check_tabs(source: str, events: list[Any]) -> None:
    """Refuse tabs where StrictYAML does: anywhere but quoted text, block text and comments.

    Each line is searched for its comment once, however many tabs it holds, so
    that a long line of tabs costs its length, not its length squared.

    Raises:
        FrontMatterError: naming the line and column of the first such tab.
    """
    scalars = [
        (_index(event.start_mark), _index(event.end_mark), event.style in {"'", '"', "|", ">"})
        for event in events
        if isinstance(event, yaml.ScalarEvent)
    ]
    starts = [start for start, _, _ in scalars]

    def scalar_at(index: int) -> tuple[int, int, bool] | None:
        found = bisect.bisect_right(starts, index) - 1
        return scalars[found] if found >= 0 and index < scalars[found][1] else None

    line_start, comment = 0, _comment_start(source, 0, scalar_at)
    seen = 0  # the text up to here has been searched for line ends
    for match in re.finditer("\t", source):
        at = match.start()
        newline = source.rfind("\n", seen, at)
        seen = at
        if newline >= 0:  # a later line than the last tab's
            line_start = newline + 1
            comment = _comment_start(source, line_start, scalar_at)
        inside = scalar_at(at)
        if (inside is not None and inside[2]) or comment < at:
            continue
        line = source.count("\n", 0, at)
        raise _yaml_error(
            "a tab outside quoted text, block text or a comment", _Mark(line, at - line_start)
        )


def _comment_start(
    source: str, start: int, scalar_at: Callable[[int], tuple[int, int, bool] | None]
) -> int:
    """Where a comment opens on the line from ``start`` (a "#" after a space, or first).

    The line's end when none does.
    """
    end = source.find("\n", start)
    end = len(source) if end < 0 else end
    index = source.find("#", start, end)
    while index >= 0:
        opens = index == start or source[index - 1] == " "
        if opens and scalar_at(index) is None:
            return index
        index = source.find("#", index + 1, end)
    return end


def _index(mark: Any) -> int:
    return int(getattr(mark, "index", 0))


def _node(event: Any, events: Iterator[Any], depth: int = 0) -> Any:
    """Build the value that starts with ``event``, applying StrictYAML's refusals.

    ``depth`` counts the lists and mappings around it, not the document's own.
    """
    if isinstance(event, yaml.AliasEvent):
        raise _refused("an alias", event, "write the value out again")
    if event.anchor is not None:
        raise _refused("an anchor", event, "remove '&" + event.anchor + "'")
    if event.tag is not None:
        raise _refused("a tag", event, f"remove {event.tag!r}; every value is read as text")
    if isinstance(event, yaml.ScalarEvent):
        return event.value
    if event.flow_style:
        raise _refused(
            "a flow collection ({...} or [...])",
            event,
            "use block style (one '- item' or 'key: value' per line), or quote the text",
        )
    if depth > MAX_NESTING:
        raise _refused(
            f"lists and mappings nested more than {MAX_NESTING} levels deep",
            event,
            "flatten the value, or write the deeper part as quoted text",
        )
    if isinstance(event, yaml.SequenceStartEvent):
        items = []
        while not isinstance(item := next(events), yaml.SequenceEndEvent):
            items.append(_node(item, events, depth + 1))
        return items
    mapping: dict[str, Any] = {}
    nested_column: int | None = None
    while not isinstance(key_event := next(events), yaml.MappingEndEvent):
        key = _node(key_event, events, depth + 1)
        if not isinstance(key, str):
            raise _refused("a key that is not text", key_event, "use a plain text key")
        if key in mapping:
            raise _yaml_error(f"the key {key!r} appears twice", key_event.start_mark)
        value_event = next(events)
        if isinstance(value_event, yaml.MappingStartEvent) and not value_event.flow_style:
            # StrictYAML wants every mapping-valued key of one mapping indented alike.
            column = getattr(value_event.start_mark, "column", 0)
            if nested_column is not None and column != nested_column:
                raise _yaml_error(
                    "a nested mapping is indented differently from the one before it",
                    value_event.start_mark,
                )
            nested_column = column
        mapping[key] = _node(value_event, events, depth + 1)
    return mapping


def _refused(what: str, event: Any, hint: str) -> FrontMatterError:
    return FrontMatterError(
        "yaml-refused",
        f"the front matter uses {what}{_where(event.start_mark)}, which skills do not allow",
        hint,
    )


def _yaml_error(problem: str, mark: Any) -> FrontMatterError:
    return FrontMatterError(
        "yaml-syntax",
        f"the front matter is not valid YAML{_where(mark)}: {problem}",
        "fix the YAML between the two '---' lines; quote values that contain ': ' or '#'",
    )


def _not_mapping(what: str) -> FrontMatterError:
    return FrontMatterError(
        "yaml-not-mapping",
        f"the front matter is {what}, not a mapping of fields",
        "write one 'field: value' per line, starting with name and description",
    )


def _where(mark: Any) -> str:
    # Line 1 of the YAML is line 2 of SKILL.md, after the opening '---'.
    return "" if mark is None else f" (line {mark.line + 2}, column {mark.column + 1})"
