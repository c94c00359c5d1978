"""Durable plans on DBOS (SQLite): calls recorded as steps, replayed, or reported interrupted.

A fork of a workflow from one of its steps (``DBOS.fork_workflow``) runs the
workflow again with the steps before it recorded, exactly as a recovery after a
crash does, so these tests replay in one process; tests/hosts/test_dbos_crash.py
kills a real process instead.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolcycle import (
    ApprovalDecision,
    ApprovalRequest,
    Change,
    NullTracer,
    ToolCancelledError,
    ToolExecutionContext,
    ToolInterruptedError,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.hosts import DBOSPlan

RUNS: Counter[str] = Counter()
ASKED: list[str] = []


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS["add"] += 1
    return a + b


@tool(writes=False, idempotent=True)
def lookup(key: str) -> str:
    """Read a value; running it twice is harmless."""
    RUNS["lookup"] += 1
    return key.upper()


@tool(writes=True)
def charge(amount: int, ctx: ToolExecutionContext) -> str:
    """Charge an amount once; records the change."""
    RUNS["charge"] += 1
    ctx.record_change(Change(kind="payment", target=f"card:{amount}"))
    return f"charged {amount}"


@tool(writes=False)
def broken() -> int:
    """Always fails."""
    RUNS["broken"] += 1
    raise RuntimeError("no connection")


@tool(writes=False)
def cancels(ctx: ToolExecutionContext) -> int:
    """Cancels its own plan, so the call raises."""
    RUNS["cancels"] += 1
    ctx.cancellation_token.cancel("stop here")
    ctx.cancellation_token.check()
    return 0


def approver(request: ApprovalRequest) -> ApprovalDecision:
    """Say yes, and note who asked."""
    ASKED.append(request.descriptor.name)
    return ApprovalDecision.approve(reason="fine")


RUNTIME = ToolRuntime(tracer=NullTracer())
for _fn in (add, lookup, charge, broken, cancels):
    RUNTIME.register(_fn)


@DBOS.workflow()
def checkout(names: list[str]) -> list[dict[str, Any]]:
    """A plan that calls each named tool once, with the plan's approver."""
    out = []
    with RUNTIME.plan(durable=DBOSPlan(), approver=approver) as ctx:
        for name in names:
            args: dict[str, Any] = {
                "add": {"a": 1, "b": 2},
                "lookup": {"key": "k"},
                "charge": {"amount": 5},
                "broken": {},
            }[name]
            result = RUNTIME.execute(name, args, ctx)
            out.append(
                {
                    "plan": ctx.plan_id,
                    "output": result.output,
                    "error_type": result.error_type,
                    "changes": [c.target for c in result.changes],
                    "status": result.trace.status if result.trace else None,
                    "approved": bool(result.trace and result.trace.approval),
                }
            )
        out.append({"plan_changes": [c.target for c in ctx.changes]})
    return out


@DBOS.workflow()
def raising(name: str) -> str:
    """A plan whose one call raises: nothing is recorded for it."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        try:
            RUNTIME.execute(name, {}, ctx)
        except ToolCancelledError:
            return "cancelled"
    return "no"  # pragma: no cover - the call always raises


@DBOS.workflow()
async def acheckout(names: list[str]) -> list[Any]:
    """The async twin of `checkout`."""
    out: list[Any] = []
    async with RUNTIME.aplan(durable=DBOSPlan(prefix="tc"), approver=approver) as ctx:
        for name in names:
            args = {"add": {"a": 2, "b": 2}, "charge": {"amount": 7}, "lookup": {"key": "a"}}
            result = await RUNTIME.aexecute(name, args[name], ctx)
            out.append((result.output, result.error_type))
    return out


@DBOS.workflow()
async def araising() -> str:
    """Async: a plan whose one call raises."""
    async with RUNTIME.aplan(durable=DBOSPlan()) as ctx:
        try:
            await RUNTIME.aexecute("cancels", {}, ctx)
        except ToolCancelledError:
            return "cancelled"
    return "no"  # pragma: no cover - the call always raises


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own, launched once."""
    folder: Path = tmp_path_factory.mktemp("dbos")
    DBOS(
        config=DBOSConfig(
            name="toolcycle-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="test-1",
        )
    )
    DBOS.launch()
    yield
    DBOS.destroy()


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    RUNS.clear()
    ASKED.clear()


