"""Durable plans on DBOS (SQLite): resuming a plan by its id, and one call at a time.

`DBOSPlan.resume` is tested here in one process, on plans in each state DBOS
keeps; tests/hosts/test_dbos_crash.py resumes a plan whose process was killed.
A plan is held inside a call by a tool that waits on an event the test sets, so
every wait is bounded and nothing sleeps.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from dbos import DBOS, DBOSConfig, SetEnqueueOptions, SetWorkflowID

from toolcycle import (
    ConcurrentCallError,
    NullTracer,
    PlanResumeError,
    ToolCall,
    ToolExecutionContext,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.hosts import DBOSPlan

WAIT = 30  # seconds: the bound of every wait on another thread
RUNS: Counter[str] = Counter()
STARTED = threading.Event()  # the held call is running
RELEASE = threading.Event()  # the held call may return


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS["add"] += 1
    return a + b


class Crash(BaseException):
    """Stands for the process dying: it leaves the workflow without DBOS recording anything."""


CRASH = threading.Event()  # set: hold dies as if its process were killed


@tool(writes=False)
def hold() -> str:
    """Say it started, then wait (bounded) until the test releases it."""
    RUNS["hold"] += 1
    if CRASH.is_set():
        raise Crash
    STARTED.set()
    assert RELEASE.wait(WAIT), "the test never released the held call"
    return "held"


@tool(writes=False)
def twice(ctx: ToolExecutionContext) -> int:
    """Calls another tool of its own plan, as a part of its own call."""
    RUNS["twice"] += 1
    inner = RUNTIME.execute("add", {"a": 2, "b": 2}, ctx)
    return 2 * int(inner.output)


RUNTIME = ToolRuntime(tracer=NullTracer())
for _fn in (add, hold, twice):
    RUNTIME.register(_fn)
ENGINE = DBOSPlan()  # one engine for every run of held_plan, stale ones included


@DBOS.workflow()
def held_plan() -> list[Any]:
    """add, then hold, then add: a plan the test can catch in its second call."""
    with RUNTIME.plan(durable=ENGINE) as ctx:
        return [
            [r.output, r.error_type]
            for r in (
                RUNTIME.execute("add", {"a": 1, "b": 1}, ctx),
                RUNTIME.execute("hold", {}, ctx),
                RUNTIME.execute("add", {"a": 1, "b": 2}, ctx),
            )
        ]


@DBOS.workflow()
def crowded_plan() -> list[Any]:
    """A second call of the plan, from another thread, while hold runs."""
    refused: list[BaseException] = []
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:

        def other() -> None:
            assert STARTED.wait(WAIT), "hold never started"
            try:
                RUNTIME.execute("add", {"a": 5, "b": 5}, ctx)
            except ConcurrentCallError as exc:
                refused.append(exc)
            finally:
                RELEASE.set()

        thread = threading.Thread(target=other)
        thread.start()
        held = RUNTIME.execute("hold", {}, ctx).output
        thread.join(WAIT)
        after = RUNTIME.execute("add", {"a": 1, "b": 1}, ctx).output
        return [held, after, refused]


@DBOS.workflow()
async def acrowded_plan() -> list[Any]:
    """Async: two calls of the plan gathered at once; the second is refused."""
    started, release = asyncio.Event(), asyncio.Event()

    @tool(writes=False, name="ahold")
    async def ahold() -> str:
        """Say it started, then wait until released."""
        started.set()
        await asyncio.wait_for(release.wait(), WAIT)
        return "held"

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(ahold)
    runtime.register(add)
    async with runtime.aplan(durable=DBOSPlan()) as ctx:

        async def second() -> object:
            await asyncio.wait_for(started.wait(), WAIT)
            try:
                return await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)
            finally:
                release.set()

        outcomes = await asyncio.gather(
            runtime.aexecute("ahold", {}, ctx), second(), return_exceptions=True
        )
        return [getattr(o, "output", o) for o in outcomes]


@DBOS.workflow()
def nested_plan() -> int:
    """A tool that calls another tool of the same plan."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        return int(RUNTIME.execute("twice", {}, ctx).output)


