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

A result that DBOS's serializer cannot write raises `ToolRuntimeError` naming
the tool, with nothing recorded for the call (see ``_dbos_record``, which holds
what the steps record and how a replay is checked against it).

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

This module and ``_dbos_record``, which it imports once it has checked that
DBOS is installed, are the only parts of toolcycle that import ``dbos``. This
one reads one thing DBOS keeps private: the workflows this process runs.
"""

from __future__ import annotations

try:
    from dbos import DBOS, WorkflowHandle, WorkflowHandleAsync, WorkflowStatus
    from dbos._dbos import _get_dbos_instance
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without dbos
    raise ImportError(
        "toolcycle.hosts.DBOSPlan needs DBOS, which is an optional extra: "
        "pip install -e '.[dbos]' from a clone (toolcycle[dbos] once published)"
    ) from exc

import threading
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from toolcycle.errors import ConcurrentCallError, PlanResumeError, ToolRuntimeError
from toolcycle.hosts._dbos_record import (
    Raised,
    abegan,
    aclaimed,
    began,
    claimed,
    record,
    replayed,
)

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
        fresh = idempotent or began(ctx, tool_name, name, fingerprint)
        live: list[ToolResult] = []

        def step() -> dict[str, Any]:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = call()
                except BaseException as exc:
                    raise Raised(exc) from None
            live.append(result)
            return record(ctx, tool_name, result, fingerprint)

        try:
            recorded = DBOS.run_step({"name": name}, step)
        except Raised as carried:
            raise carried.error from carried.error.__cause__
        if live:
            return live[0]
        return replayed(ctx, tool_name, name, recorded, fingerprint, marked=not idempotent)

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
        fresh = idempotent or await abegan(ctx, tool_name, name, fingerprint)
        live: list[ToolResult] = []

        async def step() -> dict[str, Any]:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = await call()
                except BaseException as exc:
                    raise Raised(exc) from None
            live.append(result)
            return record(ctx, tool_name, result, fingerprint)

        try:
            recorded = await DBOS.run_step_async({"name": name}, step)
        except Raised as carried:
            raise carried.error from carried.error.__cause__
        if live:
            return live[0]
        return replayed(ctx, tool_name, name, recorded, fingerprint, marked=not idempotent)

    def claim_once(
        self, ctx: ToolExecutionContext, tool_name: str, claim: Callable[[], bool]
    ) -> bool:
        """Claim a resumed call in the ledger as a step; a replay gets the recorded answer.

        Raises:
            ConcurrentCallError: another call of the plan is running.
        """
        entered = _enter(ctx, tool_name)
        try:
            return claimed(f"{self._prefix}:{tool_name}:claimed", claim)
        finally:
            _leave(ctx, entered)

    async def aclaim_once(
        self, ctx: ToolExecutionContext, tool_name: str, claim: Callable[[], bool]
    ) -> bool:
        """Async twin of `claim_once`; DBOS runs the claim off the event loop."""
        entered = _enter(ctx, tool_name)
        try:
            return await aclaimed(f"{self._prefix}:{tool_name}:claimed", claim)
        finally:
            _leave(ctx, entered)


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
