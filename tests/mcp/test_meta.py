"""Each call's ``_meta``: the caller's W3C trace context and the host's ``meta=`` metadata."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import NullTracer, Text, ToolResult, ToolRuntime
from toolcycle.otel import OpenTelemetry
from toolcycle.sources.mcp import McpCallInfo, McpServer

from .meta_server import build

META_SERVER = Path(__file__).with_name("meta_server.py")


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A real OpenTelemetry SDK tracer provider that keeps its spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _whoami(server: McpServer, provider: TracerProvider | None = None) -> dict[str, Any]:
    instrumentation = OpenTelemetry(tracer_provider=provider) if provider is not None else None
    with ToolRuntime(tracer=NullTracer(), instrumentation=instrumentation) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            result = runtime.execute("whoami", {}, ctx)
    assert result.trace.status == "ok", result.trace.error
    return _answer(result)


def _answer(result: ToolResult) -> dict[str, Any]:
    (part,) = result.content
    assert isinstance(part, Text)
    answer = json.loads(part.text)
    assert isinstance(answer, dict)
    return answer


def test_an_in_process_server_sees_the_trace_id_of_the_calls_span(exporter) -> None:
    """The server's handler runs in the trace of toolcycle's execute_tool span."""
    provider, spans = exporter
    seen = _whoami(McpServer.in_process(build()), provider)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool whoami"]
    trace_id = format(span.context.trace_id, "032x")
    assert seen["trace_id"] == trace_id
    assert seen["meta"]["traceparent"].split("-")[1] == trace_id


def test_a_server_over_stdio_gets_the_trace_context_in_meta(exporter) -> None:
    """Over stdio the request's _meta carries a traceparent in the caller's trace."""
    provider, spans = exporter
    server = McpServer.stdio(sys.executable, [str(META_SERVER)], name="meta")
    seen = _whoami(server, provider)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool whoami"]
    assert seen["meta"]["traceparent"].split("-")[1] == format(span.context.trace_id, "032x")


def test_without_a_current_span_no_trace_context_is_sent() -> None:
    """With no OpenTelemetry span current, _meta holds no traceparent."""
    seen = _whoami(McpServer.in_process(build()))
    assert "traceparent" not in seen["meta"]
    assert "tracestate" not in seen["meta"]


def test_the_meta_resolver_adds_host_metadata_for_each_call() -> None:
    """What meta= returns arrives in _meta; it is asked with the call's server, tool and ids."""
    asked: list[McpCallInfo] = []

    def tenant(call: McpCallInfo) -> dict[str, Any]:
        asked.append(call)
        return {"tenant": "acme", "example.com/plan": call.plan_id}

    server = McpServer.in_process(build(), name="meta", meta=tenant)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            result = runtime.execute("whoami", {}, ctx)
    (call,) = asked
    assert (call.server, call.tool, call.plan_id) == ("meta", "whoami", ctx.plan_id)
    assert call.call_id == result.trace.call_id
    assert call.token.is_cancelled is False
    meta = _answer(result)["meta"]
    assert meta["tenant"] == "acme" and meta["example.com/plan"] == ctx.plan_id


def test_a_resolver_returning_none_adds_nothing() -> None:
    """None from meta= leaves _meta without host keys."""
    seen = _whoami(McpServer.in_process(build(), meta=lambda call: None))
    assert "tenant" not in seen["meta"]


@pytest.mark.parametrize(
    ("returned", "error", "words"),
    [
        ({"traceparent": "x"}, "ValueError", "'traceparent'"),
        ({"progressToken": 1}, "ValueError", "'progressToken'"),
        ({"io.modelcontextprotocol/x": 1}, "ValueError", "owns"),
        (["tenant"], "TypeError", "must return a mapping or None"),
        ({1: "x"}, "TypeError", "keys must be strings"),
        ({"tenant": object()}, "TypeError", "not JSON"),
        ({"score": float("nan")}, "TypeError", "not JSON"),
        ({"limit": [float("inf")]}, "TypeError", "not JSON"),
    ],
)
def test_a_resolver_returning_unusable_metadata_fails_the_call_saying_why(
    returned: object, error: str, words: str
) -> None:
    """Reserved keys, non-mappings, non-string keys and non-JSON values fail that call."""
    server = McpServer.in_process(build(), name="meta", meta=lambda call: returned)  # type: ignore[arg-type, return-value]
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(server)
        with runtime.plan() as ctx:
            result = runtime.execute("whoami", {}, ctx)
    assert result.trace.status == "error"
    assert result.trace.error is not None
    assert result.error_type == error and words in result.trace.error
    assert "'meta'" in result.trace.error


def test_meta_must_be_callable() -> None:
    """A meta= that cannot be called is refused when the server is made."""
    with pytest.raises(TypeError, match="meta must be a callable"):
        McpServer.in_process(build(), meta={"tenant": "acme"})  # type: ignore[arg-type]
