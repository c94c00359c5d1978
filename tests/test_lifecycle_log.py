"""Lifecycle events on the toolcycle.lifecycle logger: every step, and nothing when disabled."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from toolcycle import NullTracer, ToolRuntime, tracing
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
