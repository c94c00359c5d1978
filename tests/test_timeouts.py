"""Timeouts at every level: call, plan, tool, source; activation; abandoned sync calls."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from math import inf
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolActivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
)
from toolcycle.testing import FakeTool

WAIT = 5.0


class Hanging:
    """An async tool that waits until cancelled; its descriptor may carry a timeout."""

    def __init__(self, name: str = "hang", timeout: float | None = None) -> None:
        self.descriptor = ToolDescriptor(name=name, timeout=timeout)

    def discover(self) -> ToolDescriptor:
        return self.descriptor

    async def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        await asyncio.Event().wait()

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


class Source:
    """A source of one hanging tool that can say its list changed."""

    def __init__(self) -> None:
        self.stale = False

    def tools(self) -> list[Any]:
        self.stale = False
        return [Hanging(timeout=5.0)]


class Stubborn:
    """A sync tool that ignores its token and runs until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.done = threading.Event()
        self.deactivated_after_done: list[bool] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="stubborn")

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.release.wait(WAIT)
        self.done.set()
        return "finished late"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.deactivated_after_done.append(self.done.is_set())


class SlowActivation:
    """A tool whose activate waits on a gate: async until cancelled, or sync until released."""

    def __init__(self, *, sync: bool) -> None:
        self.sync = sync
        self.gate = threading.Event()
        self.attempts = 0
        if not sync:
            self.activate = self._activate_async  # type: ignore[method-assign]

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="slow_start", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.attempts += 1
        self.gate.wait(WAIT)

    async def _activate_async(self, ctx: ToolExecutionContext) -> None:
        self.attempts += 1
        await asyncio.Event().wait()

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with a null tracer, closed after the test."""
    with ToolRuntime(tracer=NullTracer(), abandon_timeout=WAIT) as rt:
        yield rt


def message(result: Any) -> str:
    assert not result.success
    assert result.trace is not None and result.trace.status == "timed_out"
    return str(result.error)


def test_the_smallest_of_call_plan_tool_and_source_limits_applies(runtime: ToolRuntime) -> None:
    """Each level can be the one that stops the call, and the message names its limit."""
    runtime.register(Hanging("tool_limit", timeout=0.1), timeout=5.0)
    runtime.register(Hanging("source_limit", timeout=5.0), timeout=0.15)
    runtime.register(Hanging("plan_limit"))
    with runtime.plan(timeout=0.2) as ctx:
        assert "within 0.1 seconds" in message(runtime.execute("tool_limit", {}, ctx))
        assert "within 0.15 seconds" in message(runtime.execute("source_limit", {}, ctx))
        assert "within 0.2 seconds" in message(runtime.execute("plan_limit", {}, ctx))
        assert "within 0.05 seconds" in message(
            runtime.execute("plan_limit", {}, ctx, timeout=0.05)
        )


def test_a_source_limit_survives_a_refresh_of_its_tools(runtime: ToolRuntime) -> None:
    """Register_source's timeout is kept when a stale source is registered afresh."""
    source = Source()
    runtime.register_source(source, timeout=0.1)
    source.stale = True
    with runtime.plan() as ctx:  # registers the source's tools again
        assert not source.stale
        assert "within 0.1 seconds" in message(runtime.execute("hang", {}, ctx))


async def test_the_limits_apply_to_aexecute_too(runtime: ToolRuntime) -> None:
    """The async path takes the same smallest limit."""
    runtime.register(Hanging(), timeout=0.1)
    async with runtime.aplan(timeout=5.0) as ctx:
        assert "within 0.1 seconds" in message(await runtime.aexecute("hang", {}, ctx))


@pytest.mark.parametrize("bad", [0, -1.0])
def test_limits_must_be_positive(runtime: ToolRuntime, bad: float) -> None:
    """A zero or negative limit is refused where it is given."""
    with pytest.raises(ValueError, match="positive"):
        runtime.new_context(timeout=bad)
    with pytest.raises(ValueError, match="positive"):
        runtime.register(Hanging(), timeout=bad)
    with pytest.raises(ValueError, match="positive"):
        runtime.register_source(Source(), timeout=bad)


def test_an_async_activation_over_its_limit_is_cancelled_and_tried_again() -> None:
    """Past activate_timeout the call raises ToolActivationError; the next call retries."""
    tool = SlowActivation(sync=False)
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            for _ in range(2):
                with pytest.raises(ToolActivationError, match="activate_timeout"):
                    runtime.execute("slow_start", {}, ctx)
    assert tool.attempts == 2


