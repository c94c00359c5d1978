"""A tool's definition in each provider's format: what a model is shown.

| format | shape |
| --- | --- |
| ``openai`` | Chat Completions: ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}`` |
| ``openai-responses`` | Responses API: ``{"type": "function", "name", "description", "parameters", "strict"}`` |
| ``anthropic`` | Messages API: ``{"name", "description", "input_schema"}`` |
| ``gemini`` | a function declaration: ``{"name", "description", "parametersJsonSchema"}`` |
| ``mcp`` | an MCP ``Tool``: ``{"name", "description", "inputSchema", "outputSchema", "annotations"}`` |

MCP's ``outputSchema`` is declared only for an output schema of objects. A client
(the MCP SDK's ``ClientSession`` among them) checks each result's
``structuredContent`` against it, and the result message sends an object output
there, but no other value: MCP wants an object at the root of both (up to protocol
2025-11-25), and the message knows only the value, not the tool's schema.

The description, and each ``description`` and ``title`` in the schemas, is shown
without control characters (see `plain_text`): a source may have put terminal
escapes in them. The descriptor keeps its text as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from toolcycle._plain import plain_schema, plain_text
from toolcycle.agent._names import provider_name
from toolcycle.agent._schemas import object_root, openai_strict

if TYPE_CHECKING:
    from toolcycle.models import ToolDescriptor

__all__ = ["definition"]


def definition(
    descriptor: ToolDescriptor,
    format: str,
    *,
    strict: bool,
) -> dict[str, Any]:
    """The definition of the tool ``descriptor`` in ``format``.

    Args:
        descriptor: the tool.
        format: one of the provider formats.
        strict: for the OpenAI formats, offer strict mode where the schema allows it.
    """
    name = provider_name(descriptor.name, format)
    schema = object_root(plain_schema(descriptor.input_schema))  # the registered one: walked once
    description = plain_text(descriptor.description)
    if format in {"openai", "openai-responses"}:
        adapted = openai_strict(schema) if strict else None
        function: dict[str, Any] = {
            "name": name,
            "description": description,
            "parameters": adapted if adapted is not None else schema,
            "strict": adapted is not None,
        }
        if format == "openai":
            return {"type": "function", "function": function}
        return {"type": "function", **function}
    if format == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if format == "gemini":
        return {"name": name, "description": description, "parametersJsonSchema": schema}
    tool: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
    if _objects(descriptor.output_schema):
        tool["outputSchema"] = {"type": "object", **plain_schema(descriptor.output_schema)}
    hints = {key: value for key, value in descriptor.annotations.items() if key.endswith("Hint")}
    tool["annotations"] = {**hints, "readOnlyHint": not descriptor.capability.writes}
    return tool


def _objects(schema: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether every value of ``schema`` is an object, by its type or its root's ``$ref``."""
    seen: set[str] = set()
    current: Any = schema
    while isinstance(current, dict):
        if current.get("type") == "object":
            return True
        ref = current.get("$ref")  # a recursive model's schema refers to its own definition
        if not isinstance(ref, str) or not ref.startswith("#/$defs/") or ref in seen:
            return False
        seen.add(ref)
        current = (schema or {}).get("$defs", {}).get(ref.removeprefix("#/$defs/"))
    return False
