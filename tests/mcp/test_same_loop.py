"""In-process servers: a plan first activated from a loop keeps its connection on that loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from toolcycle import CancellationToken, ToolCancelledError, ToolRuntime
from toolcycle.sources.mcp import McpServer

from .conftest import in_thread, register

WAIT = 10.0


def _where() -> MCPServer:
    """A server whose one tool says which thread runs it."""
    server = MCPServer("where")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def thread() -> str:
        """The name of the thread running this call (async: sync tools run on a worker)."""
        return threading.current_thread().name

    return server


async def _settled(predicate: Callable[[], bool]) -> bool:
    """Let the loop run until ``predicate`` holds (bounded by WAIT seconds)."""
    async with asyncio.timeout(WAIT):
        while not predicate():
            await asyncio.sleep(0)
    return True


def test_same_loop_needs_plan_scope() -> None:
    """A runtime-scope connection outlives any caller's loop, so the pair is refused."""
    with pytest.raises(ValueError, match="scope='plan'"):
        McpServer.in_process(_where(), same_loop=True, scope="runtime")


async def test_calls_run_on_the_callers_loop_by_default_and_on_the_mcp_thread_when_asked(
    runtime: ToolRuntime,
) -> None:
    """By default the server's code runs on the awaiting loop; same_loop=False keeps it off it."""
    runtime.register_source(McpServer.in_process(_where(), prefix="same."))
    runtime.register_source(McpServer.in_process(_where(), same_loop=False, prefix="hop."))
    async with runtime.aplan() as ctx:
        same = await runtime.aexecute("same.thread", {}, ctx)
        hop = await runtime.aexecute("hop.thread", {}, ctx)
    assert same.output == {"result": threading.current_thread().name}
    assert hop.output == {"result": "toolcycle-mcp"}


def test_a_runtime_scope_connection_stays_on_the_mcp_thread() -> None:
    """A runtime-wide connection outlives any caller's loop, so by default it lives on MCP's."""

    async def scenario(runtime: ToolRuntime) -> Any:
        async with runtime.aplan() as ctx:
            return (await runtime.aexecute("thread", {}, ctx)).output

    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.in_process(_where(), scope="runtime"))
        assert in_thread(lambda: scenario(runtime)) == {"result": "toolcycle-mcp"}


async def test_sync_calls_and_other_loops_are_handed_to_the_plans_loop(
    runtime: ToolRuntime,
) -> None:
    """Calls from a sync thread and from another loop run on the loop the connection lives on."""
    runtime.register_source(McpServer.in_process(_where()))
    here = {"result": threading.current_thread().name}
    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("thread", {}, ctx)).output == here
        from_sync = await asyncio.wait_for(
            asyncio.to_thread(runtime.execute, "thread", {}, ctx), WAIT
        )
        from_other = await asyncio.wait_for(
            asyncio.to_thread(asyncio.run, runtime.aexecute("thread", {}, ctx)), WAIT
        )
        assert (await runtime.aexecute("thread", {}, ctx)).output == here
    assert from_sync.output == from_other.output == here


async def test_a_sync_call_on_the_plans_own_loop_thread_is_refused_not_deadlocked(
    runtime: ToolRuntime,
) -> None:
    """A blocking execute on the thread of the connection's loop fails at once, saying why."""
    runtime.register_source(McpServer.in_process(_where()))
    async with runtime.aplan() as ctx:
        await runtime.aexecute("thread", {}, ctx)
        refused = runtime.execute("thread", {}, ctx)  # blocking, on this loop's own thread
        assert (await runtime.aexecute("thread", {}, ctx)).success  # still fine here
    assert not refused.success
    assert refused.error is not None and "wait on itself" in refused.error
    assert "aexecute" in refused.error


def test_a_call_while_the_plans_loop_is_not_running_fails_saying_so(runtime: ToolRuntime) -> None:
    """A loop run now and then: a sync call between its runs fails instead of waiting for it."""
    runtime.register_source(McpServer.in_process(_where()))
    loop = asyncio.new_event_loop()
    try:
        ctx = runtime.new_context("now-and-then")
        assert loop.run_until_complete(runtime.aexecute("thread", {}, ctx)).success
        idle = runtime.execute("thread", {}, ctx)  # the loop is not running now
        again = loop.run_until_complete(runtime.aexecute("thread", {}, ctx))
        loop.run_until_complete(runtime.aend_plan(ctx))
    finally:
        loop.close()
    assert not idle.success
    assert idle.error is not None and "not running" in idle.error
    assert again.success


async def test_a_plan_activated_from_sync_code_stays_on_the_mcp_thread(
    runtime: ToolRuntime,
) -> None:
    """Sync activation cannot lend a loop, so the plan keeps today's MCP thread."""
    runtime.register_source(McpServer.in_process(_where()))
    with runtime.plan() as ctx:
        first = await asyncio.wait_for(asyncio.to_thread(runtime.execute, "thread", {}, ctx), WAIT)
        later = await runtime.aexecute("thread", {}, ctx)
    assert first.output == later.output == {"result": "toolcycle-mcp"}


