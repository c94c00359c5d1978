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

In MCP an object output goes as ``structuredContent`` too. An object the
runtime cut to ``max_result_bytes`` is no object any more, and a client (the
MCP SDK's ``ClientSession`` among them) rejects a success without
``structuredContent`` from a tool that declares an ``outputSchema``; the
message cannot see the tool's schema, so such a result goes with
``isError: true``, its text the cut output and its marker (see `mcp_message`).
So does any output that missed the tool's output schema (a runtime with
``strict_output=False`` lets it through as a success): a client refuses an
object off the schema as ``structuredContent``, and a success with no
``structuredContent`` at all (a list or ``None`` where an object was declared).
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolcycle.agent._names import FORMATS

__all__ = ["chosen_format", "cut_marker", "mcp_message", "result_message"]

# How the runtime ends an output it cut to max_result_bytes; written by `cut_marker`
# (for runtime/_results.py) and recognised here, so the two cannot drift apart.
_CUT_START = " ...[cut: output was "
_CUT_END = re.compile(r" \.\.\.\[cut: output was \d+ bytes, limit \d+\]")


def cut_marker(size: int, limit: int) -> str:
    """The text that ends an output of ``size`` bytes cut to ``limit``."""
    return f"{_CUT_START}{size} bytes, limit {limit}]"


def chosen_format(format: str | None, call_format: str) -> str:
    """The format to answer in: ``format``, else the call's own (OpenAI for a plain call).

    Raises:
        ValueError: ``format`` names no provider format. Without this check a
            misspelt name would fall through to the last branch and get MCP.
    """
    if format is None:
        return call_format if call_format != "plain" else "openai"
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    return format


def result_message(
    format: str,
    *,
    call_id: str | None,
    name: str,
    success: bool,
    output: Any,
    error: str | None,
    text: str | None = None,
    truncated: bool = False,
    output_valid: bool | None = None,
) -> dict[str, Any]:
    """The tool-result message for one call; ``text`` is the output's JSON, if known.

    ``truncated`` says the runtime cut the output to ``max_result_bytes``;
    ``output_valid`` is False for an output that missed its output schema.
    """
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
    content = [{"type": "text", "text": text}]
    return mcp_message(
        content, success=success, output=output, truncated=truncated, output_valid=output_valid
    )


def mcp_message(
    content: list[dict[str, Any]],
    *,
    success: bool,
    output: Any,
    truncated: bool = False,
    output_valid: bool | None = None,
) -> dict[str, Any]:
    """An MCP ``CallToolResult`` of ``content`` blocks, an object output as ``structuredContent``.

    A success whose output is an object cut to ``max_result_bytes`` has no
    object left to send, and a client checks ``structuredContent`` against the
    tool's ``outputSchema`` on every success: it is sent as an error (see the
    module docstring). A cut string, list or number that met its schema never
    had an ``outputSchema`` declared for it, so it stays a success. Any output
    that missed the output schema (``output_valid`` False) is sent as an error
    for the same reason: an object as ``structuredContent``, or any other value
    as none, where the tool may have declared an object.
    """
    failed = not success or (truncated and _cut_object(output)) or output_valid is False
    message: dict[str, Any] = {"content": content, "isError": failed}
    if not failed and isinstance(output, dict):
        message["structuredContent"] = output
    return message


def _cut_object(output: Any) -> bool:
    """Whether ``output`` is the runtime's cut of an object: ``{...`` and its marker."""
    if type(output) is not str or not output.startswith("{"):
        return False
    start = output.rfind(_CUT_START)
    return start > 0 and _CUT_END.fullmatch(output, start) is not None


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
