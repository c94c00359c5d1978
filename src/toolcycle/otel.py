"""OpenTelemetry spans for tool calls and lifecycle stages (``toolcycle[otel]``).

Usage::

    from toolcycle import ToolRuntime
    from toolcycle.otel import OpenTelemetry

    runtime = ToolRuntime(instrumentation=OpenTelemetry())

Every call that reaches the runtime (``execute``, ``aexecute``, ``call``)
becomes one span named ``execute_tool {tool name}``, following the
OpenTelemetry GenAI semantic conventions: it carries ``gen_ai.operation.name``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` and
``gen_ai.tool.description``, and toolcycle's own ``toolcycle.*`` attributes
taken from the call's trace (plan, call id, status, duration, result size,
the kinds and bytes of a result's content parts but never their data, and
``toolcycle.cache_hit`` for a result answered from the result cache). A
failed call also gets ``error.type`` and the span status ERROR; a call that
waits for an approval or an answer (status ``pending``) has not failed, and
gets neither. A tool search
(``search_tools``) lists what it revealed in ``toolcycle.tool_search.revealed``.
Each guardrail decision is a ``toolcycle.guardrail`` event on the span (name, stage, outcome,
message), and ``toolcycle.guardrails`` lists them as ``stage:name:outcome``.
The span is the current span while the tool runs, so spans the tool starts
itself nest under it. Each progress report of the call (``ctx.report_progress``,
an MCP server's notifications) is a span event named ``toolcycle.progress`` with
the attributes ``progress`` and, when given, ``total`` and ``message``. Each
``activate`` and ``deactivate`` becomes a span of its own,
``activate_tool {tool name}`` or ``deactivate_tool {tool name}``, current while
the stage runs, so spans the tool starts there nest under it too.

Arguments and results are not recorded unless ``record_payloads=True``. They
are what a model and a tool exchange, which may be personal data or secrets a
redaction pattern does not recognise, and they can be large; the conventions
ask instrumentations to leave them out unless the user opts in. When they are
recorded, the arguments have already passed through the runtime's
`RedactionPolicy`, and each is cut to ``max_payload_chars`` characters.

Spans go to the tracer provider given, or to the host's global one (which
does nothing until the host configures OpenTelemetry); this module never
changes global OpenTelemetry state. It is the only part of toolcycle that
imports ``opentelemetry``.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
except ImportError as exc:
    raise ImportError(
        "toolcycle.otel needs the OpenTelemetry API, which is an optional extra: "
        "pip install -e '.[otel]' from a clone (toolcycle[otel] once published)"
    ) from exc

from toolcycle import __version__
from toolcycle._span_payloads import payload_text
from toolcycle.errors import cut_error_text, shown_value
from toolcycle.instrumentation import CallObserver, Instrumentation, StageObserver

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.util.types import AttributeValue

    from toolcycle import (
        ProgressEvent,
        SourceKind,
        ToolDescriptor,
        ToolExecutionContext,
        ToolExecutionTrace,
    )
    from toolcycle.instrumentation import Stage

__all__ = ["OpenTelemetry"]

_DEFAULT_MAX_PAYLOAD_CHARS = 4096
"""Characters of JSON text kept for each recorded argument or result payload."""

_TRACER_NAME = "toolcycle"
_PROGRESS_EVENT = "toolcycle.progress"

# The conventions know three kinds of tool. Tools that run in this process
# (functions, the built-in tools, custom ToolInstance objects, Agent Skills)
# are functions; an MCP tool runs in a server that reaches the outside world on
# the agent's behalf, which is what the conventions call an extension.
_TOOL_TYPES: dict[str, str] = {
    "builtin": "function",
    "custom": "function",
    "mcp": "extension",
    "skill": "function",
    "wrapped": "function",
}

_log = logging.getLogger("toolcycle.otel")


class OpenTelemetry(Instrumentation):
    """Records each call and each lifecycle stage as an OpenTelemetry span.

    Args:
        tracer_provider: where spans go; by default the global tracer provider
            of the host (``opentelemetry.trace.get_tracer_provider()``), which
            drops everything until the host configures OpenTelemetry.
        record_payloads: also record each call's arguments (after redaction) as
            ``gen_ai.tool.call.arguments`` and a successful call's output as
            ``gen_ai.tool.call.result``, as compact JSON text. Off by default:
            payloads may hold personal data and can be large.
        max_payload_chars: the longest JSON text recorded for one payload, in
            characters (4096 by default); a longer text is cut and ends with a
            marker saying how long it was.

    Raises:
        TypeError: ``max_payload_chars`` is not an integer.
        ValueError: ``max_payload_chars`` is not positive.
    """

    def __init__(
        self,
        *,
        tracer_provider: otel_trace.TracerProvider | None = None,
        record_payloads: bool = False,
        max_payload_chars: int = _DEFAULT_MAX_PAYLOAD_CHARS,
    ) -> None:
        if isinstance(max_payload_chars, bool) or not isinstance(max_payload_chars, int):
            raise TypeError(
                f"max_payload_chars must be an integer, got {shown_value(max_payload_chars)}"
            )
        if max_payload_chars < 1:
            raise ValueError(
                f"max_payload_chars must be positive, got {shown_value(max_payload_chars)}"
            )
        self._tracer = otel_trace.get_tracer(
            _TRACER_NAME, __version__, tracer_provider=tracer_provider
        )
        self.record_payloads = record_payloads
        self.max_payload_chars = max_payload_chars

    def call_started(
        self,
        *,
        tool_name: str,
        descriptor: ToolDescriptor | None,
        ctx: ToolExecutionContext,
        call_id: str,
        tool_call_id: str | None,
    ) -> CallObserver:
        """Start the call's ``execute_tool`` span and make it the current span.

        Args:
            tool_name: the name the call was made with ("" for a model's call
                that named none: the span is then plain ``execute_tool``).
            descriptor: the tool's descriptor; None when no tool has that name.
            ctx: the plan's context.
            call_id: the runtime's id of the call.
            tool_call_id: the model's id of the call, when there is one; it is
                preferred to ``call_id`` for ``gen_ai.tool.call.id``.

        Returns:
            The observer that ends the span when the call ends.
        """
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.id": tool_call_id or call_id,
            "toolcycle.plan_id": ctx.plan_id,
            "toolcycle.call_id": call_id,
        }
        if tool_name:  # a model's call that named no tool has no name to give
            attributes["gen_ai.tool.name"] = tool_name
        if descriptor is not None:
            attributes["gen_ai.tool.type"] = _tool_type(descriptor.source)
            if descriptor.description:
                attributes["gen_ai.tool.description"] = descriptor.description
        span = self._start(f"execute_tool {tool_name}".rstrip(), attributes)
        token = _attach(span, tool_name)
        return _CallSpan(span, token, self.record_payloads, self.max_payload_chars)

    def stage_started(
        self, stage: Stage, *, tool_name: str, ctx: ToolExecutionContext
    ) -> StageObserver:
        """Start an ``activate_tool`` or ``deactivate_tool`` span under the current span.

        The span is the current span until the stage's ``finish``, so spans
        the tool starts in its ``activate`` or ``deactivate`` nest under it.

        Args:
            stage: ``"activate"`` or ``"deactivate"``.
            tool_name: the tool whose stage runs.
            ctx: the plan's context.

        Returns:
            The observer that ends the span when the stage ends.
        """
        attributes: dict[str, AttributeValue] = {
            "gen_ai.tool.name": tool_name,
            "toolcycle.plan_id": ctx.plan_id,
            "toolcycle.stage": stage,
        }
        span = self._start(f"{stage}_tool {tool_name}", attributes)
        return _StageSpan(span, _attach(span, tool_name))

    def _start(self, name: str, attributes: dict[str, AttributeValue]) -> otel_trace.Span:
        """Start an internal span under the current one; a span that records nothing on failure."""
        try:
            return self._tracer.start_span(
                name, kind=otel_trace.SpanKind.INTERNAL, attributes=attributes
            )
        except Exception as exc:
            _log.debug("could not start the span %r: %r", name, exc)
            return otel_trace.INVALID_SPAN


class _CallSpan(CallObserver):
    """The span of one call, current from ``call_started`` until ``finish``."""

    def __init__(
        self,
        span: otel_trace.Span,
        token: Token[otel_context.Context] | None,
        record_payloads: bool,
        max_payload_chars: int,
    ) -> None:
        self._span = span
        self._token = token
        self._record_payloads = record_payloads
        self._max_payload_chars = max_payload_chars
        self._finished = False

    @property
    def record_payloads(self) -> bool:
        """Whether the span wants the call's (redacted) arguments and its output."""
        return self._record_payloads

    def finish(
        self,
        trace: ToolExecutionTrace | None,
        *,
        arguments: Any = None,
        output: Any = None,
    ) -> None:
        """Record how the call ended, end the span and restore the caller's span.

        Args:
            trace: the call's trace; None leaves the span without outcome
                attributes.
            arguments: the call's redacted arguments, when payloads are recorded.
            output: the call's output, when payloads are recorded.
        """
        if self._finished:
            return
        self._finished = True
        try:
            if trace is not None:
                self._record_outcome(trace, arguments, output)
        except Exception as exc:
            _log.debug("could not record the outcome of a call: %r", exc)
        finally:
            _end(self._span)
            _detach(self._token)
            self._token = None

    def progress(self, event: ProgressEvent) -> None:
        """Add a progress report to the span as a ``toolcycle.progress`` event.

        Called from any thread; a report that arrives once the span has ended
        (a sync tool left running past its limit) is dropped.

        Args:
            event: the report.
        """
        span = self._span
        try:
            if self._finished or not span.is_recording():
                return
            attributes: dict[str, AttributeValue] = {"progress": event.progress}
            if event.total is not None:
                attributes["total"] = event.total
            if event.message is not None:
                attributes["message"] = event.message
            span.add_event(_PROGRESS_EVENT, attributes)
        except Exception as exc:
            _log.debug("could not record a progress report: %r", exc)

    def _record_outcome(self, trace: ToolExecutionTrace, arguments: Any, output: Any) -> None:
        span = self._span
        if not span.is_recording():
            return
        attributes: dict[str, AttributeValue] = {
            "toolcycle.status": trace.status,
            "toolcycle.duration_ms": trace.duration_ms,
            "toolcycle.result_size_bytes": trace.result_size_bytes,
        }
        if trace.abandoned:
            attributes["toolcycle.abandoned"] = True
        if trace.retry:
            attributes["toolcycle.retry"] = trace.retry
        if trace.attempts:
            attributes["toolcycle.attempts"] = len(trace.attempts)
        if trace.cache_hit:
            attributes["toolcycle.cache_hit"] = True
        if trace.revealed_tools:
            attributes["toolcycle.tool_search.revealed"] = list(trace.revealed_tools)
        if trace.host is not None:  # the body ran in a plan host
            attributes["toolcycle.host"] = trace.host
            if trace.host_id is not None:
                attributes["toolcycle.host_id"] = trace.host_id
        if trace.content_kinds:  # what the model was shown, never the bytes themselves
            attributes["toolcycle.content_kinds"] = list(trace.content_kinds)
            attributes["toolcycle.content_bytes"] = trace.content_bytes
        # A call that waits (for an approval, an answer) has not failed: no error.
        failed = not trace.success and trace.status != "pending"
        if failed:
            attributes["error.type"] = trace.error_type or trace.status
        if self._record_payloads:
            limit = self._max_payload_chars
            if arguments is not None:
                key = "gen_ai.tool.call.arguments"
                attributes[key] = payload_text(arguments, limit, key)
            if trace.success:
                key = "gen_ai.tool.call.result"
                attributes[key] = payload_text(output, limit, key)
        if trace.guardrails:
            _guardrail_decisions(span, attributes, trace)
        span.set_attributes(attributes)
        if failed:
            description = trace.error or trace.status
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, description))


