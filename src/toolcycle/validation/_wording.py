"""Validation messages in toolcycle's own words, whichever engine found the problem.

Messages reach people and language models, and a message that changed when
``jsonschema-rs`` was installed would break both (and every test that reads
one). So an engine reports only the facts of a failure: the keyword, the value
that failed, and the schema object that holds the keyword. `describe` words them,
from those facts alone, and also settles the keyword where the engines name one
failure differently:

- ``contains``, ``minContains`` and ``maxContains`` are one check, reported as
  ``contains`` with the bounds in the message (the engines disagree on which of
  the three to blame).
- A draft-04 ``exclusiveMinimum: true`` is a modifier of ``minimum``, so the
  failure is ``minimum`` (likewise for the maximum).

Values are quoted as compact JSON, cut to `_SHOWN` characters, so a message never
grows with the value.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["describe", "duplicate_pair", "json_key", "json_type", "show"]

_SHOWN: Final = 60
_CONTAINS = frozenset({"contains", "minContains", "maxContains"})
_SIZED = {
    "minLength": ("character", str),
    "maxLength": ("character", str),
    "minItems": ("item", list),
    "maxItems": ("item", list),
    "minProperties": ("property", dict),
    "maxProperties": ("property", dict),
}
"""The keywords that bound a length or a count: what they count, in values of which type."""


def show(value: Any) -> str:
    """``value`` as compact JSON (keys sorted), cut to a readable length."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    except (TypeError, ValueError):  # not JSON data: say what it is rather than fail
        text = type(value).__name__
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def json_type(value: Any) -> str:
    """The JSON type of ``value``: null, boolean, integer, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def json_key(value: Any) -> Any:
    """A hashable key under which two values are equal exactly when JSON says they are."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)  # 1 == 1.0 in Python as in JSON
    if isinstance(value, list):
        return ("array", tuple(json_key(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, json_key(item)) for key, item in value.items()))
    return ("string", value)


def duplicate_pair(items: list[Any]) -> tuple[int, int] | None:
    """The indexes of the first item equal to an earlier one, and of that earlier one."""
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        first = seen.setdefault(json_key(item), index)
        if first != index:
            return first, index
    return None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _names(names: Any) -> str:
    return ", ".join(show(name) for name in names)


def _sized(keyword: str, value: Any, limit: Any) -> str:
    """Messages of the keywords that bound a length or a count."""
    noun, counted = _SIZED[keyword]
    size = len(value) if isinstance(value, counted) else 0
    low = keyword.startswith("min")
    if noun == "character":  # quote the string: under propertyNames it is the name at fault
        more = "fewer" if low else "more"
        bound = "minimum" if low else "maximum"
        return f"{show(value)} has {_count(size, noun)}, {more} than the {bound} of {limit}"
    plural = "properties" if noun == "property" else f"{noun}s"
    return f"expected {'at least' if low else 'at most'} {limit} {noun if limit == 1 else plural}, got {size}"


def _contains(schema: dict[str, Any]) -> str:
    low = schema.get("minContains", 1)
    high = schema.get("maxContains")
    if high is None:
        wanted = f"at least {low}"
    elif low == high:
        wanted = f"exactly {low}"
    elif low == 0:
        wanted = f"at most {high}"
    else:
        wanted = f"between {low} and {high}"
    return f"expected {wanted} of the items to match the contains schema"


def _dependencies(schema: dict[str, Any], keyword: str, value: Any) -> str | None:
    """What ``dependentRequired`` (or draft-07 ``dependencies``) finds missing."""
    rules = schema.get(keyword)
    if not isinstance(rules, dict) or not isinstance(value, dict):
        return None
    parts = []
    for name, needed in rules.items():
        if name in value and isinstance(needed, list):
            missing = [other for other in needed if other not in value]
            if missing:
                parts.append(f"{show(name)} requires {_names(missing)}")
    return "; ".join(parts) or None


def _bound(keyword: str, value: Any, schema: dict[str, Any]) -> tuple[str, str]:
    """Messages of the numeric bounds, with the draft-04 boolean modifiers folded in."""
    low = keyword in ("minimum", "exclusiveMinimum")
    plain, modifier = ("minimum", "exclusiveMinimum") if low else ("maximum", "exclusiveMaximum")
    if isinstance(schema.get(modifier), bool):  # draft-04: the bound is in the plain keyword
        keyword = plain
        exclusive = schema[modifier]
    else:
        exclusive = keyword == modifier
    limit = schema.get(keyword)
    if exclusive:
        return keyword, f"{show(value)} must be {'greater' if low else 'less'} than {show(limit)}"
    side = "less than the minimum" if low else "greater than the maximum"
    return keyword, f"{show(value)} is {side} {show(limit)}"


