"""A call's error text is cut to one size, once, after redaction: the same everywhere."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import (
    ApprovalDecision,
    ApprovalRequest,
    GuardrailCall,
    GuardrailDecision,
    GuardrailTripped,
    NullTracer,
    ToolActivationError,
    ToolDeactivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.errors import MAX_ERROR_BYTES, cut_error_text
from toolcycle.guardrails import reject, stop
from toolcycle.otel import OpenTelemetry

SECRET = "Pa55w0rd-7d1e9c"
TAIL = 4096
MIDDLE = 5_000_000
FORMATS = ("openai", "openai-responses", "anthropic", "gemini", "mcp")


def _marker(cut: int) -> str:
    return f"\n[... {cut} bytes of this error cut ...]\n"


# Where the kept beginning of a 5 MB error ends (the marker's count has 7 digits).
HEAD = MAX_ERROR_BYTES - len(_marker(1_000_000)) - TAIL


def _spans(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def hostile(secret: str) -> str:
    """About 5 MB of error text, the secret across both places where it is cut."""
    return "h" * (HEAD - 4) + secret + "m" * MIDDLE + secret + "t" * (TAIL - 6)


def expected(text: str) -> str:
    """What the runtime makes of ``text`` that quotes SECRET: redacted, then cut."""
    redacted = text.replace(SECRET, "[redacted]")
    return redacted[:HEAD] + _marker(len(redacted) - HEAD - TAIL) + redacted[-TAIL:]


# How many bytes of hostile(SECRET), once redacted, the cut leaves out.
CUT = len(hostile(SECRET).replace(SECRET, "[redacted]")) - HEAD - TAIL


def assert_no_secret(text: str) -> None:
    """No four characters of SECRET in a row, and so no half of it, are in ``text``."""
    for start in range(len(SECRET) - 3):
        assert SECRET[start : start + 4] not in text


@tool(writes=False)
def explode(password: str) -> str:
    """Fail with an error that quotes the password, twice, in 5 MB of text."""
    raise RuntimeError(hostile(password))


@tool(writes=False)
async def aexplode(password: str) -> str:
    """The async twin of explode."""
    raise RuntimeError(hostile(password))


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def runtime(exporter: InMemorySpanExporter) -> Iterator[ToolRuntime]:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = ToolRuntime(instrumentation=OpenTelemetry(tracer_provider=provider))
    rt.register(explode)
    rt.register(aexplode)
    try:
        yield rt
    finally:
        rt.close()
        provider.shutdown()


def test_the_expected_cut_text_is_exactly_the_limit() -> None:
    """The test's own expectation fills MAX_ERROR_BYTES to the byte, secret redacted."""
    text = expected(hostile(SECRET))
    assert len(text.encode()) == MAX_ERROR_BYTES == 16 * 1024
    assert_no_secret(text)


@pytest.mark.parametrize("name", ["explode", "aexplode"])
def test_execute_cuts_a_huge_error_once_after_redaction(
    runtime: ToolRuntime,
    exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
    name: str,
) -> None:
    """Execute: the result, the trace, the log record and the span carry the same cut text."""
    want = expected(hostile(SECRET))
    with caplog.at_level(logging.WARNING, logger="toolcycle.trace"), runtime.plan() as ctx:
        result = runtime.execute(name, {"password": SECRET}, ctx)
    assert not result.success and result.error_type == "RuntimeError"
    assert result.error == want
    assert result.trace is not None and result.trace.error == want
    (record,) = [r for r in caplog.records if r.name == "toolcycle.trace"]
    assert record.__dict__["error"] == want
    (span,) = _spans(exporter, f"execute_tool {name}")
    assert span.status.description == want
    # The tool's own exception is left as it was raised.
    assert result.exception is not None and str(result.exception) == hostile(SECRET)


@pytest.mark.parametrize("name", ["explode", "aexplode"])
async def test_aexecute_cuts_a_huge_error_once_after_redaction(
    runtime: ToolRuntime, exporter: InMemorySpanExporter, name: str
) -> None:
    """Aexecute cuts as execute does, for a sync tool and an async one."""
    want = expected(hostile(SECRET))
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute(name, {"password": SECRET}, ctx)
    assert result.error == want
    assert result.trace is not None and result.trace.error == want
    (span,) = _spans(exporter, f"execute_tool {name}")
    assert span.status.description == want


@pytest.mark.parametrize("name", ["explode", "aexplode"])
async def test_acall_sends_the_model_the_cut_error_in_every_format(
    runtime: ToolRuntime, name: str
) -> None:
    """A model's call reads the cut, redacted error, whatever the provider's format."""
    want = expected(hostile(SECRET))
    async with runtime.aplan() as ctx:
        result = await runtime.acall(
            {"id": "c1", "name": name, "arguments": {"password": SECRET}}, ctx
        )
    assert result.error == want
    for format in FORMATS:
        sent = json.dumps(result.to_messages(format))
        assert len(sent) < 2 * MAX_ERROR_BYTES, format
        assert json.dumps(_marker(CUT))[1:-1] in sent
        assert_no_secret(sent)


