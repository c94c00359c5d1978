"""Progress reports reach a call's observer: span events with OpenTelemetry, a hook for others."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import (
    NullTracer,
    ProgressEvent,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolRuntime,
    tool,
)
from toolcycle.otel import OpenTelemetry


@tool(writes=False)
def index(files: int, ctx: ToolExecutionContext) -> int:
    """Index files, reporting the first with a message and the rest without."""
    ctx.report_progress(1, files, "first file")
    for done in range(2, files + 1):
        ctx.report_progress(done)
    return files


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


@pytest.fixture
def traced(provider: TracerProvider) -> Iterator[ToolRuntime]:
    """A runtime whose calls are OpenTelemetry spans, with the ``index`` tool."""
    with ToolRuntime(
        tracer=NullTracer(), instrumentation=OpenTelemetry(tracer_provider=provider)
    ) as runtime:
        runtime.register(index)
        yield runtime


def _progress_events(exporter: InMemorySpanExporter) -> list[tuple[str, dict[str, Any]]]:
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool index"]
    return [(e.name, dict(e.attributes or {})) for e in _events(span)]


def _events(span: ReadableSpan) -> list[Any]:
    return list(span.events)


def test_each_progress_report_is_an_event_on_the_calls_span(
    traced: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """The attribute progress always; total and message when the tool gave them."""
    with traced.plan() as ctx:
        assert traced.execute("index", {"files": 2}, ctx).success
    assert _progress_events(exporter) == [
        ("toolcycle.progress", {"progress": 1.0, "total": 2.0, "message": "first file"}),
        ("toolcycle.progress", {"progress": 2.0}),
    ]


async def test_a_streamed_calls_reports_reach_both_the_span_and_the_stream(
    traced: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """The span's events and the stream's events are the same reports."""
    async with traced.aplan() as ctx:
        items = [item async for item in traced.astream("index", {"files": 3}, ctx)]
    assert [type(item) for item in items] == [ProgressEvent] * 3 + [ToolResult]
    assert [attributes["progress"] for _, attributes in _progress_events(exporter)] == [1, 2, 3]


def test_a_report_after_the_span_ended_is_dropped(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A sync tool left running may report after its call finished: the span is not touched."""
    ctx = ToolExecutionContext("p1")
    observer: Any = OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="index", descriptor=None, ctx=ctx, call_id="c1", tool_call_id=None
    )
    observer.progress(ProgressEvent(tool_name="index", plan_id="p1", call_id="c1", progress=1))
    observer.finish(None)
    observer.progress(ProgressEvent(tool_name="index", plan_id="p1", call_id="c1", progress=2))
    assert [a["progress"] for _, a in _progress_events(exporter)] == [1]


def test_a_span_that_fails_to_take_an_event_does_not_fail_the_call(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure is logged at debug level and the span still ends."""
    ctx = ToolExecutionContext("p1")
    observer: Any = OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="index", descriptor=None, ctx=ctx, call_id="c1", tool_call_id=None
    )

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("exporter is full")

    monkeypatch.setattr(observer._span, "add_event", refuse)
    observer.progress(ProgressEvent(tool_name="index", plan_id="p1", call_id="c1", progress=1))
    observer.finish(None)
    assert _progress_events(exporter) == []


class _Watch:
    """An observer; with ``hears``, it has the optional progress hook too."""

    record_payloads = False

    def __init__(self, hears: bool, raises: bool) -> None:
        self.events: list[ProgressEvent] = []
        self._raises = raises
        if hears:
            self.progress = self._progress

    def _progress(self, event: ProgressEvent) -> None:
        if self._raises:
            raise RuntimeError("the observer broke")
        self.events.append(event)

    def finish(
        self, trace: ToolExecutionTrace | None, *, arguments: Any = None, output: Any = None
    ) -> None:
        pass


class _Instrumentation:
    def __init__(self, hears: bool, raises: bool = False) -> None:
        self.watches: list[_Watch] = []
        self._hears, self._raises = hears, raises

    def call_started(
        self,
        *,
        tool_name: str,
        descriptor: ToolDescriptor | None,
        ctx: ToolExecutionContext,
        call_id: str,
        tool_call_id: str | None,
    ) -> _Watch:
        watch = _Watch(self._hears, self._raises)
        self.watches.append(watch)
        return watch

    def stage_started(self, stage: Any, *, tool_name: str, ctx: ToolExecutionContext) -> Any:
        return _Watch(False, False)


@pytest.mark.parametrize("hears", [True, False])
def test_an_observer_hears_progress_only_if_it_has_the_hook(hears: bool) -> None:
    """The hook is optional: an observer written without it keeps working."""
    instrumentation = _Instrumentation(hears)
    heard: list[ProgressEvent] = []
    with ToolRuntime(tracer=NullTracer(), instrumentation=instrumentation) as runtime:
        runtime.register(index)
        with runtime.plan(on_progress=heard.append) as ctx:
            assert runtime.execute("index", {"files": 2}, ctx).success
    (watch,) = instrumentation.watches
    assert watch.events == (heard if hears else [])
    assert len(heard) == 2


def test_an_observer_whose_hook_raises_is_logged_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The plan's on_progress still hears every report; the call succeeds."""
    heard: list[ProgressEvent] = []
    with ToolRuntime(
        tracer=NullTracer(), instrumentation=_Instrumentation(hears=True, raises=True)
    ) as runtime:
        runtime.register(index)
        with caplog.at_level(logging.ERROR, "toolcycle.context"):
            with runtime.plan("p9", on_progress=heard.append) as ctx:
                assert runtime.execute("index", {"files": 2}, ctx).success
    assert len(heard) == 2
    assert [r.getMessage() for r in caplog.records] == [
        "a progress listener of plan 'p9' raised"
    ] * 2
