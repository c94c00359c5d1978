"""The spans of `toolcycle.otel` while they are open, and how each one ends.

`toolcycle.otel.OpenTelemetry` starts a span for each call and each lifecycle
stage and hands it to an observer from here: `CallSpan` records how a call
ended (its ``toolcycle.*`` outcome attributes, guardrail decisions, payloads
when asked for) and its progress events, `StageSpan` records what an
``activate`` or ``deactivate`` raised. Both keep their span current until
``finish`` and then end it and restore the caller's span. Recording never
raises into the runtime: a failure is logged on the ``toolcycle.otel`` logger.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from toolcycle._span_payloads import payload_text
from toolcycle.errors import cut_error_text
from toolcycle.instrumentation import CallObserver, StageObserver

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.util.types import AttributeValue

    from toolcycle import ProgressEvent, ToolExecutionTrace

__all__ = ["CallSpan", "StageSpan", "attach"]

_PROGRESS_EVENT = "toolcycle.progress"

_log = logging.getLogger("toolcycle.otel")


class CallSpan(CallObserver):
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


class StageSpan(StageObserver):
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


def attach(span: otel_trace.Span, tool_name: str) -> Token[otel_context.Context] | None:
    """Make ``span`` the current span; the token that restores the previous one, if it could."""
    try:
        return otel_context.attach(otel_trace.set_span_in_context(span))
    except Exception as exc:  # the span still records the work, just not as a parent
        _log.debug("could not make the span of %r current: %r", tool_name, exc)
        return None


def _detach(token: Token[otel_context.Context] | None) -> None:
    """Make the span that was current before `attach` current again."""
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
