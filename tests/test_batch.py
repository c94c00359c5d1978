"""Batches of tool calls: concurrent, in order, sequential tools alone, cancellation honoured."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolCall,
    ToolCancelledError,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.testing import FakeTool

WAIT = 5.0


class Activity:
    """Counts the calls running at once and records the order things happen in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.log: list[str] = []

    def enter(self, label: str) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.log.append(f"start {label}")

    def leave(self, label: str) -> None:
        with self.lock:
            self.running -= 1
            self.log.append(f"end {label}")


@pytest.fixture
def activity() -> Activity:
    """A fresh activity log."""
    return Activity()


@pytest.fixture
def runtime(activity: Activity) -> Iterator[ToolRuntime]:
    """A runtime with async, sync, sequential and failing tools that log to ``activity``."""
    with ToolRuntime(tracer=NullTracer()) as rt:

        @tool(writes=False)
        async def step(label: str) -> str:
            """An async step that yields to the loop while it runs."""
            activity.enter(label)
            await asyncio.sleep(0)
            activity.leave(label)
            return label

        @tool(writes=False, sequential=True)
        async def commit(label: str) -> str:
            """A step that must run alone."""
            activity.enter(label)
            await asyncio.sleep(0)
            with activity.lock:
                alone = activity.running == 1
            activity.leave(label)
            return f"{label} alone={alone}"

        @tool(writes=False)
        def broken(label: str) -> str:
            """Always fails."""
            raise RuntimeError(f"{label} broke")

        rt.register(step)
        rt.register(commit)
        rt.register(broken)
        yield rt