@pytest.fixture
def late_ended(log_waiter: Callable[..., Any]) -> Callable[[str], bool]:
    """Waits (bounded) until the runtime logs that a plan's abandoned activate has ended."""
    # Other tests' abandoned activates may end at any time: only "late"'s count.
    waiter = log_waiter(
        "toolcycle.runtime", "tool.late_activation_ended", logging.INFO, tool="late"
    )
    return lambda plan_id: waiter.wait(plan_id, WAIT)


class LateActivation:
    """A sync tool whose activate waits for a gate, then succeeds or raises."""

    def __init__(self, *, fails: bool = False) -> None:
        self.fails = fails
        self.gate = threading.Event()
        self.attempts = 0
        self.deactivated = threading.Event()

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="late", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.attempts += 1
        if self.attempts == 1:
            self.gate.wait(WAIT)
            if self.fails:
                raise RuntimeError("gave up late")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.deactivated.set()


def test_a_sync_activation_that_succeeds_after_its_limit_is_deactivated() -> None:
    """The call fails at activate_timeout; when activate returns after all, it is undone."""
    tool = LateActivation()
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        with pytest.raises(ToolActivationError, match="activate_timeout"):
            runtime.execute("late", {}, ctx)
        assert not tool.deactivated.is_set()
        tool.gate.set()
        assert tool.deactivated.wait(WAIT)
        runtime.end_plan(ctx)


def test_calls_are_refused_while_an_abandoned_sync_activation_still_runs(
    late_ended: Callable[[str], bool],
) -> None:
    """No second activate runs beside the first; once it ended and was undone, one may."""
    tool = LateActivation()
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            with pytest.raises(ToolActivationError, match="activate_timeout"):
                runtime.execute("late", {}, ctx)
            with pytest.raises(ToolActivationError, match="still running"):
                runtime.execute("late", {}, ctx)
            assert tool.attempts == 1
            tool.gate.set()
            assert late_ended(ctx.plan_id)
            assert tool.deactivated.is_set()
            assert runtime.execute("late", {}, ctx).output == "ran"
    assert tool.attempts == 2


def test_a_sync_activation_that_fails_after_its_limit_is_not_deactivated(
    late_ended: Callable[[str], bool],
) -> None:
    """An activate that raises late activated nothing, so nothing is torn down."""
    tool = LateActivation(fails=True)
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("late-fails")
        with pytest.raises(ToolActivationError, match="activate_timeout"):
            runtime.execute("late", {}, ctx)
        tool.gate.set()
        assert late_ended("late-fails")
        assert not tool.deactivated.is_set()
        runtime.end_plan(ctx)
        assert not tool.deactivated.is_set()


async def test_an_abandoned_sync_activation_from_aexecute_is_deactivated_too() -> None:
    """The async path hands the late activate to the same undo."""
    tool = LateActivation()
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        with pytest.raises(ToolActivationError, match="activate_timeout"):
            await runtime.aexecute("late", {}, ctx)
        tool.gate.set()
        assert await asyncio.to_thread(tool.deactivated.wait, WAIT)
        await runtime.aend_plan(ctx)


async def test_an_async_activation_over_its_limit_fails_from_aexecute() -> None:
    """The async path honours activate_timeout the same way."""
    with ToolRuntime(tracer=NullTracer(), activate_timeout=0.1) as runtime:
        runtime.register(SlowActivation(sync=False))
        async with runtime.aplan() as ctx:
            with pytest.raises(ToolActivationError, match="within 0.1 seconds"):
                await runtime.aexecute("slow_start", {}, ctx)


def test_a_sync_call_past_its_limit_is_abandoned_and_the_plan_end_waits_for_it(
    runtime: ToolRuntime, draining: Callable[[str], bool]
) -> None:
    """The caller is released with abandoned=True; deactivation waits until the call ends."""
    tool = Stubborn()
    runtime.register(tool)
    ctx = runtime.new_context("p")
    result = runtime.execute("stubborn", {}, ctx, timeout=0.1)
    assert "left running" in message(result)
    assert result.trace is not None and result.trace.abandoned is True
    ender = threading.Thread(target=runtime.end_plan, args=(ctx,))
    ender.start()
    assert draining("p")  # end_plan is waiting for the abandoned call
    assert tool.deactivated_after_done == []
    tool.release.set()
    ender.join(WAIT)
    assert not ender.is_alive()
    assert tool.deactivated_after_done == [True]


def test_the_plan_end_waits_no_longer_than_abandon_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call that never ends is logged and the plan's tools are deactivated anyway."""
    tool = Stubborn()
    with ToolRuntime(tracer=NullTracer(), abandon_timeout=0.1) as runtime:
        runtime.register(tool)
        with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
            with runtime.plan() as ctx:
                runtime.execute("stubborn", {}, ctx, timeout=0.05)
        assert tool.deactivated_after_done == [False]
        assert "tool.abandoned_still_running" in caplog.text
        tool.release.set()
        assert tool.done.wait(WAIT)


