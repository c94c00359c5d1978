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
changes global OpenTelemetry state. It is the only public module of toolcycle
that imports ``opentelemetry``; the spans it starts are recorded and ended by
the observers of `toolcycle._otel_spans`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

try:
    from opentelemetry import trace as otel_trace
except ImportError as exc:
    raise ImportError(
        "toolcycle.otel needs the OpenTelemetry API, which is an optional extra: "
        "pip install -e '.[otel]' from a clone (toolcycle[otel] once published)"
    ) from exc

from toolcycle import __version__
from toolcycle._otel_spans import CallSpan, StageSpan, attach
from toolcycle.errors import shown_value
from toolcycle.instrumentation import Instrumentation

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from toolcycle import SourceKind, ToolDescriptor, ToolExecutionContext
    from toolcycle.instrumentation import CallObserver, Stage, StageObserver

__all__ = ["OpenTelemetry"]

_DEFAULT_MAX_PAYLOAD_CHARS = 4096
"""Characters of JSON text kept for each recorded argument or result payload."""

_TRACER_NAME = "toolcycle"

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
        TypeError: ``max_payload_chars`` is not an integer, or ``tracer_provider``
            is no tracer provider (an exporter or a span processor, say).
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
        if tracer_provider is not None and not callable(
            getattr(tracer_provider, "get_tracer", None)
        ):
            # An exporter handed over directly would fail deep in the API, naming neither.
            raise TypeError(
                f"tracer_provider must be a TracerProvider, got {type(tracer_provider).__name__}; "
                "add an exporter to a provider with "
                "provider.add_span_processor(SimpleSpanProcessor(exporter)) and pass the provider"
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
        token = attach(span, tool_name)
        return CallSpan(span, token, self.record_payloads, self.max_payload_chars)

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
        return StageSpan(span, attach(span, tool_name))

    def _start(self, name: str, attributes: dict[str, AttributeValue]) -> otel_trace.Span:
        """Start an internal span under the current one; a span that records nothing on failure."""
        try:
            return self._tracer.start_span(
                name, kind=otel_trace.SpanKind.INTERNAL, attributes=attributes
            )
        except Exception as exc:
            _log.debug("could not start the span %r: %r", name, exc)
            return otel_trace.INVALID_SPAN


def _tool_type(source: SourceKind) -> str:
    """The GenAI ``gen_ai.tool.type`` of a tool from its source kind."""
    return _TOOL_TYPES.get(source, "function")
