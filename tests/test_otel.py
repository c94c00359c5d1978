"""OpenTelemetry spans of calls and lifecycle stages, checked with an in-memory exporter."""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import toolcycle
import toolcycle.testing
from toolcycle import (
    NullTracer,
    ToolAccessDeniedError,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolNotFoundError,
    ToolRuntime,
    tool,
)
from toolcycle.otel import OpenTelemetry

WAIT = 5.0
SECRET = "s3cr3t-marker-7f1c"

MakeRuntime = Callable[..., ToolRuntime]


# -- tools -------------------------------------------------------------------------------


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(writes=False)
def fail(reason: str) -> None:
    """Raise a ValueError with the reason."""
    raise ValueError(reason)


@tool
def write_note(text: str) -> str:
    """Write a note somewhere (a tool that writes)."""
    return "written"


@tool(writes=False)
def login(user: str, password: str) -> str:
    """Log a user in; the password must never be exported."""
    return f"welcome {user}"


@tool(writes=False)
def shout(text: str) -> str:
    """Repeat the text in capitals, ten times over."""
    return text.upper() * 10


@tool(writes=False)
async def wait_forever() -> None:
    """Wait until cancelled."""
    await asyncio.Event().wait()


class Bare:
    """A custom tool without a description, whose source is set by the test."""

    def __init__(self, name: str = "bare", source: Any = "custom") -> None:
        self.descriptor = ToolDescriptor(name=name, source=source, capability={"writes": False})

    def discover(self) -> ToolDescriptor:
        return self.descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ok"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


class Unavailable(Bare):
    """A tool whose activation always fails."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        raise ConnectionError("the backend is down")


class Blocking(Bare):
    """A sync tool that ignores its timeout until released."""

    def __init__(self) -> None:
        super().__init__("blocking")
        self.release = threading.Event()

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.release.wait(WAIT)
        return "late"


# -- fixtures and helpers ----------------------------------------------------------------


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
def tracer(provider: TracerProvider) -> trace.Tracer:
    """The test's own tracer, for the caller's spans and the tools' spans."""
    return provider.get_tracer("tests")


@pytest.fixture
def make_runtime(provider: TracerProvider) -> Iterator[MakeRuntime]:
    """Build runtimes instrumented with the test's provider; all are closed at the end."""
    built: list[ToolRuntime] = []

    def make(*tools: Any, **options: Any) -> ToolRuntime:
        instrumentation = OpenTelemetry(tracer_provider=provider, **options)
        runtime = ToolRuntime(
            tracer=NullTracer(), deactivate_timeout=WAIT, instrumentation=instrumentation
        )
        built.append(runtime)
        for item in tools:
            runtime.register(item)
        return runtime

    yield make
    for runtime in built:
        runtime.close()


def _spans(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def _one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = _spans(exporter, name)
    assert len(found) == 1, [span.name for span in exporter.get_finished_spans()]
    return found[0]


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: Any) -> int:
    return int(span.get_span_context().span_id)


def _exported_text(exporter: InMemorySpanExporter) -> str:
    """Everything the finished spans would export: names, attributes, statuses, events."""
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts.append(span.name)
        parts.extend(str(value) for value in (_attributes(span)).values())
        parts.append(str(span.status.description))
        for event in span.events:
            parts.append(event.name)
            parts.extend(str(value) for value in (event.attributes or {}).values())
    return "\n".join(parts)


def _trace(**fields: Any) -> ToolExecutionTrace:
    values: dict[str, Any] = {
        "tool_name": "add",
        "plan_id": "p1",
        "call_id": "c1",
        "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T00:00:01+00:00",
        "duration_ms": 1000.0,
        "success": True,
        "status": "ok",
    }
    values.update(fields)
    return ToolExecutionTrace(**values)


# -- the hooks on their own --------------------------------------------------------------


def test_call_started_opens_a_span_that_finish_ends(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A span exists only once finish ends it, with the attributes of the start and the trace."""
    otel = OpenTelemetry(tracer_provider=provider)
    observer = otel.call_started(
        tool_name="add",
        descriptor=add.discover(),
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id="call_9",
    )
    assert exporter.get_finished_spans() == ()
    observer.finish(_trace(result_size_bytes=1, abandoned=True), arguments={"a": 1})
    span = _one(exporter, "execute_tool add")
    assert span.kind is SpanKind.INTERNAL
    assert _attributes(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_9",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "toolcycle.plan_id": "p1",
        "toolcycle.call_id": "c1",
        "toolcycle.status": "ok",
        "toolcycle.duration_ms": 1000.0,
        "toolcycle.result_size_bytes": 1,
        "toolcycle.abandoned": True,
    }


def test_the_call_span_is_current_until_finish(provider: TracerProvider) -> None:
    """Between call_started and finish the call's span is the current span."""
    before = trace.get_current_span()
    observer = OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="add",
        descriptor=None,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    )
    current = trace.get_current_span()
    assert current is not before and current.is_recording()
    observer.finish(_trace())
    assert trace.get_current_span() is before


