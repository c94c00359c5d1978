"""Given steps that register the tools the scenarios need.

Most tools are `toolcycle.testing.FakeTool`s; the few behaviours a fake cannot
be configured for (waiting on a gate, hanging, async stages) are small
subclasses or classes defined here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from typing import TYPE_CHECKING, Any

import pydantic
from behave import given, when

from toolcycle import Change, ToolCapability, ToolDescriptor, ToolExecutionContext, ToolResult
from toolcycle.testing import FakeTool

if TYPE_CHECKING:
    from collections.abc import Callable

WAIT = 5.0
"""Upper bound, in seconds, of every wait in these steps."""

ERRORS: dict[str, Callable[[], Exception]] = {
    "ValueError": lambda: ValueError("bad value"),
    "KeyError": lambda: KeyError("missing"),
    "ConnectionError": lambda: ConnectionError("no server"),
    "OSError": lambda: OSError("cannot close"),
}


@dataclasses.dataclass
class Point:
    x: int


class Model(pydantic.BaseModel):
    x: int


def _self_containing_list() -> list[Any]:
    items: list[Any] = []
    items.append(items)
    return items


PYTHON_VALUES: dict[str, Callable[[], Any]] = {
    "tuple (1, 2)": lambda: (1, 2),
    "dataclass x=3": lambda: Point(3),
    "model x=3": lambda: Model(x=3),
    "nested tuples": lambda: ((1,), (2,)),
    "NaN": lambda: float("nan"),
    "infinity": lambda: float("inf"),
    "integer key": lambda: {1: "one"},
    "list holding itself": _self_containing_list,
}


@dataclasses.dataclass(eq=False)
class LoggedTool(FakeTool):
    """A fake that also writes its activations and deactivations into a shared log."""

    log: list[str] = dataclasses.field(default_factory=list)

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(f"activate {self.name}")
        super().activate(ctx)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(f"deactivate {self.name}")
        super().deactivate(ctx)


@dataclasses.dataclass(eq=False)
class GatedTool(LoggedTool):
    """Activation says it has started, then waits for the gate to open."""

    entered: threading.Event = dataclasses.field(default_factory=threading.Event)
    gate: threading.Event = dataclasses.field(default_factory=threading.Event)

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.entered.set()
        if not self.gate.wait(WAIT):
            raise TimeoutError("the gate never opened")
        super().activate(ctx)


@dataclasses.dataclass(eq=False)
class BlockingTool(LoggedTool):
    """Execute blocks until the given event is set (at the end of the scenario)."""

    release: threading.Event = dataclasses.field(default_factory=threading.Event)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        super().execute(params, ctx)
        self.release.wait(WAIT)
        return {"finished": True}


@dataclasses.dataclass(eq=False)
class CheckingTool(LoggedTool):
    """Execute waits until the plan is cancelled, then checks the token as a loop would."""

    started: threading.Event = dataclasses.field(default_factory=threading.Event)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        super().execute(params, ctx)
        token = ctx.cancellation_token
        woken = threading.Event()
        token.on_cancel(woken.set)
        self.started.set()
        woken.wait(WAIT)
        token.check()
        return {"finished": True}


@dataclasses.dataclass(eq=False)
class HangingDeactivateTool(LoggedTool):
    """Deactivate blocks until the given event is set (at the end of the scenario)."""

    release: threading.Event = dataclasses.field(default_factory=threading.Event)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        super().deactivate(ctx)
        self.release.wait(WAIT)


@dataclasses.dataclass(eq=False)
class DefaultCapabilityTool(LoggedTool):
    """Describes itself without a capability, so the descriptor's defaults apply."""

    def discover(self) -> ToolDescriptor:
        super().discover()
        return ToolDescriptor(name=self.name)


class AsyncTool:
    """A tool whose stages are coroutines; records them like a FakeTool does.

    Args:
        name: the tool's name.
        mode: ``"returns"`` (execute returns ``output``), ``"runs until cancelled"``
            or ``"deactivation never finishes"``.
        output: what execute returns in ``"returns"`` mode.
    """

    def __init__(self, name: str, mode: str, output: Any = None) -> None:
        self.name = name
        self.mode = mode
        self.output = output
        self.calls: list[tuple[str, str]] = []
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.on_start: Callable[[], object] | None = None

    def stages(self, plan_id: str | None = None) -> list[str]:
        return [stage for stage, plan in self.calls if plan_id in (None, plan)]

    def count(self, stage: str, plan_id: str | None = None) -> int:
        return self.stages(plan_id).count(stage)

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, capability=ToolCapability(writes=False))

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.calls.append(("activate", ctx.plan_id))

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.calls.append(("execute", ctx.plan_id))
        self.started.set()
        if self.on_start is not None:
            self.on_start()
        if self.mode == "runs until cancelled":
            try:
                await asyncio.wait_for(asyncio.Event().wait(), WAIT)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        return self.output

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.calls.append(("deactivate", ctx.plan_id))
        if self.mode == "deactivation never finishes":
            await asyncio.wait_for(asyncio.Event().wait(), WAIT)


def _register(context: Any, tool: Any) -> None:
    if isinstance(tool, LoggedTool):
        tool.log = context.order
    context.tools[tool.name] = tool
    context.runtime.register(tool)


def _flag(text: str) -> bool:
    return {"true": True, "false": False}[text]


def _changes(targets: str) -> tuple[Change, ...]:
    return tuple(Change(kind="write", target=t.strip()) for t in targets.split(","))