def _step(workflow_id: str, name: str) -> int:
    """The id of the first step of ``workflow_id`` called ``name``."""
    return next(
        s["function_id"]
        for s in DBOS.list_workflow_steps(workflow_id)
        if s["function_name"] == name
    )


def _run(workflow_id: str, names: list[str]) -> list[dict[str, Any]]:
    with SetWorkflowID(workflow_id):
        return checkout(names)


def test_a_durable_plan_takes_its_workflows_id_and_records_each_call_as_a_step() -> None:
    """Each call is one step named after its tool; a tool that is not idempotent has a marker."""
    out = _run("wf-steps", ["lookup", "add"])
    assert out[0]["plan"] == "wf-steps" and out[0]["output"] == "K" and out[1]["output"] == 3
    names = [s["function_name"] for s in DBOS.list_workflow_steps("wf-steps")]
    assert names == ["toolcycle:lookup", "toolcycle:add:started", "toolcycle:add"]


def test_completed_calls_return_their_recorded_results_without_running_again() -> None:
    """A resumed plan gets the recorded results, changes and approvals; later calls run."""
    first = _run("wf-replay", ["add", "charge", "lookup"])
    assert RUNS == {"add": 1, "charge": 1, "lookup": 1} and ASKED == ["charge"]
    forked = DBOS.fork_workflow("wf-replay", _step("wf-replay", "toolcycle:lookup"))
    second = forked.get_result()
    assert RUNS == {"add": 1, "charge": 1, "lookup": 2}
    assert ASKED == ["charge"]  # the recorded approval stands; nobody is asked again
    assert second[:2] == [dict(row, plan=forked.workflow_id) for row in first[:2]]
    assert second[1]["changes"] == ["card:5"] and second[1]["approved"]
    assert second[-1] == {"plan_changes": ["card:5"]}


def test_a_call_that_was_running_is_reported_interrupted_when_its_tool_is_not_idempotent() -> None:
    """Marker recorded, result not: the resumed call fails with ToolInterruptedError, unrun."""
    _run("wf-cut", ["add", "charge"])
    forked = DBOS.fork_workflow("wf-cut", _step("wf-cut", "toolcycle:charge"))
    out = forked.get_result()
    assert RUNS == {"add": 1, "charge": 1}
    assert out[1]["error_type"] == "ToolInterruptedError" and out[1]["status"] == "error"
    assert out[-1] == {"plan_changes": []}
    # The interrupted result is recorded in turn: a second resume gives it back.
    again = DBOS.fork_workflow(
        forked.workflow_id, _step(forked.workflow_id, "toolcycle:charge") + 1
    )
    assert again.get_result()[1]["error_type"] == "ToolInterruptedError"
    assert RUNS["charge"] == 1


def test_a_call_that_was_running_runs_again_when_its_tool_is_idempotent() -> None:
    """An idempotent tool has no marker; its unrecorded call simply runs again."""
    _run("wf-idem", ["add", "lookup"])
    forked = DBOS.fork_workflow("wf-idem", _step("wf-idem", "toolcycle:lookup"))
    assert forked.get_result()[1]["output"] == "K"
    assert RUNS == {"add": 1, "lookup": 2}


def test_a_failed_result_is_recorded_like_any_other() -> None:
    """A tool that raised gives a failed result, which is replayed and not run again."""
    _run("wf-fail", ["broken", "add"])
    forked = DBOS.fork_workflow("wf-fail", _step("wf-fail", "toolcycle:add:started"))
    out = forked.get_result()
    assert out[0]["error_type"] == "RuntimeError" and RUNS["broken"] == 1