async def test_aend_plan_waits_for_abandoned_calls_off_the_loop(runtime: ToolRuntime) -> None:
    """The async plan end waits in a thread, so the loop keeps running meanwhile."""
    tool = Stubborn()
    runtime.register(tool)
    ctx = runtime.new_context()
    result = await runtime.aexecute("stubborn", {}, ctx, timeout=0.05)
    assert result.trace is not None and result.trace.abandoned is True
    ending = asyncio.ensure_future(runtime.aend_plan(ctx))
    await asyncio.sleep(0)  # the loop is free while aend_plan waits
    tool.release.set()
    await asyncio.wait_for(ending, WAIT)
    assert tool.deactivated_after_done == [True]


class Reporter:
    """A tool that reports progress ``reports`` times, ``gap`` seconds apart, then returns.

    With ``reports=None`` it reports for ever; after its reports it may hang quietly.
    """

    def __init__(self, *, gap: float, reports: int | None, then_hang: bool = False) -> None:
        self.gap = gap
        self.reports = reports
        self.then_hang = then_hang

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="reporter")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        count = 0
        while self.reports is None or count < self.reports:
            ctx.report_progress(count)
            count += 1
            await asyncio.sleep(self.gap)
        if self.then_hang:
            await asyncio.Event().wait()
        return count

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_progress_reports_keep_a_call_alive_past_its_idle_limit(runtime: ToolRuntime) -> None:
    """Five reports 0.1 s apart outlast an idle limit of 0.4 s: each report restarts it."""
    runtime.register(Reporter(gap=0.1, reports=5))
    with runtime.plan() as ctx:
        result = runtime.execute("reporter", {}, ctx, idle_timeout=0.4)
    assert result.success, result.error
    assert result.output == 5


def test_a_call_that_goes_quiet_is_stopped_at_its_idle_limit(runtime: ToolRuntime) -> None:
    """After its last report the call hangs; the idle limit stops it and says so."""
    runtime.register(Reporter(gap=0.01, reports=2, then_hang=True))
    with runtime.plan(idle_timeout=0.2) as ctx:
        result = runtime.execute("reporter", {}, ctx, timeout=30)
    assert "reported no progress for 0.2 seconds" in message(result)
    assert result.trace is not None and result.trace.progress_count == 2


async def test_the_total_limit_caps_a_call_that_reports_for_ever(runtime: ToolRuntime) -> None:
    """However often it reports, the call ends at its total limit (async path)."""
    runtime.register(Reporter(gap=0.02, reports=None))
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("reporter", {}, ctx, timeout=0.3, idle_timeout=0.2)
    assert "did not finish within 0.3 seconds" in message(result)
    assert result.trace is not None and result.trace.progress_count > 3


def test_a_quiet_sync_call_is_abandoned_at_its_idle_limit(runtime: ToolRuntime) -> None:
    """A sync tool without reports is released at the idle limit and marked abandoned."""
    tool = Stubborn()
    runtime.register(tool)
    with runtime.plan() as ctx:
        result = runtime.execute("stubborn", {}, ctx, idle_timeout=0.1)
        assert "reported no progress for 0.1 seconds" in message(result)
        assert result.trace is not None and result.trace.abandoned
        tool.release.set()


def test_an_idle_limit_must_be_positive(runtime: ToolRuntime) -> None:
    """A zero idle limit is refused for a plan and for a call."""
    with pytest.raises(ValueError, match="idle_timeout"):
        runtime.new_context(idle_timeout=0)
    runtime.register(Hanging())
    with runtime.plan() as ctx, pytest.raises(ValueError, match="idle_timeout"):
        runtime.execute("hang", {}, ctx, idle_timeout=-1)


@pytest.mark.parametrize("timeout", ["5", 0, -1.0, float("nan"), float("inf"), True])
def test_a_call_limit_that_is_not_positive_seconds_is_refused_before_the_tool_runs(
    timeout: Any,
) -> None:
    ran = threading.Event()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t", output=lambda params, ctx: ran.set()))
        with runtime.plan() as ctx:
            with pytest.raises(ValueError, match="timeout must be positive seconds or None"):
                runtime.execute("t", {}, ctx, timeout=timeout)
            with pytest.raises(ValueError, match="idle_timeout must be positive seconds"):
                runtime.execute("t", {}, ctx, idle_timeout=timeout)
    assert not ran.is_set()


