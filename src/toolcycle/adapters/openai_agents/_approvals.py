"""Approvals decided in an SDK run, applied to the runtime's ledger as one decision."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Final

from toolcycle import ApprovalDecision, PendingApproval, ToolCall
from toolcycle.adapters._offers import offers
from toolcycle.approvals import fingerprint

if TYPE_CHECKING:
    from agents import RunState, ToolApprovalItem

    from toolcycle import ToolExecutionContext, ToolResult, ToolRuntime

__all__ = ["APPROVED", "FORMAT", "decide", "reject"]

FORMAT: Final = "openai-responses"
"""The provider format the SDK's calls and the tools offered to it are in."""

_APPROVALS = uuid.UUID("6f0c2b8e-4a1d-5c3e-9b7a-2d4e6f8a0c1e")
"""The namespace of the approval ids made from the SDK's call ids."""
APPROVED = ApprovalDecision.approve(
    reason="approved in the OpenAI Agents SDK run (RunState.approve)"
)
"""The runtime's decision for a call the SDK's run approved."""


async def reject(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    state: RunState[Any, Any],
    item: ToolApprovalItem,
    reason: str,
) -> ToolResult:
    """Reject an interrupted call in the run state and in the runtime, as one decision.

    The runtime claims the call in its approval ledger and traces the denial; the
    run state then rejects the item with the runtime's message, which the model
    reads when the run resumes. Once claimed, the same call approved in another
    copy of the run state is refused. ``state.reject`` alone also works, but the
    runtime then never hears of the call.

    Raises:
        ValueError: the item is not a call of one of the plan's tools.
        ToolApprovalError: the call was decided before (approved and run, say).
    """
    offered = offers(runtime, plan, FORMAT, strict=True)
    names = {definition["name"]: d.name for d, definition in offered if d is not None}
    name = names.get(item.tool_name or "")
    if name is None:
        raise ValueError(f"{item.tool_name!r} is not a toolcycle tool of plan {plan.plan_id!r}")
    decision = ApprovalDecision.deny(reason)
    result = await decide(
        runtime, plan, name, item.tool_name or "", item.call_id or "", item.arguments, decision
    )
    state.reject(item, rejection_message=result.error)
    return result


async def decide(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    name: str,
    offered_as: str,
    call_id: str,
    arguments: str | None,
    decision: ApprovalDecision,
) -> ToolResult:
    """Apply a decision of the SDK's run to one call, claimed in the runtime's ledger.

    Arguments that are not a JSON object cannot be fingerprinted: the runtime
    answers them as any call of the plan (a failed result), and nothing runs.
    """
    try:
        data = json.loads(arguments or "")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        call = {"type": "function_call", "call_id": call_id, "name": offered_as}
        return await runtime.acall({**call, "arguments": arguments}, plan)
    mark = fingerprint(name, data)
    pending = PendingApproval(
        approval_id=uuid.uuid5(_APPROVALS, f"{call_id}\n{mark}").hex,
        tool_name=name,
        arguments=data,
        fingerprint=mark,
        plan_id=plan.plan_id,
        call_id=call_id,
        call=ToolCall(id=call_id, name=offered_as, arguments=data, format="openai-responses"),
    )
    bound = decision.model_copy(update={"fingerprint": mark})
    return await runtime.aresume(pending, bound, plan)
