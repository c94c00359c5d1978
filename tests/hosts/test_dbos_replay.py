"""Durable plans on DBOS (SQLite): a replay hands back a recorded result only to the same call.

Each call's step records the call's fingerprint with its result, so a plan that
replays with other arguments is refused instead of getting the old arguments'
result; and a result that DBOS cannot serialize is refused before DBOS would
fail recording it. A plan "crashes" here by raising a `BaseException` past its
workflow, which DBOS leaves pending without recording anything, and is resumed
with `DBOSPlan.resume` under the same workflow id.
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

from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolcycle import (
    NullTracer,
    PlanResumeError,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.hosts import DBOSPlan

RUNS: Counter[str] = Counter()
KEY = {"value": "a"}  # the argument the plans pass; a test changes it between runs
CRASH = threading.Event()  # set: the plan dies after its calls, as if its process were killed
EARLIER = threading.Event()  # set: the plan records its steps as toolcycle did before fingerprints


class Crash(BaseException):
    """Stands for the process dying: it leaves the workflow without DBOS recording anything."""


@tool(writes=False, idempotent=True)
def lookup(key: str) -> str:
    """Read a value; running it twice is harmless, so it has no marker step."""
    RUNS["lookup"] += 1
    return key.upper()


@tool(writes=False)
def send(key: str) -> str:
    """Send something once; not idempotent, so a marker step precedes its call."""
    RUNS["send"] += 1
    return f"sent {key}"


@tool(writes=False)
def locked() -> ToolReturn[int]:
    """Return metadata holding a lock, which pickle cannot write."""
    RUNS["locked"] += 1
    return ToolReturn(1, metadata={"lock": threading.Lock()})


@tool(writes=False, idempotent=True)
def alocked() -> ToolReturn[int]:
    """Idempotent twin of `locked`: its call is the only step, with no marker before it."""
    RUNS["alocked"] += 1
    return ToolReturn(2, metadata={"lock": threading.Lock()})


RUNTIME = ToolRuntime(tracer=NullTracer())
for _fn in (lookup, send, locked, alocked):
    RUNTIME.register(_fn)


def _keyed(name: str) -> Any:
    """Call ``name`` with the current key, then crash if asked; the refusal, if any, as data."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        try:
            output = RUNTIME.execute(name, {"key": KEY["value"]}, ctx).output
        except PlanResumeError as exc:
            return ["refused", exc.tool_name, exc.plan_id, str(exc)]
        if CRASH.is_set():
            raise Crash
        return output


@DBOS.workflow()
def keyed(name: str) -> Any:
    """The plan of `_keyed` as a workflow."""
    return _keyed(name)


@DBOS.workflow()
async def akeyed(name: str) -> Any:
    """Async twin of `keyed`."""
    async with RUNTIME.aplan(durable=DBOSPlan()) as ctx:
        try:
            output = (await RUNTIME.aexecute(name, {"key": KEY["value"]}, ctx)).output
        except PlanResumeError as exc:
            return ["refused", exc.tool_name, exc.plan_id, str(exc)]
        if CRASH.is_set():
            raise Crash
        return output


@DBOS.workflow()
def earlier_send() -> Any:
    """The plan of `_keyed` for ``send``, except that a first run records a marker as toolcycle did before.

    That marker's output is None; the run then dies inside the call.
    """
    if EARLIER.is_set():
        DBOS.run_step({"name": "toolcycle:send:started"}, lambda: None)
        raise Crash
    return _keyed("send")


@DBOS.workflow()
def earlier_lookup() -> Any:
    """The plan of `_keyed` for ``lookup``, except that a first run records a bare result, as toolcycle did before."""
    if EARLIER.is_set():
        DBOS.run_step({"name": "toolcycle:lookup"}, lambda: ToolResult(success=True, output="OLD"))
        raise Crash
    return _keyed("lookup")


