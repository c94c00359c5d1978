"""Durable plans on DBOS (``toolcycle[dbos]``): each call is a step of the plan's workflow.

A durable plan is opened inside a function decorated with ``@DBOS.workflow()``;
the plan takes the workflow's id. Each call of the plan runs as one DBOS step
named after the tool (``toolcycle:<tool>``), whose recorded output is the call's
whole `ToolResult` (its output, trace with the approval decision, and changes)
with the call's fingerprint: ``{"result": ..., "fingerprint": ...}``.
When the workflow runs again with the same id (DBOS recovers it in
``DBOS.launch()``, or the host starts it again), DBOS hands back the recorded
results of the calls that completed, in order, and the tools do not run. DBOS
checks each step's name; the fingerprint checks the arguments: a replayed call
whose arguments differ from the recorded call's raises `PlanResumeError` instead
of getting the other call's result. (A step recorded before fingerprints were,
a bare `ToolResult`, answers any call of its tool.)

DBOS writes a step's output with its serializer (pickle by default) after the
step's function returns. A result it cannot write would leave the step
unrecorded behind a bare pickling error, after the tool ran; each result is
tried with the serializer first, and one that fails raises `ToolRuntimeError`
naming the tool, with nothing recorded for the call.

A call of a tool that is not idempotent is preceded by a small marker step
(``toolcycle:<tool>:started``). If the marker is recorded but the call is not,
the call was running when an earlier process died: it is reported as failed
with `ToolInterruptedError` (and that result is recorded), never run twice. An
idempotent tool needs no marker: its unfinished call simply runs again. The
marker records the call's fingerprint too.

Resuming a deferred call (``runtime.resume``) claims it in the approval ledger
as a step of its own (``toolcycle:<tool>:claimed``) before the call's steps, so
a replay gets the recorded answer back instead of claiming the call again, which
the ledger would refuse. A claim that raised is not recorded and is made again.

Calls of a durable plan start one at a time: DBOS matches a resumed workflow's
steps to its recorded ones by their order, so two calls running at once could be
handed each other's results. A call that starts while another call of the same
plan runs raises `ConcurrentCallError` (a call made by the running call's own
tool is part of that call's step, and is let through).

`DBOSPlan.resume` resumes a plan by its id after a crash, with DBOS's own
machinery: a plan that ``DBOS.launch()`` recovered, or that this process runs, is
waited for; any other unfinished plan of this application version is handed to
``DBOS.resume_workflow``, which queues it to run here from its last recorded step.

This module is the only part of toolcycle that imports ``dbos``. It reads three
things DBOS keeps private: the workflows this process runs, the serializer
configured, and the id of the step that just ran (for messages only).
"""

from __future__ import annotations

try:
    from dbos import DBOS, WorkflowHandle, WorkflowHandleAsync, WorkflowStatus
    from dbos._context import get_local_dbos_context
    from dbos._dbos import _get_dbos_instance
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without dbos
    raise ImportError(
        "toolcycle.hosts.DBOSPlan needs DBOS, which is an optional extra: "
        "pip install -e '.[dbos]' from a clone (toolcycle[dbos] once published)"
    ) from exc

import pickle
import threading
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from toolcycle.errors import ConcurrentCallError, PlanResumeError, ToolRuntimeError, error_text

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolResult

__all__ = ["DBOSPlan"]

# The plan contexts (by id()) with a durable call running in this process, and those
# whose call runs in this context (a call its tool makes is nested in it). Keyed by
# context, not plan id: a stale run of a resumed plan has a context of its own.
_BUSY: set[int] = set()
_BUSY_LOCK = threading.Lock()
_INSIDE: ContextVar[frozenset[int]] = ContextVar("toolcycle_dbos_inside", default=frozenset())

# Statuses of a plan that has its final result, which resuming only reads.
_FINISHED = frozenset({"SUCCESS", "ERROR"})
# Statuses of a plan that is waiting in a queue, which will run it.
_QUEUED = frozenset({"ENQUEUED", "DELAYED"})
# The name DBOS gives its default serializer, which pickles.
_PICKLE = "py_pickle"


