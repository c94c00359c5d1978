"""Ending a plan while calls run; activations within a call's limit; nothing left behind."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    RetryPolicy,
    ToolActivationError,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    ToolRuntimeError,
)
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0


class Polite:
    """A sync tool that works until its call token is cancelled; its stages are recorded."""

    def __init__(self, name: str = "polite") -> None:
        self.name = name
        self.started = threading.Event()
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("activate")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        token = ctx.call_token
        stop = threading.Event()
        token.on_cancel(stop.set)
        self.stages.append("execute")
        self.started.set()
        stop.wait(WAIT)
        self.stages.append("stopped")
        token.check()
        return "finished"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")


class Stubborn(Polite):
    """A sync tool that ignores its token and runs until released."""

    def __init__(self, name: str = "stubborn") -> None:
        super().__init__(name)
        self.release = threading.Event()
        self.done = threading.Event()

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.stages.append("execute")
        self.started.set()
        self.release.wait(WAIT)
        self.stages.append("stopped")
        self.done.set()
        return "finished"


class Rerunnable(Stubborn):
    """A `Stubborn` tool that is idempotent, so that a `RetryPolicy` may run it again."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, capability={"writes": False, "idempotent": True})


class Endless:
    """An async tool that waits until it is cancelled, then notes it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="endless", capability={"writes": False})

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("activate")

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.stages.append("execute")
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stages.append("stopped")

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")


class GatedActivate:
    """A sync tool whose first activate waits on ``gate``; the later ones return at once."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.finished = threading.Event()
        self.deactivated = threading.Event()
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="gated", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        first = "activate" not in self.stages
        self.stages.append("activate")
        if first:
            self.entered.set()
            self.gate.wait(WAIT)
            self.finished.set()

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")
        self.deactivated.set()


def _in_thread(
    target: Callable[[], Any], *, daemon: bool = False
) -> tuple[threading.Thread, list[Any]]:
    """Run ``target`` on a thread; the list gets what it returned or raised.

    A ``daemon`` thread does not keep the test run alive if it deadlocks.
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(target())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=daemon)
    thread.start()
    return thread, outcome


# -- ending a plan with calls in flight -------------------------------------------------


def test_ending_a_plan_stops_its_running_call_before_deactivating() -> None:
    """The call's token is cancelled, the end waits for it, and only then deactivates."""
    tool = Polite()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        worker, outcome = _in_thread(lambda: runtime.execute("polite", {}, ctx))
        assert tool.started.wait(WAIT)
        assert runtime.end_plan(ctx) == []
        worker.join(WAIT)
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]
    [error] = outcome
    assert isinstance(error, ToolCancelledError)
    assert "ended" in str(error)


def test_new_calls_are_refused_at_once_while_the_plan_end_waits(
    draining: Callable[[str], bool],
) -> None:
    """While the end waits for a call, execute and call raise ToolRuntimeError at once."""
    tool = Stubborn()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        runtime.register(FakeTool())
        ctx = runtime.new_context("p")
        worker, outcome = _in_thread(lambda: runtime.execute("stubborn", {}, ctx))
        assert tool.started.wait(WAIT)
        ender, ended = _in_thread(lambda: runtime.end_plan(ctx))
        assert draining("p")
        try:
            with pytest.raises(ToolRuntimeError, match="has ended"):
                runtime.execute("fake", {}, ctx)
            with pytest.raises(ToolRuntimeError, match="has ended"):
                runtime.call({"name": "fake", "arguments": {}}, ctx)
            assert tool.stages == ["activate", "execute"]  # nothing deactivated yet
        finally:
            tool.release.set()
        ender.join(WAIT)
        worker.join(WAIT)
    assert ended == [[]]
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]
    assert outcome[0].success  # it finished while its tools were still active


async def test_aend_plan_cancels_a_running_async_call_then_deactivates() -> None:
    """The async call's task is cancelled; it reports the plan's end; then deactivation."""
    tool = Endless()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        call = asyncio.ensure_future(runtime.aexecute("endless", {}, ctx))
        await asyncio.wait_for(tool.started.wait(), WAIT)
        assert await asyncio.wait_for(runtime.aend_plan(ctx), WAIT) == []
        with pytest.raises(ToolCancelledError, match="ended while it ran"):
            await asyncio.wait_for(call, WAIT)
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]


