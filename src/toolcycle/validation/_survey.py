r"""One walk over a schema for what its metaschema cannot see: references and patterns.

`schema_problems` yields, as (pointer, keyword, message):

- a ``$ref``, ``$dynamicRef`` or ``$recursiveRef`` that does not resolve offline;
- a reference that leads back to where it started through references and
  in-place applicators alone (``allOf``, ``anyOf``, ``oneOf``, ``not``,
  ``if``/``then``/``else``, ``dependentSchemas``). Each of them applies its
  subschema to the same value, so such a chain never ends: one validator
  recurses until its stack runs out, another accepts every value. A ``$dynamicRef`` (or ``$recursiveRef``) may land, at validation time, on
  any schema that declares the same dynamic anchor (or ``$recursiveAnchor``), so
  every such schema counts as one of its targets (``{"$dynamicAnchor": "n",
  "$dynamicRef": "#n"}`` refers to itself);
- a ``pattern`` or ``patternProperties`` key that is too long or that RE2 cannot
  run with its ECMA-262 meaning (`toolcycle.validation._patterns`).

The references are looked up with the ``referencing`` resolver the caller hands
over, so this module imports neither ``jsonschema`` nor ``referencing``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcycle.validation._backends import SUBSCHEMA, SUBSCHEMA_ARRAYS, SUBSCHEMA_MAPS, truncate
from toolcycle.validation._json import pointer_token
from toolcycle.validation._patterns import pattern_problems

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["schema_problems"]

_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_IN_PLACE = ("not", "if", "then", "else")
"""Keywords whose one subschema applies to the value itself, not to a part of it."""
_IN_PLACE_ARRAYS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAPS = ("dependentSchemas",)
_MAX_REF_HOPS = 256
"""A chain of references longer than this counts as a loop."""

_Target = tuple[Any, Any]
"""A schema reached through references: its contents and the resolver of its resource."""


def schema_problems(
    schema: dict[str, Any],
    resolver: Any,
    specification: Any,
    *,
    max_pattern_length: int,
    unresolvable: type[Exception],
) -> Iterator[tuple[str, str, str]]:
    """Yield (pointer, keyword, message) for each problem of ``schema``, in document order.

    Args:
        schema: the root schema, already valid against its metaschema.
        resolver: a ``referencing`` resolver rooted at ``schema``.
        specification: the ``referencing`` specification of the schema's dialect.
        max_pattern_length: the longest pattern accepted, in characters.
        unresolvable: the exception ``resolver.lookup`` raises for a missing target.
    """
    survey = _Survey(specification, max_pattern_length, unresolvable)
    yield from survey.walk(schema, resolver, "", root=True)
    yield from survey.loops()


@dataclass
class _Survey:
    specification: Any
    max_pattern_length: int
    unresolvable: type[Exception]
    references: list[tuple[str, str, str, dict[str, Any], Any]] = field(default_factory=list)
    """(pointer, keyword, reference, schema holding it, its resolver) of each reference."""
    dynamic: dict[str, list[_Target]] = field(default_factory=dict)
    """The schemas declaring each ``$dynamicAnchor`` name."""
    recursive: list[_Target] = field(default_factory=list)
    """The schemas declaring ``"$recursiveAnchor": true``."""

    def walk(
        self, node: Any, resolver: Any, pointer: str, *, root: bool = False
    ) -> Iterator[tuple[str, str, str]]:
        """Problems of ``node`` and below; records references and anchors for `loops`."""
        if isinstance(node, list):  # draft-07 and older allow an array of schemas in items
            for index, item in enumerate(node):
                yield from self.walk(item, resolver, f"{pointer}/{index}")
            return
        if not isinstance(node, dict):
            return
        if not root and isinstance(node.get("$id", node.get("id")), str):
            resolver = resolver.in_subresource(self.specification.create_resource(node))
        if isinstance(node.get("$dynamicAnchor"), str):
            self.dynamic.setdefault(node["$dynamicAnchor"], []).append((node, resolver))
        if node.get("$recursiveAnchor") is True:
            self.recursive.append((node, resolver))
        for keyword in _REFERENCES:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolver.lookup(ref)
            except self.unresolvable:
                hint = (
                    "; fix the pointer or add the missing definition"
                    if ref.startswith("#")
                    else "; documents are never retrieved, so pre-load it with schema_documents"
                )
                yield (
                    f"{pointer}/{pointer_token(keyword)}",
                    keyword,
                    f"the reference {truncate(ref, 120)!r} does not resolve{hint}",
                )
                continue
            self.references.append((f"{pointer}/{keyword}", keyword, ref, node, resolver))
        yield from self._patterns(node, pointer)
        yield from self._children(node, resolver, pointer)

    def _patterns(self, node: dict[str, Any], pointer: str) -> Iterator[tuple[str, str, str]]:
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield from pattern_problems(pattern, f"{pointer}/pattern", self.max_pattern_length)
        members = node.get("patternProperties")
        if isinstance(members, dict):
            for key in members:
                where = f"{pointer}/patternProperties/{pointer_token(key)}"
                yield from pattern_problems(key, where, self.max_pattern_length)

    def _children(
        self, node: dict[str, Any], resolver: Any, pointer: str
    ) -> Iterator[tuple[str, str, str]]:
        for keyword in SUBSCHEMA:
            if keyword in node:
                yield from self.walk(node[keyword], resolver, f"{pointer}/{keyword}")
        for keyword in SUBSCHEMA_ARRAYS:
            items = node.get(keyword)
            if isinstance(items, list):
                for index, item in enumerate(items):
                    yield from self.walk(item, resolver, f"{pointer}/{keyword}/{index}")
        for keyword in SUBSCHEMA_MAPS:
            members = node.get(keyword)
            if isinstance(members, dict):
                for key, item in members.items():
                    where = f"{pointer}/{keyword}/{pointer_token(key)}"
                    yield from self.walk(item, resolver, where)

    def _targets(self, target: _Target) -> Iterable[_Target]:
        """The schemas applied to the very value ``target`` is applied to.

        Those are its in-place subschemas and where its references lead, a dynamic
        reference to every candidate.
        """
        contents, resolver = target
        if not isinstance(contents, dict):
            return
        for child in _in_place(contents):
            if isinstance(child, dict) and isinstance(child.get("$id"), str):
                resource = self.specification.create_resource(child)
                yield child, resolver.in_subresource(resource)
            else:
                yield child, resolver
        for keyword in _REFERENCES:
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except self.unresolvable:  # reported where that reference is written
                continue
            yield resolved.contents, resolved.resolver
            landed = resolved.contents if isinstance(resolved.contents, dict) else {}
            name = ref.rpartition("#")[2]
            if keyword == "$dynamicRef" and landed.get("$dynamicAnchor") == name:
                yield from self.dynamic.get(name, ())
            elif keyword == "$recursiveRef" and landed.get("$recursiveAnchor") is True:
                yield from self.recursive

    def loops(self) -> Iterator[tuple[str, str, str]]:
        """A problem for each recorded reference from which the same value comes back round."""
        settled: set[int] = set()  # schemas from which no loop can be reached
        for pointer, keyword, ref, node, resolver in self.references:
            if self._loops_from((node, resolver), settled):
                yield (
                    pointer,
                    keyword,
                    (
                        f"the reference {truncate(ref, 120)!r} leads back to itself without "
                        "descending into the value (through references and allOf, anyOf, "
                        "oneOf, not, if, then, else or dependentSchemas alone), so no value "
                        "could ever be checked against it"
                    ),
                )

    def _loops_from(self, start: _Target, settled: set[int]) -> bool:
        """Whether a chain of references from ``start`` reaches a schema already on it."""
        if id(start[0]) in settled:
            return False
        on_path = {id(start[0])}
        stack = [(start, iter(self._targets(start)))]
        while stack:
            current, onward = stack[-1]
            following = next(onward, None)
            if following is None:
                stack.pop()
                on_path.discard(id(current[0]))
                settled.add(id(current[0]))
                continue
            key = id(following[0])
            if key in on_path or len(stack) >= _MAX_REF_HOPS:
                return True
            if key not in settled:
                on_path.add(key)
                stack.append((following, iter(self._targets(following))))
        return False


def _in_place(node: dict[str, Any]) -> Iterator[Any]:
    """The subschemas of ``node`` that apply to the very value ``node`` applies to."""
    for keyword in _IN_PLACE:
        if keyword in node:
            yield node[keyword]
    for keyword in _IN_PLACE_ARRAYS:
        items = node.get(keyword)
        if isinstance(items, list):
            yield from items
    for keyword in _IN_PLACE_MAPS:
        members = node.get(keyword)
        if isinstance(members, dict):
            yield from members.values()