def test_ending_the_plan_on_its_loop_closes_the_connection_there(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], sessions: dict[str, int]
) -> None:
    """The end of an async plan closes the session before it returns, on the caller's loop."""
    register(runtime, in_process())
    sessions.clear()  # discovery's own connection

    async def scenario() -> dict[str, int]:
        async with runtime.aplan() as ctx:
            await runtime.aexecute("add", {"a": 1, "b": 2}, ctx)
            opened = dict(sessions)
        return opened

    assert in_thread(scenario) == {"opened": 1}
    assert sessions == {"opened": 1, "closed": 1}


def test_a_sync_plan_end_inside_the_loop_does_not_wait_on_that_loop(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], sessions: dict[str, int]
) -> None:
    """A blocking plan end on the loop's own thread returns; the loop closes the session next."""
    register(runtime, in_process())
    sessions.clear()  # discovery's own connection

    async def scenario() -> bool:
        with runtime.plan() as ctx:
            await runtime.aexecute("add", {"a": 1, "b": 2}, ctx)
        # The plan has ended; the session closes once this loop runs again.
        return await _settled(lambda: sessions.get("closed") == 1)

    assert in_thread(scenario)
    assert sessions == {"opened": 1, "closed": 1}


def test_a_plan_that_outlives_its_loop_reconnects_on_the_next_one(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], sessions: dict[str, int]
) -> None:
    """The closing loop ends the connection; the next loop's call opens a fresh one there."""
    register(runtime, in_process())
    sessions.clear()  # discovery's own connection
    ctx = runtime.new_context("outlives")

    async def call(a: int) -> Any:
        return (await runtime.aexecute("add", {"a": a, "b": 1}, ctx)).output

    assert in_thread(lambda: call(1)) == {"sum": 2}
    assert sessions == {"opened": 1, "closed": 1}  # asyncio.run cancelled its task
    assert in_thread(lambda: call(2)) == {"sum": 3}
    runtime.end_plan(ctx)
    assert sessions == {"opened": 2, "closed": 2}


async def test_parallel_calls_on_the_plans_loop_each_get_their_own_result(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """Fifty calls at once on one connection on this loop: each answer is its own."""
    register(runtime, in_process())
    async with runtime.aplan() as ctx:
        results = await asyncio.gather(
            *(runtime.aexecute("add", {"a": i, "b": 1000}, ctx) for i in range(50))
        )
    assert [r.output for r in results] == [{"sum": i + 1000} for i in range(50)]


async def test_cancelling_a_call_on_the_plans_loop_cancels_it_on_the_server(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], tmp_path: Path
) -> None:
    """The plan's token stops the call at once, and the server's handler is cancelled."""
    register(runtime, in_process())
    marker = tmp_path / "cancelled"
    token = CancellationToken()
    started = asyncio.Event()
    async with runtime.aplan(cancellation_token=token) as ctx:
        ctx.on_progress = lambda event: started.set()
        call = asyncio.ensure_future(
            runtime.aexecute("slow", {"seconds": 60, "marker": str(marker)}, ctx)
        )
        await asyncio.wait_for(started.wait(), WAIT)
        token.cancel("enough")
        with pytest.raises(ToolCancelledError, match="enough"):
            await asyncio.wait_for(call, 2)
        assert await _settled(marker.exists)


async def test_a_call_on_the_plans_loop_over_its_timeout_is_timed_out(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """The per-call timeout cancels the request and the trace says timed_out."""
    register(runtime, in_process())
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("slow", {"seconds": 60}, ctx, timeout=0.2)
        after = await runtime.aexecute("add", {"a": 2, "b": 2}, ctx)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert after.output == {"sum": 4}


def test_a_reconnection_while_the_plans_loop_is_not_running_fails_saying_so(
    runtime: ToolRuntime,
) -> None:
    """A broken connection is not reopened on a loop nobody runs; the call fails at once."""
    source = McpServer.in_process(_where())
    runtime.register_source(source)
    loop = asyncio.new_event_loop()
    try:
        ctx = runtime.new_context("broken")
        assert loop.run_until_complete(runtime.aexecute("thread", {}, ctx)).success
        source._sharing._shares[ctx.plan_id].connection.broken = True  # as a lost session marks it
        idle = runtime.execute("thread", {}, ctx)
        loop.run_until_complete(runtime.aend_plan(ctx))
    finally:
        loop.close()
    assert not idle.success
    assert idle.error is not None and "not running" in idle.error


async def test_a_broken_connection_is_reopened_on_the_plans_loop_for_a_caller_elsewhere(
    runtime: ToolRuntime,
) -> None:
    """A call from another loop after a fault opens the fresh connection where the plan lives."""
    source = McpServer.in_process(_where())
    runtime.register_source(source)
    here = {"result": threading.current_thread().name}
    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("thread", {}, ctx)).output == here
        broken = source._sharing._shares[ctx.plan_id].connection
        broken.broken = True  # as a lost session marks it
        other = asyncio.to_thread(asyncio.run, runtime.aexecute("thread", {}, ctx))
        assert (await asyncio.wait_for(other, WAIT)).output == here
        fresh = source._sharing._shares[ctx.plan_id].connection
        assert fresh is not broken and fresh.loop is asyncio.get_running_loop()
        await broken.close()


