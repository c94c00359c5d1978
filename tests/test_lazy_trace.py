"""A call's trace is built when someone wants it, and says the same either way."""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    StructlogTracer,
    ToolCall,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolRuntime,
    Tracer,
)
from toolcycle._lazy_trace import INSTANCE_DICT, LazyTrace
from toolcycle.testing import FakeTool

_OUTPUT = {"sum": 5, "label": "é"}


def _ticks(start: float, step: float) -> Callable[[], float]:
    counter: Iterator[float] = itertools.count(start, step)
    return lambda: next(counter)


def _runtime(tracer: Tracer | None = None, **options: Any) -> ToolRuntime:
    """A runtime whose clocks tick the same way every time, so traces can be compared."""
    runtime = ToolRuntime(
        tracer=tracer,
        clock=_ticks(1_767_225_600.25, 0.5),
        timer=_ticks(10.0, 0.001),
        **options,
    )
    runtime.register(FakeTool(name="t", output=_OUTPUT))
    return runtime


def _run(runtime: ToolRuntime) -> ToolResult:
    ctx = runtime.new_context("plan-1")
    try:
        return runtime.execute("t", {"x": 1}, ctx)
    finally:
        runtime.end_plan(ctx)


def _lazy(result: ToolResult) -> bool:
    """Whether the result still holds its trace as plain values."""
    return isinstance(INSTANCE_DICT.__get__(result)["trace"], LazyTrace)


def _same_ids(result: ToolResult, like: ToolResult) -> dict[str, Any]:
    """The result's data with the call id of ``like`` (ids are random per runtime)."""
    data = result.model_dump()
    assert like.trace is not None
    data["trace"]["call_id"] = like.trace.call_id
    return data


def test_a_null_tracer_leaves_the_trace_unbuilt_until_it_is_read() -> None:
    """With nothing listening, the result holds plain values; reading trace builds it once."""
    with _runtime(NullTracer()) as runtime:
        result = _run(runtime)
    assert _lazy(result)
    trace = result.trace
    assert isinstance(trace, ToolExecutionTrace)
    assert not _lazy(result)
    assert result.trace is trace


def test_a_lazy_trace_says_what_an_eager_one_says() -> None:
    """A trace built on reading equals the one a listener received, field for field."""
    heard: list[ToolExecutionTrace] = []
    with _runtime(NullTracer()) as quiet, _runtime(NullTracer()) as listened:
        listened.add_trace_listener(heard.append)
        lazy, eager = _run(quiet), _run(listened)
    assert _lazy(lazy) and not _lazy(eager)
    assert eager.trace is heard[0]
    assert _same_ids(lazy, eager) == eager.model_dump()
    assert lazy.trace is not None and eager.trace is not None
    assert lazy.trace.started_at == "2026-01-01T00:00:00.250000+00:00"
    assert lazy.trace.model_dump(exclude={"call_id"}) == eager.trace.model_dump(exclude={"call_id"})


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda r: r.model_dump(), id="model_dump"),
        pytest.param(lambda r: r.model_dump_json(), id="model_dump_json"),
        pytest.param(lambda r: pickle.loads(pickle.dumps(r)), id="pickle"),
        pytest.param(lambda r: r.model_copy(update={"truncated": True}), id="model_copy"),
        pytest.param(copy.deepcopy, id="deepcopy"),
        pytest.param(copy.copy, id="copy"),
        pytest.param(repr, id="repr"),
        pytest.param(vars, id="vars"),
        pytest.param(dict, id="iterate"),
        pytest.param(lambda r: r == r.model_copy(), id="equality"),
    ],
)
def test_every_reader_of_a_result_sees_its_built_trace(read: Callable[[ToolResult], Any]) -> None:
    """Dumps, copies, pickles, repr and equality build the trace first; none sees plain values."""
    with _runtime(NullTracer()) as runtime:
        result = _run(runtime)
    assert _lazy(result)
    seen = read(result)
    assert not _lazy(result)
    assert "LazyTrace" not in repr(seen)
    if isinstance(seen, ToolResult):
        assert isinstance(seen.trace, ToolExecutionTrace)
        assert seen.trace == result.trace


def test_a_result_in_another_model_dumps_its_built_trace() -> None:
    """pydantic-core reads a nested result's data through the same door."""
    from pydantic import BaseModel

    class Envelope(BaseModel):
        result: ToolResult

    with _runtime(NullTracer()) as runtime:
        result = _run(runtime)
    dumped = Envelope(result=result).model_dump()
    assert dumped["result"]["trace"]["started_at"] == "2026-01-01T00:00:00.250000+00:00"
    assert dumped["result"]["trace"]["result_size_bytes"] == len('{"sum":5,"label":"é"}'.encode())