class CleansUpForever:
    """An async tool that, once cancelled, keeps waiting in its cleanup until released."""

    def __init__(self) -> None:
        self.in_cleanup: asyncio.Event | None = None
        self.release: asyncio.Event | None = None

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="cleans")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        assert self.in_cleanup is not None and self.release is not None
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.in_cleanup.set()
            await self.release.wait()
            raise

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_cancelling_the_caller_during_a_timed_out_tools_cleanup_cancels_the_caller() -> None:
    """The caller's own cancellation is not swallowed into a timed-out result."""
    tool = CleansUpForever()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)

        async def main() -> str:
            tool.in_cleanup, tool.release = asyncio.Event(), asyncio.Event()
            async with runtime.aplan() as ctx:
                call = asyncio.ensure_future(runtime.aexecute("cleans", {}, ctx, timeout=0.05))
                await asyncio.wait_for(tool.in_cleanup.wait(), WAIT)
                call.cancel()
                try:
                    await asyncio.wait_for(call, WAIT)
                except asyncio.CancelledError:
                    return "cancelled"
                finally:
                    tool.release.set()
                return "answered"

        assert asyncio.run(main()) == "cancelled"


def test_a_timed_out_tool_that_will_not_stop_is_waited_for_only_a_while(monkeypatch) -> None:
    """After its timeout, a tool gets a bounded grace to clean up; then the call is timed out."""
    monkeypatch.setattr("toolcycle.execution._invoke.CANCEL_GRACE_SECONDS", 0.1)
    tool = CleansUpForever()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)

        async def main() -> Any:
            tool.in_cleanup, tool.release = asyncio.Event(), asyncio.Event()
            async with runtime.aplan() as ctx:
                try:
                    return await asyncio.wait_for(
                        runtime.aexecute("cleans", {}, ctx, timeout=0.05), WAIT
                    )
                finally:
                    tool.release.set()

        result = asyncio.run(main())
    assert result.trace is not None and result.trace.status == "timed_out"


def test_an_async_plan_end_cancelled_while_it_waits_for_abandoned_calls_still_ends(
    log_waiter: Callable[..., Any],
) -> None:
    """Aplan, cancelled in its wait for a left-behind call, waits on, then ends the plan."""
    tool = Stubborn()
    runtime = ToolRuntime(tracer=NullTracer(), abandon_timeout=WAIT)
    runtime.register(tool)
    seen: dict[str, ToolExecutionContext] = {}
    cancelled = log_waiter("toolcycle.lifecycle", "plan.end_cancelled", logging.DEBUG)

    def release_once_cancelled() -> None:
        # Only then: a plan end that did not wait would deactivate under the running tool.
        if cancelled.wait("p"):
            tool.release.set()

    releaser = threading.Thread(target=release_once_cancelled)
    releaser.start()

    async def main() -> None:
        async with runtime.aplan("p") as ctx:
            seen["ctx"] = ctx
            result = await runtime.aexecute("stubborn", {}, ctx, timeout=0.05)
            assert result.trace is not None and result.trace.abandoned
            asyncio.current_task().cancel()  # type: ignore[union-attr]

    try:
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(main())
        assert seen["ctx"].ended
        assert tool.deactivated_after_done == [True]
    finally:
        tool.release.set()
        releaser.join(WAIT)
        runtime.close()


class GatedActivation:
    """A sync tool whose activate waits for ``release``; its stages are recorded in order."""

    def __init__(self) -> None:
        self.started, self.release, self.undone = (threading.Event() for _ in range(3))
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="slow")

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.started.set()
        self.release.wait(WAIT)
        self.stages.append("activate")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")
        self.undone.set()


@pytest.mark.parametrize("activate_timeout", [None, WAIT], ids=["pool", "own-thread"])
def test_a_sync_activate_left_running_by_a_cancelled_caller_still_activates_the_tool(
    activate_timeout: float | None,
) -> None:
    """The caller gives up; the activate runs on, the plan keeps it, and it is undone once."""
    tool = GatedActivation()
    with ToolRuntime(tracer=NullTracer(), activate_timeout=activate_timeout) as runtime:
        runtime.register(tool)

        async def main() -> None:
            ctx = runtime.new_context("p")
            call = asyncio.ensure_future(runtime.aexecute("slow", {}, ctx))
            assert await asyncio.to_thread(tool.started.wait, WAIT)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(call, WAIT)
            second = asyncio.ensure_future(runtime.aexecute("slow", {}, ctx))
            tool.release.set()
            result = await asyncio.wait_for(second, WAIT)
            assert result.success and tool.stages == ["activate"]  # no second activate
            assert await runtime.aend_plan(ctx) == []

        asyncio.run(main())
    assert tool.stages == ["activate", "deactivate"]