def test_ending_a_plan_after_its_loop_closed_completes(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], sessions: dict[str, int]
) -> None:
    """asyncio.run closed the connection with its loop; end_plan elsewhere neither hangs nor raises."""
    register(runtime, in_process())
    sessions.clear()  # discovery's own connection
    ctx = runtime.new_context("orphan")

    async def call() -> Any:
        return (await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)).output

    assert in_thread(call) == {"sum": 2}
    runtime.end_plan(ctx)
    assert sessions == {"opened": 1, "closed": 1}


def test_ending_a_plan_whose_loop_was_closed_under_its_connection_completes(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """A loop closed with the connection's task still parked: the plan end leaves it and returns."""
    register(runtime, in_process())
    ctx = runtime.new_context("abandoned")
    loop = asyncio.new_event_loop()
    assert loop.run_until_complete(runtime.aexecute("add", {"a": 1, "b": 1}, ctx)).success
    loop.close()  # nothing will run that loop's tasks again
    runtime.end_plan(ctx)
    with runtime.plan() as later:  # the server serves the next plan as usual
        assert runtime.execute("add", {"a": 2, "b": 2}, later).output == {"sum": 4}


async def test_cancelling_a_sync_call_handed_to_the_plans_loop_cancels_it_there(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], tmp_path: Path
) -> None:
    """A sync caller's token stops the call on the plan's loop within the grace period."""
    register(runtime, in_process())
    marker = tmp_path / "cancelled"
    token = CancellationToken()
    started = threading.Event()
    async with runtime.aplan(cancellation_token=token) as ctx:
        await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)  # the connection opens here
        ctx.on_progress = lambda event: started.set()

        def call() -> BaseException | None:
            try:
                runtime.execute("slow", {"seconds": 60, "marker": str(marker)}, ctx)
            except BaseException as exc:
                return exc
            return None

        pending = asyncio.ensure_future(asyncio.to_thread(call))
        assert await asyncio.to_thread(started.wait, WAIT)
        token.cancel("enough")
        raised = await asyncio.wait_for(pending, 2)
        assert isinstance(raised, ToolCancelledError)
        assert await _settled(marker.exists)


def _held_server(entered: threading.Event, gate: threading.Event) -> Server[Any]:
    """A server with tools t1 and t2 whose handshake, once ``hold`` is set, waits for ``gate``."""
    hold = {"on": False}

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        if hold["on"]:
            entered.set()
            await anyio.to_thread.run_sync(gate.wait, WAIT)
        yield {}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object"}
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema=schema) for name in ("t1", "t2")]
        )

    server: Server[Any] = Server("held", lifespan=lifespan, on_list_tools=list_tools)
    server.hold = hold  # type: ignore[attr-defined]
    return server


def test_a_blocking_activation_on_the_loop_of_an_opening_connection_is_refused() -> None:
    """A sync activate on the loop where the plan's connection is opening is refused.

    It would wait on the loop it blocks, so the runtime refuses it at once.
    """
    entered, gate = threading.Event(), threading.Event()
    server = _held_server(entered, gate)
    runtime = ToolRuntime(activate_timeout=WAIT)  # bounds the wait if the refusal breaks
    runtime.register_source(McpServer.in_process(server))
    server.hold["on"] = True  # type: ignore[attr-defined]
    raised: list[BaseException] = []

    async def scenario() -> None:
        ctx = runtime.new_context()
        first = asyncio.ensure_future(runtime.aactivate("t1", ctx))
        assert await asyncio.to_thread(entered.wait, WAIT)
        try:
            runtime.activate("t2", ctx)  # blocking, on this loop's own thread
        except BaseException as exc:
            raised.append(exc)
        gate.set()
        await asyncio.wait_for(first, WAIT)
        await runtime.aend_plan(ctx)

    thread = threading.Thread(target=asyncio.run, args=(scenario(),))
    thread.start()
    thread.join(3 * WAIT)
    gate.set()
    runtime.close()
    assert not thread.is_alive()
    [error] = raised
    assert "wait on itself" in str(error.__cause__ or error), repr(error)
