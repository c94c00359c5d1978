"""Mistakes of a first program: refused where they are made, with what to write instead."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle import (
    ToolCapability,
    ToolDefinitionError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
    tool,
    wrap,
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


def test_a_method_decorated_in_its_class_is_refused() -> None:
    """@tool on a method would ask the model for ``self``: the error says to use the bound one."""
    with pytest.raises(ToolDefinitionError) as raised:

        class Inventory:
            @tool(writes=False)
            def count(self, item: str) -> int:
                """Count an item."""
                return 0

    assert str(raised.value) == (
        "parameter 'self' of tool 'count': "
        "test_a_method_decorated_in_its_class_is_refused.<locals>.Inventory.count is a "
        "method, and a model cannot pass its 'self'; make the tool from the bound method "
        "of an instance instead, as in wrap(instance.count, ...) or "
        "runtime.register(instance.count)"
    )


class Shelf:
    """Methods to make tools of, bound and unbound."""

    def count(self, item: str) -> int:
        """Count an item."""
        return len(item)

    @classmethod
    def kinds(cls, item: str) -> str:
        """The kind of an item."""
        return cls.__name__


def test_a_method_taken_unbound_from_its_class_is_refused() -> None:
    """wrap(Shelf.count) is the same mistake as decorating it in the class."""
    with pytest.raises(ToolDefinitionError, match="Shelf.count is a method"):
        wrap(Shelf.count, writes=False)


def test_bound_methods_and_nested_functions_with_a_self_parameter_are_tools() -> None:
    """A bound method has no ``self`` to ask for; a plain function may name a parameter so."""

    def describe(self: str) -> str:
        """Describe something."""
        return self

    assert list(wrap(Shelf().count).discover().input_schema["properties"]) == ["item"]
    assert list(wrap(Shelf.kinds).discover().input_schema["properties"]) == ["item"]
    assert list(wrap(describe).discover().input_schema["properties"]) == ["self"]


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
