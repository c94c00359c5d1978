"""Steps about the OpenTelemetry spans of calls, read back from an in-memory exporter."""

from __future__ import annotations

import json
from typing import Any

from behave import given, then, when
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from toolcycle.otel import OpenTelemetry

PAYLOADS = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def _instrument(context: Any, **options: Any) -> None:
    """Rebuild the scenario's runtime with spans going to an exporter of its own."""
    context.span_exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(context.span_exporter))
    context.add_cleanup(provider.shutdown)
    context.caller_tracer = provider.get_tracer("scenario")
    context.make_runtime(instrumentation=OpenTelemetry(tracer_provider=provider, **options))


def _span(context: Any, name: str) -> ReadableSpan:
    found = [span for span in context.span_exporter.get_finished_spans() if span.name == name]
    names = [span.name for span in context.span_exporter.get_finished_spans()]
    assert len(found) == 1, f"expected one span {name!r}, got {names}"
    return found[0]


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@given("a runtime instrumented with OpenTelemetry")
def instrumented_runtime(context: Any) -> None:
    _instrument(context)


@given("a runtime instrumented with OpenTelemetry that records payloads")
def instrumented_runtime_with_payloads(context: Any) -> None:
    _instrument(context, record_payloads=True)


@when('I call "{name:Name}" inside the span "{span_name}"')
def call_inside_span(context: Any, name: str, span_name: str) -> None:
    context.result = None
    with context.caller_tracer.start_as_current_span(span_name) as caller:
        context.result = context.runtime.execute(name, {}, context.plan)
        context.current_after_call = trace.get_current_span()
    context.caller_span = caller


@then('the span "{child}" is a child of the span "{parent}"')
def span_is_child(context: Any, child: str, parent: str) -> None:
    child_span, parent_span = _span(context, child), _span(context, parent)
    assert child_span.parent is not None, f"{child!r} has no parent"
    assert child_span.parent.span_id == parent_span.context.span_id
    assert child_span.context.trace_id == parent_span.context.trace_id


@then('the span "{name}" has the attributes')
def span_has_attributes(context: Any, name: str) -> None:
    attributes = _attributes(_span(context, name))
    for row in context.table:
        key, value = row["attribute"], row["value"]
        assert str(attributes.get(key)) == value, f"{key}: {attributes.get(key)!r} != {value!r}"


@then('the span "{name}" carries the call id of the last trace')
def span_has_call_id(context: Any, name: str) -> None:
    attributes = _attributes(_span(context, name))
    call_id = context.traces[-1].call_id
    assert attributes["gen_ai.tool.call.id"] == call_id, attributes
    assert attributes["toolcycle.call_id"] == call_id, attributes


@then('the span "{name}" is current again')
def caller_is_current(context: Any, name: str) -> None:
    assert context.caller_span.name == name
    assert context.current_after_call is context.caller_span


@then('the span "{name}" has the status ERROR with the last trace\'s error')
def span_has_error_status(context: Any, name: str) -> None:
    span = _span(context, name)
    assert span.status.status_code is StatusCode.ERROR, span.status
    assert span.status.description == context.traces[-1].error, span.status


@then("no span records a payload")
def no_payload(context: Any) -> None:
    for span in context.span_exporter.get_finished_spans():
        recorded = set(_attributes(span)) & set(PAYLOADS)
        assert not recorded, f"{span.name} records {recorded}"


@then('the span "{name}" records the arguments {arguments}')
def span_records_arguments(context: Any, name: str, arguments: str) -> None:
    recorded = _attributes(_span(context, name))["gen_ai.tool.call.arguments"]
    assert json.loads(recorded) == json.loads(arguments), recorded


@then('the span "{name}" records the result {result}')
def span_records_result(context: Any, name: str, result: str) -> None:
    recorded = _attributes(_span(context, name))["gen_ai.tool.call.result"]
    assert json.loads(recorded) == json.loads(result), recorded


@then('no span mentions "{text}"')
def no_span_mentions(context: Any, text: str) -> None:
    assert context.span_exporter.get_finished_spans(), "no span was recorded"
    for span in context.span_exporter.get_finished_spans():
        exported = [span.name, str(span.status.description)]
        exported.extend(str(value) for value in _attributes(span).values())
        for event in span.events:
            exported.extend(str(value) for value in (event.attributes or {}).values())
        assert not any(text in item for item in exported), f"{span.name} mentions {text!r}"