class _StageSpan(StageObserver):
    """The span of one ``activate`` or ``deactivate``, current until ``finish``."""

    def __init__(self, span: otel_trace.Span, token: Token[otel_context.Context] | None) -> None:
        self._span = span
        self._token = token
        self._finished = False

    def finish(self, error: BaseException | None) -> None:
        """Record the stage's error, if it raised one, end the span and restore the caller's.

        Args:
            error: what the stage raised, or None when it succeeded.
        """
        if self._finished:
            return
        self._finished = True
        span = self._span
        try:
            if error is not None and span.is_recording():
                kind = _public_type(error)
                span.set_attribute("error.type", kind)
                # The message cut as a call's error is, for the status and the event
                # alike (an exporter may drop a whole batch over one huge span); the
                # stack trace ends with the message, so it is cut too. The status goes
                # first: the event reads str(error) again, the tool's own code, which
                # may raise.
                message = cut_error_text(_message(error))
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, message))
                attributes: dict[str, AttributeValue] = {
                    "exception.type": kind,
                    "exception.message": message,
                    "exception.stacktrace": cut_error_text(
                        "".join(traceback.format_exception(error))
                    ),
                }
                span.record_exception(error, attributes=attributes)
        except Exception as exc:
            _log.debug("could not record the error of a stage: %r", exc)
        finally:
            _end(span)
            _detach(self._token)
            self._token = None


