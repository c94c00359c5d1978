"""A tool's definition in each provider's format: what a model is shown.

| format | shape |
| --- | --- |
| ``openai`` | Chat Completions: ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}`` |
| ``openai-responses`` | Responses API: ``{"type": "function", "name", "description", "parameters", "strict"}`` |
| ``anthropic`` | Messages API: ``{"name", "description", "input_schema"}`` |
| ``gemini`` | a function declaration: ``{"name", "description", "parametersJsonSchema"}`` |
| ``mcp`` | an MCP ``Tool``: ``{"name", "description", "inputSchema", "outputSchema", "annotations"}`` |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.agent._names import provider_name
from toolcycle.agent._schemas import openai_strict

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
    schema = descriptor.input_schema
    description = descriptor.description
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
    if descriptor.output_schema is not None:
        tool["outputSchema"] = descriptor.output_schema
    hints = {key: value for key, value in descriptor.annotations.items() if key.endswith("Hint")}
    tool["annotations"] = {**hints, "readOnlyHint": not descriptor.capability.writes}
    return tool