class _Raised(BaseException):
    """Carries an exception of a call past DBOS's step, which records only `Exception`s.

    A call that raised (cancelled, refused, an activation that failed) has no
    result to give back on resume, so it is left unrecorded.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class DBOSPlan:
    """Makes a plan durable on DBOS; pass it as ``runtime.plan(durable=DBOSPlan())``.

    The plan must be opened inside a DBOS workflow (a function decorated with
    ``@DBOS.workflow()``), after ``DBOS.launch()``; its calls must be made one
    at a time, in the same order on every run, as DBOS asks of any workflow's
    steps (a call made while another runs raises `ConcurrentCallError`), and
    with the same arguments (a replayed call with others raises
    `PlanResumeError`). Results, ``ToolReturn`` metadata included, must be
    picklable (DBOS's default serializer), or serializable by the serializer
    set in ``DBOSConfig``.

    Args:
        prefix: the first part of each step's name (``<prefix>:<tool>``), as
            DBOS lists the workflow's steps.
    """

    __slots__ = ("_prefix",)

    def __init__(self, *, prefix: str = "toolcycle") -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty string, got {prefix!r}")
        self._prefix = prefix

    def __repr__(self) -> str:
        return f"DBOSPlan(prefix={self._prefix!r})"

    def open(self, plan_id: str | None) -> str:
        """The plan's id: the one given, or the id of the workflow it runs in.

        Raises:
            ToolRuntimeError: the plan is not opened inside a DBOS workflow.
        """
        workflow_id = DBOS.workflow_id
        if workflow_id is None:
            raise ToolRuntimeError(
                "a durable plan records its calls as steps of a DBOS workflow, but no "
                "workflow is running here; open the plan inside a function decorated "
                "with @DBOS.workflow(), after DBOS.launch()",
                plan_id=plan_id,
            )
        return plan_id or workflow_id

    @staticmethod
    def resume(plan_id: str) -> WorkflowHandle[Any]:
        """Resume the durable plan ``plan_id`` after a crash; a handle to wait for its result.

        Call it after ``DBOS.launch()``, with the workflow's id (a plan's id, unless
        the host gave the plan another). The plan's workflow runs again in this
        process from the top: the calls that completed give back their recorded
        results without running, and the call that was running runs again only if
        its tool is idempotent (see the module). Resuming twice, or a plan that
        ``DBOS.launch()`` recovered, does not start it twice in this process.

        A finished plan is not run again: its handle gives the recorded result. A
        cancelled plan, or one DBOS gave up recovering, is resumed too.

        Raises:
            PlanResumeError: no workflow has that id; it was started by another
                application version, whose code this process may not replay; or it
                was cancelled and its run in this process has not stopped yet.
        """
        status = DBOS.get_workflow_status(plan_id)
        if _should_resume(plan_id, status):
            return DBOS.resume_workflow(plan_id)
        return DBOS.retrieve_workflow(plan_id)

    @staticmethod
    async def aresume(plan_id: str) -> WorkflowHandleAsync[Any]:
        """Async twin of `resume`, for a process whose event loop is running."""
        status = await DBOS.get_workflow_status_async(plan_id)
        if _should_resume(plan_id, status):
            return await DBOS.resume_workflow_async(plan_id)
        return await DBOS.retrieve_workflow_async(plan_id)

    def run(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], ToolResult],
        interrupted: Callable[[], ToolResult],
        *,
        fingerprint: str | None,
    ) -> ToolResult:
        """Run one call as a DBOS step, or replay its recorded result (see the module).

        Raises:
            ConcurrentCallError: another call of the plan is running.
            PlanResumeError: the call replays a recorded call with other arguments.
            ToolRuntimeError: the call ran, but DBOS's serializer cannot write its
                result; nothing is recorded for it.
        """
        entered = _enter(ctx, tool_name)
        try:
            return self._run(ctx, tool_name, idempotent, call, interrupted, fingerprint)
        finally:
            _leave(ctx, entered)

    def _run(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], ToolResult],
        interrupted: Callable[[], ToolResult],
        fingerprint: str | None,
    ) -> ToolResult:
        name = f"{self._prefix}:{tool_name}"
        fresh = idempotent or self._began(ctx, tool_name, name, fingerprint)
        live: list[ToolResult] = []

        def step() -> dict[str, Any]:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = call()
                except BaseException as exc:
                    raise _Raised(exc) from None
            live.append(result)
            return _record(ctx, tool_name, result, fingerprint)

        try:
            recorded = DBOS.run_step({"name": name}, step)
        except _Raised as carried:
            raise carried.error from carried.error.__cause__
        if live:
            return live[0]
        return _replayed(ctx, tool_name, name, recorded, fingerprint, marked=not idempotent)

    async def arun(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], Awaitable[ToolResult]],
        interrupted: Callable[[], ToolResult],
        *,
        fingerprint: str | None,
    ) -> ToolResult:
        """Async twin of `run`."""
        entered = _enter(ctx, tool_name)
        try:
            return await self._arun(ctx, tool_name, idempotent, call, interrupted, fingerprint)
        finally:
            _leave(ctx, entered)

    async def _arun(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], Awaitable[ToolResult]],
        interrupted: Callable[[], ToolResult],
        fingerprint: str | None,
    ) -> ToolResult:
        name = f"{self._prefix}:{tool_name}"
        fresh = idempotent or await self._abegan(ctx, tool_name, name, fingerprint)
        live: list[ToolResult] = []

        async def step() -> dict[str, Any]:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = await call()
                except BaseException as exc:
                    raise _Raised(exc) from None
            live.append(result)
            return _record(ctx, tool_name, result, fingerprint)

        try:
            recorded = await DBOS.run_step_async({"name": name}, step)
        except _Raised as carried:
            raise carried.error from carried.error.__cause__
        if live:
            return live[0]
        return _replayed(ctx, tool_name, name, recorded, fingerprint, marked=not idempotent)

    def claim_once(
        self, ctx: ToolExecutionContext, tool_name: str, claim: Callable[[], bool]
    ) -> bool:
        """Claim a resumed call in the ledger as a step; a replay gets the recorded answer.

        Raises:
            ConcurrentCallError: another call of the plan is running.
        """
        entered = _enter(ctx, tool_name)
        try:
            return _claimed(f"{self._prefix}:{tool_name}:claimed", claim)
        finally:
            _leave(ctx, entered)

    async def aclaim_once(
        self, ctx: ToolExecutionContext, tool_name: str, claim: Callable[[], bool]
    ) -> bool:
        """Async twin of `claim_once`; DBOS runs the claim off the event loop."""
        entered = _enter(ctx, tool_name)
        try:
            return await _aclaimed(f"{self._prefix}:{tool_name}:claimed", claim)
        finally:
            _leave(ctx, entered)

    @staticmethod
    def _began(
        ctx: ToolExecutionContext, tool_name: str, name: str, fingerprint: str | None
    ) -> bool:
        """Record that the call starts; False when an earlier run recorded it already.

        Raises:
            PlanResumeError: the earlier run recorded the start of a call with
                other arguments.
        """
        ran: list[bool] = []

        def mark() -> str | None:
            ran.append(True)
            return fingerprint

        marker = f"{name}:started"
        recorded = DBOS.run_step({"name": marker}, mark)
        if not ran:
            _check_same_call(ctx, tool_name, marker, recorded, fingerprint, marked=False)
        return bool(ran)

    @staticmethod
    async def _abegan(
        ctx: ToolExecutionContext, tool_name: str, name: str, fingerprint: str | None
    ) -> bool:
        """Async twin of `_began`."""
        ran: list[bool] = []

        async def mark() -> str | None:
            ran.append(True)
            return fingerprint

        marker = f"{name}:started"
        recorded = await DBOS.run_step_async({"name": marker}, mark)
        if not ran:
            _check_same_call(ctx, tool_name, marker, recorded, fingerprint, marked=False)
        return bool(ran)


def _enter(ctx: ToolExecutionContext, tool_name: str) -> Token[frozenset[int]] | None:
    """Mark a call of the plan as running; None for a call nested in the running one.

    Raises:
        ConcurrentCallError: another call of the plan is running.
    """
    key, inside = id(ctx), _INSIDE.get()
    if key in inside:  # made by the running call's tool: part of its step
        return None
    with _BUSY_LOCK:
        if key in _BUSY:
            raise ConcurrentCallError(
                f"a call of {tool_name!r} started while another call of durable plan "
                f"{ctx.plan_id!r} was running; a resumed plan gets its recorded results "
                "back by the order its calls started, so make the calls of a durable "
                "plan one after the other (call_many runs them in order)",
                tool_name=tool_name,
                plan_id=ctx.plan_id,
            )
        _BUSY.add(key)
    return _INSIDE.set(inside | {key})


def _leave(ctx: ToolExecutionContext, entered: Token[frozenset[int]] | None) -> None:
    """Undo `_enter`."""
    if entered is None:
        return
    _INSIDE.reset(entered)
    with _BUSY_LOCK:
        _BUSY.discard(id(ctx))


def _carried(claim: Callable[[], bool]) -> Callable[[], bool]:
    """The claim as a step: an error is carried past DBOS, unrecorded, to try again on resume."""

    def step() -> bool:
        try:
            return bool(claim())
        except BaseException as exc:
            raise _Raised(exc) from None

    return step


def _claimed(name: str, claim: Callable[[], bool]) -> bool:
    """Run the claim as the step ``name``, or give back its recorded answer."""
    try:
        return DBOS.run_step({"name": name}, _carried(claim))
    except _Raised as carried:
        raise carried.error from None


async def _aclaimed(name: str, claim: Callable[[], bool]) -> bool:
    """Async twin of `_claimed`."""
    try:
        return await DBOS.run_step_async({"name": name}, _carried(claim))
    except _Raised as carried:
        raise carried.error from None


def _record(
    ctx: ToolExecutionContext, tool_name: str, result: ToolResult, fingerprint: str | None
) -> dict[str, Any]:
    """What the call's step records: its result, without the live exception, and fingerprint.

    The record is tried with DBOS's serializer here, because DBOS serializes a
    step's output only after the step returns, and a failure there escapes as
    a bare error (pickle's, for the default serializer) with the step unrecorded.

    Raises:
        _Raised: carrying `ToolRuntimeError` (the serializer's error as its
            cause) when the record cannot be serialized; DBOS records nothing.
    """
    kept = result if result.exception is None else result.model_copy(update={"exception": None})
    record = {"result": kept, "fingerprint": fingerprint}
    serializer = _get_dbos_instance()._serializer
    pickled = serializer.name() == _PICKLE
    try:
        if pickled:  # by pickle itself: DBOS's serializer logs the whole result on failing
            pickle.dumps(record)
        else:
            serializer.serialize(record)
    except Exception as exc:
        used = (
            "pickle (DBOS's default serializer)"
            if pickled
            else f"the serializer set in DBOSConfig ({type(serializer).__name__})"
        )
        error = ToolRuntimeError(
            f"the call of {tool_name!r} in durable plan {ctx.plan_id!r} ran, but its result "
            f"cannot be recorded: {used} failed on it ({type(exc).__name__}: "
            f"{error_text(exc)}). A durable plan records each call's whole ToolResult, so "
            "its output and any ToolReturn metadata must be serializable: keep live "
            "objects (locks, clients, open files) out of the metadata, or set a "
            "serializer in DBOSConfig that can write them. Nothing was recorded for this "
            "call: a resumed plan treats it as a call that was running when its process "
            "died",
            tool_name=tool_name,
            plan_id=ctx.plan_id,
        )
        error.__cause__ = exc
        raise _Raised(error) from None
    return record


def _replayed(
    ctx: ToolExecutionContext,
    tool_name: str,
    name: str,
    recorded: dict[str, Any] | ToolResult,
    fingerprint: str | None,
    *,
    marked: bool,
) -> ToolResult:
    """A recorded result given back on resume; its changes join the plan's record again.

    ``marked``: the call's step follows its marker step (see `_check_same_call`).

    Raises:
        PlanResumeError: the result was recorded for a call with other arguments.
    """
    if isinstance(recorded, dict):
        _check_same_call(ctx, tool_name, name, recorded["fingerprint"], fingerprint, marked=marked)
        result: ToolResult = recorded["result"]
    else:  # recorded before fingerprints were: it answers any call of its tool
        result = recorded
    for change in result.changes:
        ctx.record_change(change)
    return result


def _check_same_call(
    ctx: ToolExecutionContext,
    tool_name: str,
    name: str,
    recorded: str | None,
    fingerprint: str | None,
    *,
    marked: bool,
) -> None:
    """Refuse to replay the step ``name`` for a call whose fingerprint is not the recorded one.

    A record without a fingerprint (made before they were recorded) answers any
    call of its tool, as it did then. ``marked``: the step follows the call's
    marker step, where a fork that runs the call again must start.

    Raises:
        PlanResumeError: naming the step and the tool, and what to do.
    """
    if recorded is None or recorded == fingerprint:
        return
    workflow_id = DBOS.workflow_id
    dbos_context = get_local_dbos_context()
    assert dbos_context is not None  # a step of this workflow just replayed
    step_id = dbos_context.function_id  # the id DBOS gave the step that just replayed
    first = step_id - 1 if marked else step_id
    raise PlanResumeError(
        f"a replay of durable plan {ctx.plan_id!r} reached step {step_id} ({name!r}), "
        f"recorded for a call of {tool_name!r} with other arguments than the plan passes "
        "now, so the recorded result is not handed back. A replay must make the calls of "
        "the run it replays: compute each call's arguments only from the workflow's inputs "
        "and earlier calls' results (read the clock, random numbers and outside data inside "
        "a tool or a DBOS step). If the new arguments are intended, run the plan under a new "
        "workflow id, or fork it with DBOS.fork_workflow"
        f"({workflow_id!r}, {first}), which runs this call again with them",
        tool_name=tool_name,
        plan_id=ctx.plan_id,
    )


def _should_resume(plan_id: str, status: WorkflowStatus | None) -> bool:
    """Whether ``DBOS.resume_workflow`` must start the plan, or it finished or will run.

    Raises:
        PlanResumeError: see `DBOSPlan.resume`.
    """
    if status is None:
        raise PlanResumeError(
            f"no durable plan has the id {plan_id!r} in this DBOS system database; "
            "resume a plan by the id of the workflow it ran in",
            plan_id=plan_id,
        )
    if status.status in _FINISHED:
        return False
    ours = DBOS.application_version
    if status.app_version is not None and status.app_version != ours:
        raise PlanResumeError(
            f"durable plan {plan_id!r} was started by application version "
            f"{status.app_version!r}, and this process is {ours!r}: DBOS replays a plan "
            "only with the code that started it. Resume it from a process launched with "
            "that application_version, or move it to this one with "
            "DBOS.fork_workflow(plan_id, start_step, application_version=...) if its "
            "calls are unchanged (and pin application_version in DBOSConfig)",
            plan_id=plan_id,
        )
    if status.status in _QUEUED:  # a queue (launch()'s recovery, an earlier resume) runs it
        return False
    if not _running_here(plan_id):
        return True
    if status.status == "PENDING":  # launch()'s recovery, or the host, runs it here: wait
        return False
    # Cancelled, but its run here has not reached its next step yet: a second run now
    # would find the plan still open in this process.
    raise PlanResumeError(
        f"durable plan {plan_id!r} is {status.status}, but its run in this process has "
        "not stopped yet (DBOS stops it when it reaches its next step); resume it once "
        "that run has ended",
        plan_id=plan_id,
    )


def _running_here(workflow_id: str) -> bool:
    """Whether this process is running the workflow now (after ``launch()``'s recovery).

    DBOS keeps that set privately and has no public way to ask; without it, a plan
    that ``DBOS.launch()`` recovered would be started a second time beside itself.
    """
    return workflow_id in _get_dbos_instance()._active_workflows_set.activeList()
