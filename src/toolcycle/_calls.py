"""Reading a model's tool call, whatever provider format it arrives in.

Recognised shapes (a pydantic object from a provider SDK is read through
``model_dump()`` first):

| format | shape |
| --- | --- |
| ``openai`` | ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}`` |
| ``openai-responses`` | ``{"type": "function_call", "call_id", "name", "arguments": "<JSON>"}`` |
| ``anthropic`` | ``{"type": "tool_use", "id", "name", "input": {...}}`` |
| ``gemini`` | ``{"functionCall": {"id", "name", "args": {...}}}`` |
| ``mcp`` | a ``tools/call`` request: ``{"method": "tools/call", "id", "params": {"name", "arguments"}}`` |
| ``plain`` | ``{"name", "arguments"}``, arguments as an object or a JSON text, with an optional ``id`` |

Nothing here raises for a malformed call: the problem comes back as text the
model can act on.
"""

from __future__ import annotations

import json
from typing import Any

from toolcycle.models import ToolCall

__all__ = ["parse_tool_call"]


def parse_tool_call(raw: Any) -> tuple[ToolCall | None, str | None]:
    """The call ``raw`` holds, and what is wrong with it (None if nothing).

    A call that can be read at all comes back even when it has a problem (no
    name, unreadable arguments), so that its result can still quote its id;
    only something that is not an object at all gives no call.
    """
    if isinstance(raw, ToolCall):
        return raw, None
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump(mode="json")
    if not isinstance(raw, dict):
        return None, (
            f"a tool call must be an object with a name and arguments, got {type(raw).__name__}"
        )
    format_, call_id, name, arguments = _fields(raw)
    identifier = None if call_id is None else str(call_id)
    if not isinstance(name, str) or not name:
        call = ToolCall(id=identifier, name="", format=format_)
        return call, "the tool call names no tool: give the tool's name as a non-empty string"
    parsed, problem = _arguments(arguments)
    call = ToolCall(id=identifier, name=name, arguments=parsed or {}, format=format_)
    return call, problem


def _fields(raw: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """(format, id, name, arguments) of each recognised shape."""
    function = raw.get("function")
    if isinstance(function, dict):
        return "openai", raw.get("id"), function.get("name"), function.get("arguments")
    kind = raw.get("type")
    if kind == "function_call":
        call_id = raw.get("call_id", raw.get("id"))
        return "openai-responses", call_id, raw.get("name"), raw.get("arguments")
    if kind == "tool_use":
        return "anthropic", raw.get("id"), raw.get("name"), raw.get("input")
    gemini = raw.get("functionCall", raw.get("function_call"))
    if isinstance(gemini, dict):
        return "gemini", gemini.get("id"), gemini.get("name"), gemini.get("args")
    if raw.get("method") == "tools/call":
        params = raw.get("params")
        params = params if isinstance(params, dict) else {}
        return "mcp", raw.get("id"), params.get("name"), params.get("arguments")
    arguments = raw.get("arguments", raw.get("args", raw.get("input")))
    return "plain", raw.get("id"), raw.get("name"), arguments


def _arguments(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    if value is None or value == "":
        return {}, None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, (
                f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); "
                "send them as one JSON object"
            )
    if not isinstance(value, dict):
        return None, (
            f"the arguments must be a JSON object of named values, got {type(value).__name__}"
        )
    odd = [key for key in value if not isinstance(key, str)]
    if odd:
        return None, f"the arguments' names must be strings, got {odd[0]!r}"
    return value, None
