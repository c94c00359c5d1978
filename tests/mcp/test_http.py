"""The MCP source over streamable HTTP, against a loopback server in a thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from toolcycle import ToolActivationError, ToolRuntime
from toolcycle.sources.mcp import McpCallError, McpServer, McpServerError

from .conftest import VALID_TOOLS, register, wait_for
from .servers import build


class _RecordHeaders:
    """ASGI middleware that keeps the headers of every HTTP request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, _RecordHeaders]]:
    """The test server on a loopback port, served by uvicorn on a thread."""
    app = _RecordHeaders(build(name="web").streamable_http_app())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, 10), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp", app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_a_server_over_http_is_discovered_and_called_with_the_given_headers(
    http_server,
) -> None:
    """Every request carries the headers; tools work as over any transport."""
    url, recorder = http_server
    with ToolRuntime() as runtime:
        source = McpServer.http(url, headers={"X-Test": "secret-value"}, name="web")
        assert register(runtime, source) == VALID_TOOLS
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 20, "b": 22}, ctx).output == {"sum": 42}
            assert runtime.execute("fail", {}, ctx).error == "it broke on purpose"
    assert recorder.seen and all(h.get("x-test") == "secret-value" for h in recorder.seen)


def test_a_server_error_with_code_32000_over_http_keeps_the_session(http_server) -> None:
    """A live server's -32000 is its answer, with its code and data; the session goes on."""
    url, recorder = http_server
    with ToolRuntime() as runtime:
        register(runtime, McpServer.http(url, name="web"))
        with runtime.plan() as ctx:
            result = runtime.execute("rpc_error", {"code": -32000}, ctx)
            before = recorder.seen[-1].get("mcp-session-id")
            assert runtime.execute("add", {"a": 1, "b": 1}, ctx).output == {"sum": 2}
            after = recorder.seen[-1].get("mcp-session-id")
    assert result.error_type == "McpCallError" and isinstance(result.exception, McpCallError)
    assert (result.exception.code, result.exception.data) == (-32000, {"hint": "none"})
    assert before is not None and after == before


def test_a_server_that_is_not_listening_fails_registration_and_activation() -> None:
    """Nothing on the port: register_source and activation fail with the server's name."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    sock.close()
    source = McpServer.http(url, name="nowhere", startup_timeout=5)
    with ToolRuntime() as runtime:
        with pytest.raises(McpServerError, match="'nowhere' failed to start"):
            runtime.register_source(source)
        tool = McpServer.in_process(build()).tools()[1]  # a descriptor to register
        source_tool = type(tool)(source, tool.discover(), "add")
        runtime.register(source_tool)
        with runtime.plan() as ctx:
            with pytest.raises(ToolActivationError, match="'nowhere' failed to start"):
                runtime.execute("add", {"a": 1, "b": 2}, ctx)