def test_equal_results_hash_alike_whether_or_not_their_traces_were_read() -> None:
    """Equality and hash depend on the fields only, never on whether the trace was built."""
    with _runtime(NullTracer()) as first, _runtime(NullTracer()) as second:
        one, two = _run(first), _run(second)
    data = _same_ids(two, one)
    assert _same_ids(one, one) == data
    rebuilt = ToolResult.model_validate({**data, "output": "x"})
    assert hash(rebuilt) == hash(ToolResult.model_validate({**data, "output": "x"}))


def test_a_result_answering_a_tool_call_keeps_its_trace() -> None:
    """call() answers with the same trace execute recorded."""
    with _runtime(NullTracer()) as runtime:
        ctx = runtime.new_context("plan-1")
        result = runtime.call(ToolCall(id="c1", name="t", arguments={"x": 1}), ctx)
        runtime.end_plan(ctx)
    assert result.trace is not None and result.trace.success
    assert result.call is not None and result.call.id == "c1"


def test_threads_reading_a_lazy_trace_all_get_the_same_object() -> None:
    """The trace is built once, whichever thread reads it first."""
    with _runtime(NullTracer()) as runtime:
        results = [_run(runtime) for _ in range(20)]
    barrier = threading.Barrier(4, timeout=10)
    seen: list[list[object]] = [[] for _ in range(4)]

    def read(index: int) -> None:
        barrier.wait()
        seen[index].extend(result.trace for result in results)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    for column in zip(*seen, strict=True):
        assert all(item is column[0] for item in column)


def test_the_default_tracer_on_a_host_without_logging_leaves_the_trace_unbuilt() -> None:
    """A structlog tracer whose logger is off drops traces unseen, so none is built."""
    logging.getLogger("toolcycle.trace").setLevel(logging.NOTSET)
    with _runtime() as runtime:
        result = _run(runtime)
    assert _lazy(result)
    assert result.trace is not None and result.trace.success


def test_the_default_tracer_with_logging_on_gets_every_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once the host enables the trace logger, each call is logged (and so built) at once."""
    with caplog.at_level(logging.INFO, logger="toolcycle.trace"), _runtime() as runtime:
        result = _run(runtime)
    assert not _lazy(result)
    records = [r for r in caplog.records if r.name == "toolcycle.trace"]
    assert len(records) == 1
    assert result.trace is not None
    assert records[0].__dict__["call_id"] == result.trace.call_id


def test_a_tracer_of_another_kind_receives_every_trace() -> None:
    """A tracer the recorder does not know always gets the trace, built at once."""
    got: list[ToolExecutionTrace] = []

    class Collecting:
        def record(self, trace: ToolExecutionTrace) -> None:
            got.append(trace)

    class Quiet(StructlogTracer):  # a subclass may do anything in record: not skipped
        def record(self, trace: ToolExecutionTrace) -> None:
            got.append(trace)

    for tracer in (Collecting(), Quiet()):
        with _runtime(tracer) as runtime:
            result = _run(runtime)
        assert result.trace is got[-1]
    assert len(got) == 2


def test_kept_traces_are_the_results_traces() -> None:
    """keep_traces builds each trace at once, and the result holds the same object."""
    with _runtime(NullTracer(), keep_traces=2) as runtime:
        result = _run(runtime)
        assert runtime.recent_traces() == (result.trace,)
        assert runtime.recent_traces()[0] is result.trace


def test_a_cancelled_plan_stops_every_awaited_call_in_flight() -> None:
    """Cancelling the plan's token reaches each async call awaiting in the plan."""
    started = asyncio.Event()
    running = 0

    class Waiting(FakeTool):
        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            nonlocal running
            running += 1
            if running == 3:
                started.set()
            await asyncio.sleep(30)

    async def scenario() -> list[BaseException | ToolResult]:
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(Waiting(name="w"))
            ctx = runtime.new_context("p")
            calls = [asyncio.ensure_future(runtime.aexecute("w", {}, ctx)) for _ in range(3)]
            await asyncio.wait_for(started.wait(), timeout=10)
            ctx.cancellation_token.cancel("stop")
            done = await asyncio.wait_for(
                asyncio.gather(*calls, return_exceptions=True), timeout=10
            )
            await runtime.aend_plan(ctx)
            return list(done)

    outcomes = asyncio.run(scenario())
    assert len(outcomes) == 3
    assert all(type(o).__name__ == "ToolCancelledError" for o in outcomes), outcomes


def test_calls_add_no_callbacks_to_the_plans_token() -> None:
    """However many awaited calls a plan makes, its token holds the same callbacks."""

    class Async(FakeTool):
        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            await asyncio.sleep(0)
            return 1

    async def scenario() -> tuple[int, int]:
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(Async(name="a"))
            ctx = runtime.new_context("p")
            await runtime.aexecute("a", {}, ctx)
            before = len(ctx.cancellation_token._callbacks)
            for _ in range(50):
                await runtime.aexecute("a", {}, ctx)
            after = len(ctx.cancellation_token._callbacks)
            await runtime.aend_plan(ctx)
            return before, after

    before, after = asyncio.run(scenario())
    assert after == before
