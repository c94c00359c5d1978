"""Mistakes of a first program: refused where they are made, with what to write instead."""

from __future__ import annotations

import pytest

from toolcycle import ToolResult, ToolRuntime, tool


def _answer() -> ToolResult:
    @tool(writes=False)
    def ping() -> str:
        """Answer."""
        return "pong"

    with ToolRuntime() as runtime:
        runtime.register(ping)
        with runtime.plan() as ctx:
            return runtime.call({"id": "c1", "name": "ping", "arguments": {}}, ctx)


def test_a_misspelt_message_format_is_refused_not_answered_in_mcp() -> None:
    """to_message("claude") raised nothing and built an MCP result; now it names the formats."""
    result = _answer()
    expected = (
        "unknown format 'claude'; use one of openai, openai-responses, anthropic, gemini, mcp"
    )
    with pytest.raises(ValueError) as one:
        result.to_message("claude")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as many:
        result.to_messages("Anthropic")  # type: ignore[arg-type]
    with pytest.raises(ValueError) as batch:
        ToolResult.batch_messages([result], "claude")  # type: ignore[arg-type]
    assert str(one.value) == str(batch.value) == expected
    assert "unknown format 'Anthropic'" in str(many.value)
    assert result.to_message()["tool_call_id"] == "c1"  # the call's own format still applies
    assert result.to_message("anthropic")["tool_use_id"] == "c1"
