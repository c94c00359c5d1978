"""The approval step of the pipeline: building the request, reading the answer, resuming.

The runtime asks and traces; this module decides what an answer means. Every
doubt fails closed: an approver that raises or answers something that is not a
decision denies the call, and a decision bound to another call's fingerprint
denies it too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from toolcycle.approvals import ApprovalDecision, ApprovalRequest, fingerprint
from toolcycle.errors import ToolApprovalError
from toolcycle.models import ApprovalRecord, PendingApproval

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolDescriptor
    from toolcycle.redaction import RedactionPolicy

__all__ = [
    "DENIED",
    "PENDING",
    "check_claimed",
    "check_resume",
    "decision_from",
    "denial",
    "no_approver",
    "pending_for",
    "record_of",
    "request_for",
]

DENIED = "ApprovalDenied"
"""The ``error_type`` of a call its approver denied."""
PENDING = "ApprovalPending"
"""The ``error_type`` of a call that waits for a decision."""


def request_for(
    descriptor: ToolDescriptor,
    arguments: dict[str, Any],
    ctx: ToolExecutionContext,
    call_id: str,
    tool_call_id: str | None,
    redaction: RedactionPolicy | None,
) -> ApprovalRequest:
    """The request an approver is shown for one validated call."""
    shown = arguments
    if redaction is not None:
        shown = redaction.masked(arguments, descriptor.input_schema)
    return ApprovalRequest(
        tool_name=descriptor.name,
        arguments=arguments,
        display_arguments=shown,
        fingerprint=fingerprint(descriptor.name, arguments),
        descriptor=descriptor,
        plan_id=ctx.plan_id,
        call_id=call_id,
        tool_call_id=tool_call_id,
    )


def no_approver(request: ApprovalRequest) -> ApprovalDecision:
    """The denial of a tool that demands approval in a plan that has no approver."""
    return ApprovalDecision.deny(
        f"tool {request.tool_name!r} needs approval and plan {request.plan_id!r} has no "
        "approver; give the plan an approver to run it"
    )


def _from_bool(answer: Any) -> Any:
    """True and False as decisions; anything else unchanged."""
    if answer is True:
        return ApprovalDecision.approve()
    if answer is False:
        return ApprovalDecision.deny("the approver said no")
    return answer


def decision_from(answer: Any, request: ApprovalRequest) -> ApprovalDecision:
    """What the approver's answer means; anything unclear is a denial."""
    answer = _from_bool(answer)
    if not isinstance(answer, ApprovalDecision):
        return ApprovalDecision.deny(
            f"the approver returned {type(answer).__name__}, not an ApprovalDecision or a "
            "bool; the call was not run"
        )
    if answer.fingerprint is not None and answer.fingerprint != request.fingerprint:
        return ApprovalDecision.deny(
            "the approver's decision is bound to another call (its fingerprint does not "
            "match these arguments); the call was not run"
        )
    return answer


_OUTCOMES: dict[str, Literal["approved", "denied", "deferred"]] = {
    "approve": "approved",
    "deny": "denied",
    "defer": "deferred",
}


def record_of(
    decision: ApprovalDecision,
    call_fingerprint: str,
    *,
    approval_id: str | None = None,
    resumed: bool = False,
) -> ApprovalRecord:
    """The trace's record of a decision."""
    return ApprovalRecord(
        outcome=_OUTCOMES[decision.outcome],
        fingerprint=call_fingerprint,
        reason=decision.reason,
        approval_id=approval_id,
        resumed=resumed,
    )


def denial(tool_name: str, decision: ApprovalDecision) -> str:
    """The error message of a denied call, for the model."""
    reason = decision.reason or "no reason given"
    return f"the call of {tool_name!r} was denied by its approver: {reason}"


def pending_for(request: ApprovalRequest, decision: ApprovalDecision) -> PendingApproval:
    """The pending record of a deferred call."""
    return PendingApproval(
        approval_id=os.urandom(16).hex(),
        tool_name=request.tool_name,
        arguments=request.arguments,
        fingerprint=request.fingerprint,
        plan_id=request.plan_id,
        call_id=request.call_id,
        reason=decision.reason,
    )


def check_resume(
    pending: Any,
    decision: Any,
    precheck: Callable[[PendingApproval], None],
) -> tuple[PendingApproval, ApprovalDecision]:
    """The pending call and decision of a ``resume``, checked; the caller claims the call.

    ``precheck`` runs last and may raise to refuse the resume while leaving the
    call resumable (the plan may not run the tool, say).

    Raises:
        ToolApprovalError: the record was changed, or the decision defers or
            names another call.
        TypeError: ``pending`` or ``decision`` is of the wrong kind.
    """
    record = _pending(pending)
    decision = _from_bool(decision)
    if not isinstance(decision, ApprovalDecision):
        raise TypeError(
            f"decision must be an ApprovalDecision or a bool, got {type(decision).__name__}"
        )
    name = record.tool_name
    if fingerprint(name, record.arguments) != record.fingerprint:
        raise ToolApprovalError(
            f"the pending call of {name!r} was changed after it was deferred (its arguments "
            "no longer match its fingerprint); it will not be run",
            tool_name=name,
            plan_id=record.plan_id,
        )
    if decision.fingerprint is not None and decision.fingerprint != record.fingerprint:
        raise ToolApprovalError(
            f"the decision is bound to fingerprint {decision.fingerprint}, not to this call "
            f"of {name!r} ({record.fingerprint}); an approval applies to one call only",
            tool_name=name,
            plan_id=record.plan_id,
        )
    if decision.outcome == "defer":
        raise ToolApprovalError(
            f"resume needs a decision that approves or denies the call of {name!r}; "
            "to wait longer, keep the pending record and resume it later",
            tool_name=name,
            plan_id=record.plan_id,
        )
    precheck(record)
    return record, decision


def check_claimed(record: PendingApproval, claimed: bool) -> None:
    """Refuse a resume whose claim in the ledger failed.

    Raises:
        ToolApprovalError: the call was resumed before.
    """
    if not claimed:
        raise ToolApprovalError(
            f"the pending call {record.approval_id} of {record.tool_name!r} was resumed "
            "before; a call runs at most once",
            tool_name=record.tool_name,
            plan_id=record.plan_id,
        )


def _pending(value: Any) -> PendingApproval:
    """The pending record of a resume; one that cannot be read is refused.

    A record cut short or mangled in storage holds the call's arguments, secrets
    included, so the refusal names what is wrong and where, never the values.
    """
    if isinstance(value, PendingApproval):
        return value
    try:
        if isinstance(value, str | bytes):
            return PendingApproval.model_validate_json(value)
        if isinstance(value, dict):
            return PendingApproval.model_validate(value)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(map(str, problem['loc'])) or 'the record'}: {problem['msg']}"
            for problem in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        raise ToolApprovalError(
            f"the pending record cannot be read ({'; '.join(problems[:5])}); it will not be run"
        ) from None  # the validation error quotes the record, arguments included
    raise TypeError(
        f"pending must be a PendingApproval, its JSON text or its dict, got {type(value).__name__}"
    )
