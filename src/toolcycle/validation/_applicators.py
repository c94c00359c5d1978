"""Which subschemas of a JSON Schema apply to a value and to each of its children.

Redaction walks a value beside its schema and asks, at each step, which schema
objects describe the value there. JSON Schema reaches them through its
applicator keywords; `SchemaReader` follows all of them:

- to the same value: ``$ref``, ``$dynamicRef`` and ``$recursiveRef`` (resolved
  against the nearest ``$id``, by `toolcycle.validation._resources`), ``allOf``,
  ``anyOf``, ``oneOf``, ``if``, ``then``, ``else``, ``dependentSchemas`` and the
  schema form of draft 7's ``dependencies``;
- to the value under a key: ``properties``, ``patternProperties``,
  ``additionalProperties`` and ``unevaluatedProperties`` (and ``propertyNames``
  to the key itself);
- to an item: ``prefixItems``, ``items`` (also the array form of older drafts),
  ``additionalItems``, ``unevaluatedItems`` and ``contains``.

It answers with every schema that *might* apply (a conditional, a branch, a
pattern are not evaluated: running a pattern from a schema could take very
long), which is what redaction wants: a mark on any of them counts. A reference
that leads out of the document (to a pre-loaded schema) cannot be read here: it
stands for `UNREAD`, a schema carrying both marks, so the values under it count
as marked (redaction fails closed). Every walk
keeps its own stack and visits each schema object once, so no depth raises
`RecursionError` and a ``$ref`` cycle ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.validation._resources import Resources

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["UNREAD", "Applied", "SchemaReader"]

UNREAD: dict[str, Any] = {"writeOnly": True, "x-sensitive": True}
"""What a reference this reader cannot follow stands for: a schema that marks its value."""

_MAX_KEPT = 10_000
"""A reader remembers this many combinations of subschemas at most (a bound on memory)."""


class Applied:
    """What the schemas that apply to one value say about it and about its children.

    Built by a `SchemaReader`, which also builds (once) the `Applied` of each child.
    """

    __slots__ = (
        "_later",
        "_named",
        "_other",
        "_reader",
        "clear",
        "declared",
        "every",
        "extra",
        "keys_marked",
        "marked",
        "prefix",
        "rest",
    )

    def __init__(self, reader: SchemaReader) -> None:
        self.marked = False
        """A schema of the value is marked."""
        self.keys_marked = False
        """A ``propertyNames`` schema of the value is marked: its keys are marked too."""
        self.declared: dict[Any, list[Any]] = {}  # properties, by name
        self.every: list[Any] = []  # patternProperties: might apply to any key
        self.extra: list[tuple[Any, Any]] = []  # (properties, schema) for keys not named
        self.prefix: list[list[Any]] = []  # prefixItems (or an items array), by index
        self.rest: list[tuple[int, Any]] = []  # (first index, schema) for the later items
        self._reader = reader
        self._named: dict[Any, Applied] = {}  # the child under each declared key, once built
        self._other: Applied | None = None  # the child under any key not declared
        self._later: list[Applied] = []  # the child at each index, up to the alike ones
        self.clear: set[Any] = set()
        """Declared keys whose plain values the reader's user found nothing to hide under."""

    def declares(self, key: Any) -> bool:
        """Whether some ``properties`` of the value names ``key``."""
        return _has(self.declared, key)

    def under(self, key: Any) -> Applied:
        """What applies to the value under ``key``."""
        if not self.declares(key):
            if self._other is None:  # every key no properties names gets the same
                self._other = self._reader.applied((*self.every, *(s for _, s in self.extra)))
            return self._other
        child = self._named.get(key)
        if child is None:
            found = [*self.declared[key], *self.every]
            found += [sub for named, sub in self.extra if not _has(named, key)]
            child = self._named[key] = self._reader.applied(tuple(found))
        return child

    def along(self, count: int) -> Iterator[Applied]:
        """What applies to each of ``count`` items, in order."""
        later = self._later
        if not later:
            later = []  # built whole, then kept: a walk in another thread may read it
            alike = max([len(self.prefix), *(start for start, _ in self.rest)])
            for index in range(alike + 1):  # from ``alike`` on, every index gets the same
                found = list(self.prefix[index]) if index < len(self.prefix) else []
                found += [sub for start, sub in self.rest if index >= start]
                later.append(self._reader.applied(tuple(found)))
            self._later = later
        last = len(later) - 1
        for index in range(min(count, last)):
            yield later[index]
        for _ in range(last, count):
            yield later[last]