def _message(error: BaseException) -> str:
    """``str(error)``, or a stand-in naming its class when its ``__str__`` raises."""
    try:
        return str(error)
    except Exception:
        return f"<the message of a {type(error).__name__} could not be read>"


def _public_type(error: BaseException) -> str:
    """The name of the error's class, or of its nearest base outside toolcycle's private modules.

    A stage that outlives its limit raises a private subclass of `TimeoutError`;
    a span names what a reader can look up, as the call's span does. Other
    classes keep their own name wherever they are defined (``__main__``, or a
    library's private module such as ``httpx._exceptions``).
    """
    for kind in type(error).__mro__:
        parts = kind.__module__.split(".")
        if parts[0] != "toolcycle" or not any(part.startswith("_") for part in parts):
            return kind.__name__
    return type(error).__name__  # pragma: no cover - object itself is public


def _guardrail_decisions(
    span: otel_trace.Span, attributes: dict[str, AttributeValue], trace: ToolExecutionTrace
) -> None:
    """Each guardrail decision as a span event, and the names and outcomes as attributes."""
    for record in trace.guardrails:
        event: dict[str, AttributeValue] = {
            "toolcycle.guardrail.name": record.name,
            "toolcycle.guardrail.stage": record.stage,
            "toolcycle.guardrail.outcome": record.outcome,
        }
        if record.message is not None:
            event["toolcycle.guardrail.message"] = record.message
        span.add_event("toolcycle.guardrail", event)
    attributes["toolcycle.guardrails"] = [
        f"{record.stage}:{record.name}:{record.outcome}" for record in trace.guardrails
    ]


def _tool_type(source: SourceKind) -> str:
    """The GenAI ``gen_ai.tool.type`` of a tool from its source kind."""
    return _TOOL_TYPES.get(source, "function")


def _attach(span: otel_trace.Span, tool_name: str) -> Token[otel_context.Context] | None:
    """Make ``span`` the current span; the token that restores the previous one, if it could."""
    try:
        return otel_context.attach(otel_trace.set_span_in_context(span))
    except Exception as exc:  # the span still records the work, just not as a parent
        _log.debug("could not make the span of %r current: %r", tool_name, exc)
        return None


def _detach(token: Token[otel_context.Context] | None) -> None:
    """Make the span that was current before `_attach` current again."""
    if token is None:
        return
    try:
        otel_context.detach(token)
    except Exception as exc:  # detach logs and swallows its own failures; belt and braces
        _log.debug("could not restore the caller's span: %r", exc)


def _end(span: otel_trace.Span) -> None:
    """End ``span``; a failure to do so is logged, never raised."""
    try:
        span.end()
    except Exception as exc:
        _log.debug("could not end a span: %r", exc)
