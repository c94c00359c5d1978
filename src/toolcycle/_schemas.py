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
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["STRICT_KEYWORDS", "drop_absent_nulls", "openai_strict"]

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
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return None
    if "anyOf" in schema:
        return None  # the root must be one plain object
    adapted = copy.deepcopy(schema)
    adapted.pop("$schema", None)
    adapted.setdefault("type", "object")
    try:
        _adapt(adapted)
    except _NotStrict:
        return None
    return adapted


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
    for name, sub in properties.items():
        _adapt(sub)
        if name not in required:
            properties[name] = _nullable(sub)
    node["required"] = list(properties)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null, which stands for a property left out."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema and "const" not in schema:
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "enum" not in schema and "const" not in schema:
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def drop_absent_nulls(arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """``arguments`` without the nulls that strict mode sends for properties left out.

    A null is dropped where the original ``schema`` does not require the
    property and does not accept null for it; nested objects are handled alike.
    Everything else is kept, so validation still sees any other mistake.
    """
    if not isinstance(schema, dict):
        return arguments
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    required = set(schema.get("required", []))
    kept: dict[str, Any] = {}
    for key, value in arguments.items():
        sub = properties.get(key)
        if value is None and key not in required and not _accepts_null(sub):
            continue
        if isinstance(value, dict) and isinstance(sub, dict):
            value = drop_absent_nulls(value, sub)
        kept[key] = value
    return kept


def _accepts_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True  # unknown or boolean schema: leave the value to validation
    kind = schema.get("type")
    if kind is None:
        return "anyOf" in schema or "oneOf" in schema or not schema
    return kind == "null" or (isinstance(kind, list) and "null" in kind)
