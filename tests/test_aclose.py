"""`ToolRuntime.aclose` and ``async with``: close() for async hosts, with the loop left free."""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    ToolRuntimeError,
    ToolSkippedWarning,
)
from toolcycle.sources.mcp import McpServer

from .mcp.servers import build

WAIT = 5.0


class Held:
    """An async tool that logs its stages; its ``deactivate`` waits for ``gate`` if given."""

    def __init__(self, name: str, log: list[tuple[Any, ...]], gate: asyncio.Event | None = None):
        self.name = name
        self.log = log
        self.gate = gate
        self.deactivating = asyncio.Event()

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, capability={"writes": False})

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(("activate", ctx.plan_id, self.name))

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return self.name

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.log.append(("deactivate", ctx.plan_id, self.name, asyncio.get_running_loop()))
        self.deactivating.set()
        if self.gate is not None:
            await self.gate.wait()
        self.log.append(("deactivated", ctx.plan_id, self.name))


class Waits:
    """An async tool whose call runs until it is cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="waits", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.started.set()
        await asyncio.Event().wait()

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


async def _held_runtime(gate: asyncio.Event) -> tuple[ToolRuntime, Held, list[tuple[Any, ...]]]:
    """A runtime with one open plan in which ``Held("a", gate=gate)`` is active."""
    log: list[tuple[Any, ...]] = []
    tool = Held("a", log, gate)
    runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
    runtime.register(tool)
    await runtime.aexecute("a", {}, runtime.new_context("p"))
    return runtime, tool, log


async def test_async_with_ends_every_plan_deactivating_each_tool_once_newest_first() -> None:
    """Leaving ``async with`` ends the open plans on this loop, as aend_plan does."""
    log: list[tuple[Any, ...]] = []
    loop = asyncio.get_running_loop()
    async with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(Held("a", log))
        runtime.register(Held("b", log))
        first, second = runtime.new_context("p1"), runtime.new_context("p2")
        for ctx, names in ((first, "ab"), (second, "a")):
            for name in names:
                await runtime.aexecute(name, {}, ctx)
    ended = [entry[1:] for entry in log if entry[0] == "deactivate"]
    assert ended == [("p1", "b", loop), ("p1", "a", loop), ("p2", "a", loop)]
    assert runtime.closed and first.ended and second.ended


async def test_a_deactivate_awaiting_the_callers_loop_ends_under_aclose() -> None:
    """While aclose waits in a deactivate, another task of the loop runs and releases it."""
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)

    async def release() -> None:
        await tool.deactivating.wait()
        gate.set()

    helper = asyncio.create_task(release())
    async with asyncio.timeout(WAIT):
        await runtime.aclose()
        await helper
    assert log[-1] == ("deactivated", "p", "a")
    assert runtime.cache.open_plans() == ()


async def test_a_second_aclose_or_close_after_aclose_does_nothing() -> None:
    """Once an aclose is over, aclose and close return at once: it is idempotent."""
    log: list[tuple[Any, ...]] = []
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(Held("a", log))
    await runtime.aexecute("a", {}, runtime.new_context("p"))
    async with asyncio.timeout(WAIT):
        await runtime.aclose()
        await runtime.aclose()
    runtime.close()
    assert [entry[0] for entry in log].count("deactivated") == 1


async def test_concurrent_acloses_each_return_once_the_close_is_over(
    log_waiter: Callable[..., Any],
) -> None:
    """A second aclose, from another task, waits for the first's deactivations to end."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_close", logging.DEBUG)
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)
    seen: list[bool] = []

    async def second() -> None:
        await runtime.aclose()
        seen.append(log[-1][0] == "deactivated")

    first = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()
    other = asyncio.create_task(second())
    assert await asyncio.to_thread(awaiting.wait, "")  # the second is waiting
    gate.set()
    async with asyncio.timeout(WAIT):
        await asyncio.gather(first, other)
    assert seen == [True]


