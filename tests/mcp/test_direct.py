"""In-process servers driven as the SDK's Client(server) does: direct dispatch, 2026-07-28."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
import pytest
from mcp.server.lowlevel.server import Server

from toolcycle import NullTracer, ToolCancelledError, ToolRuntime
from toolcycle.sources.mcp import McpServer

from .conftest import wait_for
from .meta_server import build


def _era(server: McpServer) -> Any:
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            output = runtime.execute("era", {}, ctx).output
    assert isinstance(output, dict)
    return output["result"]


def test_an_in_process_server_speaks_the_2026_protocol_by_default() -> None:
    """mode='auto' negotiates 2026-07-28 through server/discover, with no initialize."""
    assert _era(McpServer.in_process(build())) == "2026-07-28"


def test_legacy_mode_serves_the_handshake_era_over_json_rpc() -> None:
    """mode='legacy' keeps the in-memory JSON-RPC transport and the initialize handshake."""
    era = _era(McpServer.in_process(build(), mode="legacy"))
    assert era != "2026-07-28" and era.startswith("20")


def test_an_unknown_mode_is_refused() -> None:
    """in_process names the modes it knows."""
    with pytest.raises(ValueError, match="'auto' or 'legacy'"):
        McpServer.in_process(build(), mode="2025")  # type: ignore[arg-type]


def test_legacy_protocol_with_auto_mode_is_refused_as_needing_the_handshake() -> None:
    """mode='auto' does no initialize handshake, so protocol='legacy' cannot go with it."""
    with pytest.raises(ValueError) as caught:
        McpServer.in_process(build(), mode="auto", protocol="legacy")
    assert str(caught.value) == (
        "protocol='legacy' needs the initialize handshake, which an in-process "
        "server in mode='auto' does not do: pass mode='legacy' too, or drop protocol"
    )


def test_an_object_that_is_not_an_sdk_server_fails_registration_saying_so() -> None:
    """Something other than MCPServer or Server is named in the error."""
    with ToolRuntime(tracer=NullTracer()) as runtime, pytest.raises(Exception) as caught:
        runtime.register_source(McpServer.in_process(object(), name="odd"))  # type: ignore[arg-type]
    assert "needs an SDK MCPServer or low-level Server, got object" in str(caught.value)


def test_a_list_change_arrives_through_the_subscription() -> None:
    """ctx.notify_tools_changed() on the server marks the source stale via subscriptions/listen."""
    server = McpServer.in_process(build())
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            assert runtime.execute("grow", {}, ctx).output == {"result": "grown"}
            assert wait_for(lambda: server.stale)


def test_a_server_without_subscriptions_still_serves_calls(caplog) -> None:
    """A server that serves no subscriptions/listen answers calls; the miss is logged at debug."""
    caplog.set_level(logging.DEBUG, logger="toolcycle.sources.mcp")
    server = McpServer.in_process(build(subscriptions=False))
    assert _era(server) == "2026-07-28"
    assert any("no tool-list subscription" in r.getMessage() for r in caplog.records)


def test_a_low_level_server_is_driven_directly_too() -> None:
    """A low-level Server gets the same direct path as an MCPServer."""
    low: Server[Any] = build()._lowlevel_server
    assert _era(McpServer.in_process(low, name="low")) == "2026-07-28"


def test_cancelling_a_call_cancels_the_servers_handler_task() -> None:
    """Cancellation is structural: the handler sees CancelledError and the call ends cancelled."""
    events: dict[str, Any] = {"held": anyio.Event()}

    async def scenario() -> None:
        server = McpServer.in_process(build(events), same_loop=True)
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register_source(server)
            async with runtime.aplan() as ctx:
                call = asyncio.ensure_future(runtime.aexecute("hold", {}, ctx))
                with anyio.fail_after(10):
                    await events["held"].wait()
                ctx.cancellation_token.cancel("enough")
                with anyio.fail_after(10), pytest.raises(ToolCancelledError):
                    await call
        assert events.get("cancelled") is True

    asyncio.run(scenario())


async def test_a_list_change_from_an_async_call_arrives_through_the_subscription() -> None:
    """An aexecute whose tool changes the list marks the source stale, as a sync call does.

    The server's handler publishes on its subscription bus, which lives on the loop
    the connection was opened on; a handler run on another thread's loop would
    wake no subscriber there.
    """
    server = McpServer.in_process(build())
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        async with runtime.aplan() as ctx:
            assert (await runtime.aexecute("grow", {}, ctx)).output == {"result": "grown"}
            assert await asyncio.to_thread(wait_for, lambda: server.stale)


async def test_a_list_change_from_a_call_handed_over_from_another_loop_arrives() -> None:
    """A call from another loop runs on the plan's loop, so its list change still wakes the listener."""
    server = McpServer.in_process(build())
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        async with runtime.aplan() as ctx:
            assert (await runtime.aexecute("era", {}, ctx)).success  # the plan lives here now
            other = asyncio.to_thread(asyncio.run, runtime.aexecute("grow", {}, ctx))
            assert (await asyncio.wait_for(other, 10)).output == {"result": "grown"}
            assert await asyncio.to_thread(wait_for, lambda: server.stale)


async def test_a_list_change_from_an_async_call_of_a_sync_first_plan_arrives() -> None:
    """A plan activated from sync code lives on the MCP thread; its async calls hop there."""
    server = McpServer.in_process(build())
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            assert (await asyncio.to_thread(runtime.execute, "era", {}, ctx)).success
            assert (await runtime.aexecute("grow", {}, ctx)).output == {"result": "grown"}
            assert await asyncio.to_thread(wait_for, lambda: server.stale)