@DBOS.workflow()
def not_json() -> Any:
    """Call ``lookup`` with a set for its key, which is not JSON data."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        return RUNTIME.execute("lookup", {"key": {"a", "b"}}, ctx).error_type


@DBOS.workflow()
def unpicklable(name: str) -> Any:
    """Call ``name``, whose result cannot be pickled; the error, if any, as data."""
    with RUNTIME.plan(durable=DBOSPlan()) as ctx:
        try:
            return RUNTIME.execute(name, {}, ctx).error_type
        except ToolRuntimeError as exc:
            return ["raised", type(exc).__name__, exc.tool_name, str(exc), repr(exc.__cause__)]


@DBOS.workflow()
async def aunpicklable(name: str) -> Any:
    """Async twin of `unpicklable`."""
    async with RUNTIME.aplan(durable=DBOSPlan()) as ctx:
        try:
            return (await RUNTIME.aexecute(name, {}, ctx)).error_type
        except ToolRuntimeError as exc:
            return ["raised", type(exc).__name__, exc.tool_name, str(exc), repr(exc.__cause__)]


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own, launched once."""
    folder: Path = tmp_path_factory.mktemp("dbos-replay")
    DBOS(
        config=DBOSConfig(
            name="toolcycle-replay-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="test-1",
        )
    )
    DBOS.launch()
    yield
    DBOS.destroy()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    RUNS.clear()
    KEY["value"] = "a"
    yield
    CRASH.clear()
    EARLIER.clear()


def _crashed(workflow_id: str, plan: Any, *args: Any) -> None:
    """Run ``plan`` under ``workflow_id`` until it dies after its calls; it stays pending."""
    CRASH.set()
    with SetWorkflowID(workflow_id), pytest.raises(Crash):
        plan(*args)
    CRASH.clear()
    assert DBOS.get_workflow_status(workflow_id).status == "PENDING"  # type: ignore[union-attr]


def _names(workflow_id: str) -> list[str]:
    return [s["function_name"] for s in DBOS.list_workflow_steps(workflow_id)]


def _past_the_end(workflow_id: str) -> int:
    """The id a fork starts from to replay every recorded step."""
    return max(int(s["function_id"]) for s in DBOS.list_workflow_steps(workflow_id)) + 1


def test_a_resumed_plan_whose_call_now_has_other_arguments_is_refused() -> None:
    """The recorded result belongs to the old arguments: the replay raises PlanResumeError."""
    _crashed("wf-other-args", keyed, "lookup")
    KEY["value"] = "b"  # the plan's code now computes another argument
    refused = DBOSPlan.resume("wf-other-args").get_result()
    assert refused[:3] == ["refused", "lookup", "wf-other-args"]
    message = refused[3]
    assert "step 1 ('toolcycle:lookup')" in message and "other arguments" in message
    assert "DBOS.fork_workflow('wf-other-args', 1)" in message
    assert RUNS == {"lookup": 1}  # neither run again nor handed the old result


def test_a_resumed_plan_whose_call_has_the_same_arguments_gets_its_result() -> None:
    """The same call, fingerprint and all, is replayed as before."""
    _crashed("wf-same-args", keyed, "lookup")
    assert DBOSPlan.resume("wf-same-args").get_result() == "A"
    assert RUNS == {"lookup": 1}


def test_the_marker_of_a_tool_that_is_not_idempotent_is_checked_too() -> None:
    """A call that had started with other arguments is refused at its marker, before its step."""
    _crashed("wf-other-marker", keyed, "send")
    assert _names("wf-other-marker") == ["toolcycle:send:started", "toolcycle:send"]
    KEY["value"] = "b"
    refused = DBOSPlan.resume("wf-other-marker").get_result()
    assert refused[:2] == ["refused", "send"]
    assert "step 1 ('toolcycle:send:started')" in refused[3]
    assert "fork_workflow('wf-other-marker', 1)" in refused[3]
    assert RUNS == {"send": 1}


