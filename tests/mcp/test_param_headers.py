"""``x-mcp-header`` arguments as ``Mcp-Param-*`` HTTP headers, against a loopback server."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import mcp_types
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from toolcycle import ToolRuntime
from toolcycle.sources.mcp import McpServer
from toolcycle.sources.mcp._headers import header_tools

from .conftest import wait_for

Region = Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]


def _build() -> MCPServer:
    server = MCPServer("headers")

    @server.tool()
    def where(region: Region, count: int = 1) -> str:
        """Say which region the call was routed to."""
        return region * count

    @server.tool()
    def plain(text: str) -> str:
        """Echo the text; no argument is a header."""
        return text

    return server


class _Recorder:
    """ASGI middleware that keeps each request's MCP method and Mcp-Param-* headers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, dict[str, str]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            params = {k: v for k, v in headers.items() if k.startswith("mcp-param-")}
            self.seen.append((headers.get("mcp-method", ""), params))
        await self.app(scope, receive, send)

    def methods(self) -> list[str]:
        return [method for method, _ in self.seen]


@pytest.fixture
def server() -> Iterator[tuple[str, _Recorder]]:
    """The server on a loopback port, served by uvicorn on a thread, and its recorder."""
    app = _Recorder(_build().streamable_http_app())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    runner = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_for(lambda: runner.started, 10), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp", app
    finally:
        runner.should_exit = True
        thread.join(10)
        sock.close()


def test_a_header_argument_goes_out_as_an_mcp_param_header_in_the_2026_era(
    server: tuple[str, _Recorder],
) -> None:
    """With protocol='auto' the call carries Mcp-Param-Region and the server accepts it."""
    url, recorder = server
    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.http(url, name="h", protocol="auto"))
        recorder.seen.clear()
        with runtime.plan() as ctx:
            first = runtime.execute("where", {"region": "eu-west"}, ctx)
            second = runtime.execute("where", {"region": "us-east", "count": 2}, ctx)
    assert first.output == {"result": "eu-west"}
    assert second.output == {"result": "us-eastus-east"}
    calls = [params for method, params in recorder.seen if method == "tools/call"]
    assert calls == [{"mcp-param-region": "eu-west"}, {"mcp-param-region": "us-east"}]
    # The plan's connection lists the tools once, before its first such call.
    assert recorder.methods().count("tools/list") == 1


def test_a_tool_without_header_arguments_costs_no_listing(
    server: tuple[str, _Recorder],
) -> None:
    """Calling only a plain tool sends no tools/list on the plan's connection."""
    url, recorder = server
    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.http(url, name="h", protocol="auto"))
        recorder.seen.clear()
        with runtime.plan() as ctx:
            assert runtime.execute("plain", {"text": "hi"}, ctx).output == {"result": "hi"}
    assert "tools/list" not in recorder.methods()
    assert all(not params for _, params in recorder.seen)


def test_the_legacy_era_sends_no_param_headers_and_lists_nothing_more(
    server: tuple[str, _Recorder],
) -> None:
    """With the initialize handshake the server checks no header, so none is sent."""
    url, recorder = server
    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.http(url, name="h"))
        recorder.seen.clear()
        with runtime.plan() as ctx:
            result = runtime.execute("where", {"region": "eu-west"}, ctx)
    assert result.output == {"result": "eu-west"}
    assert "tools/list" not in recorder.methods()
    assert all(not params for _, params in recorder.seen)


def test_a_connection_that_negotiated_the_handshake_era_learns_no_headers() -> None:
    """A header tool on a session of the legacy era is called without listing first."""
    source = McpServer.in_process(_build(), mode="legacy")
    with ToolRuntime() as runtime:
        runtime.register_source(source)
        source._sharing.header_tools = frozenset({"where"})
        with runtime.plan() as ctx:
            assert runtime.execute("where", {"region": "x"}, ctx).output == {"result": "x"}
            assert runtime.execute("where", {"region": "y"}, ctx).output == {"result": "y"}


def _tool(name: str, properties: dict[str, Any]) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, input_schema={"type": "object", "properties": properties})


def test_header_tools_names_only_tools_with_valid_header_annotations() -> None:
    """Valid x-mcp-header arguments count; invalid ones and plain tools do not."""
    listed = [
        _tool("valid", {"region": {"type": "string", "x-mcp-header": "Region"}}),
        _tool("plain", {"text": {"type": "string"}}),
        _tool("invalid", {"blob": {"type": "object", "x-mcp-header": "Blob"}}),
    ]
    assert header_tools(listed) == frozenset({"valid"})
