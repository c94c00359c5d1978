"""Tracers: structlog through standard logging, silent by default."""

from __future__ import annotations

import logging
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcycle import (
    ApprovalDecision,
    NullTracer,
    StructlogTracer,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.testing import FakeTool


def _trace(success: bool = True) -> ToolExecutionTrace:
    return ToolExecutionTrace(
        tool_name="t",
        plan_id="p",
        call_id="c",
        started_at="2026-01-01T00:00:00.000000+00:00",
        ended_at="2026-01-01T00:00:00.000100+00:00",
        duration_ms=0.1,
        success=success,
        status="ok" if success else "error",
        error=None if success else "bad",
    )


def test_structlog_tracer_logs_through_standard_logging(caplog: pytest.LogCaptureFixture) -> None:
    """An enabled toolcycle.trace logger receives one tool.call record per trace."""
    with caplog.at_level(logging.INFO, logger="toolcycle.trace"):
        StructlogTracer().record(_trace())
        StructlogTracer().record(_trace(success=False))
    records = [r for r in caplog.records if r.name == "toolcycle.trace"]
    assert [r.levelno for r in records] == [logging.INFO, logging.WARNING]
    assert records[0].getMessage() == "tool.call"
    assert records[1].__dict__["error"] == "bad"


def test_structlog_tracer_logs_a_pending_call_at_info(caplog: pytest.LogCaptureFixture) -> None:
    """A call waiting for an approval has not failed: its record is INFO, not WARNING."""
    pending = _trace(success=False).model_copy(update={"status": "pending"})
    with caplog.at_level(logging.INFO, logger="toolcycle.trace"):
        StructlogTracer().record(pending)
    [record] = [r for r in caplog.records if r.name == "toolcycle.trace"]
    assert record.levelno == logging.INFO and record.__dict__["status"] == "pending"


def test_a_deferred_call_is_not_logged_when_only_warnings_are_enabled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """At the default WARNING threshold a deferred call logs nothing; a failed one does."""

    @tool(requires_approval=True)
    def send(to: str) -> str:
        """Send a message."""
        return to

    with caplog.at_level(logging.WARNING, logger="toolcycle.trace"), ToolRuntime() as runtime:
        runtime.register(send)
        with runtime.plan(approver=lambda request: ApprovalDecision.defer("ask ann")) as ctx:
            deferred = runtime.execute("send", {"to": "ann"}, ctx)
            refused = runtime.execute("send", {"to": 1}, ctx)
    assert deferred.trace is not None and deferred.trace.status == "pending"
    assert not refused.success
    records = [r for r in caplog.records if r.name == "toolcycle.trace"]
    assert [r.__dict__["status"] for r in records] == [refused.trace.status]


def test_structlog_tracer_is_silent_when_logging_is_not_enabled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without a configured host, nothing reaches stdout or stderr."""
    logging.getLogger("toolcycle.trace").setLevel(logging.NOTSET)
    StructlogTracer().record(_trace(success=False))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_null_tracer_drops_traces() -> None:
    """NullTracer accepts a trace and does nothing."""
    NullTracer().record(_trace())


def test_runtime_default_tracer_is_structlog(caplog: pytest.LogCaptureFixture) -> None:
    """A runtime built without a tracer logs calls on toolcycle.trace."""
    with caplog.at_level(logging.INFO, logger="toolcycle.trace"), ToolRuntime() as runtime:
        runtime.register(FakeTool())
        with runtime.plan() as ctx:
            runtime.execute("fake", {}, ctx)
    assert any(r.name == "toolcycle.trace" for r in caplog.records)


def test_output_mismatch_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """An output that fails its schema logs tool.output_invalid at WARNING."""
    with (
        caplog.at_level(logging.WARNING, logger="toolcycle"),
        ToolRuntime(tracer=NullTracer()) as runtime,
    ):
        runtime.register(FakeTool(output="x", output_schema={"type": "integer"}))
        with runtime.plan() as ctx:
            runtime.execute("fake", {}, ctx)
    assert any(r.getMessage() == "tool.output_invalid" for r in caplog.records)


def test_call_ids_are_unique_within_and_across_runtimes() -> None:
    """Every call gets its own call_id, also between two runtimes."""
    ids: list[str] = []
    for _ in range(2):
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(FakeTool())
            with runtime.plan() as ctx:
                for _ in range(50):
                    trace = runtime.execute("fake", {}, ctx).trace
                    assert trace is not None
                    ids.append(trace.call_id)
    assert len(set(ids)) == 100


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_iso_utc_matches_datetime_isoformat(seconds: float) -> None:
    """The cached formatter gives exactly what datetime.isoformat gives."""
    from datetime import UTC, datetime

    from toolcycle.tracing import iso_utc

    expected = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")
    assert iso_utc(seconds) == expected


def test_recent_traces_keeps_only_the_latest_in_order() -> None:
    """keep_traces=3 keeps the three latest traces, oldest first; the rest are dropped."""
    with ToolRuntime(keep_traces=3) as runtime:
        runtime.register(FakeTool(name="t", input_schema={"type": "object"}))
        assert runtime.recent_traces() == ()
        with runtime.plan() as ctx:
            results = [runtime.execute("t", {"n": n}, ctx) for n in range(5)]
            bad = runtime.execute("t", ["not", "an", "object"], ctx)
        kept = runtime.recent_traces()
    assert [trace.call_id for trace in kept] == [
        results[3].trace.call_id,  # type: ignore[union-attr]
        results[4].trace.call_id,  # type: ignore[union-attr]
        bad.trace.call_id,  # type: ignore[union-attr]
    ]
    assert kept[-1].status == "invalid_input"


def test_no_trace_is_kept_by_default() -> None:
    """Without keep_traces the runtime holds nothing of a call once it returns."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx:
            runtime.execute("t", {}, ctx)
        assert runtime.recent_traces() == ()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_keep_traces_must_be_a_count(bad: object) -> None:
    """A negative, fractional or non-numeric keep_traces is refused up front."""
    with pytest.raises(ValueError, match="keep_traces"):
        ToolRuntime(keep_traces=bad)  # type: ignore[arg-type]


def test_the_ring_buffer_holds_its_size_under_many_threads() -> None:
    """Eight threads making 200 calls each leave exactly the last 50 traces, all distinct."""
    with ToolRuntime(keep_traces=50) as runtime:
        runtime.register(FakeTool(name="t"))
        ctx = runtime.new_context()
        start = threading.Barrier(8, timeout=10)

        def work() -> None:
            start.wait()
            for _ in range(200):
                runtime.execute("t", {}, ctx)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
        kept = runtime.recent_traces()
        runtime.end_plan(ctx)
    assert len(kept) == 50
    assert len({trace.call_id for trace in kept}) == 50