async def test_a_sync_close_on_another_thread_waits_for_an_aclose_under_way(
    log_waiter: Callable[..., Any],
) -> None:
    """close() from another thread, during aclose, returns once the aclose is over."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_close", logging.DEBUG)
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)
    seen: list[bool] = []

    def close() -> None:
        runtime.close()
        seen.append(log[-1][0] == "deactivated")

    first = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()
    closer = threading.Thread(target=close)
    closer.start()
    assert await asyncio.to_thread(awaiting.wait, "")
    gate.set()
    async with asyncio.timeout(WAIT):
        await first
    await asyncio.to_thread(closer.join, WAIT)
    assert seen == [True]


async def test_an_aclose_waits_for_a_sync_close_on_another_thread_with_its_loop_free(
    log_waiter: Callable[..., Any],
) -> None:
    """An aclose during another thread's close() awaits it; this loop runs on meanwhile."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_close", logging.DEBUG)
    leaving, release = threading.Event(), threading.Event()
    left: list[str] = []

    def deactivate(ctx: ToolExecutionContext) -> None:
        leaving.set()
        release.wait(WAIT)
        left.append(ctx.plan_id)

    runtime = ToolRuntime(tracer=NullTracer())
    tool = Held("a", [])
    tool.deactivate = deactivate  # type: ignore[method-assign,assignment]
    runtime.register(tool)
    await runtime.aexecute("a", {}, runtime.new_context("p"))
    closer = threading.Thread(target=runtime.close)
    closer.start()
    assert await asyncio.to_thread(leaving.wait, WAIT)
    second = asyncio.create_task(runtime.aclose())
    assert await asyncio.to_thread(awaiting.wait, "")
    assert not second.done()  # it waits, and this task runs: the loop is free
    release.set()
    async with asyncio.timeout(WAIT):
        await second
    assert left == ["p"]
    await asyncio.to_thread(closer.join, WAIT)


async def test_calls_after_aclose_fail_as_after_close() -> None:
    """A closed runtime refuses plans and calls alike, however it was closed."""
    refusals = []
    for close in ("close", "aclose"):
        log: list[tuple[Any, ...]] = []
        runtime = ToolRuntime(tracer=NullTracer())
        runtime.register(Held("a", log))
        ctx = runtime.new_context()
        if close == "close":
            runtime.close()
        else:
            await runtime.aclose()
        errors: list[str] = []
        for attempt in (
            runtime.aexecute("a", {}, ctx),
            runtime.aactivate("a", ctx),
            _opened(runtime),
        ):
            with pytest.raises(ToolRuntimeError) as raised:
                await attempt
            errors.append(f"{type(raised.value).__name__}: {raised.value}")
        with pytest.raises(ToolRuntimeError, match="closed"):
            runtime.new_context()
        refusals.append(errors)
    assert refusals[0] == refusals[1]


async def test_aclose_closes_mcp_servers_of_runtime_and_plan_scope_leaving_nothing_open() -> None:
    """The runtime-wide connection and the open plan's own are closed before aclose returns."""
    sessions: dict[str, int] = {}
    runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)
        for name, scope in (("shared", "runtime"), ("own", "plan")):
            server = build(sessions=sessions)
            source = McpServer.in_process(server, name=name, scope=scope, prefix=f"{name}.")
            runtime.register_source(source)
    ctx = runtime.new_context()
    for name in ("shared.add", "own.add"):
        assert (await runtime.aexecute(name, {"a": 1, "b": 2}, ctx)).output == {"sum": 3}
    assert sessions["opened"] - sessions["closed"] == 2  # one on the MCP thread, one here
    async with asyncio.timeout(WAIT):
        await runtime.aclose()
    assert sessions["opened"] == sessions["closed"]
    assert asyncio.all_tasks() == {asyncio.current_task()}