def _echo(params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    return params


@given('a tool "{name:Name}" that reads')
def tool_that_reads(context: Any, name: str) -> None:
    tool = LoggedTool(name=name, writes=False, checkpointable=True, output={"ok": True})
    _register(context, tool)


@given('a tool "{name:Name}" with writes {writes} and checkpointable {checkpointable}')
def tool_with_capability(context: Any, name: str, writes: str, checkpointable: str) -> None:
    tool = LoggedTool(
        name=name, writes=_flag(writes), checkpointable=_flag(checkpointable), output={"ok": True}
    )
    _register(context, tool)


@given('a tool "{name:Name}" with the default capability')
def tool_with_default_capability(context: Any, name: str) -> None:
    _register(context, DefaultCapabilityTool(name=name, output={"ok": True}))


@given('a tool "{name:Name}" that takes an integer "{field:Name}"')
def tool_taking_integer(context: Any, name: str, field: str) -> None:
    schema = {"type": "object", "properties": {field: {"type": "integer"}}, "required": [field]}
    _register(context, LoggedTool(name=name, input_schema=schema, output=_echo))


@given('a tool "{name:Name}" that takes an integer "{field:Name}" and nothing else')
def tool_taking_only_integer(context: Any, name: str, field: str) -> None:
    schema = {
        "type": "object",
        "properties": {field: {"type": "integer"}},
        "required": [field],
        "additionalProperties": False,
    }
    _register(context, LoggedTool(name=name, input_schema=schema, output=_echo))


@given('a tool "{name:Name}" whose input schema is {schema}')
def tool_with_input_schema(context: Any, name: str, schema: str) -> None:
    _register(context, LoggedTool(name=name, input_schema=json.loads(schema), output=_echo))


@given('a tool "{name:Name}" that returns its arguments')
def tool_returning_arguments(context: Any, name: str) -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    _register(context, LoggedTool(name=name, input_schema=schema, output=_echo))


@given('a tool "{name:Name}" that returns JSON {output}')
def tool_returning_json(context: Any, name: str, output: str) -> None:
    _register(context, LoggedTool(name=name, output=json.loads(output)))


@given('a tool "{name:Name}" with output schema {schema} that returns JSON {output}')
def tool_with_output_schema(context: Any, name: str, schema: str, output: str) -> None:
    tool = LoggedTool(name=name, output=json.loads(output), output_schema=json.loads(schema))
    _register(context, tool)


@given('a tool "{name:Name}" that returns the Python value "{label}"')
def tool_returning_python_value(context: Any, name: str, label: str) -> None:
    _register(context, LoggedTool(name=name, output=PYTHON_VALUES[label]()))


@given('a tool "{name:Name}" that raises {error}')
def tool_that_raises(context: Any, name: str, error: str) -> None:
    _register(context, LoggedTool(name=name, execute_error=ERRORS[error]()))


@given('a tool "{name:Name}" whose activation fails with {error}')
def tool_failing_activation(context: Any, name: str, error: str) -> None:
    _register(context, LoggedTool(name=name, activate_error=ERRORS[error](), output={"ok": True}))


@when('the activation of "{name:Name}" is repaired')
def repair_activation(context: Any, name: str) -> None:
    context.tools[name].activate_error = None


@given('a tool "{name:Name}" whose activation waits for a gate')
def tool_with_gated_activation(context: Any, name: str) -> None:
    _register(context, GatedTool(name=name, output={"ok": True}))


@given('a tool "{name:Name}" whose activation waits for a gate and then fails')
def tool_with_gated_failing_activation(context: Any, name: str) -> None:
    _register(context, GatedTool(name=name, activate_error=ERRORS["ConnectionError"]()))


@given('a tool "{name:Name}" whose deactivation fails with {error}')
def tool_failing_deactivation(context: Any, name: str, error: str) -> None:
    _register(context, LoggedTool(name=name, deactivate_error=ERRORS[error](), output={}))


@given('a tool "{name:Name}" whose deactivation blocks until the scenario ends')
def tool_hanging_deactivation(context: Any, name: str) -> None:
    _register(context, HangingDeactivateTool(name=name, release=context.hang, output={}))


@given('a tool "{name:Name}" that blocks until the scenario ends')
def tool_blocking(context: Any, name: str) -> None:
    _register(context, BlockingTool(name=name, release=context.hang))


@given('a tool "{name:Name}" that checks the token until it is cancelled')
def tool_checking_token(context: Any, name: str) -> None:
    _register(context, CheckingTool(name=name))


@given('a tool "{name:Name}" that records changes to "{targets}"')
def tool_recording_changes(context: Any, name: str, targets: str) -> None:
    _register(context, LoggedTool(name=name, changes=_changes(targets), output={"ok": True}))


@given('a tool "{name:Name}" that records a change to "{recorded}" and returns one to "{returned}"')
def tool_recording_and_returning(context: Any, name: str, recorded: str, returned: str) -> None:
    result = ToolResult(success=True, output={"ok": True}, changes=_changes(returned))
    _register(context, LoggedTool(name=name, changes=_changes(recorded), output=result))


@given('an async tool "{name:Name}" that runs until cancelled')
def async_tool_running(context: Any, name: str) -> None:
    _register(context, AsyncTool(name, "runs until cancelled"))


@given('an async tool "{name:Name}" that returns JSON {output}')
def async_tool_returning(context: Any, name: str, output: str) -> None:
    _register(context, AsyncTool(name, "returns", json.loads(output)))


@given('an async tool "{name:Name}" whose deactivation never finishes')
def async_tool_hanging_deactivation(context: Any, name: str) -> None:
    _register(context, AsyncTool(name, "deactivation never finishes", {"ok": True}))
