"""Calling the host's handlers for a server's requests, and checking what they return.

Both protocol eras ask the same three things of the host: an answer from a
person (``on_elicit``), a completion from its model (``on_sample``) and its
roots. `Handlers` calls the one the server asked for, off the MCP loop when it
is plain, and turns what it returns into the SDK's result, or refuses it: a
handler of the wrong type, roots that are not a list of `Root`, or an
elicitation answer that breaks the requested schema. How an answer then
reaches the server is each era's business (`_answering`, `_rounds`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import mcp_types

from toolcycle.sources.mcp._content import McpCallError
from toolcycle.sources.mcp._requests import (
    ElicitAnswer,
    Elicitation,
    RequestContext,
    SamplingAnswer,
    roots_problem,
)
from toolcycle.sources.mcp._translate import sampling_of
from toolcycle.validation import SchemaCompiler

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.sources.mcp._requests import McpRequests

__all__ = ["Handlers", "answer_problem"]


class Handlers:
    """One server's handlers, called for a request of a call and checked.

    Args:
        server: the server's name.
        requests: the handlers.
    """

    def __init__(self, server: str, requests: McpRequests) -> None:
        self.server = server
        self.requests = requests

    async def ask(self, question: Elicitation, call: RequestContext) -> ElicitAnswer:
        """The ``on_elicit`` answer, or a deferral when there is no handler.

        Raises:
            McpCallError: the handler returned something other than an `ElicitAnswer`.
        """
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

    def check(self, answer: ElicitAnswer, question: Elicitation) -> None:
        """Refuse a handler's answer that breaks the requested schema, in either era.

        Raises:
            McpCallError: the answer is refused; the message says why.
        """
        problem = answer_problem(answer, question)
        if problem is not None:
            raise McpCallError(
                f"the on_elicit answer to MCP server {self.server!r} was refused: {problem}",
                code=mcp_types.INVALID_PARAMS,
            )

    async def sample(
        self, params: mcp_types.CreateMessageRequestParams, call: RequestContext
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        """The ``on_sample`` answer as the SDK's result, or the error to send instead."""
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

    async def roots(self, call: RequestContext) -> mcp_types.ListRootsResult | mcp_types.ErrorData:
        """The client's roots as the SDK's result, or the error to send instead."""
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


def answer_problem(answer: ElicitAnswer, question: Elicitation) -> str | None:
    """What is wrong with an answer, or None: accepted content must satisfy the schema."""
    if answer.action not in ("accept", "decline", "cancel"):
        return f"{answer.action!r} is not an answer; accept, decline or cancel"
    if answer.action != "accept" or question.mode != "form":
        return None
    verdict = SchemaCompiler().compile(question.schema or {}).check(answer.content or {})
    if verdict.valid:
        return None
    return "the answer does not match the requested schema:\n" + verdict.summary()