class _Source:
    """A source of no tools whose close (sync, or async with ``aclose``) may fail."""

    def __init__(self, fail: bool = False, *, asynchronous: bool = False) -> None:
        self.fail = fail
        self.closed_on: list[str] = []
        if asynchronous:
            self.aclose = self._aclose

    def tools(self) -> list[Any]:
        return []

    def close(self) -> None:
        self.closed_on.append(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("cannot close")

    async def _aclose(self) -> None:
        self.closed_on.append("aclose")
        if self.fail:
            raise RuntimeError("cannot aclose")


class _Unclosable:
    """A source of no tools, with nothing to close."""

    def tools(self) -> list[Any]:
        return []


async def test_aclose_closes_each_source_once_and_logs_one_that_fails(caplog) -> None:
    """An async aclose is awaited, else close() runs off the loop; failures are only logged."""
    sources = [_Source(True), _Source(True, asynchronous=True), _Source()]
    runtime = ToolRuntime(tracer=NullTracer())
    for source in sources:
        runtime.register_source(source)
    runtime.register_source(_Unclosable())
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        await runtime.aclose()
        await runtime.aclose()
    here = threading.current_thread().name
    assert [len(s.closed_on) for s in sources[:2]] == [1, 1]
    assert sources[0].closed_on != [here] and sources[1].closed_on == ["aclose"]
    assert sources[2].closed_on != [here] and len(sources[2].closed_on) == 1
    failed = [r for r in caplog.records if r.getMessage() == "source.close_failed"]
    assert [str(vars(r)["error"]) for r in failed] == ["cannot close", "cannot aclose"]


async def test_close_on_a_loop_with_calls_in_flight_there_is_refused_and_aclose_ends_them() -> None:
    """A sync close would drain calls that cannot run while it blocks their loop: it refuses."""
    tool = Waits()
    runtime = ToolRuntime(tracer=NullTracer(), drain_timeout=WAIT)
    runtime.register(tool)
    ctx = runtime.new_context()
    call = asyncio.create_task(runtime.aexecute("waits", {}, ctx))
    await tool.started.wait()
    with pytest.raises(ToolRuntimeError, match=r"in flight.*await runtime\.aclose\(\)"):
        runtime.close()
    assert not runtime.closed
    async with asyncio.timeout(WAIT):
        await runtime.aclose()
        with pytest.raises(ToolCancelledError):
            await call
    assert ctx.ended and runtime.closed


async def test_close_on_the_loop_of_an_aclose_under_way_is_refused() -> None:
    """close() from another task of the loop where aclose waits would block it for ever."""
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)
    first = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()
    with pytest.raises(ToolRuntimeError, match=r"aclose\(\) of the runtime is under way"):
        runtime.close()
    gate.set()
    async with asyncio.timeout(WAIT):
        await first
    runtime.close()  # over now: it returns at once
    assert log[-1] == ("deactivated", "p", "a")


async def test_an_aclose_cancelled_meanwhile_still_closes_then_raises_the_cancellation() -> None:
    """Cancelling the task that awaits aclose neither stops the close nor hides the cancel."""
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)
    task = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()
    task.cancel()
    gate.set()
    done, _ = await asyncio.wait({task}, timeout=WAIT)
    assert done and task.cancelled()
    assert log[-1] == ("deactivated", "p", "a")
    assert runtime._invoker.portal.closed


async def test_aclose_waits_for_a_plan_end_under_way_on_its_own_loop(
    log_waiter: Callable[..., Any],
) -> None:
    """An aend_plan of another task on this loop is awaited, not skipped, by aclose."""
    awaiting = log_waiter("toolcycle.lifecycle", "plan.awaiting_end", logging.DEBUG)
    gate = asyncio.Event()
    runtime, tool, log = await _held_runtime(gate)
    ending = asyncio.create_task(runtime.aend_plan(runtime.cache.open_plans()[0]))
    await tool.deactivating.wait()
    closing = asyncio.create_task(runtime.aclose())
    assert await asyncio.to_thread(awaiting.wait, "p")
    assert not closing.done()
    gate.set()
    async with asyncio.timeout(WAIT):
        assert await ending == []
        await closing
    assert [entry[0] for entry in log].count("deactivated") == 1