async def test_leaving_aplan_with_a_call_in_flight_stops_it_first() -> None:
    """Leaving the scope is ending the plan: the running call stops before deactivation."""
    tool = Endless()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("endless", {}, ctx))
            await asyncio.wait_for(tool.started.wait(), WAIT)
        with pytest.raises(ToolCancelledError):
            await asyncio.wait_for(call, WAIT)
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]


def test_a_call_still_running_after_drain_timeout_is_abandoned_and_traced_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past drain_timeout the plan ends anyway; the late call's trace says abandoned."""
    tool = Stubborn()
    with ToolRuntime(drain_timeout=0.05) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        with capture_traces(runtime) as traces:
            worker, outcome = _in_thread(lambda: runtime.execute("stubborn", {}, ctx))
            assert tool.started.wait(WAIT)
            with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
                runtime.end_plan(ctx)
            assert tool.stages == ["activate", "execute", "deactivate"]
            tool.release.set()
            worker.join(WAIT)
    assert "plan.calls_abandoned" in caplog.text
    [trace] = traces
    assert trace.abandoned and outcome[0].trace.abandoned


@pytest.mark.parametrize(
    ("timeout", "retry"),
    [(None, None), (WAIT, None), (None, RetryPolicy(attempts=2, backoff=0, jitter=0))],
    ids=["pool", "own-thread", "retrying"],
)
async def test_a_sync_call_whose_caller_was_cancelled_is_waited_for_before_deactivating(
    draining: Callable[[str], bool], timeout: float | None, retry: RetryPolicy | None
) -> None:
    """Its thread runs on after the awaiting task is cancelled; the plan end waits for it."""
    tool = Rerunnable()
    with ToolRuntime(tracer=NullTracer(), abandon_timeout=WAIT) as runtime:
        runtime.register(tool, retry=retry)
        ctx = runtime.new_context("p")
        call = asyncio.ensure_future(runtime.aexecute("stubborn", {}, ctx, timeout=timeout))
        assert await asyncio.to_thread(tool.started.wait, WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, WAIT)
        ender = asyncio.ensure_future(runtime.aend_plan(ctx))
        try:
            assert await asyncio.to_thread(draining, "p")
            assert tool.stages == ["activate", "execute"]  # nothing deactivated under it
        finally:
            tool.release.set()
        assert await asyncio.wait_for(ender, WAIT) == []
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]


async def test_an_aend_plan_cancelled_while_it_drains_still_waits_for_the_call_then_ends(
    draining: Callable[[str], bool], log_waiter: Callable[..., Any]
) -> None:
    """Cancelled (twice) while it waits, the end goes on waiting, deactivates, then re-raises."""
    tool = Stubborn()
    cancelled = log_waiter("toolcycle.lifecycle", "plan.end_cancelled", logging.DEBUG)
    with ToolRuntime(tracer=NullTracer(), drain_timeout=WAIT) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        call = asyncio.ensure_future(runtime.aexecute("stubborn", {}, ctx))
        assert await asyncio.to_thread(tool.started.wait, WAIT)
        ender = asyncio.ensure_future(runtime.aend_plan(ctx))

        def heard(times: int) -> bool:
            with cancelled.changed:
                return cancelled.changed.wait_for(lambda: len(cancelled.plans) == times, WAIT)

        try:
            assert await asyncio.to_thread(draining, "p")
            ender.cancel()
            assert await asyncio.to_thread(heard, 1)
            ender.cancel()  # as a cancel scope does, at every await
            assert await asyncio.to_thread(heard, 2)
            assert tool.stages == ["activate", "execute"]  # nothing deactivated under the call
        finally:
            tool.release.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(ender, WAIT)
        assert (await asyncio.wait_for(call, WAIT)).success
    assert tool.stages == ["activate", "execute", "stopped", "deactivate"]
    assert ctx.ended


