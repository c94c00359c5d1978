"""The YAML subset a ``SKILL.md`` front matter is written in, and `FrontMatterError`.

The YAML is read the way the reference library reads it (StrictYAML): every
scalar is a string (``yes``, ``1.0`` and ``null`` stay text), and flow
collections (``{...}``, ``[...]``), tags, anchors, aliases, duplicate keys and
sibling mappings at different indentations are refused. PyYAML's base loader
(libyaml's C parser when present) does the parsing; this module walks its events
and applies those refusals, which costs a fraction of StrictYAML's time. It knows
nothing of files: `toolcycle.sources.skills._frontmatter` finds the YAML in a
``SKILL.md`` and hands it here, and both raise `FrontMatterError`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["MAX_NESTING", "FrontMatterError", "parse_yaml"]

_Loader: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
# How deep lists and mappings may nest inside the front matter's mapping. Far
# beyond any real skill; it keeps `_node`'s recursion well inside Python's limit.
MAX_NESTING = 64


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
