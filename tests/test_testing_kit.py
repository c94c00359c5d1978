"""toolcycle.testing: the fake tool, trace capture and context factory."""

from __future__ import annotations

from toolcycle import Change, ToolRuntime
from toolcycle.testing import FakeTool, capture_traces, make_context


def test_fake_tool_records_each_stage_per_plan() -> None:
    """Every stage is recorded with its plan id and parameters."""
    tool = FakeTool(output=lambda params, ctx: params["n"] * 2)
    with ToolRuntime() as runtime, capture_traces(runtime) as traces:
        runtime.register(tool)
        with runtime.plan("p") as ctx:
            assert runtime.execute("fake", {"n": 4}, ctx).output == 8
    assert tool.stages() == ["discover", "activate", "execute", "deactivate"]
    assert tool.stages("p") == ["activate", "execute", "deactivate"]
    assert tool.calls[2].params == {"n": 4}
    assert [t.status for t in traces] == ["ok"]


def test_capture_traces_stops_collecting_after_the_block() -> None:
    """Traces after the with block are not captured."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool())
        ctx = runtime.new_context()
        with capture_traces(runtime) as traces:
            runtime.execute("fake", {}, ctx)
        runtime.execute("fake", {}, ctx)
    assert len(traces) == 1


def test_make_context_sets_flags() -> None:
    """make_context builds a context with the given flags and a fresh token."""
    ctx = make_context("x", read_only=True, requires_checkpoint=True)
    assert ctx.plan_id == "x" and ctx.read_only and ctx.requires_checkpoint
    ctx.record_change(Change(kind="k", target="t"))
    assert len(ctx.changes) == 1