class SlowStart(Reporter):
    """A `Reporter` whose activation takes ``start`` seconds (a worker starting, say)."""

    def __init__(self, *, start: float) -> None:
        super().__init__(gap=0.05, reports=1)
        self.start = start

    async def activate(self, ctx: ToolExecutionContext) -> None:
        await asyncio.sleep(self.start)  # the slow start itself is the case under test

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        await asyncio.sleep(self.gap)  # quiet, but for less than the idle limit
        return "done"


def test_an_idle_limit_counts_from_the_end_of_a_slow_activation(runtime: ToolRuntime) -> None:
    """An activation longer than the idle limit does not use it up: the run gets all of it."""
    runtime.register(SlowStart(start=0.5))
    with runtime.plan() as ctx:
        result = runtime.execute("reporter", {}, ctx, idle_timeout=0.2)
    assert result.success, result.error


async def test_an_idle_limit_counts_from_the_end_of_a_slow_activation_async(
    runtime: ToolRuntime,
) -> None:
    """The same from async code, with the idle limit set on the plan."""
    runtime.register(SlowStart(start=0.5))
    async with runtime.aplan(idle_timeout=0.2) as ctx:
        result = await runtime.aexecute("reporter", {}, ctx)
    assert result.success, result.error


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -1, "5", True])
@pytest.mark.parametrize(
    "option", ["activate_timeout", "deactivate_timeout", "drain_timeout", "abandon_timeout"]
)
def test_a_runtime_limit_that_is_not_finite_seconds_is_refused_when_the_runtime_is_made(
    option: str, value: Any
) -> None:
    """Inf and NaN are refused with the rest: an infinite wait overflowed at plan end."""
    with pytest.raises(ValueError, match=f"{option} must be .*seconds.* or None for no limit"):
        ToolRuntime(tracer=NullTracer(), **{option: value})


def test_a_limit_of_more_seconds_than_a_float_holds_is_refused_where_it_is_given() -> None:
    """An int past the largest float is refused with a clear error, not an overflow mid-call."""
    huge = 10**400
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx:
            with pytest.raises(ValueError, match="timeout must be positive seconds or None"):
                runtime.execute("t", {}, ctx, timeout=huge)
            with pytest.raises(ValueError, match="idle_timeout must be positive seconds"):
                runtime.execute("t", {}, ctx, idle_timeout=huge)
        for option in ("timeout", "idle_timeout"):
            with pytest.raises(ValueError, match=f"{option} must be positive seconds or None"):
                runtime.new_context(**{option: huge})
    with pytest.raises(ValueError, match="drain_timeout must be .*seconds"):
        ToolRuntime(tracer=NullTracer(), drain_timeout=huge)


@pytest.mark.parametrize("option", ["drain_timeout", "abandon_timeout"])
def test_a_plan_end_may_wait_no_time_at_all(option: str) -> None:
    """0 is a limit for the plan end's waits (give up at once), unlike for a stage."""
    with ToolRuntime(tracer=NullTracer(), **{option: 0}) as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx:
            assert runtime.execute("t", {}, ctx).success
    with pytest.raises(ValueError, match="activate_timeout must be positive seconds"):
        ToolRuntime(tracer=NullTracer(), activate_timeout=0)


def test_a_tool_limit_of_infinite_seconds_is_refused_where_it_is_given() -> None:
    """A descriptor's or a registration's timeout of inf failed every call of an async tool."""
    with pytest.raises(ValueError, match="finite number"):
        ToolDescriptor(name="t", description="t", input_schema={"type": "object"}, timeout=inf)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        with pytest.raises(ValueError, match="timeout must be positive seconds or None"):
            runtime.register(FakeTool(name="t"), timeout=inf)
        assert [d.name for d in runtime.descriptors()] == []


@pytest.mark.parametrize("option", ["timeout", "idle_timeout"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_plan_limit_that_is_not_finite_is_refused_as_a_calls_limit_is(
    option: str, value: float
) -> None:
    """A plan's infinite limit is refused with the call's message: no limit is spelled None."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx, pytest.raises(ValueError) as by_call:
            runtime.execute("t", {}, ctx, **{option: value})
        with pytest.raises(ValueError) as by_plan:
            runtime.new_context(**{option: value})
        with pytest.raises(ValueError) as by_context:
            ToolExecutionContext("p", **{option: value})  # type: ignore[arg-type]
    expected = f"{option} must be positive seconds or None for no limit, got {value!r}"
    assert str(by_call.value) == str(by_plan.value) == str(by_context.value) == expected