@pytest.mark.parametrize("timeout", [None, 60.0], ids=["no-limit", "limit"])
def test_a_call_whose_event_loop_closed_does_not_hold_up_the_plan_end(
    caplog: pytest.LogCaptureFixture, timeout: float | None
) -> None:
    """A call left on a loop that closed is abandoned at once; its tool is still deactivated."""
    stages: list[str] = []
    started = threading.Event()

    class Waits:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="waits", capability={"writes": False})

        def activate(self, ctx: ToolExecutionContext) -> None:
            stages.append("activate")

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
            started.set()
            await asyncio.Event().wait()  # only a cancellation ends it, and none can reach it
            return "never"

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            stages.append("deactivate")

    tool = Waits()
    # No drain limit: a plan end that waited for the orphaned call would never return.
    runtime = ToolRuntime(tracer=NullTracer(), drain_timeout=None)
    runtime.register(tool)
    ctx = runtime.new_context("orphan")
    loop = asyncio.new_event_loop()

    async def start() -> asyncio.Future[Any]:
        running = asyncio.ensure_future(runtime.aexecute("waits", {}, ctx, timeout=timeout))
        while not started.is_set():
            await asyncio.sleep(0)
        return running

    call = loop.run_until_complete(start())
    loop.close()
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        ender, errors = _in_thread(lambda: runtime.end_plan(ctx))
        ender.join(WAIT)
    assert not ender.is_alive() and errors == [[]]
    assert "plan.calls_orphaned" in caplog.text
    assert stages == ["activate", "deactivate"]
    call.get_coro().close()  # what the garbage collector would do: it unwinds quietly
    call._log_destroy_pending = False  # type: ignore[attr-defined]  # pending for good, by design
    runtime.close()


def test_drain_timeout_must_be_seconds() -> None:
    """A negative or NaN drain_timeout is refused when the runtime is built."""
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="drain_timeout"):
            ToolRuntime(drain_timeout=bad)


# How a call reaches its tool: by execute (from a plain thread or from inside a coroutine)
# or aexecute, with a time limit or without. Between them the tool runs inline, on a fresh
# thread, on the worker pool, on the portal's loop, or in a task of its own.
SELF_END_WAYS = [
    ("sync", "execute", None),
    ("sync", "execute", WAIT),
    ("sync", "execute in a task", None),
    ("sync", "aexecute", None),
    ("sync", "aexecute", WAIT),
    ("async", "execute", None),
    ("async", "aexecute", None),
    ("async", "aexecute", WAIT),
]


@pytest.mark.parametrize(
    ("kind", "how", "timeout"),
    SELF_END_WAYS,
    ids=[f"{kind} tool, {how}{', limit' if limit else ''}" for kind, how, limit in SELF_END_WAYS],
)
def test_a_tool_that_ends_its_own_plan_is_not_waited_for(
    kind: str, how: str, timeout: float | None
) -> None:
    """Ending the plan from inside one of its calls does not wait for that call."""
    holder: dict[str, Any] = {}

    def closer() -> str:
        """End the plan this call runs in."""
        holder["runtime"].end_plan(holder["ctx"])
        return "closed"

    async def aclose() -> str:
        """End the plan this call runs in, from async code."""
        await holder["runtime"].aend_plan(holder["ctx"])
        return "closed"

    async def inside(runtime: ToolRuntime, ctx: ToolExecutionContext, name: str) -> Any:
        if how == "aexecute":
            return await runtime.aexecute(name, {}, ctx, timeout=timeout)
        return runtime.execute(name, {}, ctx, timeout=timeout)

    tool = closer if kind == "sync" else aclose
    with ToolRuntime(tracer=NullTracer(), drain_timeout=WAIT) as runtime:
        runtime.register(tool)
        ctx = holder["ctx"] = runtime.new_context()
        holder["runtime"] = runtime
        with capture_traces(runtime) as traces:
            if how == "execute":
                result = runtime.execute(tool.__name__, {}, ctx, timeout=timeout)
            else:
                result = asyncio.run(inside(runtime, ctx, tool.__name__))
    assert result.output == "closed"
    assert ctx.ended and not traces[0].abandoned


# -- a call's limit covers the activation it triggers ----------------------------------


def test_a_call_limit_covers_a_slow_first_activation() -> None:
    """execute(timeout=0.2) comes back timed out while activate still runs; it is kept."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            result = runtime.execute("gated", {}, ctx, timeout=0.2)
            assert not tool.finished.is_set()  # back before activate finished
            assert result.trace is not None and result.trace.status == "timed_out"
            assert "within 0.2 seconds" in str(result.error)
            tool.gate.set()
            assert runtime.execute("gated", {}, ctx, timeout=WAIT).output == "ran"
            assert tool.stages == ["activate"]  # the first activate was the plan's
    assert tool.stages == ["activate", "deactivate"]


async def test_an_aexecute_limit_covers_a_slow_first_activation() -> None:
    """The async path returns at the call's limit too, and later calls share the activate."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("gated", {}, ctx, timeout=0.2)
            assert not tool.finished.is_set()
            assert result.trace is not None and result.trace.status == "timed_out"
            tool.gate.set()
            assert (await runtime.aexecute("gated", {}, ctx)).output == "ran"
    assert tool.stages == ["activate", "deactivate"]


