"""Given steps that register tools of every kind the scenarios need."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from behave import given

from toolcycle import Change, ToolCapability, ToolDescriptor, ToolExecutionContext
from toolcycle.testing import FakeTool

WAIT = 5.0


class OrderedTool(FakeTool):
    """A fake tool that also writes its stages into a shared, ordered log."""

    log: list[str]

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(f"activate {self.name}")
        super().activate(ctx)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(f"deactivate {self.name}")
        super().deactivate(ctx)


def _register(context: Any, tool: FakeTool) -> None:
    tool.log = context.order  # type: ignore[attr-defined]
    context.tools[tool.name] = tool
    context.runtime.register(tool)


def _fake(name: str, **options: Any) -> OrderedTool:
    return OrderedTool(name=name, **options)


@given('a tool "{name}" that reads and cannot be rolled back')
def tool_reads_not_checkpointable(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=False, checkpointable=False, output={"ok": True}))


@given('a tool "{name}" that returns {output} against the output schema {schema}')
def tool_with_output_schema(context: Any, name: str, output: str, schema: str) -> None:
    _register(
        context,
        _fake(name, writes=False, output=json.loads(output), output_schema=json.loads(schema)),
    )


@given('a tool "{name}" that returns {output}')
def tool_that_returns(context: Any, name: str, output: str) -> None:
    _register(context, _fake(name, writes=False, output=json.loads(output)))


@given('a tool "{name}" that reads')
def tool_that_reads(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=False, checkpointable=True, output={"ok": True}))


@given('a tool "{name}" that writes and can be rolled back')
def tool_that_writes_checkpointable(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=True, checkpointable=True, output={"ok": True}))


@given('a tool "{name}" that writes and cannot be rolled back')
def tool_that_writes(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=True, checkpointable=False, output={"ok": True}))


@given('a tool "{name}" that takes an integer "{field}"')
def tool_with_integer(context: Any, name: str, field: str) -> None:
    schema = {
        "type": "object",
        "properties": {field: {"type": "integer"}},
        "required": [field],
    }
    _register(
        context,
        _fake(name, writes=False, input_schema=schema, output=lambda params, ctx: params),
    )


@given('a tool "{name}" that records {count:d} changes')
def tool_recording_changes(context: Any, name: str, count: int) -> None:
    changes = tuple(Change(kind="write", target=f"file-{i}", tool_name=name) for i in range(count))
    _register(context, _fake(name, writes=False, changes=changes))


@given('a tool "{name}" whose activation fails')
def tool_failing_activation(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=False, activate_error=ConnectionError("no server")))


@given('a tool "{name}" that raises {error}')
def tool_that_raises(context: Any, name: str, error: str) -> None:
    errors = {"ValueError": ValueError("bad value"), "KeyError": KeyError("missing")}
    _register(context, _fake(name, writes=False, execute_error=errors[error]))


@given('a tool "{name}" whose deactivation fails')
def tool_failing_deactivation(context: Any, name: str) -> None:
    _register(context, _fake(name, writes=False, deactivate_error=OSError("cannot close")))


@given('a tool "{name}" whose deactivation hangs')
def tool_hanging_deactivation(context: Any, name: str) -> None:
    release = context.release

    class Hangs(OrderedTool):
        def deactivate(self, ctx: ToolExecutionContext) -> None:
            super().deactivate(ctx)
            release.wait(WAIT)

    _register(context, Hangs(name=name, writes=False))


@given('a tool "{name}" whose activation waits until released')
def tool_slow_activation(context: Any, name: str) -> None:
    release = context.release
    context.activation_entered = threading.Event()
    entered = context.activation_entered

    class Slow(OrderedTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            super().activate(ctx)
            entered.set()
            assert release.wait(WAIT)

    _register(context, Slow(name=name, writes=False))


class BlockingAsyncTool:
    """An async tool whose execute blocks until it is cancelled."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.activations = 0

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, capability=ToolCapability(writes=False))

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.activations += 1

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


@given('an async tool "{name}" that runs until cancelled')
def async_blocking_tool(context: Any, name: str) -> None:
    tool = BlockingAsyncTool(name)
    context.tools[name] = tool
    context.runtime.register(tool)
