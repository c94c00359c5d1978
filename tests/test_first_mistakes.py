"""Mistakes of a first program: refused where they are made, with what to write instead."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle import (
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
    tool,
)


class Add:
    """A hand-written tool, complete but for the instance."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="add", description="Add.", capability=ToolCapability(writes=False)
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> int:
        return 1

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


def test_registering_a_tool_class_says_to_register_an_instance(runtime: ToolRuntime) -> None:
    """register(Add) rather than register(Add()) names the class and the call to write."""
    with pytest.raises(TypeError) as raised:
        runtime.register(Add)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "Add is a tool class, not a tool: register an instance of it, as in runtime.register(Add())"
    )
    assert runtime.descriptors() == ()
    assert runtime.register(Add()).name == "add"


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
