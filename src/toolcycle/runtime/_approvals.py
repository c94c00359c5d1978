"""Approvals: the pipeline's approval step, and resuming deferred calls through the ledger.

Every call asks `Approvals.needed`, which reads the tool's capability and the
plan's rule only. What asking, deciding and resuming take (``toolcycle.approvals``
and ``toolcycle.agent._approve``) is imported by the first call that needs an
approval or a resume: most programs never ask.
"""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from toolcycle._approval_rule import needs_approval
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import ToolApprovalError, ToolCancelledError, ToolRuntimeError, error_text
from toolcycle.execution._invoke import caller_cancelled
from toolcycle.models import ToolResult
from toolcycle.runtime._shared import check_limits
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from contextvars import Token

    from toolcycle.approvals import ApprovalDecision, ApprovalLedger, ApprovalRequest, Resumption
    from toolcycle.execution._invoke import Invoker
    from toolcycle.models import ApprovalRecord, PendingApproval
    from toolcycle.runtime._shared import Call, Entry, Runner, Settings
    from toolcycle.runtime._steps import CallSteps

__all__ = ["Approvals", "Resumer"]

_log = get_logger("toolcycle.runtime")


class Approvals:
    """The approval step: asks a plan's approver before the calls it selects.

    Args:
        steps: traces the calls it denies or defers.
        invoker: runs the approver, sync on the pool or async on the caller's loop.
        settings: the runtime's shared settings (its redaction policy).
    """

    def __init__(self, steps: CallSteps, invoker: Invoker, settings: Settings) -> None:
        self._steps = steps
        self._invoker = invoker
        self._settings = settings

    def needed(self, call: Call, entry: Entry) -> bool:
        """Whether someone must approve this call before it runs.

        It asks the plan's rule, which may be any function: the pipeline asks once
        per call and passes the answer on.
        """
        if call.approved:
            return False
        if call.ctx.approver is None:
            return entry.descriptor.capability.requires_approval is True
        try:
            return needs_approval(entry.descriptor, call.ctx.approval)
        except Exception as exc:
            self._rule_failed(call, exc)

    def _rule_failed(self, call: Call, exc: Exception) -> NoReturn:
        """Trace the call and raise for the host: a broken rule is its bug, not the model's.

        It fails closed as a broken guardrail does: the call does not run, and
        a denial would only have the model retry around a rule that fails every time.
        """
        error = ToolApprovalError(
            f"the approval rule of plan {call.ctx.plan_id!r} raised "
            f"{type(exc).__name__}: {error_text(exc)}; the call was not run",
            tool_name=call.name,
            plan_id=call.ctx.plan_id,
        )
        self._steps.emit(call, "error", error=error)
        raise error from exc

    def ask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        """Ask the plan's approver from sync code; None means run the call."""
        from toolcycle.agent._approve import decision_from, no_approver

        request = self._request(call, entry, data)
        approver = call.ctx.approver
        if approver is None:
            return self._decided(call, request, no_approver(request))
        try:
            answer = self._invoker.call(
                approver, request, token=call.flight or call.ctx.cancellation_token
            )
        except (ToolCancelledError, asyncio.CancelledError) as exc:
            self._steps.raise_cancelled(call, exc)
        except Exception as exc:
            return self._decided(call, request, _approver_failed(exc, call))
        return self._decided(call, request, decision_from(answer, request))

    async def aask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        """Ask the plan's approver from async code (a sync one runs on the pool)."""
        from toolcycle.agent._approve import decision_from, no_approver

        request = self._request(call, entry, data)
        approver = call.ctx.approver
        if approver is None:
            return self._decided(call, request, no_approver(request))
        try:
            answer = await self._invoker.acall(
                approver, request, token=call.flight or call.ctx.cancellation_token
            )
        except ToolCancelledError as exc:
            self._steps.raise_cancelled(call, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._steps.emit(call, "cancelled", error=exc)
                raise
            self._steps.raise_cancelled(call, exc)
        except Exception as exc:
            return self._decided(call, request, _approver_failed(exc, call))
        return self._decided(call, request, decision_from(answer, request))

    def _request(self, call: Call, entry: Entry, data: dict[str, Any]) -> ApprovalRequest:
        from toolcycle.agent._approve import request_for

        return request_for(
            entry.descriptor,
            data,
            call.ctx,
            call.record.call_id,
            call.tool_call_id,
            self._settings.redaction,
        )

    def _decided(
        self, call: Call, request: ApprovalRequest, decision: ApprovalDecision
    ) -> ToolResult | None:
        """Record the decision; the result to return for a denial or a deferral."""
        from toolcycle.agent._approve import PENDING, pending_for, record_of

        lifecycle_event(
            "tool.approval",
            tool=call.name,
            plan_id=call.ctx.plan_id,
            call_id=call.record.call_id,
            outcome=decision.outcome,
        )
        if decision.outcome == "approve":
            call.record.approval = record_of(decision, request.fingerprint)
            return None
        if decision.outcome == "deny":
            call.record.approval = record_of(decision, request.fingerprint)
            return self.denied(call, decision)
        pending = pending_for(request, decision)
        call.record.approval = record_of(
            decision, request.fingerprint, approval_id=pending.approval_id
        )
        message = (
            f"the call of {call.name!r} is waiting for approval"
            + (f" ({decision.reason})" if decision.reason else "")
            + "; it has not run yet"
        )
        trace = self._steps.emit(call, "pending", error_message=message, error_type=PENDING)
        error = trace.error if trace is not None else message  # redacted by the trace
        return ToolResult(
            success=False, error=error, error_type=PENDING, trace=trace, pending=pending
        )

    def denied(self, call: Call, decision: ApprovalDecision) -> ToolResult:
        """Trace the call as denied; the failed result to answer with."""
        from toolcycle.agent._approve import DENIED, denial

        message = denial(call.name, decision)
        trace = self._steps.emit(call, "denied", error_message=message, error_type=DENIED)
        error = trace.error if trace is not None else message  # redacted by the trace
        return ToolResult(success=False, error=error, error_type=DENIED, trace=trace)


class Resumer:
    """Finishes deferred calls: claims each in the ledger once, then runs or denies it.

    In a durable plan whose engine records claims (``claim_once``), the claim is
    one of the plan's recorded steps, so a replay does not claim the call again.

    Args:
        approvals: traces a resumed denial.
        steps: opens the record of a resumed denial, and checks a resume's plan.
        runner: runs an approved call (the pipeline).
        settings: the runtime's shared settings (whether it is closed).
        ledger: where each resumed call is claimed, so that none runs twice; None
            for a `MemoryApprovalLedger`, made by the first resume.
    """

    def __init__(
        self,
        approvals: Approvals,
        steps: CallSteps,
        runner: Runner,
        settings: Settings,
        ledger: ApprovalLedger | None,
    ) -> None:
        self._approvals = approvals
        self._steps = steps
        self._runner = runner
        self._settings = settings
        self._ledger = ledger
        self._making = threading.Lock()  # two first resumes must share one ledger

    @property
    def ledger(self) -> ApprovalLedger:
        """The ledger resumed calls are claimed in."""
        if self._ledger is None:
            with self._making:
                if self._ledger is None:
                    from toolcycle.approvals import MemoryApprovalLedger

                    self._ledger = MemoryApprovalLedger()
        return self._ledger

    def resume(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> ToolResult:
        """Claim the call, then run it or deny it (see `ToolRuntime.resume`)."""
        from toolcycle.agent._approve import check_claimed
        from toolcycle.approvals import _resumption

        record, chosen, approval = self._check(pending, decision, ctx, timeout, idle_timeout)
        check_claimed(record, self._claim(record, ctx))
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx)
        else:
            resuming = _resuming(record, chosen)
            try:
                result = self._runner.execute(*_rerun(record, ctx, timeout, idle_timeout), approval)
            finally:
                if resuming is not None:
                    _resumption.reset(resuming)
        return _answering(result, record)

    async def aresume(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> ToolResult:
        """Async twin of `resume`."""
        from toolcycle.agent._approve import check_claimed
        from toolcycle.approvals import _resumption

        record, chosen, approval = self._check(pending, decision, ctx, timeout, idle_timeout)
        check_claimed(record, await self._aclaim(record, ctx))
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx)
        else:
            args = _rerun(record, ctx, timeout, idle_timeout)
            resuming = _resuming(record, chosen)
            try:
                result = await self._runner.aexecute(*args, approval)
            finally:
                if resuming is not None:
                    _resumption.reset(resuming)
        return _answering(result, record)

    def _check(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> tuple[PendingApproval, ApprovalDecision, ApprovalRecord]:
        """Check a resume before its claim (see `ToolRuntime.resume`)."""
        from toolcycle.agent._approve import check_resume, record_of

        self._settings.check_open()

        def precheck(record: PendingApproval) -> None:
            # Refusals that do not spend the approval: the call stays resumable.
            # Everything the run would refuse before the tool starts is checked here.
            if not isinstance(ctx, ToolExecutionContext):
                raise TypeError(f"ctx must be a ToolExecutionContext, got {type(ctx).__name__}")
            check_limits(timeout, idle_timeout)
            if ctx.ended:
                raise ToolRuntimeError(
                    f"plan {ctx.plan_id!r} has ended; resume the call in an open plan",
                    tool_name=record.tool_name,
                    plan_id=ctx.plan_id,
                )
            self._steps.precheck(record.tool_name, ctx)

        record, chosen = check_resume(pending, decision, precheck)
        approval = record_of(
            chosen, record.fingerprint, approval_id=record.approval_id, resumed=True
        )
        return record, chosen, approval

    def _claim(self, record: PendingApproval, ctx: ToolExecutionContext) -> bool:
        """Claim the call in the ledger; a durable plan's engine may record the answer.

        A replayed plan must get its own claim's answer back: asked again, the
        ledger would refuse the call this very plan claimed.
        """
        claim = partial(self.ledger.claim, record.approval_id)
        once = getattr(ctx.durable, "claim_once", None)  # optional in `DurablePlan`
        return claim() if once is None else bool(once(ctx, record.tool_name, claim))

    async def _aclaim(self, record: PendingApproval, ctx: ToolExecutionContext) -> bool:
        """Async twin of `_claim`."""
        claim = partial(self.ledger.claim, record.approval_id)
        once = getattr(ctx.durable, "aclaim_once", None)
        return claim() if once is None else bool(await once(ctx, record.tool_name, claim))

    def _resumed_denial(
        self,
        record: PendingApproval,
        decision: ApprovalDecision,
        approval: ApprovalRecord,
        ctx: ToolExecutionContext,
    ) -> ToolResult:
        """The failed result of a deferred call that was denied, with its own trace."""
        tool_call_id = record.call.id if record.call is not None else None
        call = self._steps.start(record.tool_name, ctx, tool_call_id, approval=approval)
        try:
            return self._approvals.denied(call, decision)
        finally:
            if call.observer is not None:
                self._steps.observed(call)


def _approver_failed(exc: Exception, call: Call) -> ApprovalDecision:
    from toolcycle.approvals import ApprovalDecision

    error = f"{type(exc).__name__}: {error_text(exc)}"
    scrub = call.record.scrub  # the approver may have quoted an argument
    _log.warning(
        "tool.approver_failed",
        tool=call.name,
        plan_id=call.ctx.plan_id,
        error=scrub(error) if scrub is not None else error,
    )
    return ApprovalDecision.deny(f"the approver failed ({error}); the call was not run")


def _resuming(
    record: PendingApproval, decision: ApprovalDecision
) -> Token[Resumption | None] | None:
    """Hand the answer to a tool that deferred its own call; the token to undo it with."""
    from toolcycle.approvals import Resumption, _resumption

    if record.request is None:
        return None
    return _resumption.set(Resumption(record.request, decision.reply, record.approval_id))


def _rerun(
    record: PendingApproval,
    ctx: ToolExecutionContext,
    timeout: float | None,
    idle_timeout: float | None,
) -> tuple[str, dict[str, Any], ToolExecutionContext, float | None, float | None, str | None]:
    """The runner's arguments for an approved call: its recorded tool, arguments and call id."""
    call_id = record.call.id if record.call is not None else None
    return record.tool_name, record.arguments, ctx, timeout, idle_timeout, call_id


def _answering(result: ToolResult, record: PendingApproval) -> ToolResult:
    """The resumed call's result, carrying the model's call it answers, if it came as one."""
    if record.call is None:
        return result
    return result.model_copy(update={"call": record.call})
