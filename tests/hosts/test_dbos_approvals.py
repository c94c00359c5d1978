"""Durable plans on DBOS (SQLite) that resume deferred calls: the ledger's claim is a step.

A replayed plan must get its claim's recorded answer back rather than ask the
ledger again, which would refuse the call it claimed itself and end the plan in
an error before the call's recorded result could be handed back. A denial
resumed by a replayed claim was traced by the run that made the claim, and is
not traced again.
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
    NullTracer,
    ToolApprovalError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.approvals import FileApprovalLedger, MemoryApprovalLedger
from toolcycle.hosts import DBOSPlan
from toolcycle.instrumentation import CallObserver, Stage, StageObserver
from toolcycle.testing import capture_traces

RUNS: Counter[str] = Counter()
RUNTIMES: dict[str, ToolRuntime] = {}  # by ledger kind, made by the module's fixture


@tool
def transfer(amount: int) -> str:
    """Transfer money; the plan defers it for a person to approve."""
    RUNS["transfer"] += 1
    return f"sent {amount}"


@tool(writes=False)
def notify(to: str) -> str:
    """Tell someone; not idempotent, so it has a marker step."""
    RUNS["notify"] += 1
    return f"notified {to}"


class CountingLedger(MemoryApprovalLedger):
    """A memory ledger that counts how often it is asked."""

    __slots__ = ("asked",)

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def claim(self, approval_id: str) -> bool:
        self.asked += 1
        return super().claim(approval_id)


class FlakyLedger(MemoryApprovalLedger):
    """A memory ledger whose store is down once: its first claim raises."""

    __slots__ = ("down",)

    def __init__(self) -> None:
        super().__init__()
        self.down = True

    def claim(self, approval_id: str) -> bool:
        if self.down:
            self.down = False
            raise OSError("ledger store unreachable")
        return super().claim(approval_id)


COUNTED = CountingLedger()


class Watcher:
    """Instrumentation that notes the tool of each call it is told started."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def call_started(
        self,
        *,
        tool_name: str,
        descriptor: ToolDescriptor | None,
        ctx: ToolExecutionContext,
        call_id: str,
        tool_call_id: str | None,
    ) -> CallObserver:
        self.started.append(tool_name)
        return Unwatched()

    def stage_started(
        self, stage: Stage, *, tool_name: str, ctx: ToolExecutionContext
    ) -> StageObserver:
        return Unwatched()


class Unwatched:
    """An observer that wants nothing, of a call or of a stage."""

    record_payloads = False

    def finish(self, *args: Any, **kwargs: Any) -> None:
        pass


def _runtime(ledger: Any, watcher: Watcher | None = None) -> ToolRuntime:
    made = ToolRuntime(tracer=NullTracer(), approval_ledger=ledger, instrumentation=watcher)
    made.register(transfer)
    made.register(notify)
    return made


@DBOS.workflow()
def payout(kind: str, stored: str) -> list[Any]:
    """Resume the deferred transfer approved (or refused), then notify."""
    runtime = RUNTIMES[kind]
    with runtime.plan(durable=DBOSPlan()) as ctx:
        try:
            done = runtime.resume(stored, True, ctx).output
        except ToolApprovalError:
            done = "refused"
        except OSError:  # the ledger's store failed; the call can be resumed again
            done = "ledger down"
        note = runtime.execute("notify", {"to": "ann"}, ctx)
        return [done, note.output]


@DBOS.workflow()
async def apayout(kind: str, stored: str) -> list[Any]:
    """The async twin of `payout`."""
    runtime = RUNTIMES[kind]
    async with runtime.aplan(durable=DBOSPlan()) as ctx:
        try:
            done = (await runtime.aresume(stored, True, ctx)).output
        except ToolApprovalError:
            done = "refused"
        except OSError:  # the ledger's store failed; the call can be resumed again
            done = "ledger down"
        note = await runtime.aexecute("notify", {"to": "ann"}, ctx)
        return [done, note.output]


def _denial_seen(denied: Any) -> list[Any]:
    """What a denied call's result and its trace say."""
    trace: ToolExecutionTrace = denied.trace
    assert trace.approval is not None
    return [denied.error_type, trace.status, trace.approval.outcome, trace.approval.resumed]


@DBOS.workflow()
def refusal(kind: str, stored: str) -> list[Any]:
    """Resume the deferred transfer denied, then notify."""
    runtime = RUNTIMES[kind]
    with runtime.plan(durable=DBOSPlan()) as ctx:
        denied = runtime.resume(stored, ApprovalDecision.deny("not today"), ctx)
        note = runtime.execute("notify", {"to": "ann"}, ctx)
        return [*_denial_seen(denied), note.output]