def test_record_payloads_is_what_the_constructor_says(provider: TracerProvider) -> None:
    """The observer asks for payloads exactly when the instrumentation records them."""
    for wanted in (False, True):
        otel = OpenTelemetry(tracer_provider=provider, record_payloads=wanted)
        observer = otel.call_started(
            tool_name="add",
            descriptor=None,
            ctx=ToolExecutionContext("p1"),
            call_id="c1",
            tool_call_id=None,
        )
        assert observer.record_payloads is wanted
        observer.finish(None)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("wrapped", "function"),
        ("builtin", "function"),
        ("custom", "function"),
        ("skill", "function"),
        ("mcp", "extension"),
    ],
)
def test_the_tool_type_follows_the_source(
    provider: TracerProvider, exporter: InMemorySpanExporter, source: str, expected: str
) -> None:
    """In-process tools are functions; MCP tools, run by a server, are extensions."""
    otel = OpenTelemetry(tracer_provider=provider)
    descriptor = ToolDescriptor(name="t", source=source)  # type: ignore[arg-type]
    otel.call_started(
        tool_name="t",
        descriptor=descriptor,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    ).finish(None)
    assert _attributes(_one(exporter, "execute_tool t"))["gen_ai.tool.type"] == expected


def test_a_call_without_a_descriptor_has_no_type_or_description(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A call of an unknown tool names the tool and nothing it cannot know."""
    OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="nope",
        descriptor=None,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    ).finish(None)
    attributes = _attributes(_one(exporter, "execute_tool nope"))
    assert attributes["gen_ai.tool.name"] == "nope"
    assert "gen_ai.tool.type" not in attributes
    assert "gen_ai.tool.description" not in attributes
    assert "toolcycle.status" not in attributes  # finish had no trace


def test_a_models_refused_calls_each_get_a_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """An unknown tool and a call that names none are spans too, with their status."""
    runtime = make_runtime(add)
    with runtime.plan("p") as ctx:
        runtime.call({"id": "m1", "name": "nope", "arguments": {}}, ctx)
        runtime.call({"id": "m2", "arguments": {}}, ctx)
    unknown = _attributes(_one(exporter, "execute_tool nope"))
    assert (unknown["gen_ai.tool.call.id"], unknown["toolcycle.status"]) == ("m1", "error")
    assert unknown["error.type"] == "ToolNotFoundError"
    nameless = _attributes(_one(exporter, "execute_tool"))
    assert "gen_ai.tool.name" not in nameless
    assert (nameless["gen_ai.tool.call.id"], nameless["toolcycle.status"]) == (
        "m2",
        "invalid_input",
    )


def test_a_batch_call_the_cancellation_kept_from_starting_is_a_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """Its span says cancelled, under the model's id of the call, like any refused call."""

    @tool(writes=False)
    def stop(ctx: ToolExecutionContext) -> str:
        """Cancel the plan."""
        ctx.cancellation_token.cancel("enough")
        return "stopped"

    runtime = make_runtime(stop, add)
    batch = [
        {"id": "m1", "name": "stop", "arguments": {}},
        {"id": "m2", "name": "add", "arguments": {"a": 1, "b": 2}},
    ]
    with runtime.plan("p") as ctx:
        runtime.call_many(batch, ctx, max_concurrency=1)
    span = _one(exporter, "execute_tool add")
    attributes = _attributes(span)
    assert (attributes["gen_ai.tool.call.id"], attributes["toolcycle.status"]) == (
        "m2",
        "cancelled",
    )
    assert attributes["error.type"] == "ToolCancelledError"
    assert span.status.status_code is StatusCode.ERROR


def test_finishing_twice_records_the_call_once(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A second finish changes nothing and does not disturb the current span."""
    before = trace.get_current_span()
    observer = OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="add",
        descriptor=None,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    )
    observer.finish(_trace())
    observer.finish(_trace(success=False, status="error", error="late"))
    assert len(exporter.get_finished_spans()) == 1
    assert exporter.get_finished_spans()[0].status.status_code is StatusCode.UNSET
    assert trace.get_current_span() is before


def test_finishing_in_another_context_ends_the_span_without_raising(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A finish that cannot restore the context (it runs in another one) still ends the span."""
    otel = OpenTelemetry(tracer_provider=provider)
    started = contextvars.copy_context()
    observer = started.run(
        lambda: otel.call_started(
            tool_name="add",
            descriptor=None,
            ctx=ToolExecutionContext("p1"),
            call_id="c1",
            tool_call_id=None,
        )
    )
    contextvars.copy_context().run(observer.finish, _trace())
    assert len(exporter.get_finished_spans()) == 1


def test_a_failing_tracer_gives_observers_that_record_nothing() -> None:
    """If starting a span fails, the hooks still return observers that work."""

    class Broken(trace.Tracer):
        def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
            raise RuntimeError("tracer bug")

        def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("tracer bug")

    class BrokenProvider(trace.TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            return Broken()

    otel = OpenTelemetry(tracer_provider=BrokenProvider())
    before = trace.get_current_span()
    ctx = ToolExecutionContext("p1")
    observer = otel.call_started(
        tool_name="add", descriptor=None, ctx=ctx, call_id="c1", tool_call_id=None
    )
    observer.finish(_trace(success=False, status="error", error="x"), arguments={"a": 1})
    otel.stage_started("activate", tool_name="add", ctx=ctx).finish(RuntimeError("x"))
    assert trace.get_current_span() is before


def test_without_a_provider_the_hosts_global_one_is_used_and_left_alone() -> None:
    """The default provider is the global one, which is not changed (a no-op by default)."""
    global_provider = trace.get_tracer_provider()
    with ToolRuntime(tracer=NullTracer(), instrumentation=OpenTelemetry()) as runtime:
        runtime.register(add)
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 1, "b": 2}, ctx).output == 3
    assert trace.get_tracer_provider() is global_provider


@pytest.mark.parametrize("bad", [0, -1])
def test_max_payload_chars_must_be_positive(bad: int) -> None:
    """A cap of zero or less is refused when the instrumentation is built."""
    with pytest.raises(ValueError, match="max_payload_chars"):
        OpenTelemetry(max_payload_chars=bad)


def test_max_payload_chars_must_be_an_integer() -> None:
    """A cap that is not an integer is refused."""
    with pytest.raises(TypeError, match="max_payload_chars"):
        OpenTelemetry(max_payload_chars=1.5)  # type: ignore[arg-type]


def test_a_stage_with_an_error_is_marked_as_failed(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A stage's error becomes error.type, an ERROR status with its message, and an event."""
    otel = OpenTelemetry(tracer_provider=provider)
    otel.stage_started("deactivate", tool_name="add", ctx=ToolExecutionContext("p1")).finish(
        OSError("disk gone")
    )
    span = _one(exporter, "deactivate_tool add")
    assert span.kind is SpanKind.INTERNAL
    assert span.attributes == {
        "gen_ai.tool.name": "add",
        "toolcycle.plan_id": "p1",
        "toolcycle.stage": "deactivate",
        "error.type": "OSError",
    }
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "disk gone"
    assert [event.name for event in span.events] == ["exception"]


class _Unreadable(Exception):
    """An error whose message cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("no message")


def test_a_stage_error_whose_message_cannot_be_read_still_marks_the_span_failed(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A raising __str__ leaves the status ERROR (with a stand-in message) and the class name."""
    otel = OpenTelemetry(tracer_provider=provider)
    otel.stage_started("activate", tool_name="add", ctx=ToolExecutionContext("p1")).finish(
        _Unreadable()
    )
    span = _one(exporter, "activate_tool add")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "<the message of a _Unreadable could not be read>"
    assert _attributes(span)["error.type"] == "_Unreadable"


def test_a_stage_error_from_a_private_module_keeps_its_class_name(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Only toolcycle's own private classes give way to a public base: others keep their name."""
    private = type("ConnectError", (OSError,), {"__module__": "httpx._exceptions"})
    scripted = type("BadConfig", (ValueError,), {"__module__": "__main__"})
    otel = OpenTelemetry(tracer_provider=provider)
    ctx = ToolExecutionContext("p1")
    otel.stage_started("activate", tool_name="a", ctx=ctx).finish(private("refused"))
    otel.stage_started("activate", tool_name="b", ctx=ctx).finish(scripted("no key"))
    assert _attributes(_one(exporter, "activate_tool a"))["error.type"] == "ConnectError"
    assert _attributes(_one(exporter, "activate_tool b"))["error.type"] == "BadConfig"


# -- calls through the runtime: name, kind, attributes -----------------------------------


def test_a_call_is_one_internal_execute_tool_span_from_toolcycle(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """The span is named execute_tool {tool}, INTERNAL, from the toolcycle tracer."""
    runtime = make_runtime(add)
    with runtime.plan() as ctx:
        runtime.execute("add", {"a": 1, "b": 2}, ctx)
    span = _one(exporter, "execute_tool add")
    assert span.kind is SpanKind.INTERNAL
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "toolcycle"
    assert span.instrumentation_scope.version == toolcycle.__version__


def test_a_successful_call_carries_the_genai_and_toolcycle_attributes(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """Every attribute of a successful call, and no error attributes."""
    runtime = make_runtime(add)
    with runtime.plan("plan-a") as ctx:
        result = runtime.execute("add", {"a": 1, "b": 2}, ctx)
    assert result.trace is not None
    span = _one(exporter, "execute_tool add")
    assert span.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": result.trace.call_id,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "toolcycle.plan_id": "plan-a",
        "toolcycle.call_id": result.trace.call_id,
        "toolcycle.status": "ok",
        "toolcycle.duration_ms": result.trace.duration_ms,
        "toolcycle.result_size_bytes": result.trace.result_size_bytes,
    }
    assert span.status.status_code is StatusCode.UNSET


def test_a_tool_without_a_description_has_no_description_attribute(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """An empty description is left out rather than recorded as an empty string."""
    runtime = make_runtime(Bare())
    with runtime.plan() as ctx:
        runtime.execute("bare", {}, ctx)
    attributes = _attributes(_one(exporter, "execute_tool bare"))
    assert "gen_ai.tool.description" not in attributes
    assert attributes["gen_ai.tool.type"] == "function"


def test_an_mcp_tool_is_recorded_as_an_extension(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A tool whose descriptor comes from an MCP source has gen_ai.tool.type extension."""
    runtime = make_runtime(Bare("remote", source="mcp"))
    with runtime.plan() as ctx:
        runtime.execute("remote", {}, ctx)
    assert _attributes(_one(exporter, "execute_tool remote"))["gen_ai.tool.type"] == "extension"


def test_a_model_tool_call_id_becomes_the_genai_call_id(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """runtime.call with an OpenAI tool call records the model's id; toolcycle's id stays."""
    runtime = make_runtime(add)
    openai_call = {
        "id": "call_abc",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})},
    }
    with runtime.plan() as ctx:
        result = runtime.call(openai_call, ctx)
    assert result.success and result.trace is not None
    attributes = _attributes(_one(exporter, "execute_tool add"))
    assert attributes["gen_ai.tool.call.id"] == "call_abc"
    assert attributes["toolcycle.call_id"] == result.trace.call_id


# -- parents and children ----------------------------------------------------------------


def test_the_call_span_is_a_child_of_the_callers_current_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """A call made inside the caller's span is recorded under it, in the same trace."""
    runtime = make_runtime(add)
    with runtime.plan() as ctx, tracer.start_as_current_span("agent turn") as turn:
        runtime.execute("add", {"a": 1, "b": 2}, ctx)
    span = _one(exporter, "execute_tool add")
    assert _parent_id(span) == _span_id(turn)
    assert span.context.trace_id == turn.get_span_context().trace_id


def test_a_call_without_a_current_span_is_a_root_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """With no span around the call, its span starts a trace of its own."""
    runtime = make_runtime(add)
    with runtime.plan() as ctx:
        runtime.execute("add", {"a": 1, "b": 2}, ctx)
    assert _one(exporter, "execute_tool add").parent is None


def _nesting_tools(tracer: trace.Tracer) -> tuple[Any, Any]:
    """A sync and an async tool that each start a span of their own and note the current one."""

    @tool(name="sync_inner", writes=False)
    def sync_inner() -> int:
        """Start a span inside the tool."""
        with tracer.start_as_current_span("inner sync"):
            pass
        return _span_id(trace.get_current_span())

    @tool(name="async_inner", writes=False)
    async def async_inner() -> int:
        """Start a span inside the async tool."""
        await asyncio.sleep(0)
        with tracer.start_as_current_span("inner async"):
            pass
        return _span_id(trace.get_current_span())

    return sync_inner, async_inner


def _assert_nested(exporter: InMemorySpanExporter, tool_name: str, inner: str, seen: int) -> None:
    call = _one(exporter, f"execute_tool {tool_name}")
    assert seen == call.context.span_id, "the call's span is current inside the tool"
    assert _parent_id(_one(exporter, inner)) == call.context.span_id


def test_a_span_started_in_a_sync_tool_nests_under_the_call(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """Sync tool through execute: its own span is a child of the execute_tool span."""
    runtime = make_runtime(*_nesting_tools(tracer))
    with runtime.plan() as ctx:
        seen = runtime.execute("sync_inner", {}, ctx).output
    _assert_nested(exporter, "sync_inner", "inner sync", seen)


async def test_a_span_started_in_an_async_tool_nests_under_the_call(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """Async tool through aexecute: its own span is a child of the execute_tool span."""
    runtime = make_runtime(*_nesting_tools(tracer))
    async with runtime.aplan() as ctx:
        seen = (await runtime.aexecute("async_inner", {}, ctx)).output
    _assert_nested(exporter, "async_inner", "inner async", seen)


async def test_a_sync_tool_through_aexecute_still_nests_under_the_call(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """A sync tool awaited through aexecute runs on a worker thread and still nests."""
    runtime = make_runtime(*_nesting_tools(tracer))
    async with runtime.aplan() as ctx:
        seen = (await runtime.aexecute("sync_inner", {}, ctx)).output
    _assert_nested(exporter, "sync_inner", "inner sync", seen)


def test_an_async_tool_through_sync_execute_still_nests_under_the_call(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """An async tool run by the sync execute (on another loop) still nests under the call."""
    runtime = make_runtime(*_nesting_tools(tracer))
    with runtime.plan() as ctx:
        seen = runtime.execute("async_inner", {}, ctx).output
    _assert_nested(exporter, "async_inner", "inner async", seen)


# -- the caller's span comes back ----------------------------------------------------------


def _cancelled_plan(runtime: ToolRuntime) -> ToolExecutionContext:
    ctx = runtime.new_context()
    ctx.cancellation_token.cancel("stop")
    return ctx


@pytest.mark.parametrize(
    ("how", "tool_name", "params", "options", "raised"),
    [
        ("succeeds", "add", {"a": 1, "b": 2}, {}, None),
        ("fails", "fail", {"reason": "no"}, {}, None),
        ("is refused", "write_note", {"text": "x"}, {"read_only": True}, ToolAccessDeniedError),
        ("is unknown", "missing", {}, {}, ToolNotFoundError),
    ],
)
def test_the_callers_span_is_current_again_after_a_call(
    make_runtime: MakeRuntime,
    tracer: trace.Tracer,
    how: str,
    tool_name: str,
    params: dict[str, Any],
    options: dict[str, Any],
    raised: type[Exception] | None,
) -> None:
    """Whether the call returns or raises, the caller's span is current afterwards."""
    runtime = make_runtime(add, fail, write_note)
    with runtime.plan(**options) as ctx, tracer.start_as_current_span("caller") as caller:
        if raised is None:
            runtime.execute(tool_name, params, ctx)
        else:
            with pytest.raises(raised):
                runtime.execute(tool_name, params, ctx)
        assert trace.get_current_span() is caller, how


def test_the_callers_span_is_current_again_after_a_cancelled_call(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """A call of a cancelled plan raises; its span is recorded and the caller's is restored."""
    runtime = make_runtime(add)
    ctx = _cancelled_plan(runtime)
    with tracer.start_as_current_span("caller") as caller:
        with pytest.raises(ToolCancelledError):
            runtime.execute("add", {"a": 1, "b": 2}, ctx)
        assert trace.get_current_span() is caller
    runtime.end_plan(ctx)
    span = _one(exporter, "execute_tool add")
    assert _attributes(span)["toolcycle.status"] == "cancelled"
    assert _attributes(span)["error.type"] == "ToolCancelledError"
    assert span.status.status_code is StatusCode.ERROR


async def test_the_callers_span_is_current_again_after_an_async_call(
    make_runtime: MakeRuntime, tracer: trace.Tracer
) -> None:
    """Aexecute restores the caller's span, after a result and after a refusal."""
    runtime = make_runtime(add, write_note)
    async with runtime.aplan(read_only=True) as ctx:
        with tracer.start_as_current_span("caller") as caller:
            await runtime.aexecute("add", {"a": 1, "b": 2}, ctx)
            assert trace.get_current_span() is caller
            with pytest.raises(ToolAccessDeniedError):
                await runtime.aexecute("write_note", {"text": "x"}, ctx)
            assert trace.get_current_span() is caller


async def test_a_streamed_call_leaves_the_consumers_span_current(
    make_runtime: MakeRuntime,
    exporter: InMemorySpanExporter,
    tracer: trace.Tracer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Astream's span is a child of the consumer's span, which is current again after it."""
    runtime = make_runtime(add)
    async with runtime.aplan() as ctx:
        with tracer.start_as_current_span("caller") as caller:
            items = [item async for item in runtime.astream("add", {"a": 1, "b": 2}, ctx)]
            assert trace.get_current_span() is caller
            with tracer.start_as_current_span("next step"):
                pass
    assert items[-1].success
    call = _one(exporter, "execute_tool add")
    assert _parent_id(call) == _span_id(caller)
    assert _parent_id(_one(exporter, "next step")) == _span_id(caller)
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]


# -- failures --------------------------------------------------------------------------------


def test_a_tool_that_raises_gives_an_error_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """error.type is the exception's class; the status is ERROR with the trace's error."""
    runtime = make_runtime(fail)
    with runtime.plan() as ctx:
        result = runtime.execute("fail", {"reason": "bad value"}, ctx)
    span = _one(exporter, "execute_tool fail")
    attributes = _attributes(span)
    assert attributes["error.type"] == "ValueError"
    assert attributes["toolcycle.status"] == "error"
    assert attributes["toolcycle.result_size_bytes"] == 0
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == result.error


def test_a_validation_failure_gives_an_error_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """Invalid arguments: status invalid_input, error.type from the trace, ERROR status."""
    runtime = make_runtime(add)
    with runtime.plan() as ctx:
        result = runtime.execute("add", {"a": "one", "b": 2}, ctx)
    assert result.trace is not None
    span = _one(exporter, "execute_tool add")
    attributes = _attributes(span)
    assert attributes["toolcycle.status"] == "invalid_input"
    assert attributes["error.type"] == result.trace.error_type == "ToolSchemaValidationError"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == result.error


def test_a_denied_call_gives_an_error_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A refusal by the capability check is an error span with status denied."""
    runtime = make_runtime(write_note)
    with runtime.plan(read_only=True) as ctx, pytest.raises(ToolAccessDeniedError):
        runtime.execute("write_note", {"text": "x"}, ctx)
    span = _one(exporter, "execute_tool write_note")
    attributes = _attributes(span)
    assert attributes["toolcycle.status"] == "denied"
    assert attributes["error.type"] == "ToolAccessDeniedError"
    assert span.status.status_code is StatusCode.ERROR


def test_a_call_waiting_for_approval_is_not_an_error_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A deferred call has not failed: status pending, no error.type, the span status unset."""
    from toolcycle.approvals import ApprovalDecision

    runtime = make_runtime(write_note)
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("ask a person")) as ctx:
        result = runtime.execute("write_note", {"text": "x"}, ctx)
    assert result.pending is not None
    span = _one(exporter, "execute_tool write_note")
    attributes = _attributes(span)
    assert attributes["toolcycle.status"] == "pending"
    assert "error.type" not in attributes
    assert span.status.status_code is StatusCode.UNSET


async def test_a_models_denied_async_call_is_answered_and_gives_an_error_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A refused async model call is answered, and its span records the denial."""
    runtime = make_runtime(write_note)
    async with runtime.aplan(read_only=True) as ctx:
        call = {"id": "m1", "name": "write_note", "arguments": {"text": "x"}}
        result = await runtime.acall(call, ctx)
    assert result.error_type == "ToolAccessDeniedError"
    attributes = _attributes(_one(exporter, "execute_tool write_note"))
    assert (attributes["gen_ai.tool.call.id"], attributes["toolcycle.status"]) == ("m1", "denied")


def test_a_timeout_gives_an_error_span_with_status_timed_out(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """An async tool over its timeout: status timed_out, not abandoned, ERROR status."""
    runtime = make_runtime(wait_forever)
    with runtime.plan() as ctx:
        result = runtime.execute("wait_forever", {}, ctx, timeout=0.05)
    assert result.trace is not None and result.trace.status == "timed_out"
    span = _one(exporter, "execute_tool wait_forever")
    attributes = _attributes(span)
    assert attributes["toolcycle.status"] == "timed_out"
    assert attributes["error.type"] == result.trace.error_type == "TimeoutError"
    assert "toolcycle.abandoned" not in attributes
    assert span.status.status_code is StatusCode.ERROR


def test_an_abandoned_sync_call_is_flagged(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A sync tool left running at its timeout sets toolcycle.abandoned."""
    blocking = Blocking()
    runtime = make_runtime(blocking)
    try:
        with runtime.plan() as ctx:
            runtime.execute("blocking", {}, ctx, timeout=0.05)
            blocking.release.set()
    finally:
        blocking.release.set()
    attributes = _attributes(_one(exporter, "execute_tool blocking"))
    assert attributes["toolcycle.abandoned"] is True
    assert attributes["toolcycle.status"] == "timed_out"


def test_error_type_falls_back_to_the_status(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A failed trace without an error type records its status as error.type."""
    OpenTelemetry(tracer_provider=provider).call_started(
        tool_name="add",
        descriptor=None,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    ).finish(_trace(success=False, status="cancelled", error="plan 'p1' was cancelled"))
    span = _one(exporter, "execute_tool add")
    assert _attributes(span)["error.type"] == "cancelled"
    assert span.status.description == "plan 'p1' was cancelled"


# -- payloads --------------------------------------------------------------------------------


def test_no_payload_is_recorded_by_default(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """Without record_payloads, neither the arguments nor the result are on the span."""
    runtime = make_runtime(add)
    with runtime.plan() as ctx:
        runtime.execute("add", {"a": 40, "b": 2}, ctx)
    attributes = _attributes(_one(exporter, "execute_tool add"))
    assert "gen_ai.tool.call.arguments" not in attributes
    assert "gen_ai.tool.call.result" not in attributes


def test_payloads_are_recorded_as_compact_json_when_asked(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """With record_payloads, the arguments and the result are compact JSON text."""
    runtime = make_runtime(add, record_payloads=True)
    with runtime.plan() as ctx:
        runtime.execute("add", {"a": 40, "b": 2}, ctx)
    attributes = _attributes(_one(exporter, "execute_tool add"))
    assert attributes["gen_ai.tool.call.arguments"] == '{"a":40,"b":2}'
    assert attributes["gen_ai.tool.call.result"] == "42"


def test_a_failed_call_records_its_arguments_but_no_result(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A result is recorded only for a call that succeeded."""
    runtime = make_runtime(fail, record_payloads=True)
    with runtime.plan() as ctx:
        runtime.execute("fail", {"reason": "no"}, ctx)
    attributes = _attributes(_one(exporter, "execute_tool fail"))
    assert attributes["gen_ai.tool.call.arguments"] == '{"reason":"no"}'
    assert "gen_ai.tool.call.result" not in attributes


@tool(writes=False)
def issue_token(rows: int) -> dict[str, Any]:
    """Return a fresh access token with some rows of data."""
    return {"access_token": SECRET, "rows": list(range(rows))}


@pytest.mark.parametrize("rows", [3, 1000], ids=["whole", "cut by max_result_bytes"])
def test_a_secret_in_an_output_never_reaches_a_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, rows: int
) -> None:
    """A value under a sensitive output key is redacted, also when the output was cut."""
    instrumentation = OpenTelemetry(tracer_provider=provider, record_payloads=True)
    with ToolRuntime(
        tracer=NullTracer(), instrumentation=instrumentation, max_result_bytes=200
    ) as runtime:
        runtime.register(issue_token)
        with runtime.plan() as ctx:
            result = runtime.execute("issue_token", {"rows": rows}, ctx)
    assert result.truncated is (rows > 3)
    assert SECRET not in _exported_text(exporter)
    recorded = str(
        _attributes(_one(exporter, "execute_tool issue_token"))["gen_ai.tool.call.result"]
    )
    shown = json.loads(recorded)
    if result.truncated:  # the cut text the model saw, with the secret redacted
        assert shown.startswith('{"access_token":"[redacted]","rows":[0,1,2')
        assert "cut: output was" in shown
    else:
        assert shown == {"access_token": "[redacted]", "rows": [0, 1, 2]}


def test_a_long_payload_is_cut_to_the_cap_with_a_marker(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """JSON text over max_payload_chars is cut to fit and says how long it was."""
    runtime = make_runtime(shout, record_payloads=True, max_payload_chars=80)
    with runtime.plan() as ctx:
        runtime.execute("shout", {"text": "abc" * 20}, ctx)
    attributes = _attributes(_one(exporter, "execute_tool shout"))
    result = str(attributes["gen_ai.tool.call.result"])
    assert len(result) <= 80
    assert result.startswith('"ABCABC')
    assert result.endswith("[cut: 602 characters, limit 80]")
    assert len(str(attributes["gen_ai.tool.call.arguments"])) <= 80


def test_a_secret_argument_never_reaches_a_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """Even with payloads on, a password is redacted in every exported attribute."""
    runtime = make_runtime(login, _failing_login(), record_payloads=True)
    with runtime.plan() as ctx:
        assert runtime.execute("login", {"user": "ada", "password": SECRET}, ctx).success
        # This tool puts the password into its error message, which the span records.
        assert not runtime.execute("failing_login", {"password": SECRET}, ctx).success
    exported = _exported_text(exporter)
    assert SECRET not in exported
    attributes = _attributes(_one(exporter, "execute_tool login"))
    assert json.loads(str(attributes["gen_ai.tool.call.arguments"])) == {
        "user": "ada",
        "password": "[redacted]",
    }
    assert "[redacted]" in str(_one(exporter, "execute_tool failing_login").status.description)


def _failing_login() -> Any:
    @tool(name="failing_login", writes=False)
    def failing_login(password: str) -> None:
        """Fail, quoting the password."""
        raise PermissionError(f"wrong password {password}")

    return failing_login


# -- activation and deactivation ---------------------------------------------------------


def test_activation_is_a_span_under_the_first_calls_span(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """The first call activates the tool inside its own span; later calls do not."""
    runtime = make_runtime(add)
    with runtime.plan("plan-a") as ctx:
        runtime.execute("add", {"a": 1, "b": 2}, ctx)
        runtime.execute("add", {"a": 3, "b": 4}, ctx)
    first = _spans(exporter, "execute_tool add")[0]
    activation = _one(exporter, "activate_tool add")
    assert _parent_id(activation) == first.context.span_id
    assert activation.kind is SpanKind.INTERNAL
    assert activation.attributes == {
        "gen_ai.tool.name": "add",
        "toolcycle.plan_id": "plan-a",
        "toolcycle.stage": "activate",
    }
    assert activation.status.status_code is StatusCode.UNSET


def test_deactivation_is_a_span_recorded_when_the_plan_ends(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter, tracer: trace.Tracer
) -> None:
    """end_plan deactivates the tool in a deactivate_tool span under the caller's span."""
    runtime = make_runtime(add)
    ctx = runtime.new_context("plan-b")
    runtime.execute("add", {"a": 1, "b": 2}, ctx)
    assert _spans(exporter, "deactivate_tool add") == []
    with tracer.start_as_current_span("shutdown") as shutdown:
        assert runtime.end_plan(ctx) == []
    deactivation = _one(exporter, "deactivate_tool add")
    assert _attributes(deactivation)["toolcycle.stage"] == "deactivate"
    assert _attributes(deactivation)["toolcycle.plan_id"] == "plan-b"
    assert _parent_id(deactivation) == _span_id(shutdown)


def test_a_failed_activation_marks_both_spans_as_errors(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """The activation span carries the exception's type; the call's span fails too."""
    runtime = make_runtime(Unavailable("unavailable"))
    with runtime.plan() as ctx, pytest.raises(toolcycle.ToolActivationError):
        runtime.execute("unavailable", {}, ctx)
    activation = _one(exporter, "activate_tool unavailable")
    assert _attributes(activation)["error.type"] == "ConnectionError"
    assert activation.status.status_code is StatusCode.ERROR
    assert activation.status.description == "the backend is down"
    call = _one(exporter, "execute_tool unavailable")
    assert call.status.status_code is StatusCode.ERROR
    assert _parent_id(activation) == call.context.span_id


class Traced:
    """A tool whose ``activate`` and ``deactivate`` each start a span; sync or async."""

    def __init__(self, tracer: trace.Tracer, *, asynchronous: bool) -> None:
        self.tracer = tracer
        if asynchronous:
            self.activate = self._aactivate  # type: ignore[method-assign]
            self.deactivate = self._adeactivate  # type: ignore[method-assign]

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="traced", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        self._inner("activate")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ok"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self._inner("deactivate")

    async def _aactivate(self, ctx: ToolExecutionContext) -> None:
        await asyncio.sleep(0)
        self._inner("activate")

    async def _adeactivate(self, ctx: ToolExecutionContext) -> None:
        await asyncio.sleep(0)
        self._inner("deactivate")

    def _inner(self, stage: str) -> None:
        with self.tracer.start_as_current_span(f"inner {stage}"):
            pass


STAGE_WAYS = [
    (kind, way, limit)
    for kind in ("sync", "async")
    for way in ("execute", "aexecute")
    for limit in (None, WAIT)
]


@pytest.mark.parametrize(
    ("kind", "way", "limit"),
    STAGE_WAYS,
    ids=[f"{kind} tool, {way}, deactivate limit {limit}" for kind, way, limit in STAGE_WAYS],
)
def test_spans_a_tool_starts_in_activate_and_deactivate_nest_under_the_stage_span(
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    tracer: trace.Tracer,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    way: str,
    limit: float | None,
) -> None:
    """The stage's span is current while the stage runs; the caller's is current after it."""
    runtime = ToolRuntime(
        tracer=NullTracer(),
        deactivate_timeout=limit,
        instrumentation=OpenTelemetry(tracer_provider=provider),
    )
    runtime.register(Traced(tracer, asynchronous=kind == "async"))

    def run_sync() -> list[bool]:
        current = []
        with tracer.start_as_current_span("caller") as caller:
            with runtime.plan() as ctx:
                runtime.execute("traced", {}, ctx)
                current.append(trace.get_current_span() is caller)
            current.append(trace.get_current_span() is caller)
        return current

    async def run_async() -> list[bool]:
        current = []
        with tracer.start_as_current_span("caller") as caller:
            async with runtime.aplan() as ctx:
                await runtime.aexecute("traced", {}, ctx)
                current.append(trace.get_current_span() is caller)
            current.append(trace.get_current_span() is caller)
        return current

    try:
        current = run_sync() if way == "execute" else asyncio.run(run_async())
    finally:
        runtime.close()
    assert current == [True, True]
    for stage in ("activate", "deactivate"):
        stage_span = _one(exporter, f"{stage}_tool traced")
        assert _parent_id(_one(exporter, f"inner {stage}")) == stage_span.context.span_id
    assert _parent_id(_one(exporter, "activate_tool traced")) == (
        _one(exporter, "execute_tool traced").context.span_id
    )
    assert _parent_id(_one(exporter, "deactivate_tool traced")) == (
        _one(exporter, "caller").context.span_id
    )
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]


def test_a_stage_span_finished_in_another_context_ends_without_raising(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A stage's finish that cannot restore the context still ends its span."""
    otel = OpenTelemetry(tracer_provider=provider)
    observer = contextvars.copy_context().run(
        lambda: otel.stage_started("activate", tool_name="add", ctx=ToolExecutionContext("p1"))
    )
    contextvars.copy_context().run(observer.finish, None)
    observer.finish(None)  # a second finish does nothing
    assert [span.name for span in exporter.get_finished_spans()] == ["activate_tool add"]


# -- the optional dependency -------------------------------------------------------------


def test_importing_toolcycle_does_not_import_opentelemetry() -> None:
    """Only toolcycle.otel imports opentelemetry; the package itself does not."""
    code = (
        "import sys, toolcycle, toolcycle.instrumentation\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_a_missing_opentelemetry_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without opentelemetry, importing toolcycle.otel says which extra to install."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "toolcycle.otel")
    with pytest.raises(
        ImportError,
        match=r"pip install -e '\.\[otel\]' from a clone \(toolcycle\[otel\] once published\)",
    ):
        importlib.import_module("toolcycle.otel")


@pytest.mark.parametrize("limit", [1, 3, 20, 40, 200])
def test_a_cut_payload_never_exceeds_max_payload_chars(limit: int) -> None:
    from toolcycle._span_payloads import capped as cap

    capped = cap("x" * 500, limit)
    assert len(capped) <= limit
    assert ("[cut: 500 characters" in capped) == (limit >= 40)
    assert capped.startswith("x" if limit > 3 else ".")


# -- hostile payloads ----------------------------------------------------------------------


class _Unprintable:
    """An object whose text form raises, as a tool's own objects may."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def _finish_with(provider: TracerProvider, **payloads: Any) -> None:
    observer = OpenTelemetry(tracer_provider=provider, record_payloads=True).call_started(
        tool_name="add",
        descriptor=None,
        ctx=ToolExecutionContext("p1"),
        call_id="c1",
        tool_call_id=None,
    )
    observer.finish(_trace(result_size_bytes=1), **payloads)


def test_a_payload_that_cannot_be_written_leaves_a_note_and_keeps_the_outcome(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Arguments that raise while written, or nest past the encoder, do not cost the status."""
    nested: Any = 1
    for _ in range(20_000):
        nested = [nested]
    _finish_with(provider, arguments={"x": _Unprintable()}, output=nested)
    attributes = _attributes(_one(exporter, "execute_tool add"))
    assert attributes["toolcycle.status"] == "ok"
    assert attributes["gen_ai.tool.call.arguments"] == "[not recorded: RuntimeError]"
    assert attributes["gen_ai.tool.call.result"] == "[not recorded: RecursionError]"


def test_a_lone_surrogate_in_a_payload_is_written_as_its_json_escape(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Span attributes stay valid Unicode: a lone surrogate shows as its JSON escape."""
    _finish_with(provider, arguments={"k\udc80": "a\ud800b"}, output=10**5000)
    attributes = _attributes(_one(exporter, "execute_tool add"))
    text = str(attributes["gen_ai.tool.call.arguments"])
    text.encode("utf-8")  # would raise for a lone surrogate
    assert json.loads(text) == {"k\udc80": "a\ud800b"}
    assert attributes["gen_ai.tool.call.result"] == "[not recorded: ValueError]"


# -- tool search -------------------------------------------------------------------------


def test_a_tool_search_span_lists_the_revealed_tools(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A search_tools call gets a span whose toolcycle.tool_search.revealed names what it found."""
    runtime = make_runtime(add)
    runtime.register(shout, defer_loading=True)
    with runtime.plan() as ctx:
        runtime.call({"name": "search_tools", "arguments": {"query": "repeat capitals"}}, ctx)
        runtime.call({"name": "add", "arguments": {"a": 1, "b": 2}}, ctx)
    span = _one(exporter, "execute_tool search_tools")
    assert _attributes(span)["toolcycle.tool_search.revealed"] == ("shout",)
    assert "toolcycle.tool_search.revealed" not in _attributes(_one(exporter, "execute_tool add"))


def test_a_stage_past_its_limit_names_a_public_error_type(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """An activate that outlives activate_timeout is a TimeoutError on its span, as on calls."""
    release = threading.Event()

    class Slow(toolcycle.testing.FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            release.wait(WAIT)

    runtime = ToolRuntime(
        tracer=NullTracer(),
        instrumentation=OpenTelemetry(tracer_provider=provider),
        activate_timeout=0.05,
    )
    try:
        runtime.register(Slow(name="slow"))
        with runtime.plan() as ctx, pytest.raises(toolcycle.ToolActivationError):
            runtime.execute("slow", {}, ctx)
    finally:
        release.set()
        runtime.close()
    span = _one(exporter, "activate_tool slow")
    assert _attributes(span)["error.type"] == "TimeoutError"
    [event] = span.events
    assert dict(event.attributes or {})["exception.type"] == "TimeoutError"


def test_a_search_in_a_cancelled_plan_ends_its_span_as_cancelled(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """The refused search still ends its span, with the cancellation as its error."""
    runtime = make_runtime(add)
    runtime.register(shout, defer_loading=True)
    with runtime.plan() as ctx:
        ctx.cancellation_token.cancel("stop")
        with pytest.raises(ToolCancelledError):
            runtime.call({"name": "search_tools", "arguments": {"query": "capitals"}}, ctx)
    span = _one(exporter, "execute_tool search_tools")
    assert _attributes(span)["error.type"] == "ToolCancelledError"
    assert span.status.status_code is StatusCode.ERROR


def test_a_search_behind_a_call_that_ended_the_plan_ends_its_span_as_an_error(
    make_runtime: MakeRuntime, exporter: InMemorySpanExporter
) -> None:
    """A batch's search refused because an earlier call ended the plan still ends its span."""
    runtime = make_runtime()
    runtime.register(shout, defer_loading=True)
    ctx = runtime.new_context()

    @tool(writes=False, sequential=True)
    def finish() -> str:
        """End the plan this call runs in."""
        runtime.end_plan(ctx)
        return "ended"

    runtime.register(finish)
    batch = [
        {"name": "finish", "arguments": {}},
        {"name": "search_tools", "arguments": {"query": "capitals"}},
    ]
    with pytest.raises(toolcycle.ToolRuntimeError, match="has ended"):
        runtime.call_many(batch, ctx)
    span = _one(exporter, "execute_tool search_tools")
    assert _attributes(span)["error.type"] == "ToolRuntimeError"
    assert span.status.status_code is StatusCode.ERROR
