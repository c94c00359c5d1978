"""Which call a legacy-era server request belongs to, when calls overlap.

In the handshake era a server's elicitation names no call on the wire, so the
handler's `RequestContext` comes from the connection it arrived on. Both calls
here elicit only once both are in flight (a barrier inside the server's tool).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.mcp import ElicitAnswer, Elicitation, McpServer, RequestContext

WAIT = 10.0


class Seats(BaseModel):
    """The answer the booking tool asks for."""

    seats: int


def _theatre(both_in: threading.Barrier) -> MCPServer:
    server = MCPServer("theatre")

    @server.tool()
    async def book(ctx: Context, user: str) -> str:
        """Wait until the other call is in flight too, then ask on behalf of ``user``."""
        await anyio.to_thread.run_sync(both_in.wait, WAIT)
        answer = await ctx.elicit(f"seats for {user}", Seats)
        return answer.action

    return server


def _overlapping_calls(scope: str) -> tuple[dict[str, RequestContext], dict[str, Any]]:
    """Alice and Bob, each in a plan of their own, book at once; what each question saw."""
    seen: dict[str, RequestContext] = {}
    results: dict[str, Any] = {}

    def answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
        seen[question.message.removeprefix("seats for ")] = call
        return ElicitAnswer.accept({"seats": 2})

    source = McpServer.in_process(
        _theatre(threading.Barrier(2)), protocol="legacy", scope=scope, on_elicit=answer
    )
    with ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0) as runtime:
        runtime.register_source(source)

        def run(user: str) -> None:
            with runtime.plan(metadata={"user": user}) as ctx:
                results[user] = runtime.execute("book", {"user": user}, ctx, timeout=WAIT)

        threads = [threading.Thread(target=run, args=(user,)) for user in ("alice", "bob")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT * 2)
        assert not any(thread.is_alive() for thread in threads)
    return seen, results


def test_each_plans_handler_sees_its_own_call_when_calls_overlap() -> None:
    """Each plan has its own connection, so each question names its own plan and call."""
    seen, results = _overlapping_calls("plan")
    assert {user: result.output for user, result in results.items()} == {
        "alice": {"result": "accept"},
        "bob": {"result": "accept"},
    }
    for user in ("alice", "bob"):
        call = seen[user]
        assert call.plan is not None and call.plan.metadata["user"] == user
        assert call.call_id == results[user].trace.call_id
        assert call.tool_name == "book" and call.token is not None and call.era == "legacy"


def test_a_request_on_a_shared_connection_with_two_calls_in_flight_names_no_call() -> None:
    """With no way to tell the two calls apart, the handler gets neither rather than a guess."""
    seen, results = _overlapping_calls("runtime")
    assert all(result.success for result in results.values())
    for call in seen.values():
        assert (call.plan, call.call_id, call.tool_name, call.token) == (None, None, None, None)
        assert call.server == "theatre" and call.era == "legacy"
