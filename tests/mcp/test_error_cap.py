"""An MCP server's huge error text is cut, after redaction, like any tool's."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from toolcycle import ToolRuntime
from toolcycle.errors import MAX_ERROR_BYTES, cut_error_text
from toolcycle.sources.mcp import McpCallError, McpServer

from ..test_error_cap import SECRET, assert_no_secret, expected, hostile

_SCHEMA = {"type": "object", "properties": {"password": {"type": "string"}}}


def loud_server() -> Server:
    """A server whose tools fail with 5 MB of text that quotes the password argument."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        read_only = types.ToolAnnotations(read_only_hint=True)
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, input_schema=_SCHEMA, annotations=read_only)
                for name in ("is_error", "rpc_error")
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = hostile(dict(params.arguments or {})["password"])
        if params.name == "rpc_error":
            raise MCPError(-32099, text)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )

    return Server("loud", on_list_tools=list_tools, on_call_tool=call_tool)


def test_an_mcp_servers_huge_error_result_is_cut_after_redaction() -> None:
    """Text the server flags isError becomes a cut, redacted error in result and trace."""
    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.in_process(loud_server(), name="loud"))
        with runtime.plan() as ctx:
            result = runtime.execute("is_error", {"password": SECRET}, ctx)
    assert result.error_type == "McpToolError"
    assert result.error == expected(hostile(SECRET))
    assert result.trace is not None and result.trace.error == result.error


def test_an_mcp_servers_huge_json_rpc_error_is_cut_after_redaction() -> None:
    """A JSON-RPC error message from the server is cut too; the exception keeps it whole."""
    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.in_process(loud_server(), name="loud"))
        with runtime.plan() as ctx:
            result = runtime.execute("rpc_error", {"password": SECRET}, ctx)
    assert isinstance(result.exception, McpCallError)
    whole = str(result.exception)
    assert SECRET in whole and len(whole) > 5_000_000
    assert result.error == cut_error_text(whole.replace(SECRET, "[redacted]"))
    assert result.error is not None and len(result.error.encode()) == MAX_ERROR_BYTES
    assert_no_secret(result.error)
    assert result.trace is not None and result.trace.error == result.error
