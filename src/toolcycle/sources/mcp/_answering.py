"""Answering a server's requests during a call, in either protocol era.

In the legacy era the server sends its own requests over the session while
the call runs; the `Answerer` gives the SDK session callbacks for them. In the
2026-07-28 era the call comes back as an ``InputRequiredResult``; `Answerer.run`
answers each input request with the same handlers and retries the call with
the answers and the server's ``request_state``, up to ``max_rounds`` times.

An elicitation that nobody answers now (no handler, or one that defers)
makes the call come back pending, with the server's question and everything
needed to continue in ``PendingApproval.request``; ``runtime.resume`` with the
person's answer (see `ElicitAnswer.decision`) runs the call again, and `run`
sends that answer, checked against the requested schema, with the saved state.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import mcp_types

from toolcycle import PendingApproval, ToolResult, current_resumption
from toolcycle.approvals import fingerprint
from toolcycle.sources.mcp._content import McpCallError
from toolcycle.sources.mcp._logs import ServerLog
from toolcycle.sources.mcp._pending import KIND, pending_request, read_pending
from toolcycle.sources.mcp._requests import (
    ElicitAnswer,
    Elicitation,
    RequestContext,
    SamplingAnswer,
    roots_problem,
)
from toolcycle.sources.mcp._translate import (
    elicit_result,
    elicitation_of,
    sampling_of,
)
from toolcycle.validation import SchemaCompiler

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mcp.client.session import ClientRequestContext

    from toolcycle import ToolExecutionContext
    from toolcycle.sources.mcp._requests import McpRequests

    Send = Callable[
        [dict[str, Any] | None, str | None],
        Awaitable[mcp_types.CallToolResult | mcp_types.InputRequiredResult],
    ]

__all__ = ["ELICITATION_PENDING", "Answerer"]

ELICITATION_PENDING = "ElicitationPending"
"""The ``error_type`` of a call waiting for a person to answer its server's question."""
# The call being sent and whose it is, read by `Answerer.serving` on the
# connection's loop: the send crosses loops through tasks, which copy it.
_SENDING: ContextVar[tuple[Answerer, RequestContext] | None] = ContextVar(
    "toolcycle_mcp_sending", default=None
)


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