def test_a_call_that_raised_is_not_recorded_and_counts_as_interrupted_on_resume() -> None:
    """A cancelled call has no result to record; a resumed plan cannot tell how far it got."""
    with SetWorkflowID("wf-raise"):
        assert raising("cancels") == "cancelled"
    assert [s["function_name"] for s in DBOS.list_workflow_steps("wf-raise")] == [
        "toolcycle:cancels:started"
    ]


def test_the_live_result_keeps_its_exception_and_the_recorded_one_drops_it() -> None:
    """The exception object stays with the process that saw it; the record keeps its name."""
    with SetWorkflowID("wf-exc"):
        checkout(["broken"])
    recorded = DBOS.list_workflow_steps("wf-exc")[-1]["output"]["result"]
    assert recorded.exception is None and recorded.error_type == "RuntimeError"


def test_an_async_plan_records_and_replays_its_calls() -> None:
    """An async plan (aplan, aexecute) goes through the same steps, awaited on the caller's loop."""

    async def main() -> tuple[list[Any], list[Any]]:
        with SetWorkflowID("wf-async"):
            first = await acheckout(["add", "charge", "lookup"])
        steps = await DBOS.list_workflow_steps_async("wf-async")
        start = next(s["function_id"] for s in steps if s["function_name"] == "tc:charge")
        handle = await DBOS.fork_workflow_async("wf-async", start)
        return first, await handle.get_result()

    first, second = asyncio.run(main())
    assert first == [(4, None), ("charged 7", None), ("A", None)]
    assert second[0] == (4, None) and second[1] == (None, "ToolInterruptedError")
    assert RUNS == {"add": 1, "charge": 1, "lookup": 2}


def test_an_async_call_that_raised_is_not_recorded() -> None:
    """The async twin leaves a raising call unrecorded too."""

    async def main() -> str:
        with SetWorkflowID("wf-araise"):
            return await araising()

    assert asyncio.run(main()) == "cancelled"
    names = [s["function_name"] for s in DBOS.list_workflow_steps("wf-araise")]
    assert names == ["toolcycle:cancels:started"]


def test_a_durable_plan_outside_a_workflow_is_refused_with_what_to_do() -> None:
    """Without a workflow to record in, opening the plan raises and names the fix."""
    with pytest.raises(ToolRuntimeError, match=r"@DBOS\.workflow\(\)"):
        RUNTIME.new_context(durable=DBOSPlan())


def test_a_plan_id_given_by_the_host_is_kept() -> None:
    """The host's plan id wins over the workflow's."""

    @DBOS.workflow(name="named-plan")
    def named() -> str:
        with RUNTIME.plan("order-7", durable=DBOSPlan()) as ctx:
            return ctx.plan_id

    assert named() == "order-7"


def test_the_prefix_must_be_a_non_empty_string() -> None:
    """A bad prefix is refused at once; the repr shows the prefix."""
    with pytest.raises(ValueError, match="prefix"):
        DBOSPlan(prefix="")
    assert repr(DBOSPlan(prefix="p")) == "DBOSPlan(prefix='p')"


def test_hosts_names_only_its_engines() -> None:
    """toolcycle.hosts loads an engine on first use and knows no other name."""
    import toolcycle.hosts

    with pytest.raises(AttributeError, match="nothing"):
        _ = toolcycle.hosts.nothing  # type: ignore[attr-defined]


def test_interrupted_error_is_a_runtime_error() -> None:
    """ToolInterruptedError sits under ToolRuntimeError, with the tool and plan."""
    error = ToolInterruptedError("x", tool_name="t", plan_id="p")
    assert isinstance(error, ToolRuntimeError) and error.tool_name == "t"
