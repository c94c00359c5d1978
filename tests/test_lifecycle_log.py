"""Lifecycle events on the toolcycle.lifecycle logger: every step, and nothing when disabled."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from toolcycle import ApprovalDecision, NullTracer, PendingApproval, ToolRuntime, tracing
from toolcycle.testing import FakeTool


def test_every_lifecycle_step_is_an_event_with_its_plan_tool_and_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Plan start, call start, activation, deactivation and plan end, in that order."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="fake", writes=False))
        with caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"):
            with runtime.plan("p1") as ctx:
                result = runtime.execute("fake", {}, ctx)
    records = [r for r in caplog.records if r.name == "toolcycle.lifecycle"]
    assert [r.getMessage() for r in records] == [
        "plan.started",
        "tool.call_started",
        "tool.activated",
        "tool.deactivated",
        "plan.ended",
    ]
    assert all(r.plan_id == "p1" for r in records)  # type: ignore[attr-defined]
    started = records[1]
    assert (started.tool, started.call_id) == ("fake", result.trace.call_id)  # type: ignore[attr-defined,union-attr]


async def test_the_async_path_logs_the_same_steps(caplog: pytest.LogCaptureFixture) -> None:
    """Aplan and aexecute give the same events."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="fake", writes=False))
        with caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"):
            async with runtime.aplan("p2") as ctx:
                await runtime.aexecute("fake", {}, ctx)
    names = [r.getMessage() for r in caplog.records if r.name == "toolcycle.lifecycle"]
    assert names[-2:] == ["tool.deactivated", "plan.ended"]


def test_no_event_is_built_while_the_logger_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host that has not enabled DEBUG, a call never reaches structlog at all."""

    class Refusing:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the disabled logger's {name!r} was used")

    monkeypatch.setattr(tracing, "_lifecycle_log", Refusing())
    assert not logging.getLogger("toolcycle.lifecycle").isEnabledFor(logging.DEBUG)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="fake", writes=False))
        with runtime.plan() as ctx:
            assert runtime.execute("fake", {}, ctx).success


def _deferred(runtime: ToolRuntime) -> PendingApproval:
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("later")) as ctx:
        pending = runtime.execute("fake", {}, ctx).pending
    assert pending is not None
    return pending


def _approvals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "tool.approval"]


@pytest.mark.parametrize(
    ("decision", "outcome"),
    [(ApprovalDecision.approve(), "approve"), (ApprovalDecision.deny("no"), "deny")],
)
def test_a_decision_given_to_resume_is_logged_as_a_live_one_is(
    caplog: pytest.LogCaptureFixture, decision: ApprovalDecision, outcome: str
) -> None:
    """Resume logs ``tool.approval`` with the tool, plan, call id and outcome, once."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="fake", writes=True))
        with caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"):
            pending = _deferred(runtime)
            assert [r.outcome for r in _approvals(caplog)] == ["defer"]  # type: ignore[attr-defined]
            caplog.clear()
            with runtime.plan("later") as ctx:
                result = runtime.resume(pending, decision, ctx)
    [record] = _approvals(caplog)
    assert result.trace is not None
    fields = (record.tool, record.plan_id, record.call_id, record.outcome)  # type: ignore[attr-defined]
    assert fields == ("fake", "later", result.trace.call_id, outcome)


async def test_a_decision_given_to_aresume_is_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    """The async resume logs the same event."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="fake", writes=True))
        pending = _deferred(runtime)
        with caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"):
            async with runtime.aplan("later") as ctx:
                await runtime.aresume(pending, ApprovalDecision.deny("no"), ctx)
    assert [(r.plan_id, r.outcome) for r in _approvals(caplog)] == [("later", "deny")]  # type: ignore[attr-defined]