def test_a_short_error_is_left_as_it_is() -> None:
    """Text within the limit comes back as the very same object."""
    text = "é" * (MAX_ERROR_BYTES // 2)
    assert cut_error_text(text) is text


def test_the_cut_falls_on_character_boundaries() -> None:
    """Multi-byte characters are never split: the cut text is valid UTF-8 within the limit."""
    text = "€" * 20_000  # 3 bytes each
    cut = cut_error_text(text)
    assert len(cut.encode()) <= MAX_ERROR_BYTES
    head, marker, tail = cut.partition("\n[... ")
    assert set(head) == set(tail.split("\n")[-1]) == {"€"}
    kept = len(head.encode()) + len(tail.split("\n")[-1].encode())
    assert f"{len(text.encode()) - kept} bytes of this error cut" in marker + tail


def test_a_guardrail_reject_message_is_cut_in_result_trace_and_span(
    runtime: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """A guardrail's huge reject message is cut after redaction, in its record too."""

    def refuse(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject(hostile(call.arguments["password"]))

    runtime.unregister("explode")
    runtime.register(explode, input_guardrails=[refuse])
    want = expected(hostile(SECRET))
    with runtime.plan() as ctx:
        result = runtime.execute("explode", {"password": SECRET}, ctx)
    assert result.error == want
    assert result.trace is not None and result.trace.guardrails[0].message == want
    (span,) = _spans(exporter, "execute_tool explode")
    assert span.status.description == want
    (event,) = [e for e in span.events if e.name == "toolcycle.guardrail"]
    assert event.attributes is not None
    assert event.attributes["toolcycle.guardrail.message"] == want


def test_an_approval_deny_reason_is_cut_in_the_trace(runtime: ToolRuntime) -> None:
    """A denial's huge reason is cut after redaction, in the error and in the trace's record."""

    def deny(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.deny(hostile(request.arguments["password"]))

    with runtime.plan(approver=deny, approval="all") as ctx:
        result = runtime.execute("explode", {"password": SECRET}, ctx)
    assert result.error_type == "ApprovalDenied"
    assert result.error is not None and len(result.error.encode()) <= MAX_ERROR_BYTES
    assert_no_secret(result.error)
    assert result.trace is not None and result.trace.approval is not None
    assert result.trace.approval.reason == expected(hostile(SECRET))


class BadStart:
    """A tool whose activate fails with 5 MB of text."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="bad_start", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        raise OSError("a" * (HEAD + 10) + "z" * MIDDLE)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return None

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_a_failed_activation_is_cut_in_the_stage_span_and_the_models_answer(
    runtime: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """The activate span's status and exception event, and call's answer, are cut."""
    runtime.register(BadStart())
    with runtime.plan() as ctx:
        with pytest.raises(ToolActivationError) as raised:
            runtime.execute("bad_start", {}, ctx)
        answer = runtime.call({"id": "c2", "name": "bad_start", "arguments": {}}, ctx)
    assert len(str(raised.value).encode()) == MAX_ERROR_BYTES
    assert len(str(raised.value.__cause__)) == HEAD + 10 + MIDDLE  # the tool's own, whole
    assert answer.error is not None and len(answer.error.encode()) == MAX_ERROR_BYTES
    # Each call tried to activate the tool: two stage spans, the same.
    stage = _spans(exporter, "activate_tool bad_start")[0]
    assert stage.status.description == cut_error_text("a" * (HEAD + 10) + "z" * MIDDLE)
    (event,) = [e for e in stage.events if e.name == "exception"]
    assert event.attributes is not None
    for key in ("exception.message", "exception.stacktrace"):
        value = event.attributes[key]
        assert isinstance(value, str) and len(value.encode()) <= MAX_ERROR_BYTES
    assert event.attributes["exception.message"] == stage.status.description


def test_a_runtime_without_redaction_still_cuts(exporter: InMemorySpanExporter) -> None:
    """The cut does not depend on a redaction policy."""
    with ToolRuntime(tracer=NullTracer(), redaction=None) as runtime:
        runtime.register(explode)
        with runtime.plan() as ctx:
            result = runtime.execute("explode", {"password": "x"}, ctx)
    assert result.error is not None and len(result.error.encode()) == MAX_ERROR_BYTES
    assert result.error == cut_error_text(hostile("x"))


def test_a_guardrail_stop_message_is_cut_in_the_raised_error_and_the_trace(
    runtime: ToolRuntime,
) -> None:
    """GuardrailTripped and the stopped call's trace carry the same cut, redacted text."""

    def halt(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return stop(hostile(call.arguments["password"]))

    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    runtime.unregister("explode")
    runtime.register(explode, input_guardrails=[halt])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped) as raised:
        runtime.execute("explode", {"password": SECRET}, ctx)
    text = str(raised.value)
    assert len(text.encode()) <= MAX_ERROR_BYTES and "bytes of this error cut" in text
    assert_no_secret(text)
    (trace,) = traces
    assert trace.status == "stopped" and trace.error == text
    assert trace.guardrails[0].message == text


class BadEnd(BadStart):
    """A tool whose deactivate fails with 5 MB of text."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="bad_end", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        raise OSError("d" * MIDDLE)


def test_a_failed_deactivation_is_cut_in_the_plans_errors_and_the_stage_span(
    runtime: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """The ToolDeactivationError a plan's end returns, and the stage's span, are cut."""
    runtime.register(BadEnd())
    ctx = runtime.new_context()
    assert runtime.execute("bad_end", {}, ctx).success
    (error,) = runtime.end_plan(ctx)
    assert isinstance(error, ToolDeactivationError)
    assert len(str(error).encode()) == MAX_ERROR_BYTES
    assert len(str(error.__cause__)) == MIDDLE  # the tool's own, whole
    (stage,) = _spans(exporter, "deactivate_tool bad_end")
    assert stage.status.description == cut_error_text("d" * MIDDLE)
    (event,) = [e for e in stage.events if e.name == "exception"]
    assert event.attributes is not None
    assert event.attributes["exception.message"] == stage.status.description
    stacktrace = event.attributes["exception.stacktrace"]
    assert isinstance(stacktrace, str) and len(stacktrace.encode()) <= MAX_ERROR_BYTES