async def test_a_call_limit_cancels_a_slow_async_activate_and_the_next_call_retries() -> None:
    """An async activate is cancelled at the call's limit; nothing is cached."""
    gate = asyncio.Event()
    tool = FakeTool()
    attempts: list[str] = []

    async def activate(ctx: ToolExecutionContext) -> None:
        attempts.append("activate")
        if len(attempts) == 1:
            await gate.wait()

    tool.activate = activate  # type: ignore[method-assign]
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            result = await asyncio.wait_for(runtime.aexecute("fake", {}, ctx, timeout=0.1), WAIT)
            assert result.trace is not None and result.trace.status == "timed_out"
            assert runtime.cache.active_tools(ctx.plan_id) == ()
            assert (await runtime.aexecute("fake", {}, ctx)).success
    assert attempts == ["activate", "activate"]


def test_a_waiter_gives_up_at_its_own_limit() -> None:
    """A call waiting for another call's activation returns at its own limit too."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            owner, outcome = _in_thread(lambda: runtime.execute("gated", {}, ctx))
            assert tool.entered.wait(WAIT)
            waiter = runtime.execute("gated", {}, ctx, timeout=0.1)
            assert waiter.trace is not None and waiter.trace.status == "timed_out"
            tool.gate.set()
            owner.join(WAIT)
    assert outcome[0].success and tool.stages == ["activate", "deactivate"]


# -- sync activates that outlive their callers --------------------------------------------


def test_a_call_whose_plan_ends_while_its_sync_activate_runs_is_cancelled(
    draining: Callable[[str], bool],
) -> None:
    """The same ToolCancelledError as for an async activate; the late activation is undone."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        with capture_traces(runtime) as traces:
            caller, outcome = _in_thread(lambda: runtime.execute("gated", {}, ctx))
            assert tool.entered.wait(WAIT)
            ender, ended = _in_thread(lambda: runtime.end_plan(ctx))
            assert draining("p")
            tool.gate.set()
            caller.join(WAIT)
            ender.join(WAIT)
    [error] = outcome
    assert isinstance(error, ToolCancelledError), error
    assert "ended while tool 'gated' was activating" in str(error)
    assert [trace.status for trace in traces] == ["cancelled"]
    assert tool.stages == ["activate", "deactivate"] and ended == [[]]


def test_an_activate_that_outlives_its_calls_limit_and_its_plan_ends_quietly() -> None:
    """The call's limit passes, the plan ends, then activate returns: undone, nothing raised.

    It ends on the activate's own thread: an exception there would reach the host's
    ``threading.excepthook`` (by default, a traceback printed to stderr).
    """
    tool = GatedActivate()
    escaped: list[BaseException | None] = []
    previous, threading.excepthook = threading.excepthook, lambda a: escaped.append(a.exc_value)
    try:
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(tool)
            with runtime.plan() as ctx:
                result = runtime.execute("gated", {}, ctx, timeout=0.1)
            tool.gate.set()
            assert tool.deactivated.wait(WAIT)
            for thread in threading.enumerate():  # the activate's thread ends after it
                if thread.name == "toolcycle-call":
                    thread.join(WAIT)
    finally:
        threading.excepthook = previous
    assert result.trace is not None and result.trace.status == "timed_out"
    assert tool.stages == ["activate", "deactivate"]
    assert escaped == []