@DBOS.workflow()
async def arefusal(kind: str, stored: str) -> list[Any]:
    """The async twin of `refusal`."""
    runtime = RUNTIMES[kind]
    async with runtime.aplan(durable=DBOSPlan()) as ctx:
        denied = await runtime.aresume(stored, ApprovalDecision.deny("not today"), ctx)
        note = await runtime.aexecute("notify", {"to": "ann"}, ctx)
        return [*_denial_seen(denied), note.output]


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own; a runtime for each kind of ledger."""
    folder: Path = tmp_path_factory.mktemp("dbos-approvals")
    RUNTIMES.update(
        memory=_runtime(None),
        file=_runtime(FileApprovalLedger(folder / "ledger")),
        counting=_runtime(COUNTED),
    )
    DBOS(
        config=DBOSConfig(
            name="toolcycle-approval-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="test-1",
        )
    )
    DBOS.launch()
    yield
    DBOS.destroy()
    for made in RUNTIMES.values():
        made.close()
    RUNTIMES.clear()


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    RUNS.clear()


def _deferred(kind: str) -> str:
    """A transfer deferred in a plan that is not durable; its pending record as JSON."""
    runtime = RUNTIMES[kind]
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("later")) as ctx:
        pending = runtime.execute("transfer", {"amount": 7}, ctx).pending
    assert pending is not None
    return pending.model_dump_json()


def _steps(workflow_id: str) -> list[Any]:
    return list(DBOS.list_workflow_steps(workflow_id))


def _names(steps: list[Any]) -> list[str]:
    return [s["function_name"] for s in steps]


def _step(steps: list[Any], name: str) -> int:
    """The id of the first step called ``name``."""
    return next(int(s["function_id"]) for s in steps if s["function_name"] == name)


def _past_the_end(steps: list[Any]) -> int:
    """The id a fork starts from to replay every recorded step."""
    return max(int(s["function_id"]) for s in steps) + 1


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_plan_that_resumed_an_approved_call_replays_it_and_carries_on(kind: str) -> None:
    """The claim is recorded: a replay gets it and the call's result back, and goes on."""
    workflow_id = f"wf-resume-{kind}"
    with SetWorkflowID(workflow_id):
        assert payout(kind, _deferred(kind)) == ["sent 7", "notified ann"]
    steps = _steps(workflow_id)
    assert _names(steps) == [
        "toolcycle:transfer:claimed",
        "toolcycle:transfer:started",
        "toolcycle:transfer",
        "toolcycle:notify:started",
        "toolcycle:notify",
    ]
    # Recovered just before notify: the transfer is replayed, notify runs.
    forked = DBOS.fork_workflow(workflow_id, _step(steps, "toolcycle:notify:started"))
    assert forked.get_result() == ["sent 7", "notified ann"]
    assert RUNS == {"transfer": 1, "notify": 2}
    # Every step recorded: the whole plan is replayed and no tool runs.
    again = DBOS.fork_workflow(workflow_id, _past_the_end(steps))
    assert again.get_result() == ["sent 7", "notified ann"]
    assert RUNS == {"transfer": 1, "notify": 2}


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_an_async_plan_that_resumed_an_approved_call_replays_it_and_carries_on(
    kind: str,
) -> None:
    """The async twin (aresume in an async workflow) records and replays the same steps."""
    workflow_id = f"wf-aresume-{kind}"
    stored = _deferred(kind)

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        with SetWorkflowID(workflow_id):
            first = await apayout(kind, stored)
        steps = list(await DBOS.list_workflow_steps_async(workflow_id))
        notify_at = _step(steps, "toolcycle:notify:started")
        forked = await DBOS.fork_workflow_async(workflow_id, notify_at)
        second = await forked.get_result()
        again = await DBOS.fork_workflow_async(workflow_id, _past_the_end(steps))
        return first, second, await again.get_result()

    first, second, third = asyncio.run(main())
    assert first == second == third == ["sent 7", "notified ann"]
    assert _names(_steps(workflow_id))[0] == "toolcycle:transfer:claimed"
    assert RUNS == {"transfer": 1, "notify": 2}


def test_a_refused_claim_is_recorded_and_replays_as_refused_without_asking_the_ledger() -> None:
    """A call resumed elsewhere first stays refused on replay, and the ledger is asked once."""
    stored = _deferred("counting")
    runtime = RUNTIMES["counting"]
    with runtime.plan() as ctx:
        assert runtime.resume(stored, True, ctx).output == "sent 7"
    with SetWorkflowID("wf-refused"):
        assert payout("counting", stored) == ["refused", "notified ann"]
    assert COUNTED.asked == 2
    again = DBOS.fork_workflow("wf-refused", _past_the_end(_steps("wf-refused")))
    assert again.get_result() == ["refused", "notified ann"]
    assert COUNTED.asked == 2 and RUNS == {"transfer": 1, "notify": 1}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_claim_whose_ledger_raised_is_not_recorded_and_the_call_stays_resumable(
    mode: str,
) -> None:
    """A ledger error is no answer to replay: it raises, and nothing is recorded for it."""
    kind = f"flaky-{mode}"
    RUNTIMES[kind] = _runtime(FlakyLedger())
    stored = _deferred(kind)
    workflow_id = f"wf-flaky-{mode}"
    with SetWorkflowID(workflow_id):
        if mode == "sync":
            out = payout(kind, stored)
        else:
            out = asyncio.run(apayout(kind, stored))
    assert out == ["ledger down", "notified ann"]
    assert _names(_steps(workflow_id)) == ["toolcycle:notify:started", "toolcycle:notify"]
    with SetWorkflowID(f"{workflow_id}-again"):
        assert payout(kind, stored) == ["sent 7", "notified ann"]
    assert RUNS == {"transfer": 1, "notify": 2}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_resumed_denial_is_traced_once_and_not_again_when_the_plan_replays(mode: str) -> None:
    """The replay's denial has the same result and a trace, which nobody hears of twice."""
    kind, watcher = f"watched-{mode}", Watcher()
    RUNTIMES[kind] = runtime = _runtime(None, watcher)
    stored = _deferred(kind)
    workflow_id = f"wf-denied-{mode}"
    with capture_traces(runtime) as traces:
        with SetWorkflowID(workflow_id):
            first = refusal(kind, stored) if mode == "sync" else asyncio.run(arefusal(kind, stored))
        again = DBOS.fork_workflow(workflow_id, _past_the_end(_steps(workflow_id)))
        second = again.get_result()
    assert first == second == ["ApprovalDenied", "denied", "denied", True, "notified ann"]
    assert [(t.tool_name, t.status) for t in traces] == [("transfer", "denied"), ("notify", "ok")]
    assert watcher.started.count("transfer") == 2  # deferring it, then denying it: not replaying
    assert RUNS == {"notify": 1}
