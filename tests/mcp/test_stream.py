"""An MCP tool's progress notifications through ``runtime.astream``, live and in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from toolcycle import ProgressEvent, ToolExecutionTrace, ToolResult, ToolRuntime
from toolcycle.sources.mcp import McpServer

from .conftest import register, wait_for

WAIT = 15.0


async def test_an_mcp_tools_notifications_stream_in_order_before_its_result(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """Three notifications arrive as three events, each naming the call; then the result."""
    register(runtime, in_process())
    async with runtime.aplan("p1") as ctx:
        items = [item async for item in runtime.astream("progress", {"steps": 3}, ctx)]
    result = items[-1]
    assert isinstance(result, ToolResult) and result.success, result
    events = [item for item in items if isinstance(item, ProgressEvent)]
    assert [(e.progress, e.total, e.message) for e in events] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    assert {e.call_id for e in events} == {result.trace.call_id}


async def test_closing_the_stream_of_a_running_mcp_tool_cancels_it_on_the_server(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], tmp_path: Path
) -> None:
    """The first event arrives while the tool sleeps; aclose cancels the server's handler."""
    register(runtime, in_process())
    marker = tmp_path / "marker"
    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    async with runtime.aplan() as ctx:
        stream = runtime.astream("slow", {"seconds": 60, "marker": str(marker)}, ctx)
        first = await asyncio.wait_for(anext(stream), WAIT)
        assert isinstance(first, ProgressEvent) and first.message == "started"
        await asyncio.wait_for(stream.aclose(), WAIT)
        assert [(t.tool_name, t.status) for t in traces] == [("slow", "cancelled")]
    assert await asyncio.to_thread(wait_for, marker.exists, WAIT), "the handler ran on"