def test_an_async_plan_whose_call_now_has_other_arguments_is_refused() -> None:
    """The async twin checks the marker and the result the same way."""

    async def main() -> tuple[Any, Any]:
        CRASH.set()
        for name in ("lookup", "send"):
            with SetWorkflowID(f"wf-async-{name}"), pytest.raises(Crash):
                await akeyed(name)
        CRASH.clear()
        KEY["value"] = "b"
        first = await (await DBOSPlan.aresume("wf-async-lookup")).get_result()
        second = await (await DBOSPlan.aresume("wf-async-send")).get_result()
        return first, second

    first, second = asyncio.run(main())
    assert first[:2] == ["refused", "lookup"] and "('toolcycle:lookup')" in first[3]
    assert second[:2] == ["refused", "send"] and "('toolcycle:send:started')" in second[3]
    assert RUNS == {"lookup": 1, "send": 1}


def test_a_result_recorded_without_a_fingerprint_answers_any_call_of_its_tool() -> None:
    """A step recorded before fingerprints were (a bare ToolResult) is replayed as it was."""
    EARLIER.set()
    with SetWorkflowID("wf-bare"), pytest.raises(Crash):
        earlier_lookup()
    EARLIER.clear()
    assert DBOSPlan.resume("wf-bare").get_result() == "OLD"
    assert RUNS == {}


def test_a_marker_without_a_fingerprint_passes_and_the_result_after_it_is_checked() -> None:
    """An earlier marker is accepted; the call's result, recorded now, carries a fingerprint."""
    EARLIER.set()
    with SetWorkflowID("wf-bare-marker"), pytest.raises(Crash):
        earlier_send()
    EARLIER.clear()
    resumed = DBOSPlan.resume("wf-bare-marker")
    assert resumed.get_result() is None  # the started call is reported interrupted, not run
    assert RUNS == {}
    KEY["value"] = "b"
    again = DBOS.fork_workflow("wf-bare-marker", _past_the_end("wf-bare-marker"))
    refused = again.get_result()
    assert refused[:2] == ["refused", "send"] and "step 2 ('toolcycle:send')" in refused[3]
    # The fork that would run the call again starts at its marker, not at its step.
    assert f"fork_workflow({again.workflow_id!r}, 1)" in refused[3]


def test_a_call_whose_arguments_are_not_json_is_recorded_without_a_fingerprint() -> None:
    """Validation refuses it before the tool runs; its failed result replays as it was."""
    with SetWorkflowID("wf-not-json"):
        assert not_json() == "ToolSchemaValidationError"
    assert DBOS.list_workflow_steps("wf-not-json")[-1]["output"]["fingerprint"] is None
    again = DBOS.fork_workflow("wf-not-json", _past_the_end("wf-not-json"))
    assert again.get_result() == "ToolSchemaValidationError"
    assert RUNS == {}


def test_a_result_that_cannot_be_pickled_raises_naming_the_tool_and_is_not_recorded() -> None:
    """Unpicklable ToolReturn metadata: a clear error after the tool ran, and no record."""
    with SetWorkflowID("wf-lock"):
        raised = unpicklable("locked")
    kind, tool_name, message, cause = raised[1:]
    assert kind == "ToolRuntimeError" and tool_name == "locked"
    assert "pickle (DBOS's default serializer) failed" in message
    assert "ToolReturn metadata must be serializable" in message
    assert cause.startswith("TypeError(")
    assert _names("wf-lock") == ["toolcycle:locked:started"]  # the marker, not the call
    # Resumed, the call counts as one that was running when its process died.
    again = DBOS.fork_workflow("wf-lock", _past_the_end("wf-lock"))
    assert again.get_result() == "ToolInterruptedError"
    assert RUNS == {"locked": 1}


def test_an_async_result_that_cannot_be_pickled_raises_naming_the_tool() -> None:
    """The async twin refuses it the same way; an idempotent tool's call leaves no step."""

    async def main() -> Any:
        with SetWorkflowID("wf-alock"):
            return await aunpicklable("alocked")

    raised = asyncio.run(main())
    assert raised[1:3] == ["ToolRuntimeError", "alocked"]
    assert _names("wf-alock") == []
