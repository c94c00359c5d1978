"""Tools with an event loop of their own: sync calls run their coroutines there directly."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRegistrationError,
    ToolRuntime,
)

WAIT = 5.0


class LoopThread:
    """An event loop serving in a thread of its own, like an MCP source's."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="tool-loop")
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()


class LoopTool:
    """An async tool that names its loop and records where and how it ran."""

    def __init__(self, loop: Any, *, hang: bool = False) -> None:
        self.event_loop = loop
        self.hang = hang
        self.threads: list[str] = []
        self.started = threading.Event()
        self.cancelled = threading.Event()

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="looped")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.threads.append(threading.current_thread().name)
        self.started.set()
        if self.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        return "ran"

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    """A loop thread, stopped after the test."""
    served = LoopThread()
    yield served
    served.close()


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with a null tracer, closed after the test."""
    with ToolRuntime(tracer=NullTracer()) as rt:
        yield rt


def test_a_sync_call_runs_the_coroutine_on_the_tools_own_loop(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """Execute hops straight to the tool's loop; the runtime's portal is never started."""
    tool = LoopTool(loop_thread.loop)
    runtime.register(tool)
    with runtime.plan() as ctx:
        assert runtime.execute("looped", {}, ctx).output == "ran"
    assert tool.threads == ["tool-loop"]
    assert runtime._invoker.portal._loop is None


async def test_an_async_call_still_awaits_the_tool_from_the_callers_loop(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """Aexecute is unchanged: the tool itself hops to its loop when it needs to."""
    tool = LoopTool(loop_thread.loop)
    runtime.register(tool)
    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("looped", {}, ctx)).output == "ran"
    assert tool.threads == [threading.current_thread().name]


def test_a_timeout_cancels_the_task_on_the_tools_loop(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """A call over its timeout is timed_out, and its task saw the cancellation."""
    tool = LoopTool(loop_thread.loop, hang=True)
    runtime.register(tool)
    with runtime.plan() as ctx:
        result = runtime.execute("looped", {}, ctx, timeout=0.2)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert tool.cancelled.wait(WAIT)


def test_cancelling_the_plan_cancels_the_task_on_the_tools_loop(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """The plan's token reaches the task on the tool's loop; the call raises at once."""
    tool = LoopTool(loop_thread.loop, hang=True)
    runtime.register(tool)
    with runtime.plan() as ctx:

        def cancel() -> None:
            if tool.started.wait(WAIT):
                ctx.cancellation_token.cancel("stop")

        canceller = threading.Thread(target=cancel)
        canceller.start()
        with pytest.raises(ToolCancelledError):
            runtime.execute("looped", {}, ctx)
        canceller.join(WAIT)
    assert tool.cancelled.wait(WAIT)


def test_a_sync_call_from_the_tools_own_loop_fails_instead_of_deadlocking(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """Blocking on the loop one is running on would wait for ever; the call fails and says so."""
    runtime.register(LoopTool(loop_thread.loop))
    with runtime.plan() as ctx:
        runtime.execute("looped", {}, ctx).raise_for_error()  # activated from this thread

        async def from_the_loop() -> Any:
            return runtime.execute("looped", {}, ctx)

        result = asyncio.run_coroutine_threadsafe(from_the_loop(), loop_thread.loop).result(WAIT)
    assert not result.success
    assert "await runtime.aexecute" in (result.error or "")


def test_a_model_call_from_the_tools_own_loop_is_refused_with_the_advice_to_await_acall(
    runtime: ToolRuntime, loop_thread: LoopThread
) -> None:
    """The refusal names the async twin of the method called: acall for call."""
    runtime.register(LoopTool(loop_thread.loop))
    with runtime.plan() as ctx:
        runtime.execute("looped", {}, ctx).raise_for_error()

        async def from_the_loop() -> Any:
            return runtime.call({"name": "looped", "arguments": {}}, ctx)

        result = asyncio.run_coroutine_threadsafe(from_the_loop(), loop_thread.loop).result(WAIT)
    assert not result.success
    assert "tool's own event loop, where it would wait on itself" in (result.error or "")
    assert "await runtime.acall(...) instead" in (result.error or "")


def test_closing_from_the_tools_own_loop_logs_the_advice_to_await_aclose(
    loop_thread: LoopThread, caplog: pytest.LogCaptureFixture
) -> None:
    """A close whose deactivation is refused on the tool's loop says to await aclose."""
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(LoopTool(loop_thread.loop))
    runtime.execute("looped", {}, runtime.new_context()).raise_for_error()

    async def from_the_loop() -> None:
        runtime.close()

    caplog.set_level("WARNING", logger="toolcycle.runtime")
    asyncio.run_coroutine_threadsafe(from_the_loop(), loop_thread.loop).result(WAIT)
    logged = [r for r in caplog.records if r.getMessage() == "tool.deactivate_failed"]
    assert logged, caplog.records
    error = str(vars(logged[0]).get("error"))
    assert "where it would wait on itself; await runtime.aclose() instead" in error