class SchemaReader:
    """Reads one root schema; remembers what it learnt for the next value.

    Args:
        root: the schema that local references resolve in.
        marked: whether one schema object carries the mark being looked for.
    """

    __slots__ = ("_applied", "_marked", "_resources", "_top", "root")

    def __init__(self, root: Any, marked: Callable[[dict[str, Any]], bool]) -> None:
        self.root = root
        self._marked = marked
        self._applied: dict[tuple[int, ...], tuple[Applied, tuple[Any, ...]]] = {}
        self._resources: Resources | None = None  # indexed when a reference is first met
        self._top: Applied | None = None

    def top(self) -> Applied:
        """What applies to the value the root schema describes."""
        top = self._top  # asked for on every call of a tool with a redaction policy
        if top is None:
            top = self._top = self.applied((self.root,))
        return top

    def applied(self, schemas: tuple[Any, ...]) -> Applied:
        """What ``schemas``, with every schema they bring along, say about a value."""
        key = tuple(map(id, schemas))
        known = self._applied.get(key)
        if known is None:
            known = (self._build(schemas), schemas)  # the schemas stay alive with their ids
            if len(self._applied) >= _MAX_KEPT:
                self._applied.clear()  # what a walk still uses, it holds itself
            self._applied[key] = known
        return known[0]

    def _build(self, schemas: tuple[Any, ...]) -> Applied:
        applied = Applied(self)
        for part in self._parts(schemas):
            applied.marked = applied.marked or self._marked(part)
            names = part.get("propertyNames")
            if names is not None and not applied.keys_marked:
                applied.keys_marked = any(map(self._marked, self._parts((names,))))
            properties = part.get("properties")
            if isinstance(properties, dict):
                for name, sub in properties.items():
                    applied.declared.setdefault(name, []).append(sub)
            patterns = part.get("patternProperties")
            if isinstance(patterns, dict):
                applied.every.extend(patterns.values())
            for keyword in ("additionalProperties", "unevaluatedProperties"):
                if keyword in part:
                    applied.extra.append((properties, part[keyword]))
            _arrays(part, applied)
        return applied

    def _parts(self, schemas: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The schema objects that describe one value, each once, whichever way reached."""
        parts: list[dict[str, Any]] = []
        pending, seen = list(schemas), set()
        while pending:
            schema = pending.pop()
            if not isinstance(schema, dict) or id(schema) in seen:
                continue
            seen.add(id(schema))
            parts.append(schema)
            for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
                ref = schema.get(keyword)
                if isinstance(ref, str):
                    pending.extend(self._targets(schema, keyword, ref))
            for keyword in ("allOf", "anyOf", "oneOf"):
                branches = schema.get(keyword)
                if isinstance(branches, list):
                    pending.extend(branches)
            pending.extend(schema.get(keyword) for keyword in ("if", "then", "else"))
            for keyword in ("dependentSchemas", "dependencies"):  # the latter: draft 7
                dependent = schema.get(keyword)
                if isinstance(dependent, dict):
                    pending.extend(dependent.values())  # a list of names is not a dict
        return parts

    def _targets(self, schema: dict[str, Any], keyword: str, ref: str) -> list[Any]:
        """Every schema the reference ``ref`` of ``schema`` might lead to.

        A dynamic reference might lead to any schema with its anchor name (which
        one depends on the path a validation took), a recursive one to any with
        ``$recursiveAnchor``: all of them count.
        """
        resources = self._resources
        if resources is None:
            resources = self._resources = Resources(self.root)
        found = resources.resolve(ref, resources.base(schema))
        targets = [UNREAD] if found is None else list(found)
        if keyword == "$dynamicRef" and "#" in ref:
            targets += resources.dynamic(ref.rsplit("#", 1)[1])
        elif keyword == "$recursiveRef":
            targets += resources.recursive()
        return targets


def _arrays(part: dict[str, Any], applied: Applied) -> None:
    """Add what ``part`` says about the items of an array to ``applied``."""
    prefix = part.get("prefixItems")
    items = part.get("items")
    if not isinstance(prefix, list):
        prefix = items if isinstance(items, list) else []  # the tuple form of old drafts
    for index, sub in enumerate(prefix):
        if index == len(applied.prefix):
            applied.prefix.append([])
        applied.prefix[index].append(sub)
    later = [part.get("additionalItems")] if isinstance(items, list) else [items]
    later.append(part.get("unevaluatedItems"))
    applied.rest.extend((len(prefix), sub) for sub in later if sub is not None)
    if "contains" in part:  # might apply to any item
        applied.rest.append((0, part["contains"]))


def _has(named: Any, key: Any) -> bool:
    """Whether the ``properties`` mapping ``named`` names ``key``."""
    try:
        return isinstance(named, dict) and key in named
    except TypeError:  # an unhashable key of some mapping: no schema names it
        return False
