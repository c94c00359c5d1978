"""Input schemas adapted to what a provider's strict mode accepts.

OpenAI's strict function calling (``"strict": true``) guarantees arguments that
match the schema, but only for a subset of JSON Schema: every object must list
all its properties in ``required`` and set ``additionalProperties: false``, and
some keywords are not supported. `openai_strict` rewrites a schema into that
form where the meaning can be kept: an optional property becomes required but
nullable (``null`` standing for "left out"), and an object without
``additionalProperties`` gets ``false``. A schema it cannot rewrite without
changing what it accepts (open objects, unsupported keywords, a root that is
not an object) gives None, and the tool is offered without strict mode.

Both walks are bounded: schemas were depth-checked when their tool was
registered, and `drop_absent_nulls` stops at a depth limit (arguments deeper
than the runtime's limit are refused by validation anyway). Should a walk still
exhaust the interpreter's stack, strict mode is not offered and the arguments
are left as sent, for validation to judge.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["STRICT_KEYWORDS", "drop_absent_nulls", "object_root", "openai_strict"]

_PLAIN = frozenset({str, int, float, bool})
"""Value types that are neither null nor containers."""

STRICT_KEYWORDS = frozenset(
    {
        "$defs",
        "$ref",
        "additionalProperties",
        "anyOf",
        "const",
        "default",
        "definitions",
        "description",
        "enum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "format",
        "items",
        "maxItems",
        "maximum",
        "minItems",
        "minimum",
        "multipleOf",
        "pattern",
        "properties",
        "required",
        "title",
        "type",
    }
)
"""The keywords strict mode accepts (``$schema`` is dropped, not refused)."""


class _NotStrict(Exception):
    """The schema uses something strict mode cannot express."""


def openai_strict(schema: Any) -> dict[str, Any] | None:
    """A strict-mode version of the input ``schema``, or None if there is none."""
    if isinstance(schema, dict) and "$ref" in schema:
        schema = _inlined_root(schema)
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return None
    if "anyOf" in schema:
        return None  # the root must be one plain object
    try:
        adapted = copy.deepcopy(schema)
        adapted.pop("$schema", None)
        adapted.setdefault("type", "object")
        _adapt(adapted)
    except (_NotStrict, RecursionError):
        return None
    return adapted


def object_root(schema: Any) -> Any:
    """The input ``schema`` with an object at its root, as every provider wants it.

    OpenAI and Anthropic refuse a tool whose parameters do not say
    ``"type": "object"`` (and MCP's spec requires it), yet an MCP server may list
    a schema without ``type``, and a zod or pydantic schema may be only a local
    ``$ref`` at the root. A call's arguments are always an object, so saying so
    changes nothing the schema accepts. Any other schema is returned as it is.
    """
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        schema = _inlined_root(schema) or schema
    if "type" not in schema:
        return {"type": "object", **schema}
    return schema


_ROOT_ONLY = frozenset({"$defs", "$ref", "$schema", "definitions", "description", "title"})


def _inlined_root(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A root that is only a local ``$ref``, with the object it points at in its place.

    Pydantic's recursive models and zod's named schemas look like that; strict
    mode wants the root to be the object itself. The definitions stay, so
    references inside still resolve. Any other ``$ref`` root gives None.
    """
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#/") or set(schema) - _ROOT_ONLY:
        return None
    target = _local_target(schema, ref)
    if not isinstance(target, dict) or "$ref" in target:
        return None
    root = {key: value for key, value in schema.items() if key != "$ref"}
    return {**root, **target}


def _adapt(node: Any) -> None:
    if not isinstance(node, dict):
        raise _NotStrict
    if set(node) - STRICT_KEYWORDS:
        raise _NotStrict
    for key in ("$defs", "definitions"):
        for sub in node.get(key, {}).values():
            _adapt(sub)
    for sub in node.get("anyOf", []):
        _adapt(sub)
    if "items" in node:
        _adapt(node["items"])
    is_object = node.get("type") == "object" or (
        isinstance(node.get("type"), list) and "object" in node["type"]
    )
    if not is_object and "properties" not in node:
        return
    if node.get("additionalProperties", False) is not False:
        raise _NotStrict  # an open object cannot be described strictly
    node["additionalProperties"] = False
    properties: dict[str, Any] = node.setdefault("properties", {})
    required = set(node.get("required", []))
    if not required <= properties.keys():
        raise _NotStrict  # a required name with no property: strict mode could never send it
    for name, sub in properties.items():
        _adapt(sub)
        if name not in required:
            properties[name] = _nullable(sub)
    node["required"] = list(properties)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null, which stands for a property left out."""
    kind = schema.get("type")
    if kind == "null":
        return schema  # null already (a second "null" would make the type list invalid)
    if isinstance(kind, str) and "enum" not in schema and "const" not in schema:
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "enum" not in schema and "const" not in schema:
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def drop_absent_nulls(
    arguments: dict[str, Any], schema: Any, *, max_depth: int = 64
) -> dict[str, Any]:
    """``arguments`` without the nulls that strict mode sends for properties left out.

    A null is dropped where the original ``schema`` does not require the
    property and does not accept null for it, at every depth the rewrite
    reaches: nested objects, array ``items``, local ``$ref``s and the one
    ``anyOf`` branch that fits the value. Everything else is kept, so
    validation still sees any other mistake. Values nested deeper than
    ``max_depth`` are kept as they are (validation refuses them), and so are
    arguments the walk cannot finish.
    """
    if type(arguments) is dict and _flat_without_nulls(arguments):
        return arguments  # no null, nothing nested: nothing to drop
    try:
        kept: dict[str, Any] = _drop(arguments, schema, schema, frozenset(), max_depth)
    except RecursionError:
        return arguments
    return kept


def _flat_without_nulls(arguments: dict[str, Any]) -> bool:
    """Whether every value is a string, number or boolean (a loop: cheaper than ``all``)."""
    for value in arguments.values():
        if type(value) not in _PLAIN:
            return False
    return True


def _drop(value: Any, schema: Any, root: Any, seen: frozenset[str], depth: int) -> Any:
    # ``seen`` holds the refs followed since the last step into ``value``: one
    # met again is a cycle that would never reach more of the value. ``depth``
    # counts down the levels of ``value`` the walk may still enter.
    if depth <= 0:
        return value
    schema, seen = _resolve(schema, root, seen)
    if not isinstance(schema, dict):
        return value
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [_drop(item, items, root, frozenset(), depth - 1) for item in value]
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        required = set(schema.get("required", []))
        return {
            key: _drop(item, properties.get(key), root, frozenset(), depth - 1)
            for key, item in value.items()
            if item is not None
            or key in required
            or _accepts_null(properties.get(key), root, frozenset())
        }
    branch = _only_branch(value, schema.get("anyOf"), root, seen, depth)
    return value if branch is None else _drop(value, branch, root, seen, depth)


def _only_branch(value: Any, branches: Any, root: Any, seen: frozenset[str], depth: int) -> Any:
    """The one ``anyOf`` branch whose items or properties can describe ``value``, if just one.

    Of several objects declaring all of ``value``'s keys, the one declaring exactly
    those wins: strict mode sends every property of the branch it chose. Branches
    alike in shape (``Cat | Dog`` with the same fields, ``list[Cat] | list[Dog]``)
    are told apart by the values: a ``const``, an ``enum`` or a type that one
    branch's property has and the value does not match rules that branch out. If
    several still fit but dropping nulls under each gives the same value, any will do.
    (An item is judged the same way, and by its keys: strict mode closes every object.)
    """
    if not isinstance(branches, list):
        return None
    fits: list[tuple[Any, set[str]]] = []
    for branch in branches:
        target, _ = _resolve(branch, root, seen)
        if not isinstance(target, dict):
            continue
        properties = target.get("properties")
        if isinstance(value, list) and isinstance(target.get("items"), dict):
            fits.append((branch, set()))
        elif (
            isinstance(value, dict)
            and isinstance(properties, dict)
            and value.keys() <= properties.keys()
        ):
            fits.append((branch, set(properties)))
    if len(fits) > 1 and isinstance(value, dict):
        fits = [fit for fit in fits if fit[1] == value.keys()]
    if len(fits) > 1:
        fits = [fit for fit in fits if _could_be(value, fit[0], root, seen, depth)]
    if len(fits) > 1:
        dropped = [_drop(value, branch, root, seen, depth) for branch, _ in fits]
        if all(kept == dropped[0] for kept in dropped[1:]):
            return fits[0][0]
    return fits[0][0] if len(fits) == 1 else None


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _could_be(value: Any, schema: Any, root: Any, seen: frozenset[str], depth: int) -> bool:
    """Whether ``value`` might match ``schema``, judged on ``const``, ``enum`` and ``type``.

    Nulls are ignored (they are what is being dropped), and so is every other
    keyword: False only when a value certainly contradicts the schema.
    """
    if value is None or depth <= 0:
        return True
    schema, seen = _resolve(schema, root, seen)
    if not isinstance(schema, dict):
        return schema is not False
    if "const" in schema and not _same(value, schema["const"]):
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(value, option) for option in enum):
        return False
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES:
        is_bool = type(value) is bool
        if not isinstance(value, _JSON_TYPES[kind]) or (is_bool and kind != "boolean"):
            return False
    properties, items = schema.get("properties"), schema.get("items")
    if isinstance(value, dict) and isinstance(properties, dict):
        # Strict mode closes every object: a key it does not declare rules it out.
        return value.keys() <= properties.keys() and all(
            _could_be(item, properties[key], root, frozenset(), depth - 1)
            for key, item in value.items()
        )
    if isinstance(value, list) and isinstance(items, dict):
        return all(_could_be(item, items, root, frozenset(), depth - 1) for item in value)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        return any(_could_be(value, branch, root, seen, depth) for branch in branches)
    return True


def _same(value: Any, expected: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    return value == expected and (type(value) is bool) == (type(expected) is bool)


def _accepts_null(schema: Any, root: Any, seen: frozenset[str]) -> bool:
    """Whether ``schema`` allows null; True where unsure, so the null is left to validation."""
    schema, seen = _resolve(schema, root, seen)
    if not isinstance(schema, dict):
        return True
    kind = schema.get("type", "null")  # no type: any type, null too
    enum = schema.get("enum")
    branches = schema.get("anyOf")
    return (
        (kind == "null" or (isinstance(kind, list) and "null" in kind))
        and (not isinstance(enum, list) or None in enum)
        and schema.get("const") is None
        and (
            not isinstance(branches, list)
            or any(_accepts_null(branch, root, seen) for branch in branches)
        )
    )


def _resolve(schema: Any, root: Any, seen: frozenset[str]) -> tuple[Any, frozenset[str]]:
    """``schema`` with its local ``$ref``s followed, and ``seen`` with them added.

    A ref already in ``seen`` (a cycle), outside the document or not found gives None.
    """
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#") or ref in seen:
            return None, seen
        seen |= {ref}
        schema = _local_target(root, ref)
    return schema, seen


def _local_target(root: Any, ref: str) -> Any:
    """What a local ``$ref`` ("#", "#/$defs/A") points at in ``root``; None if nothing."""
    target = root
    for part in ref[1:].split("/")[1:]:  # a JSON pointer after the "#"
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, dict) else None
    return target