class Answerer:
    """One server's handlers, and the calls in flight they may be asked about.

    Args:
        server: the server's name.
        requests: the handlers.
        protocol: the server's ``protocol`` option.
    """

    def __init__(self, server: str, requests: McpRequests, protocol: str = "legacy") -> None:
        self.server = server
        self.protocol = protocol
        self.requests = requests
        self.log = ServerLog(server, requests.on_log)
        self.logger = self.log.logger
        self.watching = any(
            h is not None for h in (requests.on_elicit, requests.on_sample, requests.roots)
        )
        """Whether calls must be remembered, so a legacy request can name its call."""
        self.active: dict[object, list[RequestContext]] = {}
        """By session: the calls in flight on it. Each session's list is only
        touched on that session's loop."""

    # -- the session's callbacks (legacy era; logging in both) --------------------------------

    def session_options(self) -> dict[str, Any]:
        """The `Session` options: callbacks only for handlers given, so capabilities are honest.

        Elicitation is declared in the 2026-07-28 era even without a handler:
        there a question nobody answers now defers the call, which is an answer.
        With ``protocol="auto"`` the era is not known yet, so the callback is
        given, and a fallback to the handshake leaves elicitation out of it.
        """
        options: dict[str, Any] = {"logging_callback": self.log}
        if self.protocol != "legacy":
            options["log_level"] = "info"  # the new era sends logs only to a client that asks
        if self.requests.on_elicit is not None or self.protocol != "legacy":
            options["elicitation_callback"] = self._legacy_elicit
            options["handshake_elicitation"] = self.requests.on_elicit is not None
        if self.requests.on_sample is not None:
            options["sampling_callback"] = self._legacy_sample
        if self.requests.roots is not None:
            options["list_roots_callback"] = self._legacy_roots
        return options

    @contextlib.contextmanager
    def serving(self, session: object) -> Iterator[None]:
        """While the call `run` is sending is in flight on ``session``."""
        sending = _SENDING.get()
        if sending is None or sending[0] is not self:
            yield
            return
        call = sending[1]
        calls = self.active.setdefault(session, [])
        calls.append(call)
        try:
            yield
        finally:
            calls.remove(call)
            if not calls:
                del self.active[session]

    def _owner(self, request: ClientRequestContext) -> RequestContext:
        # A legacy request names no call on the wire, only the session it came on:
        # its one call in flight, or, with several, none rather than a guess.
        calls = self.active.get(request.session, ())
        if len(calls) == 1:
            return replace(calls[0], era="legacy")
        return RequestContext(self.server)

    async def _legacy_elicit(
        self, request: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        question = elicitation_of(params)
        try:
            answer = await self._ask(question, self._owner(request))
        except Exception as exc:
            return self._failed("on_elicit", exc)
        if answer.action == "defer":
            # The legacy session cannot outlive the call: the server hears a cancel.
            self.logger.warning(
                "MCP server %r asked %r; deferring needs the 2026-07-28 era, so it was cancelled",
                self.server,
                question.message,
            )
            return mcp_types.ElicitResult(action="cancel")
        try:
            self._check(answer, question)
        except McpCallError as exc:
            return self._failed("on_elicit", exc)
        return elicit_result(answer, question)

    async def _legacy_sample(
        self, request: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        try:
            return await self._sample(params, self._owner(request))
        except Exception as exc:
            return self._failed("on_sample", exc)

    async def _legacy_roots(
        self, request: ClientRequestContext
    ) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        try:
            return await self._roots(self._owner(request))
        except Exception as exc:
            return self._failed("roots", exc)

    def _failed(self, handler: str, exc: Exception) -> mcp_types.ErrorData:
        """A handler raised: log it here, and tell the server only that it failed.

        Left to the SDK, the exception's text would go to the server as the
        answer, and it may hold what the host never meant to send (a path, a
        key, part of a person's answer). Our own refusals say nothing private.
        """
        if isinstance(exc, McpCallError):
            return mcp_types.ErrorData(code=exc.code, message=str(exc))
        self.logger.error(
            "the %s handler for MCP server %r raised", handler, self.server, exc_info=exc
        )
        return mcp_types.ErrorData(
            code=mcp_types.INTERNAL_ERROR,
            message=f"the client's {handler} handler failed ({type(exc).__name__}); "
            "the client logged why",
        )

    # -- one call, in either era ------------------------------------------------------------

    async def run(
        self,
        tool_name: str,
        remote: str,
        params: dict[str, Any],
        ctx: ToolExecutionContext,
        send: Send,
        first: mcp_types.CallToolResult | mcp_types.InputRequiredResult | None = None,
    ) -> mcp_types.CallToolResult | ToolResult:
        """Send the call and answer what it asks until it ends, is deferred or runs out of rounds.

        ``first`` is the answer to the call already sent with no answers, which
        its caller may do itself when nothing watches and nothing is resumed.

        Raises:
            McpCallError: the server asked for input past ``max_rounds``, or for
                something no handler answers.
        """
        if first is not None or (not self.watching and current_resumption() is None):
            # Nothing to answer for yet: no context made (and no call token) unless asked.
            if first is None:
                first = await send(None, None)
            # By exact type first: a pydantic model class answers isinstance slowly.
            if type(first) is mcp_types.CallToolResult or not isinstance(
                first, mcp_types.InputRequiredResult
            ):
                return first
            return await self._run(self._context(tool_name, ctx), remote, params, send, first)
        call = self._context(tool_name, ctx)
        sending = _SENDING.set((self, call) if self.watching else None)
        try:
            return await self._run(call, remote, params, send)
        finally:
            _SENDING.reset(sending)

    def _context(self, tool_name: str, ctx: ToolExecutionContext) -> RequestContext:
        return RequestContext(
            self.server, tool_name, ctx.call_id, ctx, ctx.call_token, era="2026-07-28"
        )

    async def _run(
        self,
        call: RequestContext,
        remote: str,
        params: dict[str, Any],
        send: Send,
        first: mcp_types.InputRequiredResult | None = None,
    ) -> mcp_types.CallToolResult | ToolResult:
        """The call's rounds, from ``first`` if it was sent already."""
        if first is not None:
            return await self._rounds(call, remote, params, send, first)
        answered: dict[str, Any] = {}
        state: str | None = None
        resumed = current_resumption()
        if resumed is not None and resumed.request.get("kind") == KIND:
            request = resumed.request
            plan_id = call.plan.plan_id if call.plan is not None else ""
            record = read_pending(request, self.server, call.tool_name or remote, plan_id)
            question = record.question
            reply = resumed.reply if isinstance(resumed.reply, dict) else {}
            answer = ElicitAnswer(reply.get("action", "cancel"), reply.get("content"))
            problem = _problem(answer, question)
            if problem is not None:
                # The person may answer again: a new pending call with the same question.
                return self._pending(call, remote, params, request, problem)
            answered = record.answered
            answered[record.key] = elicit_result(answer, question).model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
            state = record.state
        return await self._rounds(call, remote, params, send, await send(answered or None, state))

    async def _rounds(
        self,
        call: RequestContext,
        remote: str,
        params: dict[str, Any],
        send: Send,
        result: mcp_types.CallToolResult | mcp_types.InputRequiredResult,
    ) -> mcp_types.CallToolResult | ToolResult:
        rounds = 0
        while isinstance(result, mcp_types.InputRequiredResult):
            rounds += 1
            if rounds > self.requests.max_rounds:
                raise McpCallError(
                    f"MCP server {self.server!r} asked for input more than "
                    f"{self.requests.max_rounds} times in one call of {remote!r}; raise "
                    "max_rounds if that is expected",
                    code=mcp_types.INTERNAL_ERROR,
                )
            asked = result.input_requests or {}
            _report(call, rounds, asked)
            try:
                answered = await self._answer_all(asked, call)
            except _Deferred as deferred:
                request = pending_request(
                    self.server,
                    remote,
                    deferred.key,
                    deferred.question,
                    deferred.answered,
                    result.request_state,
                )
                return self._pending(call, remote, params, request, deferred.reason)
            result = await send(answered or None, result.request_state)
        return result

    async def _answer_all(
        self, asked: dict[str, mcp_types.InputRequest], call: RequestContext
    ) -> dict[str, Any]:
        """Every input request's answer as wire JSON, in order; raises `_Deferred` for a person."""
        answered: dict[str, Any] = {}
        for key, request in asked.items():
            if isinstance(request, mcp_types.ElicitRequest):
                question = elicitation_of(request.params)
                answer = await self._ask(question, call)
                if answer.action == "defer":
                    raise _Deferred(key, question, answer.reason, answered)
                self._check(answer, question)
                response: Any = elicit_result(answer, question)
            elif isinstance(request, mcp_types.CreateMessageRequest):
                response = await self._sample(request.params, call)
            else:
                response = await self._roots(call)
            if isinstance(response, mcp_types.ErrorData):
                raise McpCallError(response.message, code=response.code)
            answered[key] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return answered

    def _check(self, answer: ElicitAnswer, question: Elicitation) -> None:
        """Refuse a handler's answer that breaks the requested schema, in either era.

        Raises:
            McpCallError: the answer is refused; the message says why.
        """
        problem = _problem(answer, question)
        if problem is not None:
            raise McpCallError(
                f"the on_elicit answer to MCP server {self.server!r} was refused: {problem}",
                code=mcp_types.INVALID_PARAMS,
            )

    def _pending(
        self,
        call: RequestContext,
        remote: str,
        params: dict[str, Any],
        request: dict[str, Any],
        note: str | None,
    ) -> ToolResult:
        name = call.tool_name or remote
        message = request["question"]["message"]
        text = (
            f"MCP server {self.server!r} asks a person: {message!r}"
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
        return ToolResult(
            success=False, error=text, error_type=ELICITATION_PENDING, pending=pending
        )

    # -- the handlers ---------------------------------------------------------------------

    async def _ask(self, question: Elicitation, call: RequestContext) -> ElicitAnswer:
        handler = self.requests.on_elicit
        if handler is None:
            return ElicitAnswer.defer("no on_elicit handler")
        answer = await _invoke(handler, question, call)
        if not isinstance(answer, ElicitAnswer):
            raise McpCallError(
                f"the on_elicit handler returned {type(answer).__name__}, not an ElicitAnswer",
                code=mcp_types.INTERNAL_ERROR,
            )
        return answer

    async def _sample(
        self, params: mcp_types.CreateMessageRequestParams, call: RequestContext
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        handler = self.requests.on_sample
        if handler is None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message=f"sampling was declined: the client of MCP server {self.server!r} has "
                "no model for it (the host gave no on_sample handler)",
            )
        answer = await _invoke(handler, sampling_of(params), call)
        if not isinstance(answer, SamplingAnswer):
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR,
                message=f"the client's on_sample handler returned {type(answer).__name__}, "
                "not a SamplingAnswer",
            )
        return mcp_types.CreateMessageResult(
            role=answer.role,
            content=mcp_types.TextContent(type="text", text=answer.text),
            model=answer.model,
            stop_reason=answer.stop_reason,
        )

    async def _roots(self, call: RequestContext) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        source = self.requests.roots
        listed: Any = await _invoke(source, call) if callable(source) else source
        if listed is None:
            listed = ()
        elif isinstance(listed, Iterator):
            listed = list(listed)  # read once here, so checking it does not use it up
        problem = roots_problem(listed)
        if problem is not None:
            # Silently listing fewer roots would mislead the server; say what was wrong.
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR,
                message=f"the client's roots function for MCP server {self.server!r} must "
                f"return a list of Root: {problem}",
            )
        roots = [mcp_types.Root(uri=root.uri, name=root.name) for root in listed]
        return mcp_types.ListRootsResult(roots=roots)


async def _invoke(handler: Callable[..., Any], *args: Any) -> Any:
    """Call a plain handler on a worker thread (never on the MCP loop) or await an async one."""
    if inspect.iscoroutinefunction(handler):
        return await handler(*args)
    result = await asyncio.to_thread(handler, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _report(call: RequestContext, round_: int, asked: dict[str, mcp_types.InputRequest]) -> None:
    """Each round is a progress report: counted in the trace, restarting an idle timeout."""
    if call.plan is None:  # pragma: no cover - run() always has a plan
        return
    kinds = ", ".join(sorted({request.method for request in asked.values()})) or "state only"
    call.plan.progress_reporter()(round_, None, f"input round {round_}: {kinds}")


def _problem(answer: ElicitAnswer, question: Elicitation) -> str | None:
    """What is wrong with an answer, or None: accepted content must satisfy the schema."""
    if answer.action not in ("accept", "decline", "cancel"):
        return f"{answer.action!r} is not an answer; accept, decline or cancel"
    if answer.action != "accept" or question.mode != "form":
        return None
    verdict = SchemaCompiler().compile(question.schema or {}).check(answer.content or {})
    if verdict.valid:
        return None
    return "the answer does not match the requested schema:\n" + verdict.summary()
