"""`runtime.astream` and `runtime.astream_call`: a call's progress as it happens, then its result."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolcycle import (
    CallStream,
    NullTracer,
    ProgressEvent,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolNotFoundError,
    ToolResult,
    ToolRuntime,
    tool,
)
from toolcycle.runtime._stream import _Channel

WAIT = 5.0

Item = ProgressEvent | ToolResult


class Gate:
    """What a test tool waits on: the test opens it once it has seen the first event."""

    def __init__(self) -> None:
        self.sync = threading.Event()
        self.aio: asyncio.Event | None = None

    async def await_open(self) -> None:
        self.aio = self.aio or asyncio.Event()
        await asyncio.wait_for(self.aio.wait(), WAIT)

    def open(self) -> None:
        self.sync.set()
        if self.aio is not None:
            self.aio.set()


def _tools(gate: Gate) -> list[Any]:
    @tool(writes=False)
    async def fetch(pages: int, ctx: ToolExecutionContext) -> int:
        """Fetch pages: report the first, wait for the gate, report the rest."""
        ctx.report_progress(1, pages, "page 1")
        await gate.await_open()
        for page in range(2, pages + 1):
            ctx.report_progress(page, pages, f"page {page}")
        return pages

    @tool(writes=False)
    def index(files: int, ctx: ToolExecutionContext) -> int:
        """Index files on a worker thread: report the first, wait for the gate, go on."""
        ctx.report_progress(1, files)
        assert gate.sync.wait(WAIT), "the test never opened the gate"
        for done in range(2, files + 1):
            ctx.report_progress(done, files)
        return files

    @tool(writes=False)
    async def burst(reports: int, ctx: ToolExecutionContext) -> int:
        """Report many times without yielding to the loop, then wait for the gate."""
        for done in range(1, reports + 1):
            ctx.report_progress(done, reports)
        await gate.await_open()
        return reports

    @tool(writes=False)
    async def hang(ctx: ToolExecutionContext) -> None:
        """Report once, then wait until cancelled."""
        ctx.report_progress(0, None, "started")
        await asyncio.Event().wait()

    @tool(writes=False)
    def hang_sync(ctx: ToolExecutionContext) -> None:
        """Report once, wait for the gate, report again (after its call was given up on)."""
        ctx.report_progress(0, None, "started")
        assert gate.sync.wait(WAIT), "the test never opened the gate"
        ctx.report_progress(1, None, "too late")

    @tool(writes=False)
    async def quiet(text: str) -> str:
        """Answer at once, reporting nothing."""
        return text

    return [fetch, index, burst, hang, hang_sync, quiet]


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def runtime(gate: Gate) -> Iterator[ToolRuntime]:
    """A runtime with the test tools, keeping every trace."""
    rt = ToolRuntime(tracer=NullTracer(), keep_traces=100)
    for item in _tools(gate):
        rt.register(item)
    try:
        yield rt
    finally:
        gate.open()  # a sync tool still waiting ends now
        rt.close()


class Ended:
    """Collects traces; ``wait`` returns once a trace of the tool has arrived."""

    def __init__(self, runtime: ToolRuntime) -> None:
        self.traces: list[ToolExecutionTrace] = []
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        runtime.add_trace_listener(self._heard)

    def _heard(self, trace: ToolExecutionTrace) -> None:
        self.traces.append(trace)
        self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> ToolExecutionTrace:
        await asyncio.wait_for(self._event.wait(), WAIT)
        return self.traces[-1]


async def _others_end() -> None:
    """Wait (bounded) until every task but this one has ended; fail if one has not."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        _, pending = await asyncio.wait(others, timeout=WAIT)
        assert not pending, f"tasks left behind: {pending}"


def _progress(items: list[Item]) -> list[tuple[float, float | None, str | None]]:
    return [(i.progress, i.total, i.message) for i in items if isinstance(i, ProgressEvent)]


