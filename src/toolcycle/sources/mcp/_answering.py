"""Answering a server's requests during a call, in either protocol era.

In the legacy era the server sends its own requests over the session while
the call runs; the `Answerer` gives the SDK session callbacks for them, and
finds the call each one belongs to. In the 2026-07-28 era the call comes back
as an ``InputRequiredResult``; `Answerer.run` hands it to the input rounds
(`_rounds`), which answer with the same `Handlers` and may defer the call to a
person.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import mcp_types

from toolcycle import current_resumption
from toolcycle.sources.mcp._content import McpCallError
from toolcycle.sources.mcp._handlers import Handlers
from toolcycle.sources.mcp._logs import ServerLog
from toolcycle.sources.mcp._requests import RequestContext
from toolcycle.sources.mcp._rounds import run_rounds
from toolcycle.sources.mcp._translate import elicit_result, elicitation_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mcp.client.session import ClientRequestContext

    from toolcycle import ToolExecutionContext, ToolResult
    from toolcycle.sources.mcp._requests import McpRequests
    from toolcycle.sources.mcp._rounds import Send

__all__ = ["Answerer"]

# The call being sent and whose it is, read by `Answerer.serving` on the
# connection's loop: the send crosses loops through tasks, which copy it.
_SENDING: ContextVar[tuple[Answerer, RequestContext] | None] = ContextVar(
    "toolcycle_mcp_sending", default=None
)


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
        self.handlers = Handlers(server, requests)
        """Calls the handlers and checks their answers, for both eras."""
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
            answer = await self.handlers.ask(question, self._owner(request))
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
            self.handlers.check(answer, question)
        except McpCallError as exc:
            return self._failed("on_elicit", exc)
        return elicit_result(answer, question)

    async def _legacy_sample(
        self, request: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        try:
            return await self.handlers.sample(params, self._owner(request))
        except Exception as exc:
            return self._failed("on_sample", exc)

    async def _legacy_roots(
        self, request: ClientRequestContext
    ) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        try:
            return await self.handlers.roots(self._owner(request))
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
            call = self._context(tool_name, ctx)
            return await run_rounds(self.handlers, call, remote, params, send, first)
        call = self._context(tool_name, ctx)
        sending = _SENDING.set((self, call) if self.watching else None)
        try:
            return await run_rounds(self.handlers, call, remote, params, send)
        finally:
            _SENDING.reset(sending)

    def _context(self, tool_name: str, ctx: ToolExecutionContext) -> RequestContext:
        return RequestContext(
            self.server, tool_name, ctx.call_id, ctx, ctx.call_token, era="2026-07-28"
        )
