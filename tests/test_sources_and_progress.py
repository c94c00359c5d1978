"""Core support for sources: kept sources, stale refresh, close, timeouts and progress."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ProgressEvent,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    ToolSkippedWarning,
    tool,
)
from toolcycle.testing import FakeTool


class _Source:
    """A source whose tool list and behaviour the test changes."""

    def __init__(self, *names: str, skip: bool | None = None) -> None:
        self.names = list(names)
        self.stale = False
        self.listed = 0
        self.closed = 0
        self.fail_listing: Exception | None = None
        self.fail_close: Exception | None = None
        if skip is not None:
            self.skip_invalid_schemas = skip

    def tools(self) -> list[Any]:
        self.listed += 1
        self.stale = False
        if self.fail_listing is not None:
            raise self.fail_listing
        return [
            FakeTool(name=n, input_schema={"type": "no-such-type"})
            if n.startswith("bad")
            else FakeTool(name=n)
            for n in self.names
        ]

    def close(self) -> None:
        self.closed += 1
        if self.fail_close is not None:
            raise self.fail_close


def _logged(caplog: pytest.LogCaptureFixture, event: str, text: str) -> bool:
    """Whether a structlog event was logged with ``text`` in one of its fields."""
    return any(
        r.getMessage() == event and any(text in str(value) for value in vars(r).values())
        for r in caplog.records
    )


def _names(runtime: ToolRuntime) -> list[str]:
    return [d.name for d in runtime.descriptors()]


def test_a_stale_source_is_registered_afresh_before_the_next_plan(runtime) -> None:
    """Tools the source dropped disappear, new ones appear; fresh sources are not asked."""
    source, other = _Source("a", "b"), _Source("c")
    runtime.register_source(source)
    runtime.register_source(other)
    source.names = ["b", "d"]
    runtime.new_context()
    assert source.listed == 1  # not stale: not asked again
    source.stale = True
    runtime.new_context()
    assert sorted(_names(runtime)) == ["b", "c", "d"]
    assert (source.listed, other.listed) == (2, 1)


def test_an_open_plan_activates_a_tool_its_source_gave_anew_before_running_it(runtime) -> None:
    """After a refresh, a plan already open activates the new object, then ends both."""
    source = _Source("a")
    runtime.register_source(source)
    made: list[FakeTool] = []
    listing = source.tools

    def tools() -> list[Any]:
        made.extend(listing())
        return made[-1:]

    source.tools = tools  # type: ignore[method-assign]
    source.stale = True
    first = runtime.new_context("first")  # the refresh makes the first "a" kept here
    runtime.execute("a", {}, first)
    source.stale = True
    second = runtime.new_context("second")  # registers a new "a" while "first" is open
    runtime.execute("a", {}, first)
    runtime.execute("a", {}, second)
    runtime.end_plan(first)
    runtime.end_plan(second)
    old, new = made
    assert old.stages() == ["discover", "activate", "execute", "deactivate"]
    assert new.stages("first") == ["activate", "execute", "deactivate"]
    assert new.stages("second") == ["activate", "execute", "deactivate"]


def test_a_tool_a_source_gives_again_as_the_same_object_stays_active(runtime) -> None:
    """A refresh that lists the very same tool object does not activate it twice in a plan."""
    kept = FakeTool(name="a")

    class Same:
        stale = False

        def tools(self) -> list[FakeTool]:
            self.stale = False
            return [kept]

    source = Same()
    runtime.register_source(source)
    ctx = runtime.new_context("p")
    runtime.execute("a", {}, ctx)
    source.stale = True
    runtime.new_context()
    runtime.execute("a", {}, ctx)
    runtime.end_plan(ctx)
    assert kept.stages("p") == ["activate", "execute", "execute", "deactivate"]


def test_a_refresh_that_fails_logs_and_leaves_the_sources_tools_unregistered(
    runtime, caplog
) -> None:
    """A source that cannot list its tools has none until a later refresh succeeds."""
    source = _Source("a")
    runtime.register_source(source)
    source.stale, source.fail_listing = True, RuntimeError("server is down")
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.new_context()
    assert _names(runtime) == []
    assert _logged(caplog, "source.refresh_failed", "server is down")
    source.stale, source.fail_listing = True, None
    runtime.new_context()
    assert _names(runtime) == ["a"]


def test_tools_skipped_on_refresh_are_logged_not_warned(runtime, caplog) -> None:
    """A refresh happens inside new_context, where a warning would surprise the caller."""
    source = _Source("a", skip=True)
    runtime.register_source(source)
    source.names, source.stale = ["a", "bad"], True
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.new_context()  # filterwarnings=error: a warning here would fail the test
    assert _names(runtime) == ["a"]
    assert _logged(caplog, "source.tool_skipped", "'bad' was skipped")


def test_skip_invalid_schemas_defaults_to_the_sources_own_attribute(runtime) -> None:
    """A source that says so skips bad tools; an explicit argument overrides it."""
    with pytest.warns(ToolSkippedWarning, match="'bad1'"):
        assert [d.name for d in runtime.register_source(_Source("x", "bad1", skip=True))] == ["x"]
    with pytest.raises(Exception, match="no-such-type"):
        runtime.register_source(_Source("y", "bad2", skip=True), skip_invalid_schemas=False)
    assert _names(runtime) == ["x"]


def test_close_closes_every_source_once_and_logs_one_that_fails(caplog) -> None:
    """runtime.close() calls close() on each source, even after one raised."""
    failing, fine = _Source("a"), _Source("b")
    failing.fail_close = RuntimeError("cannot close")
    runtime = ToolRuntime()
    runtime.register_source(failing)
    runtime.register_source(fine)
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.close()
        runtime.close()
    assert (failing.closed, fine.closed) == (1, 1)
    assert _logged(caplog, "source.close_failed", "cannot close")


class _Waiter:
    """An async tool that waits for an event nobody sets, with a timeout of its own."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="wait", timeout=self.timeout)

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        await asyncio.Event().wait()

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.mark.parametrize(("own", "given"), [(0.05, None), (30.0, 0.05), (None, 0.05)])
def test_the_smaller_of_the_tools_and_the_callers_timeout_applies(runtime, own, given) -> None:
    """The descriptor's timeout is a default; a smaller timeout= of the caller wins."""
    runtime.register(_Waiter(own))
    with runtime.plan() as ctx:
        result = runtime.execute("wait", {}, ctx, timeout=given)
    assert result.trace is not None and result.trace.status == "timed_out"