def _batch() -> list[ToolCall]:
    return [ToolCall(id=str(i), name="add", arguments={"a": i, "b": 10}) for i in range(3)]


@DBOS.workflow()
def batch_plan() -> list[Any]:
    """call_many in a durable plan."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        return [r.output for r in RUNTIME.call_many(_batch(), ctx)]


@DBOS.workflow()
async def abatch_plan() -> list[Any]:
    """acall_many in a durable plan."""
    async with RUNTIME.aplan(durable=DBOSPlan()) as ctx:
        return [r.output for r in await RUNTIME.acall_many(_batch(), ctx)]


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own, launched once."""
    folder: Path = tmp_path_factory.mktemp("dbos-resume")
    DBOS(
        config=DBOSConfig(
            name="toolcycle-resume-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="resume-1",
        )
    )
    DBOS.launch()
    DBOS.register_queue("toolcycle-later")
    yield
    DBOS.destroy()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RUNS.clear()
    STARTED.clear()
    RELEASE.clear()
    CRASH.clear()


def _enqueue_held_plan(workflow_id: str, app_version: str | None = None) -> None:
    """Put held_plan in a queue, to start an hour from now (the test cancels it first)."""
    with (
        SetWorkflowID(workflow_id),
        SetEnqueueOptions(delay_seconds=3600, app_version=app_version),
    ):
        DBOS.retrieve_queue("toolcycle-later").enqueue(held_plan)


def _crash(workflow_id: str) -> None:
    """Run held_plan until hold dies with its (pretend) process: the plan stays PENDING."""
    CRASH.set()
    with SetWorkflowID(workflow_id), pytest.raises(Crash):
        held_plan()
    CRASH.clear()
    status = DBOS.get_workflow_status(workflow_id)
    assert status is not None and status.status == "PENDING"


def _steps(workflow_id: str) -> list[str]:
    return [s["function_name"] for s in DBOS.list_workflow_steps(workflow_id)]


def test_resuming_an_unknown_plan_raises_plan_resume_error() -> None:
    """No workflow has the id: PlanResumeError, naming the id."""
    with pytest.raises(PlanResumeError, match="nobody") as caught:
        DBOSPlan.resume("nobody")
    assert caught.value.plan_id == "nobody"
    assert isinstance(caught.value, ToolRuntimeError)


def test_resuming_a_finished_plan_gives_its_recorded_result_without_running_it() -> None:
    """A finished plan's handle gives the recorded result; no tool runs."""
    RELEASE.set()
    with SetWorkflowID("finished-1"):
        first = held_plan()
    assert DBOSPlan.resume("finished-1").get_result() == first
    assert RUNS == {"add": 2, "hold": 1}


def test_resuming_a_plan_this_process_runs_does_not_start_it_twice() -> None:
    """A plan running here is waited for: the held call's body runs once."""
    with SetWorkflowID("running-1"):
        handle = DBOS.start_workflow(held_plan)
    assert STARTED.wait(WAIT)
    resumed = DBOSPlan.resume("running-1")
    RELEASE.set()
    assert resumed.get_result() == handle.get_result() == [[2, None], ["held", None], [3, None]]
    assert RUNS == {"add": 2, "hold": 1}


def test_resuming_a_plan_whose_run_died_replays_what_completed_and_reports_the_interrupted_call() -> (
    None
):
    """A run that died inside hold: add does not run again, hold is interrupted."""
    _crash("died-1")
    assert RUNS == {"add": 1, "hold": 1}
    result = DBOSPlan.resume("died-1").get_result()
    assert result == [[2, None], [None, "ToolInterruptedError"], [3, None]]
    assert RUNS == {"add": 2, "hold": 1}
    assert DBOSPlan.resume("died-1").get_result() == result  # finished: only read


def test_a_cancelled_plan_is_resumed_once_its_run_has_stopped() -> None:
    """Resume refuses while the cancelled run is still inside a call here, then resumes."""
    with SetWorkflowID("cancelled-1"):
        DBOS.start_workflow(held_plan)
    assert STARTED.wait(WAIT)
    DBOS.cancel_workflow("cancelled-1")
    try:
        with pytest.raises(PlanResumeError, match="CANCELLED.*not stopped yet"):
            DBOSPlan.resume("cancelled-1")
    finally:
        RELEASE.set()
    _crash("cancelled-2")
    DBOS.cancel_workflow("cancelled-2")
    result = DBOSPlan.resume("cancelled-2").get_result()
    assert result == [[2, None], [None, "ToolInterruptedError"], [3, None]]


