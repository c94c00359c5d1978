"""An MCP server whose tools wait for a tool search (defer_loading on the source)."""

from __future__ import annotations

from collections.abc import Callable

from toolcycle import ToolRuntime
from toolcycle.sources.mcp import McpServer

from .conftest import VALID_TOOLS, register


def test_defer_loading_on_the_server_defers_every_tool(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """McpServer(defer_loading=True): every tool is registered deferred and found by search."""
    assert register(runtime, in_process(defer_loading=True)) == VALID_TOOLS
    assert all(d.defer_loading for d in runtime.descriptors())
    with runtime.plan() as ctx:
        assert [d["function"]["name"] for d in runtime.tool_definitions(ctx)] == ["search_tools"]
        found = runtime.call({"name": "search_tools", "arguments": {"query": "echo"}}, ctx)
        assert found.output["tools"][0]["name"] == "echo"
        assert "echo" in ctx.revealed_tools


def test_a_server_shows_its_tools_by_default(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """Without defer_loading an MCP server's tools are sent in full, as before."""
    register(runtime, in_process())
    assert not any(d.defer_loading for d in runtime.descriptors())