def calls(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    """Anthropic tool_use blocks for (tool, label) pairs, with ids c0, c1, ..."""
    return [
        {"type": "tool_use", "id": f"c{i}", "name": name, "input": {"label": label}}
        for i, (name, label) in enumerate(pairs)
    ]


async def test_results_come_back_in_order_and_failures_lose_nothing(runtime: ToolRuntime) -> None:
    """A failing tool, an unknown tool and bad arguments each answer their own call."""
    batch = [
        *calls(("step", "a"), ("broken", "b")),
        {"type": "tool_use", "id": "x", "name": "missing", "input": {}},
        {"type": "tool_use", "id": "y", "name": "step", "input": {"label": 3}},
        *calls(("step", "e")),
    ]
    async with runtime.aplan() as ctx:
        results = await runtime.acall_many(batch, ctx)
    assert [r.call.id for r in results if r.call] == ["c0", "c1", "x", "y", "c0"]
    assert [r.success for r in results] == [True, False, False, False, True]
    assert [r.output for r in results if r.success] == ["a", "e"]
    assert "b broke" in (results[1].error or "")
    assert results[2].error_type == "ToolNotFoundError"
    assert results[3].error_type == "ToolSchemaValidationError"


async def test_async_calls_of_a_batch_run_at_the_same_time(runtime: ToolRuntime) -> None:
    """Two calls that each wait for the other to start can only finish together."""
    started = {name: asyncio.Event() for name in ("left", "right")}

    @tool(writes=False)
    async def meet(me: str, other: str) -> str:
        """Wait until the other call has started too."""
        started[me].set()
        await asyncio.wait_for(started[other].wait(), WAIT)
        return me

    runtime.register(meet)
    batch = [
        {"name": "meet", "arguments": {"me": "left", "other": "right"}},
        {"name": "meet", "arguments": {"me": "right", "other": "left"}},
    ]
    async with runtime.aplan() as ctx:
        results = await runtime.acall_many(batch, ctx)
    assert [r.output for r in results] == ["left", "right"]


def test_sync_calls_run_on_the_pool_at_the_same_time(runtime: ToolRuntime) -> None:
    """Two sync calls meet at a barrier, which only works if both run at once."""
    barrier = threading.Barrier(2, timeout=WAIT)

    @tool(writes=False)
    def rendezvous(label: str) -> str:
        """Wait at the barrier."""
        barrier.wait()
        return label

    runtime.register(rendezvous)
    batch = [{"name": "rendezvous", "arguments": {"label": x}} for x in ("p", "q")]
    with runtime.plan() as ctx:
        results = runtime.call_many(batch, ctx)
    assert [r.output for r in results] == ["p", "q"]


async def test_max_concurrency_bounds_the_calls_running_at_once(
    runtime: ToolRuntime, activity: Activity
) -> None:
    """With max_concurrency=2, two held calls run and the third waits for a free slot."""
    release = asyncio.Event()

    @tool(writes=False)
    async def held(label: str) -> str:
        """Run until released."""
        activity.enter(label)
        await release.wait()
        activity.leave(label)
        return label

    runtime.register(held)
    batch = [{"name": "held", "arguments": {"label": str(i)}} for i in range(4)]
    async with runtime.aplan() as ctx:
        running = asyncio.ensure_future(runtime.acall_many(batch, ctx, max_concurrency=2))
        for _ in range(1000):  # bounded: let the loop run until two calls have entered
            if activity.running == 2:
                break
            await asyncio.sleep(0)
        for _ in range(50):  # and then some more, to give a third call every chance
            await asyncio.sleep(0)
        assert activity.running == 2
        release.set()
        results = await asyncio.wait_for(running, WAIT)
    assert [r.output for r in results] == ["0", "1", "2", "3"]
    assert activity.most == 2


async def test_a_sequential_tool_runs_alone_and_keeps_the_models_order(
    runtime: ToolRuntime, activity: Activity
) -> None:
    """Calls before a sequential one finish first; calls after it start once it is done."""
    batch = calls(
        ("step", "a"), ("step", "b"), ("commit", "X"), ("step", "c"), ("commit", "Y"), ("step", "d")
    )
    async with runtime.aplan() as ctx:
        results = await runtime.acall_many(batch, ctx)
    assert [r.output for r in results] == ["a", "b", "X alone=True", "c", "Y alone=True", "d"]
    log = activity.log
    assert log.index("end a") < log.index("start X") and log.index("end b") < log.index("start X")
    assert log.index("end X") < log.index("start c") < log.index("end c") < log.index("start Y")
    assert log.index("end Y") < log.index("start d")


async def test_a_cancelled_plan_starts_nothing_new(
    runtime: ToolRuntime, activity: Activity
) -> None:
    """Once a call cancels the plan, later calls are answered as cancelled and never run."""

    @tool(writes=False)
    def stop(ctx: ToolExecutionContext) -> str:
        """Cancel the plan."""
        ctx.cancellation_token.cancel("enough")
        return "stopped"

    runtime.register(stop)
    batch = [{"id": "s", "name": "stop", "arguments": {}}, *calls(("step", "late"))]
    async with runtime.aplan() as ctx:
        results = await runtime.acall_many(batch, ctx, max_concurrency=1)
    assert results[0].output == "stopped"
    assert (results[1].success, results[1].error_type) == (False, "ToolCancelledError")
    assert "before this call started" in (results[1].error or "")
    assert "start late" not in activity.log
    assert results[1].to_message()["is_error"] is True


async def test_a_call_the_cancellation_kept_from_starting_has_a_cancelled_trace(
    runtime: ToolRuntime,
) -> None:
    """Its result carries its one trace, which the listeners receive as for any other call."""

    @tool(writes=False)
    def stop(ctx: ToolExecutionContext) -> str:
        """Cancel the plan."""
        ctx.cancellation_token.cancel("enough")
        return "stopped"

    runtime.register(stop)
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    batch = [{"id": "s", "name": "stop", "arguments": {}}, *calls(("step", "late"))]
    async with runtime.aplan("p") as ctx:
        results = await runtime.acall_many(batch, ctx, max_concurrency=1)
    late = results[1].trace
    assert late is not None
    assert (late.tool_name, late.tool_call_id, late.plan_id) == ("step", "c0", "p")
    assert (late.status, late.error_type) == ("cancelled", "ToolCancelledError")
    assert late.error == results[1].error
    assert [trace.tool_call_id for trace in seen] == ["s", "c0"]
    assert seen[1] == late


async def test_a_call_cancelled_while_it_runs_is_answered_as_cancelled(
    runtime: ToolRuntime,
) -> None:
    """A running call that the plan's cancellation stops gets a cancelled result."""
    entered = asyncio.Event()

    @tool(writes=False)
    async def wait_forever() -> str:
        """Wait until cancelled."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    runtime.register(wait_forever)
    async with runtime.aplan() as ctx:
        batch = asyncio.ensure_future(
            runtime.acall_many([{"id": "w", "name": "wait_forever"}], ctx)
        )
        await asyncio.wait_for(entered.wait(), WAIT)
        ctx.cancellation_token.cancel("user")
        [result] = await asyncio.wait_for(batch, WAIT)
    assert result.error_type == "ToolCancelledError"
    assert "during this call" in (result.error or "")
    # It carries the trace the call got when the cancellation stopped it, as failures do.
    assert result.trace is not None
    assert (result.trace.tool_call_id, result.trace.status) == ("w", "cancelled")


def test_a_cancellation_raised_by_the_runtime_carries_the_cancelled_calls_trace(
    runtime: ToolRuntime,
) -> None:
    """ToolCancelledError.trace is the trace of the call it stopped; None elsewhere."""
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    runtime.register(FakeTool(name="t"))
    with runtime.plan() as ctx:
        ctx.cancellation_token.cancel("user")
        with pytest.raises(ToolCancelledError) as caught:
            runtime.execute("t", {}, ctx)
    assert caught.value.trace is not None and caught.value.trace == seen[-1]
    assert caught.value.trace.status == "cancelled"
    assert ToolCancelledError("elsewhere").trace is None


def test_one_call_passed_as_a_batch_is_refused_rather_than_read_as_its_keys(
    runtime: ToolRuntime,
) -> None:
    """A dict, a ToolCall or a text is not a batch: TypeError, and nothing is traced."""
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    one = {"id": "c1", "type": "function", "function": {"name": "step", "arguments": "{}"}}
    with runtime.plan() as ctx:
        for wrong in (one, ToolCall(id="c1", name="step"), '[{"name": "step"}]'):
            with pytest.raises(TypeError, match=r"list of tool calls.*\[tool_call\]"):
                runtime.call_many(wrong, ctx)  # type: ignore[arg-type]
        assert len(runtime.call_many((one,), ctx)) == 1  # any other iterable is a batch
    assert [trace.tool_name for trace in seen] == ["step"]


async def test_an_empty_batch_and_a_bad_limit(runtime: ToolRuntime) -> None:
    """No calls give no results; max_concurrency below 1 is refused."""
    async with runtime.aplan() as ctx:
        assert await runtime.acall_many([], ctx) == []
        with pytest.raises(ValueError, match="at least 1"):
            await runtime.acall_many(calls(("step", "a")), ctx, max_concurrency=0)