def test_a_late_sync_activate_after_the_plan_ended_is_deactivated_once() -> None:
    """activate_timeout passes, the plan ends, then activate succeeds: it is undone once."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        with pytest.raises(ToolActivationError, match="activate_timeout"):
            runtime.execute("gated", {}, ctx)
        assert runtime.end_plan(ctx) == []
        tool.gate.set()
        assert tool.deactivated.wait(WAIT)
    assert tool.stages == ["activate", "deactivate"]


class GatedAsyncDeactivate(GatedActivate):
    """GatedActivate whose ``deactivate`` is a coroutine, which needs an event loop."""

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        self.stages.append("deactivate")
        self.deactivated.set()


def test_an_async_deactivate_of_a_tool_activated_after_the_runtime_closed_still_runs() -> None:
    """close() gives up on a slow activate; once it returns, it is undone on a loop of its own."""
    tool = GatedAsyncDeactivate()
    runtime = ToolRuntime(tracer=NullTracer(), drain_timeout=0.05)
    runtime.register(tool)
    ctx = runtime.new_context("p")
    caller, outcome = _in_thread(lambda: runtime.execute("gated", {}, ctx))
    assert tool.entered.wait(WAIT)
    runtime.close()  # the plan ends without the activation; the runtime's loop stops
    tool.gate.set()
    caller.join(WAIT)
    assert tool.deactivated.wait(WAIT)
    assert tool.stages == ["activate", "deactivate"]
    assert isinstance(outcome[0], ToolCancelledError)


class SlowAsyncDeactivate:
    """An async tool whose ``deactivate`` waits, off its loop, until ``release`` is set."""

    def __init__(self) -> None:
        self.deactivating = threading.Event()
        self.release = threading.Event()
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="slow", capability={"writes": False})

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("activate")

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.deactivating.set()
        await asyncio.to_thread(self.release.wait, WAIT)
        self.stages.append("deactivated")


def test_close_waits_for_a_plan_end_under_way_on_another_thread(
    log_waiter: Callable[..., Any],
) -> None:
    """close() keeps the runtime's loop until another thread's end has deactivated its tools."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_plan_ends", logging.DEBUG)
    tool = SlowAsyncDeactivate()
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(tool)
    ctx = runtime.new_context("p")
    runtime.execute("slow", {}, ctx)
    ender, ended = _in_thread(lambda: runtime.end_plan(ctx))
    assert tool.deactivating.wait(WAIT)
    closer, closed = _in_thread(runtime.close)
    waited = awaiting.wait("")  # close() waits for the end under way
    tool.release.set()
    ender.join(WAIT)
    closer.join(WAIT)
    assert ended == [[]]  # the end finished, and raised nothing
    assert tool.stages == ["activate", "deactivated"]
    assert closed == [None] and runtime.closed and waited


def test_a_timed_out_call_after_its_plan_ended_leaves_nothing_for_a_later_plan() -> None:
    """A sync call abandoned by the end, then timed out, is not waited for by the next plan."""
    tool = Stubborn()
    with ToolRuntime(tracer=NullTracer(), drain_timeout=0.05, abandon_timeout=WAIT) as runtime:
        runtime.register(tool)
        first = runtime.new_context("p")
        worker, outcome = _in_thread(lambda: runtime.execute("stubborn", {}, first, timeout=0.3))
        assert tool.started.wait(WAIT)
        runtime.end_plan(first)  # gives up on the call after 0.05 s
        worker.join(WAIT)
        assert outcome[0].trace.status == "timed_out"  # it timed out after the end
        second = runtime.new_context("p")
        runtime.end_plan(second)
        assert not tool.done.is_set()  # the second end did not wait for the old call
        tool.release.set()
        assert tool.done.wait(WAIT)


# -- a second end of a plan whose end is under way ---------------------------------------


class HeldDeactivate:
    """A tool whose ``deactivate`` waits until ``release`` is set; sync or async."""

    def __init__(self, *, asynchronous: bool = False) -> None:
        self.deactivating = threading.Event()
        self.release = threading.Event()
        self.deactivated = threading.Event()
        if asynchronous:
            self.deactivate = self._adeactivate  # type: ignore[method-assign]

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="held", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.deactivating.set()
        self.release.wait(WAIT)
        self.deactivated.set()

    async def _adeactivate(self, ctx: ToolExecutionContext) -> None:
        self.deactivating.set()
        await asyncio.to_thread(self.release.wait, WAIT)
        self.deactivated.set()


def test_a_second_end_from_another_thread_returns_once_the_tools_are_deactivated(
    log_waiter: Callable[..., Any],
) -> None:
    """end_plan while another thread's end deactivates waits for it, then returns []."""
    awaiting = log_waiter("toolcycle.lifecycle", "plan.awaiting_end", logging.DEBUG)
    tool = HeldDeactivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        runtime.execute("held", {}, ctx)
        first, first_ended = _in_thread(lambda: runtime.end_plan(ctx))
        assert tool.deactivating.wait(WAIT)
        second, second_ended = _in_thread(
            lambda: (runtime.end_plan(ctx), tool.deactivated.is_set())
        )
        waited = awaiting.wait("p")  # the second end is waiting for the first
        tool.release.set()
        first.join(WAIT)
        second.join(WAIT)
    assert waited
    assert first_ended == [[]]
    assert second_ended == [([], True)]  # it returned after the deactivation, with []