def test_a_queued_plan_is_left_to_its_queue() -> None:
    """A plan waiting in a queue is not started by resume; its handle waits for it."""
    _enqueue_held_plan("queued-1")
    try:
        handle = DBOSPlan.resume("queued-1")
        assert handle.get_workflow_id() == "queued-1"
        assert handle.get_status().status == "DELAYED"
    finally:
        DBOS.cancel_workflow("queued-1")
    assert RUNS == {}


def test_a_plan_of_another_application_version_is_refused_naming_both_versions() -> None:
    """Another version's plan: PlanResumeError says which versions, and how to move it."""
    _enqueue_held_plan("old-1", app_version="resume-0")
    try:
        with pytest.raises(PlanResumeError, match="'resume-0'.*'resume-1'.*fork_workflow"):
            DBOSPlan.resume("old-1")
    finally:
        DBOS.cancel_workflow("old-1")


def test_aresume_resumes_a_plan_whose_run_died_and_then_reads_its_result() -> None:
    """The async twin: a plan whose run died is resumed, then (finished) only read."""
    _crash("adied-1")

    async def resume_twice() -> tuple[Any, Any]:
        first = await (await DBOSPlan.aresume("adied-1")).get_result()
        again = await (await DBOSPlan.aresume("adied-1")).get_result()
        return first, again

    first, again = asyncio.run(resume_twice())
    assert first == again == [[2, None], [None, "ToolInterruptedError"], [3, None]]
    assert RUNS == {"add": 2, "hold": 1}


def test_a_second_concurrent_call_of_a_durable_plan_is_refused() -> None:
    """From another thread while hold runs: ConcurrentCallError, nothing recorded for it."""
    with SetWorkflowID("crowded-1"):
        held, after, refused = crowded_plan()
    assert (held, after) == ("held", 2)
    assert [type(e) for e in refused] == [ConcurrentCallError]
    assert refused[0].tool_name == "add" and refused[0].plan_id == "crowded-1"
    assert RUNS == {"hold": 1, "add": 1}
    assert _steps("crowded-1") == [
        "toolcycle:hold:started",
        "toolcycle:hold",
        "toolcycle:add:started",
        "toolcycle:add",
    ]


def test_a_second_concurrent_async_call_of_a_durable_plan_is_refused() -> None:
    """Two gathered calls: the first runs, the second raises ConcurrentCallError."""

    async def run() -> list[Any]:
        with SetWorkflowID("acrowded-1"):
            return await acrowded_plan()

    held, refused = asyncio.run(run())
    assert held == "held"
    assert isinstance(refused, ConcurrentCallError)
    assert _steps("acrowded-1") == ["toolcycle:ahold:started", "toolcycle:ahold"]


def test_a_tool_may_call_another_tool_of_its_own_durable_plan() -> None:
    """The inner call is part of the outer call's step; on replay neither runs again."""
    with SetWorkflowID("nested-1"):
        assert nested_plan() == 8
    assert RUNS == {"twice": 1, "add": 1}
    assert _steps("nested-1") == ["toolcycle:twice:started", "toolcycle:twice"]
    assert DBOS.fork_workflow("nested-1", 3).get_result() == 8
    assert RUNS == {"twice": 1, "add": 1}


def test_call_many_in_a_durable_plan_runs_its_calls_one_at_a_time_in_order() -> None:
    """Each call of the batch is its own step, in the batch's order, sync and async."""

    async def arun() -> list[Any]:
        with SetWorkflowID("abatch-1"):
            return await abatch_plan()

    with SetWorkflowID("batch-1"):
        assert batch_plan() == [10, 11, 12]
    assert asyncio.run(arun()) == [10, 11, 12]
    for plan in ("batch-1", "abatch-1"):
        assert _steps(plan) == ["toolcycle:add:started", "toolcycle:add"] * 3
    assert RUNS == {"add": 6}
