"""Type-checked, never run: the public API as users write it, checked with assert_type.

`nox -s typecheck` runs mypy --strict over this file as well as over src/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_type

from toolcycle import (
    CancellationToken,
    Change,
    ContentPart,
    Image,
    Text,
    ToolCapability,
    ToolDeactivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolInstance,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    Validation,
)


class Echo:
    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="echo", capability=ToolCapability(writes=False))

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return params

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class AsyncEcho:
    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="aecho")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return params

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


def sync_usage() -> None:
    tool: ToolInstance = Echo()
    async_tool: ToolInstance = AsyncEcho()
    with ToolRuntime() as runtime:
        assert_type(runtime.register(tool), ToolDescriptor)
        runtime.register(async_tool)
        with runtime.plan(read_only=True) as ctx:
            assert_type(ctx, ToolExecutionContext)
            result = runtime.execute("echo", {"a": 1}, ctx, timeout=1.0)
            assert_type(result, ToolResult)
            assert_type(result.trace, ToolExecutionTrace | None)
            assert_type(result.validation, Validation | None)
            assert_type(result.changes, tuple[Change, ...])
            assert_type(result.content, tuple[ContentPart, ...])
            assert_type(result.metadata, dict[str, Any] | None)
            assert_type(result.to_messages("anthropic"), list[dict[str, Any]])
            token = ctx.cancellation_token
            assert_type(token, CancellationToken)
            assert_type(token.on_cancel(lambda: None), Callable[[], None])
        errors = runtime.end_plan(ctx)
        assert_type(errors, list[ToolDeactivationError])


def rich_returns() -> None:
    returned = ToolReturn(value={"rows": 3}, content=[Text("a chart"), Image(b"...", "image/png")])
    assert_type(returned, ToolReturn[dict[str, int]])
    assert_type(returned.content, tuple[ContentPart, ...])
    assert_type(Image.from_base64("AAE=", "image/png"), Image)
    assert_type(ToolReturn(content=Text("only text")).metadata, dict[str, Any])


async def async_usage() -> None:
    with ToolRuntime() as runtime:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("aecho", {}, ctx)
            assert_type(result, ToolResult)
            await runtime.aactivate("aecho", ctx)
        assert_type(await runtime.aend_plan(ctx), list[ToolDeactivationError])


def langchain_adapter_usage() -> None:
    from langchain_core.tools import BaseTool, StructuredTool

    from toolcycle.adapters.langchain import from_langchain, langchain_tools

    with ToolRuntime() as runtime, runtime.plan() as ctx:
        assert_type(langchain_tools(runtime, ctx), list[BaseTool])
    native = StructuredTool.from_function(lambda text: text, name="echo", description="Echo.")
    assert_type(from_langchain(native, writes=False, tags=["x"]), ToolInstance)


def openai_agents_adapter_usage() -> None:
    from agents import Agent, FunctionTool, Runner, Tool, function_tool

    from toolcycle.adapters.openai_agents import (
        SdkFunctionTool,
        from_function_tool,
        function_tools,
    )

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert_type(add, FunctionTool)
    wrapped = from_function_tool(add, writes=False, checkpointable=True, requires_approval=False)
    assert_type(wrapped, SdkFunctionTool)
    as_tool: ToolInstance = wrapped
    with ToolRuntime() as runtime:
        assert_type(runtime.register(as_tool), ToolDescriptor)
        with runtime.plan() as ctx:
            assert_type(function_tools(runtime, ctx), list[Tool])
            assert_type(function_tools(runtime, ctx, approval="writes"), list[Tool])
            by_rule = function_tools(runtime, ctx, approval=lambda d: d.capability.writes)
            agent = Agent(name="typed", tools=function_tools(runtime, ctx) + by_rule)
            assert_type(Runner.run_sync(agent, "go").final_output, Any)


async def openai_agents_approval_usage() -> None:
    from agents import Agent, Runner, ToolApprovalItem

    from toolcycle.adapters.openai_agents import function_tools, reject

    with ToolRuntime() as runtime:
        async with runtime.aplan() as ctx:
            agent = Agent(name="mail", tools=function_tools(runtime, ctx, approval="writes"))
            first = await Runner.run(agent, "go")
            state = first.to_state()
            for item in first.interruptions:
                assert_type(item, ToolApprovalItem)
                assert_type(await reject(runtime, ctx, state, item, "not now"), ToolResult)