async def test_a_second_aend_plan_returns_once_the_first_has_deactivated_the_tools(
    log_waiter: Callable[..., Any],
) -> None:
    """aend_plan while another task's aend_plan deactivates awaits it, then returns []."""
    awaiting = log_waiter("toolcycle.lifecycle", "plan.awaiting_end", logging.DEBUG)
    tool = HeldDeactivate(asynchronous=True)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        await runtime.aexecute("held", {}, ctx)
        first = asyncio.ensure_future(runtime.aend_plan(ctx))
        assert await asyncio.to_thread(tool.deactivating.wait, WAIT)

        async def second_end() -> tuple[list[Any], bool]:
            return await runtime.aend_plan(ctx), tool.deactivated.is_set()

        second = asyncio.ensure_future(second_end())
        waited = await asyncio.to_thread(awaiting.wait, "p")
        assert not second.done()  # its task is waiting, not the event loop
        tool.release.set()
        assert await asyncio.wait_for(first, WAIT) == []
        assert await asyncio.wait_for(second, WAIT) == ([], True)
    assert waited


async def test_a_second_aend_plan_waits_for_a_sync_end_on_another_thread(
    log_waiter: Callable[..., Any],
) -> None:
    """aend_plan while a thread's end_plan deactivates awaits that end without blocking."""
    awaiting = log_waiter("toolcycle.lifecycle", "plan.awaiting_end", logging.DEBUG)
    tool = HeldDeactivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        runtime.execute("held", {}, ctx)
        first, first_ended = _in_thread(lambda: runtime.end_plan(ctx))
        assert await asyncio.to_thread(tool.deactivating.wait, WAIT)
        second = asyncio.ensure_future(runtime.aend_plan(ctx))
        assert await asyncio.to_thread(awaiting.wait, "p")
        tool.release.set()
        assert await asyncio.wait_for(second, WAIT) == []
        assert tool.deactivated.is_set()
        await asyncio.to_thread(first.join, WAIT)
    assert first_ended == [[]]


async def test_a_sync_end_on_the_thread_of_an_async_end_under_way_returns_at_once() -> None:
    """end_plan from the loop whose task is in aend_plan cannot wait for it: it returns []."""
    tool = HeldDeactivate(asynchronous=True)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        await runtime.aexecute("held", {}, ctx)
        first = asyncio.ensure_future(runtime.aend_plan(ctx))
        assert await asyncio.to_thread(tool.deactivating.wait, WAIT)
        assert runtime.end_plan(ctx) == []  # on this loop's thread: waiting would block it
        assert not tool.deactivated.is_set()
        tool.release.set()
        assert await asyncio.wait_for(first, WAIT) == []


async def test_a_second_aend_plan_cancelled_while_it_waits_leaves_the_first_end_alone(
    log_waiter: Callable[..., Any],
) -> None:
    """Cancelling a waiting second end raises in it only; the first end deactivates as usual."""
    awaiting = log_waiter("toolcycle.lifecycle", "plan.awaiting_end", logging.DEBUG)
    tool = HeldDeactivate(asynchronous=True)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        await runtime.aexecute("held", {}, ctx)
        first = asyncio.ensure_future(runtime.aend_plan(ctx))
        assert await asyncio.to_thread(tool.deactivating.wait, WAIT)
        second = asyncio.ensure_future(runtime.aend_plan(ctx))
        assert await asyncio.to_thread(awaiting.wait, "p")
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(second, WAIT)
        [end] = runtime._plans._under_way.values()
        assert end.wakers == []  # the cancelled waiter left nothing behind
        tool.release.set()
        assert await asyncio.wait_for(first, WAIT) == []
    assert tool.deactivated.is_set()


class EndsItsPlanOnDeactivate:
    """A tool whose ``deactivate`` ends its own plan again, as ``how`` says."""

    def __init__(self, runtime: ToolRuntime, how: str) -> None:
        self.runtime = runtime
        self.how = how
        self.ends: list[Any] = []
        if how == "aend_plan":
            self.deactivate = self._adeactivate  # type: ignore[method-assign]

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="ender", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.ends.append(self.runtime.end_plan(ctx))

    async def _adeactivate(self, ctx: ToolExecutionContext) -> None:
        self.ends.append(await self.runtime.aend_plan(ctx))


REENTRANT_ENDS = [
    (how, first, limit)
    for how in ("end_plan", "aend_plan")
    for first in ("end_plan", "aend_plan")
    for limit in (None, WAIT)
]