def test_an_async_tool_run_on_the_runtimes_loop_may_await_aclose() -> None:
    """An aclose awaited on the runtime's own loop thread stops it without joining it."""

    class Closes:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="closes", capability={"writes": False})

        def activate(self, ctx: ToolExecutionContext) -> None:
            pass

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            await runtime.aclose()
            return threading.current_thread().name

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            pass

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(Closes())
    ctx = runtime.new_context()
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(runtime.execute("closes", {}, ctx).output)
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(WAIT)
    assert not caller.is_alive() and outcome
    assert runtime.closed and ctx.ended and runtime._invoker.portal.closed


async def _opened(runtime: ToolRuntime) -> None:
    async with runtime.aplan():
        pass


async def test_a_deactivate_that_awaits_aclose_during_aclose_returns_at_once() -> None:
    """An aclose from within the close itself does not wait for that close."""
    log: list[tuple[Any, ...]] = []
    runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
    tool = Held("a", log)

    async def deactivate(ctx: ToolExecutionContext) -> None:
        await runtime.aclose()
        log.append(("deactivated", ctx.plan_id, "a"))

    tool.deactivate = deactivate  # type: ignore[method-assign]
    runtime.register(tool)
    await runtime.aexecute("a", {}, runtime.new_context("p"))
    async with asyncio.timeout(WAIT):
        await runtime.aclose()
    assert log[-1] == ("deactivated", "p", "a")


async def test_an_aclose_from_a_tool_call_during_another_close_returns_at_once() -> None:
    """A tool call may be what the first close waits for, so its aclose does not wait."""
    gate, go = asyncio.Event(), asyncio.Event()
    runtime, tool, _ = await _held_runtime(gate)
    returned: list[bool] = []

    async def closes(params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        await go.wait()
        await runtime.aclose()
        returned.append(gate.is_set())

    caller = Held("closes", [])
    caller.execute = closes  # type: ignore[method-assign]
    runtime.register(caller)
    call = asyncio.create_task(runtime.aexecute("closes", {}, runtime.new_context("q")))
    first = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()  # plan p ends first, held at the gate
    go.set()
    async with asyncio.timeout(WAIT):
        await call
        gate.set()
        await first
    assert returned == [False]


async def test_an_aclose_cancelled_while_it_waits_for_another_leaves_nothing_behind(
    log_waiter: Callable[..., Any],
) -> None:
    """A second aclose cancelled as it waits raises the cancellation and drops its waker."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_close", logging.DEBUG)
    gate = asyncio.Event()
    runtime, tool, _ = await _held_runtime(gate)
    first = asyncio.create_task(runtime.aclose())
    await tool.deactivating.wait()
    second = asyncio.create_task(runtime.aclose())
    assert await asyncio.to_thread(awaiting.wait, "")
    second.cancel()
    done, _ = await asyncio.wait({second}, timeout=WAIT)
    assert done and second.cancelled()
    assert runtime._settings.wakers == []
    gate.set()
    async with asyncio.timeout(WAIT):
        await first


def test_a_close_from_a_tool_call_during_another_close_returns_at_once() -> None:
    """As for aclose: a sync tool's close() does not wait for the close under way."""
    leaving, release, go = threading.Event(), threading.Event(), threading.Event()
    returned: list[bool] = []

    def held(ctx: ToolExecutionContext) -> None:
        leaving.set()
        release.wait(WAIT)

    def closes(params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        go.wait(WAIT)
        runtime.close()
        returned.append(release.is_set())

    runtime = ToolRuntime(tracer=NullTracer())
    first, second = Held("a", []), Held("closes", [])
    first.deactivate = held  # type: ignore[method-assign,assignment]
    second.execute = closes  # type: ignore[method-assign,assignment]
    runtime.register(first)
    runtime.register(second)
    runtime.execute("a", {}, runtime.new_context("p"))
    q = runtime.new_context("q")
    caller = threading.Thread(target=runtime.execute, args=("closes", {}, q))
    caller.start()
    closer = threading.Thread(target=runtime.close)
    closer.start()
    assert leaving.wait(WAIT)
    go.set()
    caller.join(WAIT)
    release.set()
    closer.join(WAIT)
    assert returned == [False] and not closer.is_alive()
