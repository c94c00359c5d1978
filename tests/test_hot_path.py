"""The warm call's short path, and what the agent-loop features keep off it."""

from __future__ import annotations

import asyncio
from typing import Any

from toolcycle import (
    CachePolicy,
    NullTracer,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    wrap,
)
from toolcycle.runtime._recorder import TraceRecorder

WAIT = 5.0


class SlowCachedStart:
    """A read-only tool whose async activate never ends: its calls time out activating."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="slow_cached", capability={"writes": False})

    async def activate(self, ctx: ToolExecutionContext) -> None:
        await asyncio.Event().wait()

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ran"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_a_plain_call_record_has_no_extras_and_reads_the_defaults() -> None:
    """A record no feature touched keeps its extras slot empty and reads plain values."""
    record = TraceRecorder(NullTracer()).start("t", "p")
    assert record.extras is None
    assert (record.retry, record.attempts, record.cache_hit) == (0, (), False)
    assert (record.guardrails, record.revealed) == ((), ())


def test_setting_one_feature_value_makes_the_extras_and_reads_it_back() -> None:
    """The first feature value a call sets creates its extras; the rest keep their defaults."""
    recorder = TraceRecorder(NullTracer())
    record = recorder.start("t", "p")
    record.retry = 2
    record.cache_hit = True
    record.revealed = ("other",)
    assert record.extras is not None
    assert (record.retry, record.cache_hit, record.revealed) == (2, True, ("other",))
    assert (record.attempts, record.guardrails) == ((), ())
    trace = recorder.finish(record, "ok")
    assert (trace.retry, trace.cache_hit, trace.revealed_tools) == (2, True, ("other",))
    assert trace.attempts == () and trace.content_kinds == ()


def test_a_plain_call_trace_carries_the_plain_feature_values() -> None:
    """A warm call of a plain tool traces no retry, attempt, hit, guardrail or reveal."""
    with ToolRuntime(tracer=NullTracer()) as runtime:

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        runtime.register(wrap(add, writes=False))
        with runtime.plan() as ctx:
            result = runtime.execute("add", {"a": 1, "b": 2}, ctx)
    trace = result.trace
    assert result.output == 3 and trace is not None
    assert (trace.retry, trace.attempts, trace.cache_hit) == (0, (), False)
    assert (trace.guardrails, trace.revealed_tools, trace.content_bytes) == ((), (), 0)


def test_a_cached_call_that_times_out_activating_fails_as_timed_out() -> None:
    """A cached tool's call past its limit while activating is a timed-out result (sync)."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(SlowCachedStart(), cache=CachePolicy(ttl=60))
        with runtime.plan() as ctx:
            result = runtime.execute("slow_cached", {}, ctx, timeout=0.1)
    assert not result.success
    assert result.trace is not None and result.trace.status == "timed_out"


async def test_a_cached_call_that_times_out_activating_fails_as_timed_out_from_async() -> None:
    """The async path answers a cached tool's activation past the call's limit the same way."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(SlowCachedStart(), cache=CachePolicy(ttl=60))
        async with runtime.aplan() as ctx:
            result = await asyncio.wait_for(
                runtime.aexecute("slow_cached", {}, ctx, timeout=0.1), WAIT
            )
    assert not result.success
    assert result.trace is not None and result.trace.status == "timed_out"


def test_a_list_output_is_plain_output() -> None:
    """A list without content parts, empty or not, is the plain output it was."""

    def items() -> list[int]:
        """Three numbers."""
        return [1, 2, 3]

    def empty() -> list[int]:
        """No numbers."""
        return []

    with ToolRuntime(tracer=NullTracer()) as runtime:
        for function in (items, empty):
            runtime.register(wrap(function, writes=False))
        with runtime.plan() as ctx:
            listed = runtime.execute("items", {}, ctx)
            none = runtime.execute("empty", {}, ctx)
    assert listed.output == [1, 2, 3] and listed.content == ()
    assert none.output == [] and none.success