@pytest.mark.parametrize(
    ("how", "first", "limit"),
    REENTRANT_ENDS,
    ids=[
        f"{how} in deactivate, under {first}, limit {limit}" for how, first, limit in REENTRANT_ENDS
    ],
)
def test_a_deactivate_that_ends_its_own_plan_again_returns_at_once(
    how: str, first: str, limit: float | None
) -> None:
    """An end made by a deactivate of the plan is part of the first end: it does not wait."""
    runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=limit)
    tool = EndsItsPlanOnDeactivate(runtime, how)
    runtime.register(tool)
    ctx = runtime.new_context("p")
    runtime.execute("ender", {}, ctx)
    if first == "end_plan":
        ender, ended = _in_thread(lambda: runtime.end_plan(ctx), daemon=True)
    else:
        ender, ended = _in_thread(lambda: asyncio.run(runtime.aend_plan(ctx)), daemon=True)
    ender.join(WAIT)
    assert not ender.is_alive(), "the end waited for itself"
    runtime.close()
    assert ended == [[]]
    assert tool.ends == [[]]


class EndsItsPlanWhenStopped:
    """A sync tool that, once the plan's end stops its call, ends the plan itself too."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime
        self.started = threading.Event()
        self.ends: list[Any] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="stopped", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        stop = threading.Event()
        ctx.call_token.on_cancel(stop.set)
        self.started.set()
        stop.wait(WAIT)
        self.ends.append(self.runtime.end_plan(ctx))
        return "stopped"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


@pytest.mark.parametrize("how", ["execute", "aexecute"])
def test_a_call_that_ends_its_plan_while_the_end_drains_it_is_not_held_up(how: str) -> None:
    """A call the end waits for ends the plan too: that end returns at once, not at the limit."""
    runtime = ToolRuntime(tracer=NullTracer(), drain_timeout=WAIT)
    tool = EndsItsPlanWhenStopped(runtime)
    runtime.register(tool)
    ctx = runtime.new_context("p")
    with capture_traces(runtime) as traces:
        if how == "execute":
            worker, _ = _in_thread(lambda: runtime.execute("stopped", {}, ctx))
        else:
            worker, _ = _in_thread(lambda: asyncio.run(runtime.aexecute("stopped", {}, ctx)))
        assert tool.started.wait(WAIT)
        assert runtime.end_plan(ctx) == []
        worker.join(WAIT)
    runtime.close()
    assert tool.ends == [[]]
    assert not traces[0].abandoned  # the end did not give up on it at drain_timeout


# -- an owner cancelled by its own caller ------------------------------------------------


async def test_a_waiter_takes_over_an_activation_whose_owner_was_cancelled() -> None:
    """The owner's caller cancels it; the call waiting on the same activation runs."""
    tool = FakeTool()
    entered = asyncio.Event()
    attempts: list[str] = []

    async def activate(ctx: ToolExecutionContext) -> None:
        attempts.append("activate")
        if len(attempts) == 1:
            entered.set()
            await asyncio.Event().wait()  # until cancelled

    tool.activate = activate  # type: ignore[method-assign]
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            owner = asyncio.ensure_future(runtime.aexecute("fake", {}, ctx))
            await asyncio.wait_for(entered.wait(), WAIT)
            waiter = asyncio.ensure_future(runtime.aexecute("fake", {}, ctx))
            await _until_waiting(runtime, ctx, "fake")
            owner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(owner, WAIT)
            result = await asyncio.wait_for(waiter, WAIT)
    assert result.success and attempts == ["activate", "activate"]
    assert not ctx.cancellation_token.is_cancelled


async def test_a_waiter_shares_a_sync_activate_whose_owner_was_cancelled() -> None:
    """The owner's caller cancels it while a sync activate runs on: the waiter gets it."""
    tool = GatedActivate()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            owner = asyncio.ensure_future(runtime.aexecute("gated", {}, ctx))
            assert await asyncio.to_thread(tool.entered.wait, WAIT)
            waiter = asyncio.ensure_future(runtime.aexecute("gated", {}, ctx))
            await _until_waiting(runtime, ctx, "gated")
            owner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(owner, WAIT)
            tool.gate.set()
            result = await asyncio.wait_for(waiter, WAIT)
            assert result.success and tool.stages == ["activate"]
    assert tool.stages == ["activate", "deactivate"]


