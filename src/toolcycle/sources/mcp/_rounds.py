"""The input rounds of one call in the 2026-07-28 era, and the call a person must answer.

In that era a call the server needs something for comes back as an
``InputRequiredResult``; `run_rounds` answers each of its input requests with
the server's `Handlers` and sends the call again with the answers and the
server's ``request_state``, up to ``max_rounds`` times.

An elicitation that nobody answers now (no handler, or one that defers)
makes the call come back pending, with the server's question and everything
needed to continue in ``PendingApproval.request``; ``runtime.resume`` with the
person's answer (see `ElicitAnswer.decision`) runs the call again, and
`run_rounds` sends that answer, checked against the requested schema, with
the saved state.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import mcp_types

from toolcycle import PendingApproval, ToolResult, current_resumption
from toolcycle.approvals import fingerprint
from toolcycle.sources.mcp._content import McpCallError
from toolcycle.sources.mcp._handlers import answer_problem
from toolcycle.sources.mcp._pending import KIND, pending_request, read_pending
from toolcycle.sources.mcp._requests import ElicitAnswer
from toolcycle.sources.mcp._translate import elicit_result, elicitation_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.sources.mcp._handlers import Handlers
    from toolcycle.sources.mcp._requests import Elicitation, RequestContext

    Send = Callable[
        [dict[str, Any] | None, str | None],
        Awaitable[mcp_types.CallToolResult | mcp_types.InputRequiredResult],
    ]

__all__ = ["ELICITATION_PENDING", "answer_all", "run_rounds"]

ELICITATION_PENDING = "ElicitationPending"
"""The ``error_type`` of a call waiting for a person to answer its server's question."""


class _Deferred(Exception):
    """An elicitation nobody answers now: the call comes back pending."""

    def __init__(
        self, key: str, question: Elicitation, reason: str | None, answered: dict[str, Any]
    ) -> None:
        super().__init__(question.message)
        self.key = key
        self.question = question
        self.reason = reason
        self.answered = answered
        """The answers given earlier in the same round, sent with the person's answer."""


async def run_rounds(
    handlers: Handlers,
    call: RequestContext,
    remote: str,
    params: dict[str, Any],
    send: Send,
    first: mcp_types.InputRequiredResult | None = None,
) -> mcp_types.CallToolResult | ToolResult:
    """The call's rounds, from ``first`` if it was sent already.

    Raises:
        McpCallError: the server asked for input past ``max_rounds``, or for
            something no handler answers.
    """
    if first is not None:
        return await _rounds(handlers, call, remote, params, send, first)
    answered: dict[str, Any] = {}
    state: str | None = None
    resumed = current_resumption()
    if resumed is not None and resumed.request.get("kind") == KIND:
        request = resumed.request
        plan_id = call.plan.plan_id if call.plan is not None else ""
        record = read_pending(request, handlers.server, call.tool_name or remote, plan_id)
        question = record.question
        reply = resumed.reply if isinstance(resumed.reply, dict) else {}
        answer = ElicitAnswer(reply.get("action", "cancel"), reply.get("content"))
        problem = answer_problem(answer, question)
        if problem is not None:
            # The person may answer again: a new pending call with the same question.
            return _pending(handlers.server, call, remote, params, request, problem)
        answered = record.answered
        answered[record.key] = elicit_result(answer, question).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        state = record.state
    return await _rounds(handlers, call, remote, params, send, await send(answered or None, state))


async def _rounds(
    handlers: Handlers,
    call: RequestContext,
    remote: str,
    params: dict[str, Any],
    send: Send,
    result: mcp_types.CallToolResult | mcp_types.InputRequiredResult,
) -> mcp_types.CallToolResult | ToolResult:
    rounds = 0
    while isinstance(result, mcp_types.InputRequiredResult):
        rounds += 1
        if rounds > handlers.requests.max_rounds:
            raise McpCallError(
                f"MCP server {handlers.server!r} asked for input more than "
                f"{handlers.requests.max_rounds} times in one call of {remote!r}; raise "
                "max_rounds if that is expected",
                code=mcp_types.INTERNAL_ERROR,
            )
        asked = result.input_requests or {}
        _report(call, rounds, asked)
        try:
            answered = await answer_all(handlers, asked, call)
        except _Deferred as deferred:
            request = pending_request(
                handlers.server,
                remote,
                deferred.key,
                deferred.question,
                deferred.answered,
                result.request_state,
            )
            return _pending(handlers.server, call, remote, params, request, deferred.reason)
        result = await send(answered or None, result.request_state)
    return result


async def answer_all(
    handlers: Handlers, asked: dict[str, mcp_types.InputRequest], call: RequestContext
) -> dict[str, Any]:
    """Every input request's answer as wire JSON, in order; raises `_Deferred` for a person.

    Raises:
        McpCallError: a handler failed or its answer was refused.
    """
    answered: dict[str, Any] = {}
    for key, request in asked.items():
        if isinstance(request, mcp_types.ElicitRequest):
            question = elicitation_of(request.params)
            answer = await handlers.ask(question, call)
            if answer.action == "defer":
                raise _Deferred(key, question, answer.reason, answered)
            handlers.check(answer, question)
            response: Any = elicit_result(answer, question)
        elif isinstance(request, mcp_types.CreateMessageRequest):
            response = await handlers.sample(request.params, call)
        else:
            response = await handlers.roots(call)
        if isinstance(response, mcp_types.ErrorData):
            raise McpCallError(response.message, code=response.code)
        answered[key] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answered


def _pending(
    server: str,
    call: RequestContext,
    remote: str,
    params: dict[str, Any],
    request: dict[str, Any],
    note: str | None,
) -> ToolResult:
    name = call.tool_name or remote
    message = request["question"]["message"]
    text = (
        f"MCP server {server!r} asks a person: {message!r}"
        + (f" ({note})" if note else "")
        + "; resume the call with the answer"
    )
    plan_id = call.plan.plan_id if call.plan is not None else ""
    pending = PendingApproval(
        approval_id=uuid.uuid4().hex,
        tool_name=name,
        arguments=params,
        fingerprint=fingerprint(name, params),
        plan_id=plan_id,
        call_id=call.call_id or "",
        reason=message,
        request=request,
    )
    return ToolResult(success=False, error=text, error_type=ELICITATION_PENDING, pending=pending)


def _report(call: RequestContext, round_: int, asked: dict[str, mcp_types.InputRequest]) -> None:
    """Each round is a progress report: counted in the trace, restarting an idle timeout."""
    if call.plan is None:  # pragma: no cover - a call here always has a plan
        return
    kinds = ", ".join(sorted({request.method for request in asked.values()})) or "state only"
    call.plan.progress_reporter()(round_, None, f"input round {round_}: {kinds}")