def describe(keyword: str, value: Any, schema: Any, detail: Any = None) -> tuple[str, str]:
    """The keyword to report and the message for one failure.

    Args:
        keyword: the keyword that failed (``"false"`` for a boolean ``false`` schema).
        value: the value that failed it.
        schema: the schema object that holds the keyword, or None when unknown.
        detail: what only the engine knows: the names it found unexpected for
            ``additionalProperties`` and the ``unevaluated*`` keywords; for
            ``anyOf`` and ``oneOf``, True if several subschemas matched, or the
            pointer (relative to the value) and message of the closest branch's
            issue when none did; for ``false``, whether it is the
            ``propertyNames`` schema (True).
    """
    holder: dict[str, Any] = schema if isinstance(schema, dict) else {}
    setting = holder.get(keyword)
    if keyword in _CONTAINS:
        return "contains", _contains(holder)
    if keyword == "false":
        if detail is True:  # under propertyNames: every name is refused, whatever it is
            return keyword, "no property is allowed here"
        return keyword, f"no value is allowed here, got {show(value)}"
    if keyword == "type" and setting is not None:
        # Sorted: an engine may hold the types in another order than the schema.
        wanted = " or ".join(sorted(setting)) if isinstance(setting, list) else str(setting)
        return keyword, f"expected {wanted}, got {_got(value)}"
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _bound(keyword, value, holder)
    if keyword in _SIZED:
        return keyword, _sized(keyword, value, setting)
    if keyword == "enum":
        return keyword, f"{show(value)} is not one of {show(setting)}"
    if keyword == "const":
        return keyword, f"expected {show(setting)}, got {show(value)}"
    if keyword == "multipleOf":
        return keyword, f"{show(value)} is not a multiple of {show(setting)}"
    if keyword == "pattern":
        return keyword, f"{show(value)} does not match the pattern {show(setting)}"
    if keyword == "format":
        return keyword, f"{show(value)} is not a valid {setting}"
    if keyword == "required" and isinstance(setting, list) and isinstance(value, dict):
        missing = [name for name in setting if name not in value]
        noun = "property" if len(missing) == 1 else "properties"
        return keyword, f"missing required {noun} {_names(missing)}"
    if keyword in ("dependentRequired", "dependencies"):
        found = _dependencies(holder, keyword, value)
        if found:
            return keyword, found
    if keyword == "uniqueItems" and isinstance(value, list):
        pair = duplicate_pair(value)
        if pair:
            return keyword, f"items {pair[0]} and {pair[1]} are equal; the items must be unique"
    if keyword == "additionalItems" and isinstance(holder.get("items"), list):
        return keyword, _sized("maxItems", value, len(holder["items"]))
    if keyword in ("additionalProperties", "unevaluatedProperties", "unevaluatedItems"):
        return keyword, _extras(keyword, setting, detail)
    if keyword == "not":
        return keyword, f"{show(value)} must not match the schema under not"
    if keyword in ("anyOf", "oneOf"):
        if detail is True:
            return keyword, f"{show(value)} matches more than one of the {keyword} schemas"
        types = _branch_types(setting, value)
        if types:  # every branch refuses the value's type: say which types would do
            return keyword, f"expected {' or '.join(types)}, got {_got(value)}"
        none = f"{show(value)} matches none of the {keyword} schemas"
        if isinstance(detail, tuple):  # the one branch that takes the value's type
            pointer, why = detail
            return keyword, f"{none}; the closest: {f'{pointer}: ' if pointer else ''}{why}"
        return keyword, none
    return keyword, f"{show(value)} does not satisfy {keyword}"


def _got(value: Any) -> str:
    """The JSON type of ``value``, with the value itself when it is a short scalar."""
    got = json_type(value)
    return f"{got} {show(value)}" if got in ("string", "number", "integer") else got


def _branch_types(branches: Any, value: Any) -> list[str]:
    """The types the branches of an ``anyOf`` or ``oneOf`` allow, if none allows ``value``'s.

    Empty unless every branch declares ``type`` and none of them takes the value's
    type (the shape pydantic gives an optional field: ``[{"type": "integer"},
    {"type": "null"}]``); then each branch fails on the type, whatever else it says.
    """
    if not isinstance(branches, list) or not branches:
        return []
    allowed: set[str] = set()
    for branch in branches:
        declared = branch.get("type") if isinstance(branch, dict) else None
        if isinstance(declared, str):
            allowed.add(declared)
        elif isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            allowed.update(declared)
        else:
            return []
    got = json_type(value)
    if got in allowed or (got == "integer" and "number" in allowed):
        return []
    return sorted(allowed)


def _extras(keyword: str, setting: Any, names: Any) -> str:
    """Messages of the keywords that police properties or items no other keyword covers."""
    names = sorted(names or (), key=str)
    one = len(names) == 1
    if keyword == "unevaluatedItems":
        counted = _count(len(names), "unevaluated item")
        if setting is False:
            return f"{counted} {'is' if one else 'are'} not allowed"
        return f"{counted} {'does' if one else 'do'} not match unevaluatedItems"
    kind = "unexpected" if keyword == "additionalProperties" else "unevaluated"
    listed = f"{kind} {'property' if one else 'properties'} {_names(names)}"
    if setting is False:
        return f"{listed} {'is' if one else 'are'} not allowed"
    return f"{listed} {'does' if one else 'do'} not match {keyword}"