async def test_aexecute_applies_the_descriptors_timeout(runtime) -> None:
    """The async path honours the tool's own timeout too."""
    runtime.register(_Waiter(0.05))
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("wait", {}, ctx)
    assert result.trace is not None and result.trace.status == "timed_out"


def test_a_descriptor_timeout_must_be_positive() -> None:
    """Zero or negative seconds are refused when the descriptor is built."""
    with pytest.raises(ValueError, match="greater than 0"):
        ToolDescriptor(name="t", timeout=0)


def test_a_tool_reporting_progress_reaches_on_progress_and_the_trace(runtime) -> None:
    """ctx.report_progress from a function tool: events carry the call and count in the trace."""

    @tool(writes=False)
    def count(n: int, ctx: ToolExecutionContext) -> int:
        """The count tool of this test."""
        for i in range(n):
            ctx.report_progress(i + 1, n, f"item {i + 1}")
        return n

    runtime.register(count)
    events: list[ProgressEvent] = []
    with runtime.plan(plan_id="plan-p") as ctx:
        ctx.on_progress = events.append
        result = runtime.execute("count", {"n": 2}, ctx)
        quiet = runtime.execute("count", {"n": 0}, ctx)
    assert result.trace is not None and result.trace.progress_count == 2
    assert quiet.trace is not None and quiet.trace.progress_count == 0
    assert events == [
        ProgressEvent(
            tool_name="count",
            plan_id="plan-p",
            call_id=result.trace.call_id,
            progress=i + 1,
            total=2,
            message=f"item {i + 1}",
        )
        for i in range(2)
    ]


def test_a_reporter_taken_in_a_call_may_be_used_from_another_thread(runtime) -> None:
    """The function progress_reporter returns keeps counting for its own call."""

    @tool(writes=False)
    def threaded(ctx: ToolExecutionContext) -> str:
        """The threaded tool of this test."""
        report = ctx.progress_reporter()
        worker = threading.Thread(target=report, args=(0.5, 1.0, None))
        worker.start()
        worker.join(5)
        return "done"

    runtime.register(threaded)
    with runtime.plan() as ctx:
        result = runtime.execute("threaded", {}, ctx)
    assert result.trace is not None and result.trace.progress_count == 1


def test_progress_outside_a_call_has_no_call_id_and_a_failing_callback_is_logged(
    caplog,
) -> None:
    """Reports outside any call still reach on_progress; a callback that raises is contained."""
    seen: list[ProgressEvent] = []
    ctx = ToolExecutionContext("outside", on_progress=seen.append)
    ctx.report_progress(3)
    assert seen == [ProgressEvent(tool_name="", plan_id="outside", call_id=None, progress=3)]

    def broken(event: ProgressEvent) -> None:
        raise RuntimeError("callback broke")

    ctx.on_progress = broken
    with caplog.at_level(logging.ERROR, logger="toolcycle.context"):
        ctx.report_progress(4)
    assert any("on_progress callback" in r.getMessage() for r in caplog.records)
    ToolExecutionContext("silent").report_progress(1)  # no callback: nothing happens


def test_a_plan_scope_passes_on_progress_to_its_context() -> None:
    """runtime.plan(on_progress=...) sets the callback that the plan's reports reach."""
    seen: list[ProgressEvent] = []

    @tool(writes=False)
    def step(ctx: ToolExecutionContext) -> int:
        """The step tool of this test."""
        ctx.report_progress(1, 2, "half")
        return 1

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(step)
        with runtime.plan("p", on_progress=seen.append) as ctx:
            assert ctx.on_progress is not None
            assert runtime.execute("step", {}, ctx).trace.progress_count == 1
    assert [(e.plan_id, e.progress, e.total, e.message) for e in seen] == [("p", 1, 2, "half")]