async def test_an_async_tools_events_arrive_while_it_runs_and_the_result_comes_last(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """The tool cannot finish before the consumer has seen its first event: they interleave."""
    items: list[Item] = []
    heard: list[ProgressEvent] = []
    async with runtime.aplan("p1", on_progress=heard.append) as ctx:
        async for item in runtime.astream("fetch", {"pages": 3}, ctx):
            items.append(item)
            if len(items) == 1:
                gate.open()
    assert _progress(items) == [(1, 3, "page 1"), (2, 3, "page 2"), (3, 3, "page 3")]
    result = items[-1]
    assert isinstance(result, ToolResult) and result.output == 3
    assert result.trace.progress_count == 3
    assert {(e.tool_name, e.plan_id, e.call_id) for e in items[:-1]} == {
        ("fetch", "p1", result.trace.call_id)
    }
    assert heard == items[:-1]  # the plan's on_progress still hears every report


async def test_a_sync_tool_reports_from_its_worker_thread_into_the_stream(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """Reports made on the pool's thread reach the consumer on its loop, in order."""
    items: list[Item] = []
    async with runtime.aplan() as ctx:
        async for item in runtime.astream("index", {"files": 3}, ctx):
            items.append(item)
            if len(items) == 1:
                gate.open()
    assert _progress(items) == [(1, 3, None), (2, 3, None), (3, 3, None)]
    assert isinstance(items[-1], ToolResult) and items[-1].output == 3


async def test_a_tool_that_reports_nothing_streams_only_its_result(runtime: ToolRuntime) -> None:
    """One item, the result; iterating again after it gives nothing."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("quiet", {"text": "hi"}, ctx)
        items = [item async for item in stream]
        assert [item async for item in stream] == []
    assert len(items) == 1 and isinstance(items[0], ToolResult) and items[0].output == "hi"
    assert stream.dropped == 0


async def test_a_slow_consumer_gets_the_newest_events_and_a_count_of_the_dropped(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """Five reports into a buffer of two: the last two are kept, three are counted as dropped."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("burst", {"reports": 5}, ctx, max_buffered=2)
        assert stream.dropped == 0  # nothing has run yet
        first = await anext(stream)
        gate.open()
        rest = [item async for item in stream]
    assert _progress([first, *rest]) == [(4, 5, None), (5, 5, None)]
    assert stream.dropped == 3
    assert isinstance(rest[-1], ToolResult) and rest[-1].trace.progress_count == 5


async def test_nothing_runs_until_the_stream_is_iterated(runtime: ToolRuntime) -> None:
    """Making a stream starts no call; closing an unstarted stream is harmless."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("quiet", {"text": "x"}, ctx)
        await stream.aclose()
        assert [item async for item in stream] == []
    assert runtime.recent_traces() == ()


async def test_breaking_out_of_the_loop_cancels_the_call_and_leaves_no_task(
    runtime: ToolRuntime,
) -> None:
    """The dropped stream cancels its call: the trace says cancelled and its task ends."""
    ended = Ended(runtime)
    async with runtime.aplan() as ctx:
        async for item in runtime.astream("hang", {}, ctx):
            assert isinstance(item, ProgressEvent)
            break
        trace = await ended.wait()
        await _others_end()
    assert (trace.tool_name, trace.status, trace.progress_count) == ("hang", "cancelled", 1)


async def test_aclose_cancels_the_call_and_waits_for_it_to_end(runtime: ToolRuntime) -> None:
    """When aclose returns, the call's trace is recorded as cancelled and no task is left."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("hang", {}, ctx)
        assert isinstance(await anext(stream), ProgressEvent)
        await stream.aclose()
        await stream.aclose()  # idempotent
        assert asyncio.all_tasks() == {asyncio.current_task()}
        with pytest.raises(StopAsyncIteration):
            await anext(stream)
    (trace,) = runtime.recent_traces()
    assert trace.status == "cancelled"


async def test_leaving_an_async_with_block_cancels_the_call(runtime: ToolRuntime) -> None:
    """``async with`` closes the stream on the way out, as aclose does."""
    async with runtime.aplan() as ctx:
        async with runtime.astream("hang", {}, ctx) as stream:
            async for _ in stream:
                break
        assert asyncio.all_tasks() == {asyncio.current_task()}
    assert [t.status for t in runtime.recent_traces()] == ["cancelled"]


async def test_cancelling_the_consuming_task_cancels_the_call(runtime: ToolRuntime) -> None:
    """A consumer cancelled while it waits for the next event takes the call down with it."""
    ended = Ended(runtime)
    first = asyncio.Event()

    async def consume(ctx: ToolExecutionContext) -> None:
        async for _ in runtime.astream("hang", {}, ctx):
            first.set()

    async with runtime.aplan() as ctx:
        consumer = asyncio.create_task(consume(ctx))
        await asyncio.wait_for(first.wait(), WAIT)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(consumer, WAIT)
        trace = await ended.wait()
        await _others_end()
    assert trace.status == "cancelled"


async def test_aclose_from_another_task_ends_the_consumers_loop_without_cancelling_it(
    runtime: ToolRuntime,
) -> None:
    """A consumer waiting for the next item when another task closes the stream just stops."""
    first = asyncio.Event()

    async def consume(stream: CallStream) -> list[Item]:
        items: list[Item] = []
        async for item in stream:
            items.append(item)
            first.set()  # its next wait starts before this task yields
        return items

    async with runtime.aplan() as ctx:
        stream = runtime.astream("hang", {}, ctx)
        consumer = asyncio.create_task(consume(stream))
        await asyncio.wait_for(first.wait(), WAIT)
        await stream.aclose()
        items = await asyncio.wait_for(consumer, WAIT)
        await _others_end()
    assert not consumer.cancelled()
    assert [type(item) for item in items] == [ProgressEvent]
    assert [t.status for t in runtime.recent_traces()] == ["cancelled"]


async def test_a_sync_tool_left_running_after_the_stream_closed_reports_to_nobody(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """Its thread runs on (Python cannot stop it); its late report is not buffered."""
    ended = Ended(runtime)
    later = threading.Event()
    async with runtime.aplan(on_progress=lambda e: later.set() if e.progress == 1 else None) as ctx:
        stream = runtime.astream("hang_sync", {}, ctx)
        assert isinstance(await anext(stream), ProgressEvent)
        await stream.aclose()
        assert (await ended.wait()).status == "cancelled"
        gate.open()
        assert await asyncio.to_thread(later.wait, WAIT)  # the late report was made
        # The stream heard it first and handed it to this loop; a callback queued now
        # runs after that hand-over, so once it has run the report has been dealt with.
        handled = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(handled.set_result, None)
        await asyncio.wait_for(handled, WAIT)
        assert stream._channel is not None and list(stream._channel.events) == []
        assert [item async for item in stream] == []


async def test_a_report_made_after_the_call_timed_out_is_not_yielded(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """A sync tool's thread reporting past the call's limit: the result stays the last item."""
    ended = Ended(runtime)
    later = threading.Event()
    async with runtime.aplan(on_progress=lambda e: later.set() if e.progress == 1 else None) as ctx:
        stream = runtime.astream("hang_sync", {}, ctx, timeout=0.05)
        first = await anext(stream)
        assert isinstance(first, ProgressEvent) and first.message == "started"
        assert (await ended.wait()).status == "timed_out"
        gate.open()  # the thread, left running, now reports again
        # The report was handed to this loop before on_progress heard it, so before
        # this wait's own answer: the stream has dealt with it once the wait returns.
        assert await asyncio.to_thread(later.wait, WAIT)
        rest = [item async for item in stream]
    assert len(rest) == 1 and isinstance(rest[0], ToolResult)
    assert rest[0].trace is not None and rest[0].trace.status == "timed_out"


async def test_the_calls_timeout_applies_to_a_streamed_call(runtime: ToolRuntime) -> None:
    """``timeout`` is the call's: past it, the stream ends with the timed-out result."""
    async with runtime.aplan() as ctx:
        items = [item async for item in runtime.astream("hang", {}, ctx, timeout=0.05)]
    result = items[-1]
    assert isinstance(result, ToolResult) and result.trace.status == "timed_out"
    assert len(items) == 2


async def test_what_aexecute_raises_comes_out_of_the_iteration(runtime: ToolRuntime) -> None:
    """An unknown tool raises ToolNotFoundError from the loop, and the stream is then over."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("nope", {}, ctx)
        with pytest.raises(ToolNotFoundError):
            await anext(stream)
        with pytest.raises(StopAsyncIteration):
            await anext(stream)


async def test_a_bad_limit_raises_from_the_first_iteration(runtime: ToolRuntime) -> None:
    """A call limit that is not positive is the host's mistake, raised before anything runs."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("quiet", {"text": "x"}, ctx, timeout=0)
        with pytest.raises(ValueError, match="timeout"):
            await anext(stream)
        assert [item async for item in stream] == []


@pytest.mark.parametrize(
    ("max_buffered", "error"),
    [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)],
)
def test_max_buffered_must_be_a_positive_integer(
    runtime: ToolRuntime, max_buffered: Any, error: type[Exception]
) -> None:
    """Both stream methods refuse a buffer size that is not a whole number of at least 1."""
    with runtime.plan() as ctx:
        with pytest.raises(error, match="max_buffered"):
            runtime.astream("quiet", {"text": "x"}, ctx, max_buffered=max_buffered)
        with pytest.raises(error, match="max_buffered"):
            runtime.astream_call({"name": "quiet", "arguments": {}}, ctx, max_buffered=max_buffered)


async def test_a_models_tool_call_streams_its_progress_then_what_acall_returns(
    runtime: ToolRuntime, gate: Gate
) -> None:
    """The last item answers the model's call, with its id, as ``acall``'s result would."""
    model_call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "fetch", "arguments": '{"pages": 2}'},
    }
    items: list[Item] = []
    async with runtime.aplan() as ctx:
        async for item in runtime.astream_call(model_call, ctx):
            items.append(item)
            gate.open()
    assert _progress(items) == [(1, 2, "page 1"), (2, 2, "page 2")]
    result = items[-1]
    assert isinstance(result, ToolResult) and result.output == 2
    assert result.trace.tool_call_id == "call_7"
    assert result.to_message()["tool_call_id"] == "call_7"


async def test_a_models_call_of_an_unknown_tool_streams_only_the_refusal(
    runtime: ToolRuntime,
) -> None:
    """Nothing the model got wrong raises: the stream's one item is the failed result."""
    async with runtime.aplan() as ctx:
        items = [item async for item in runtime.astream_call({"name": "nope"}, ctx)]
    assert len(items) == 1
    assert isinstance(items[0], ToolResult) and items[0].error_type == "ToolNotFoundError"


async def test_a_stream_is_its_own_async_iterator(runtime: ToolRuntime) -> None:
    """``aiter`` of a stream is the stream, so it can be handed around and resumed."""
    async with runtime.aplan() as ctx:
        stream = runtime.astream("quiet", {"text": "x"}, ctx)
        assert isinstance(stream, CallStream) and aiter(stream) is stream
        await stream.aclose()


def test_a_report_after_the_loop_closed_is_dropped_quietly() -> None:
    """A worker thread reporting once the consumer's loop is gone raises nothing."""

    async def make() -> _Channel:
        return _Channel(10)

    channel = asyncio.run(make())
    errors: list[BaseException] = []

    def report() -> None:
        try:
            channel.put(ProgressEvent(tool_name="t", plan_id="p", call_id=None, progress=1))
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=report)
    worker.start()
    worker.join(WAIT)
    assert not worker.is_alive() and errors == [] and list(channel.events) == []


