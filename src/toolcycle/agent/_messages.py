"""The message that hands a tool's result back to a model, in each provider's format.

| format | message |
| --- | --- |
| ``openai`` | ``{"role": "tool", "tool_call_id", "content"}`` |
| ``openai-responses`` | ``{"type": "function_call_output", "call_id", "output"}`` |
| ``anthropic`` | a ``tool_result`` content block: ``{"type", "tool_use_id", "content", "is_error"}`` |
| ``gemini`` | a ``functionResponse`` part: ``{"functionResponse": {"id", "name", "response"}}`` |
| ``mcp`` | a ``CallToolResult``: ``{"content", "structuredContent", "isError"}`` |

The text of a success is the output itself when it is a string, its JSON
otherwise; the text of a failure is the error message.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["result_message"]


def result_message(
    format: str,
    *,
    call_id: str | None,
    name: str,
    success: bool,
    output: Any,
    error: str | None,
    text: str | None = None,
) -> dict[str, Any]:
    """The tool-result message for one call; ``text`` is the output's JSON, if known."""
    if not success:
        text = error or "the tool call failed"
    elif isinstance(output, str):
        text = output
    elif text is None:
        text = _text(output)
    if format == "openai":
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    if format == "openai-responses":
        return {"type": "function_call_output", "call_id": call_id, "output": text}
    if format == "anthropic":
        return {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": text,
            "is_error": not success,
        }
    if format == "gemini":
        response = {"output": output} if success else {"error": text}
        body: dict[str, Any] = {"name": name, "response": response}
        if call_id is not None:
            body["id"] = call_id
        return {"functionResponse": body}
    message: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": not success}
    if success and isinstance(output, dict):
        message["structuredContent"] = output
    return message


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
