"""Steps about ending a plan while one of its calls runs."""

from __future__ import annotations

import threading
from typing import Any

from behave import given, then, when

import toolcycle

WAIT = 5.0


class _Diligent:
    """A sync tool that works until its call token is cancelled; its stages are recorded."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = threading.Event()
        self.stages: list[str] = []

    def discover(self) -> toolcycle.ToolDescriptor:
        return toolcycle.ToolDescriptor(name=self.name, capability={"writes": False})

    def activate(self, ctx: toolcycle.ToolExecutionContext) -> None:
        self.stages.append("activate")

    def execute(self, params: dict[str, Any], ctx: toolcycle.ToolExecutionContext) -> Any:
        token = ctx.call_token
        stop = threading.Event()
        token.on_cancel(stop.set)
        self.started.set()
        stop.wait(WAIT)
        self.stages.append("stopped")
        token.check()
        return "done"

    def deactivate(self, ctx: toolcycle.ToolExecutionContext) -> None:
        self.stages.append("deactivate")


@given('a sync tool "{name:Name}" that works until its call is cancelled')
def diligent_tool(context: Any, name: str) -> None:
    tool = _Diligent(name)
    context.runtime.register(tool)
    context.tools[name] = tool


@when('plan "{plan_id:Name}" ends while "{name:Name}" runs')
def end_while_running(context: Any, plan_id: str, name: str) -> None:
    ctx = context.plans[plan_id]
    tool = context.tools[name]
    outcome: list[BaseException | toolcycle.ToolResult] = []

    def run() -> None:
        try:
            outcome.append(context.runtime.execute(name, {}, ctx))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert tool.started.wait(WAIT)
    context.deactivation_errors = context.runtime.end_plan(ctx)
    worker.join(WAIT)
    assert not worker.is_alive()
    context.error = outcome[0] if isinstance(outcome[0], BaseException) else None


@then('"{name:Name}" stopped before it was deactivated')
def stopped_first(context: Any, name: str) -> None:
    assert context.tools[name].stages == ["activate", "stopped", "deactivate"], context.tools[
        name
    ].stages


@then('a new call of "{name:Name}" in plan "{plan_id:Name}" raises ToolRuntimeError')
def refused_after_end(context: Any, name: str, plan_id: str) -> None:
    try:
        context.runtime.execute(name, {}, context.plans[plan_id])
    except toolcycle.ToolRuntimeError as error:
        assert "has ended" in str(error)
    else:
        raise AssertionError("a call in an ended plan must raise ToolRuntimeError")