def test_a_stream_dropped_after_its_loop_closed_raises_nothing() -> None:
    """Collecting a stream whose loop closed with its task still pending is quiet."""

    async def never() -> ToolResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    loop = asyncio.new_event_loop()
    stream = CallStream(lambda listen: never(), 10)
    task = loop.create_task(never())
    loop.run_until_complete(asyncio.sleep(0))  # the task starts and waits
    stream._task = task
    loop.close()
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # left pending on purpose
    del stream
    gc.collect()
    assert not task.done()


async def test_a_call_says_whether_its_progress_is_followed_as_it_happens() -> None:
    """``progress_followed``: on_progress, a stream, or an idle limit (the call's or the plan's)."""
    seen: list[bool] = []

    @tool
    def follows(ctx: ToolExecutionContext) -> None:
        """Note whether the call's progress is followed."""
        seen.append(ctx.progress_followed())

    with ToolRuntime() as runtime:
        runtime.register(follows)
        async with runtime.aplan() as ctx:
            assert not ctx.progress_followed()  # outside any call
            await runtime.aexecute("follows", {}, ctx)
            await runtime.aexecute("follows", {}, ctx, idle_timeout=5)
            [_ async for _ in runtime.astream("follows", {}, ctx)]
        async with runtime.aplan(on_progress=lambda _: None) as ctx:
            await runtime.aexecute("follows", {}, ctx)
        async with runtime.aplan(idle_timeout=5) as ctx:
            await runtime.aexecute("follows", {}, ctx)
    assert seen == [False, True, True, True, True]