def test_an_event_loop_attribute_that_is_not_a_loop_is_refused(runtime: ToolRuntime) -> None:
    """Registration names the tool and the wrong type."""
    with pytest.raises(ToolRegistrationError, match="'looped' is a str"):
        runtime.register(LoopTool("not a loop"))


class PlanLoopTool(LoopTool):
    """A LoopTool that names another loop for the plans listed in ``plans``."""

    def __init__(self, loop: Any, plan_loop: Any, plans: set[str]) -> None:
        super().__init__(loop)
        self.plan_loop = plan_loop
        self.plans = plans
        self.stages: list[tuple[str, str]] = []

    def event_loop_for(self, ctx: ToolExecutionContext) -> Any:
        return self.plan_loop if ctx.plan_id in self.plans else None

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append(("activate", threading.current_thread().name))

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append(("deactivate", threading.current_thread().name))


@pytest.fixture
def plan_loop_thread() -> Iterator[LoopThread]:
    """A second loop thread, named plan-loop, stopped after the test."""
    served = LoopThread()
    served.thread.name = "plan-loop"
    yield served
    served.close()


def test_a_tool_can_name_a_loop_per_plan_for_sync_activation_and_calls(
    runtime: ToolRuntime, loop_thread: LoopThread, plan_loop_thread: LoopThread
) -> None:
    """event_loop_for picks the loop of activate and execute; deactivate keeps event_loop."""
    tool = PlanLoopTool(loop_thread.loop, plan_loop_thread.loop, {"own"})
    runtime.register(tool)
    for plan_id in ("own", "other"):
        with runtime.plan(plan_id) as ctx:
            assert runtime.execute("looped", {}, ctx).output == "ran"
    assert tool.threads == ["plan-loop", "tool-loop"]
    assert tool.stages == [
        ("activate", "plan-loop"),
        ("deactivate", "tool-loop"),
        ("activate", "tool-loop"),
        ("deactivate", "tool-loop"),
    ]


def test_a_sync_call_on_the_thread_of_a_plans_loop_fails_instead_of_deadlocking(
    runtime: ToolRuntime, loop_thread: LoopThread, plan_loop_thread: LoopThread
) -> None:
    """The runtime refuses a blocking call made on the loop the tool names for the plan."""
    runtime.register(PlanLoopTool(loop_thread.loop, plan_loop_thread.loop, {"own"}))
    with runtime.plan("own") as ctx:
        assert runtime.execute("looped", {}, ctx).success  # from here it runs there

        async def from_the_loop() -> Any:
            return runtime.execute("looped", {}, ctx)

        result = asyncio.run_coroutine_threadsafe(from_the_loop(), plan_loop_thread.loop)
        refused = result.result(WAIT)
    assert not refused.success
    assert "wait on itself" in (refused.error or "")
