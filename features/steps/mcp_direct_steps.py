"""Steps for the trace context, host metadata and direct in-process path of MCP calls."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from behave import given, then, when
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import NullTracer, Text, ToolRuntime

META_SERVER = Path(__file__).resolve().parents[2] / "tests" / "mcp" / "meta_server.py"


def _server() -> Any:
    """The SDK MCPServer of tests/mcp/meta_server.py (a file, not a package module)."""
    spec = importlib.util.spec_from_file_location("toolcycle_meta_server", META_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def _source(**options: Any) -> Any:
    from toolcycle.sources.mcp import McpServer

    return McpServer.in_process(_server(), name="meta", **options)


@given(
    'an SDK server in process whose tool reports its request, with meta adding tenant "{tenant}"'
)
def server_with_tenant(context: Any, tenant: str) -> None:
    context.meta_source = _source(meta=lambda call: {"tenant": tenant})


@given("an SDK server in process whose tool reports its request")
def plain_server(context: Any) -> None:
    context.meta_source = _source()


@given("an SDK server in process in legacy mode whose tool reports its request")
def legacy_server(context: Any) -> None:
    context.meta_source = _source(mode="legacy")


def _call(context: Any, name: str, instrumentation: Any = None) -> None:
    with ToolRuntime(tracer=NullTracer(), instrumentation=instrumentation) as runtime:
        runtime.register_source(context.meta_source)
        with runtime.plan() as ctx:
            result = runtime.execute(name, {}, ctx)
    assert result.success, result.error
    (part,) = result.content
    assert isinstance(part, Text)
    context.meta_answer = json.loads(part.text) if name == "whoami" else part.text


@when('I call its tool "{name}" with OpenTelemetry spans recorded')
def call_with_spans(context: Any, name: str) -> None:
    from toolcycle.otel import OpenTelemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _call(context, name, OpenTelemetry(tracer_provider=provider))
    context.meta_spans = exporter.get_finished_spans()
    provider.shutdown()


@when('I call its tool "{name}"')
def call_plain(context: Any, name: str) -> None:
    _call(context, name)


@then('the server saw the tenant "{tenant}"')
def saw_tenant(context: Any, tenant: str) -> None:
    assert context.meta_answer["meta"]["tenant"] == tenant, context.meta_answer


@then("the server saw the trace id of the call's span")
def saw_trace(context: Any) -> None:
    (span,) = [s for s in context.meta_spans if s.name.startswith("execute_tool")]
    assert context.meta_answer["trace_id"] == format(span.context.trace_id, "032x")


@then('the server answered "{text}"')
def answered(context: Any, text: str) -> None:
    assert context.meta_answer == text, context.meta_answer


@then('the server did not answer "{text}"')
def did_not_answer(context: Any, text: str) -> None:
    assert context.meta_answer != text, context.meta_answer
