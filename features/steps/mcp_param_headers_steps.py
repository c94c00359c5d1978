"""Steps for x-mcp-header arguments, against an SDK server on loopback that records headers."""

from __future__ import annotations

import socket
import threading
import time
from typing import Annotated, Any

from behave import given, then, when
from pydantic import Field

Region = Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]
"""A string argument sent as the ``Mcp-Param-Region`` header too."""


class _Recorder:
    """ASGI middleware that keeps the headers of each tools/call request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            if headers.get("mcp-method") == "tools/call":
                self.calls.append(headers)
        await self.app(scope, receive, send)


@given('an MCP server over HTTP with a tool whose "{argument}" argument is the header "{token}"')
def step_header_server(context: Any, argument: str, token: str) -> None:
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    assert (argument, token) == ("region", "Region"), "the server's tool marks region as Region"
    server = MCPServer("headers")

    @server.tool()
    def where(region: Region) -> str:
        """Say where the call was routed."""
        return region

    context.header_recorder = _Recorder(server.streamable_http_app())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    runner = uvicorn.Server(
        uvicorn.Config(context.header_recorder, log_level="error", lifespan="on")
    )
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not runner.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.started, "uvicorn did not start"

    def stop() -> None:
        runner.should_exit = True
        thread.join(10)
        sock.close()

    context.add_cleanup(stop)
    context.header_url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


@given('I register the header server with protocol "{protocol}"')
def step_register_with_protocol(context: Any, protocol: str) -> None:
    from toolcycle.sources.mcp import McpServer

    source = McpServer.http(context.header_url, name="headers", protocol=protocol)
    context.runtime.register_source(source)


@when('the region "{region}" goes to the header tool "{tool}"')
def step_call_with_region(context: Any, tool: str, region: str) -> None:
    with context.runtime.plan() as ctx:
        context.header_result = context.runtime.execute(tool, {"region": region}, ctx)


@then('the header tool answers "{answer}"')
def step_call_answers(context: Any, answer: str) -> None:
    result = context.header_result
    assert result.success, result.error
    assert result.output == {"result": answer}, result.output


@then('the server saw the header "{name}" with "{value}"')
def step_saw_header(context: Any, name: str, value: str) -> None:
    assert [call.get(name) for call in context.header_recorder.calls] == [value]
