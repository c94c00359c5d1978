"""Approvals: the pipeline's approval step.

Every call asks `Approvals.needed` once, which reads the tool's capability and
the plan's rule only. What asking and deciding take (``toolcycle.approvals`` and
``toolcycle.agent._approve``) is imported by the first call that needs an
approval: most programs never ask. Resuming a deferred call is ``_resume``'s.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, NoReturn

from toolcycle._approval_rule import needs_approval
from toolcycle.errors import ToolApprovalError, ToolCancelledError, cut_error_text, error_text
from toolcycle.execution._invoke import caller_cancelled
from toolcycle.models import ToolResult
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from toolcycle.approvals import ApprovalDecision, ApprovalRequest
    from toolcycle.execution._invoke import Invoker
    from toolcycle.models import ToolExecutionTrace
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["Approvals"]

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
        In a batch, only this call fails: the batch answers it with the error.
        """
        error = ToolApprovalError(
            f"the approval rule of plan {call.ctx.plan_id!r} raised "
            f"{type(exc).__name__}: {error_text(exc)}; the call was not run "
            "(the plan's approval= function must be fixed to run it)",
            tool_name=call.name,
            plan_id=call.ctx.plan_id,
        )
        error._one_call = True  # a batch's other calls are not the rule's to stop
        error._one_call_trace = self._steps.emit(call, "error", error=error)
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
        flight = call.flight
        try:
            answer = await self._invoker.acall(
                approver,
                request,
                token=flight or call.ctx.cancellation_token,
                # A sync approver runs on when the caller's task is cancelled (a
                # thread cannot be stopped): the call stays in flight until it
                # returns, so its plan's end waits for it, as for a sync tool.
                on_abandon=flight.leave if flight is not None else None,
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

    def denied(self, call: Call, decision: ApprovalDecision, replayed: bool = False) -> ToolResult:
        """Trace the call as denied; the failed result to answer with.

        ``replayed``: an earlier run of the call's durable plan traced this very
        denial; the result gets its trace again, and nothing hears of it twice.
        """
        from toolcycle.agent._approve import DENIED, denial

        message = denial(call.name, decision)
        trace: ToolExecutionTrace | None
        if replayed:
            trace = self._steps.retraced(call, "denied", error_message=message, error_type=DENIED)
        else:
            trace = self._steps.emit(call, "denied", error_message=message, error_type=DENIED)
        error = trace.error if trace is not None else message  # redacted by the trace
        return ToolResult(success=False, error=error, error_type=DENIED, trace=trace)


def _approver_failed(exc: Exception, call: Call) -> ApprovalDecision:
    from toolcycle.approvals import ApprovalDecision

    error = f"{type(exc).__name__}: {error_text(exc)}"
    scrub = call.record.scrub  # the approver may have quoted an argument
    _log.warning(
        "tool.approver_failed",
        tool=call.name,
        plan_id=call.ctx.plan_id,
        error=cut_error_text(scrub(error) if scrub is not None else error),
    )
    return ApprovalDecision.deny(f"the approver failed ({error}); the call was not run")
