"""Plans cut short at any point leave no connection to an MCP server open behind them."""

from __future__ import annotations

import asyncio
import contextlib
import time

from .conftest import register

TURNS = 60  # loop turns swept: from before the activation starts to past its end
WAIT = 10.0


def _open_connections(name: str) -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == f"toolcycle-mcp:{name}"]


async def _settled(name: str, sessions: dict[str, int]) -> bool:
    """Wait (bounded) until every connection opened in process has been closed."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if not _open_connections(name) and sessions.get("opened") == sessions.get("closed"):
            return True
        await asyncio.sleep(0.01)
    return False


async def test_calls_cancelled_at_any_point_of_activation_leave_no_connection(
    runtime, in_process, sessions
) -> None:
    """A call cancelled while its plan's connection opens closes that connection."""
    register(runtime, in_process(name="cut"))
    for turns in range(TURNS):
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("slow", {"seconds": 30}, ctx))
            for _ in range(turns):
                await asyncio.sleep(0)
            call.cancel()
            with contextlib.suppress(BaseException):
                await call
    assert await _settled("cut", sessions)
    assert sessions.get("opened", 0) > 0  # the sweep did reach the server


async def test_plans_ended_at_any_point_of_activation_leave_no_connection(
    runtime, in_process, sessions
) -> None:
    """A plan that ends while its connection opens closes that connection."""
    register(runtime, in_process(name="ended"))
    for turns in range(TURNS):
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("slow", {"seconds": 30}, ctx))
            for _ in range(turns):
                await asyncio.sleep(0)
        with contextlib.suppress(BaseException):
            await call
    assert await _settled("ended", sessions)
    assert sessions.get("opened", 0) > 0