async def _until_waiting(runtime: ToolRuntime, ctx: ToolExecutionContext, name: str) -> None:
    """Yield to the loop until a task waits on the pending activation of ``name``."""
    for _ in range(1000):
        plan = runtime.cache._plans.get(ctx.plan_id)
        pending = plan.activations.get(name) if plan is not None else None
        if pending is not None and pending._callbacks:
            return
        await asyncio.sleep(0)
    raise AssertionError("no call started waiting for the activation")


# -- calls on an ended plan -------------------------------------------------------------


async def test_every_model_call_on_an_ended_plan_raises_as_documented() -> None:
    """call, acall and call_many raise ToolRuntimeError on an ended plan, known tool or not."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool())
        with runtime.plan() as ctx:
            pass
        for raw in ({"name": "fake", "arguments": {}}, {"name": "nope", "arguments": {}}):
            with pytest.raises(ToolRuntimeError, match="has ended"):
                runtime.call(raw, ctx)
            with pytest.raises(ToolRuntimeError, match="has ended"):
                await runtime.acall(raw, ctx)
            with pytest.raises(ToolRuntimeError, match="has ended"):
                await runtime.acall_many([raw], ctx)
        with pytest.raises(ToolRuntimeError, match="has ended"):
            runtime.execute("fake", {}, ctx)


# -- nothing of a plan outlives it -------------------------------------------------------


def _keyed_by_plan(runtime: ToolRuntime, plan_ids: Iterable[str]) -> list[str]:
    """Every map inside the runtime and its parts that still holds one of ``plan_ids``."""
    ids = set(plan_ids)
    found = []
    seen: dict[int, str] = {}
    owners: list[Any] = [runtime]  # and every toolcycle object reachable from it
    while owners:
        owner = owners.pop()
        if id(owner) in seen:
            continue
        seen[id(owner)] = type(owner).__name__
        names = set(getattr(owner, "__dict__", {})) | set(getattr(type(owner), "__slots__", ()))
        for attribute in names:
            value = getattr(owner, attribute, None)
            if type(value).__module__.startswith("toolcycle."):
                owners.append(value)
            if isinstance(value, dict | set) and any(
                key in ids or (isinstance(key, tuple) and ids & set(key)) for key in value
            ):
                found.append(f"{type(owner).__name__}.{attribute}")
    # The walk must reach the parts that keep per-plan state, or it proves nothing
    # (the Resumer holds the approval ledger, made by the first resume).
    assert {"ToolLifecycleCache", "Activator", "Resumer"} <= set(seen.values())
    return found


def test_no_per_plan_state_survives_the_end_of_a_plan() -> None:
    """After normal, failed, cancelled and timed-out calls, nothing is keyed by the plan."""
    stubborn = Stubborn()
    failing = FakeTool(name="failing", execute_error=RuntimeError("boom"))

    async def hang() -> None:
        """Wait for ever."""
        await asyncio.Event().wait()

    with ToolRuntime(tracer=NullTracer(), abandon_timeout=WAIT) as runtime:
        for tool in (FakeTool(), failing, stubborn, hang):
            runtime.register(tool)
        ids = []
        for round_ in range(3):
            with runtime.plan(f"p{round_}") as ctx:
                ids.append(ctx.plan_id)
                assert runtime.execute("fake", {}, ctx).success
                assert not runtime.execute("failing", {}, ctx).success
                assert runtime.execute("hang", {}, ctx, timeout=0.02).trace.status == "timed_out"
                assert runtime.execute("stubborn", {}, ctx, timeout=0.02).trace.abandoned
                stubborn.release.set()  # the plan's end waits for the thread to finish
                ctx.cancellation_token.cancel("stop")
                with pytest.raises(ToolCancelledError):
                    runtime.execute("fake", {}, ctx)
            stubborn.release.clear()
            assert runtime.cache.open_plans() == ()
            assert _keyed_by_plan(runtime, ids) == []
            assert ctx.cancellation_token._callbacks == {}
        # A call timed out after its plan ended leaves nothing either.
        ctx = runtime.new_context("late")
        worker, _ = _in_thread(lambda: runtime.execute("stubborn", {}, ctx, timeout=0.2))
        assert stubborn.started.wait(WAIT)
        runtime2_end = _in_thread(lambda: runtime.end_plan(ctx))
        stubborn.release.set()
        runtime2_end[0].join(WAIT)
        worker.join(WAIT)
        assert _keyed_by_plan(runtime, [*ids, "late"]) == []
        assert runtime.cache._plans == {}
