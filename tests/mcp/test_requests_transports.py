"""Servers' requests over stdio and streamable HTTP, in both protocol eras.

The HTTP server is one per module; each stdio test starts its own process.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator

import pytest
import uvicorn

from toolcycle import NullTracer, ProgressEvent, ToolRuntime
from toolcycle.sources.mcp import (
    ELICITATION_PENDING,
    ElicitAnswer,
    Elicitation,
    McpRequests,
    McpServer,
    RequestContext,
    Root,
    SamplingAnswer,
    SamplingRequest,
)

from .asking_server import build
from .conftest import wait_for
from .test_requests import ASKING, PERSON

ERAS = ["legacy", "auto"]


def _answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
    return ElicitAnswer.accept(PERSON) if question.mode == "form" else ElicitAnswer.accept()


def _sample(request: SamplingRequest, call: RequestContext) -> SamplingAnswer:
    return SamplingAnswer("blue", "host-model")


HANDLERS = McpRequests(on_elicit=_answer, on_sample=_sample, roots=[Root("file:///w", "w")])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The asking server over streamable HTTP on a loopback port."""
    app = build().streamable_http_app()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, 10), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _source(transport: str, protocol: str, http_url: str, **options: object) -> McpServer:
    if transport == "stdio":
        return McpServer.stdio(
            sys.executable, [str(ASKING)], name="asking", protocol=protocol, **options
        )
    return McpServer.http(http_url, name="asking", protocol=protocol, **options)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("protocol", ERAS)
def test_every_kind_of_request_is_answered_over_the_wire(
    transport: str, protocol: str, http_url: str
) -> None:
    """Elicitation (form and URL), sampling, roots, logging and progress, over a real transport."""
    events: list[ProgressEvent] = []
    with ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0) as runtime:
        runtime.register_source(_source(transport, protocol, http_url, requests=HANDLERS))
        with runtime.plan(on_progress=events.append) as ctx:
            assert runtime.execute("greet", {}, ctx).output == {"result": "hello Ann, 37"}
            sampled = runtime.execute("summarise", {"topic": "sky"}, ctx)
            assert sampled.output == {"result": "host-model: blue"}
            assert runtime.execute("roots", {}, ctx).output == {"result": ["w=file:///w"]}
            assert runtime.execute("sign_in", {}, ctx).output[0]["text"] == "accept"
            assert runtime.execute("chatty", {"steps": 2}, ctx).success
    assert [e.message for e in events if e.message.startswith("step")] == ["step 1", "step 2"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_deferred_question_resumes_over_the_wire(transport: str, http_url: str) -> None:
    """2026-07-28 era: the call comes back pending, and the answer continues it."""
    with ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0) as runtime:
        runtime.register_source(_source(transport, "auto", http_url))
        with runtime.plan() as ctx:
            first = runtime.execute("greet", {}, ctx)
            assert first.error_type == ELICITATION_PENDING and first.pending is not None
            sampled = runtime.execute("summarise", {"topic": "sky"}, ctx, timeout=10)
            assert not sampled.success and "sampling" in (sampled.error or "")
            done = runtime.resume(first.pending, ElicitAnswer.accept(PERSON).decision(), ctx)
    assert done.output == {"result": "hello Ann, 37"}
