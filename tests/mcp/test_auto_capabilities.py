"""``protocol="auto"``: the capabilities a server is shown match the era it turns out to speak."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.mcp import ElicitAnswer, Elicitation, McpServer, RequestContext

from .asgi import read_body, replay, send_json_error
from .asking_server import build
from .conftest import wait_for
from .test_requests import PERSON


class _Recorder:
    """ASGI middleware: records what each request declares; optionally plays a legacy server.

    ``legacy``: ``server/discover`` is answered "method not found", as a server
    of the handshake era does, so the client falls back to ``initialize``.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.legacy = False
        self.declared: list[tuple[str, dict[str, Any]]] = []
        """Each request's method and the client capabilities it carried."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body = await read_body(receive)
        request = json.loads(body)
        method = request.get("method")
        params = request.get("params") or {}
        if method == "initialize":
            self.declared.append((method, params["capabilities"]))
        elif method is not None and "id" in request:
            meta = params.get("_meta") or {}
            self.declared.append((method, meta.get(CLIENT_CAPABILITIES_META_KEY, {})))
        if method == "server/discover" and self.legacy:
            return await send_json_error(send, request["id"], -32601, "Method not found")
        return await self.app(scope, replay(body, receive), send)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, _Recorder]]:
    """The asking server over streamable HTTP behind a `_Recorder`, and the recorder."""
    recorder = _Recorder(build().streamable_http_app())
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(recorder, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, 10), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp", recorder
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def recorder(served: tuple[str, _Recorder]) -> Iterator[_Recorder]:
    """The recorder, emptied, and playing the era the test asks for."""
    recording = served[1]
    recording.declared.clear()
    yield recording
    recording.legacy = False


def _answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
    return ElicitAnswer.accept(PERSON)


def _greet(url: str, protocol: str, **options: Any) -> Any:
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(McpServer.http(url, name="asking", protocol=protocol, **options))
        with runtime.plan() as ctx:
            return runtime.execute("greet", {}, ctx)


def test_auto_falling_back_to_the_handshake_declares_elicitation_only_with_a_handler(
    served: tuple[str, _Recorder], recorder: _Recorder
) -> None:
    """A handshake-era server hears of elicitation from "auto" exactly as from "legacy"."""
    url = served[0]
    recorder.legacy = True
    auto = _greet(url, "auto")
    handshakes = [caps for method, caps in recorder.declared if method == "initialize"]
    assert handshakes and all("elicitation" not in caps for caps in handshakes)
    # The server sees what a legacy client without a handler shows it, and answers alike.
    legacy = _greet(url, "legacy")
    assert auto.success is False and auto.error == legacy.error
    assert "did not declare the form elicitation capability" in (auto.error or "")

    recorder.declared.clear()
    answered = _greet(url, "auto", on_elicit=_answer)
    assert answered.output == {"result": "hello Ann, 37"}
    handshakes = [caps for method, caps in recorder.declared if method == "initialize"]
    assert handshakes and all("elicitation" in caps for caps in handshakes)


def test_auto_in_the_new_era_declares_elicitation_without_a_handler(
    served: tuple[str, _Recorder], recorder: _Recorder
) -> None:
    """In the 2026-07-28 era nobody answering defers the call, so elicitation is declared."""
    pending = _greet(served[0], "auto")
    assert pending.error_type == "ElicitationPending"
    assert not any(method == "initialize" for method, _ in recorder.declared)
    calls = [caps for method, caps in recorder.declared if method == "tools/call"]
    assert calls and all("elicitation" in caps for caps in calls)
