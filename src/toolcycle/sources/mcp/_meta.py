"""The ``_meta`` of each ``tools/call``: the caller's trace context and the host's metadata.

Two things go into a call's ``_meta``, both worked out in the caller's thread or
task, before the call crosses to the loop its connection lives on:

- the W3C trace context of the current OpenTelemetry span, as ``traceparent``
  and ``tracestate`` (SEP-414, the keys the SDK's own server middleware reads),
  so that a server's spans join the caller's trace. With toolcycle's
  `toolcycle.otel.OpenTelemetry` instrumentation that span is the call's
  ``execute_tool`` span. The SDK requires the OpenTelemetry API, so importing it
  here adds nothing a source user has not installed already; with no span
  current (no tracer configured) nothing is added.
- what the server's ``meta=`` resolver returns for the call, for example a
  tenant id. It gets an `McpCallInfo` and returns a mapping of JSON values, or
  None for nothing.

Keys the protocol or the trace context own cannot come from a resolver: a
resolver returning one fails the call (see `McpCallInfo`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from toolcycle import CancellationToken, ToolExecutionContext

__all__ = ["McpCallInfo", "MetaResolver", "call_meta"]

_W3C = TraceContextTextMapPropagator()

_RESERVED_KEYS = frozenset({"progressToken", "traceparent", "tracestate"})
# Prefixes the MCP specification keeps for itself in _meta keys.
_RESERVED_PREFIXES = ("io.modelcontextprotocol/", "modelcontextprotocol.io/", "mcp.dev/")


@dataclass(frozen=True, slots=True)
class McpCallInfo:
    """The call a ``meta=`` resolver is asked about.

    Attributes:
        server: the `McpServer`'s name.
        tool: the tool's name on the server (without any ``prefix``).
        context: the plan's `ToolExecutionContext`.
        call_id: the runtime's id for this call (the id in its trace), or None
            for a call made outside the runtime.
    """

    server: str
    tool: str
    context: ToolExecutionContext
    call_id: str | None

    @property
    def plan_id(self) -> str:
        """The id of the plan the call belongs to."""
        return self.context.plan_id

    @property
    def token(self) -> CancellationToken:
        """The call's cancellation token."""
        return self.context.call_token


MetaResolver = Callable[[McpCallInfo], Mapping[str, Any] | None]
"""What ``meta=`` takes: called once per call with its `McpCallInfo`."""


def call_meta(
    resolver: MetaResolver | None,
    server: str,
    tool: str,
    ctx: ToolExecutionContext,
) -> dict[str, Any] | None:
    """The ``_meta`` for one call, or None when there is nothing to send.

    Raises:
        TypeError: the resolver returned something other than a mapping with
            string keys and JSON values.
        ValueError: the resolver returned a key the protocol or the trace
            context owns (``progressToken``, ``traceparent``, ``tracestate``,
            or a key under a prefix the MCP specification reserves).
    """
    meta: dict[str, Any] | None = None
    if resolver is not None:
        extra = resolver(McpCallInfo(server, tool, ctx, ctx.call_id))
        if extra is not None:
            meta = _checked(extra, server)
    span = otel_trace.get_current_span()
    # No span current is the commonest case, and its one answer is INVALID_SPAN.
    if span is not otel_trace.INVALID_SPAN and span.get_span_context().is_valid:
        if meta is None:
            meta = {}
        _W3C.inject(meta)
    return meta


def _checked(extra: object, server: str) -> dict[str, Any]:
    if not isinstance(extra, Mapping):
        raise TypeError(
            f"the meta= resolver of MCP server {server!r} must return a mapping or None, "
            f"got {type(extra).__name__}"
        )
    meta = dict(extra)
    for key in meta:
        if not isinstance(key, str):
            raise TypeError(
                f"the meta= resolver of MCP server {server!r} returned the key {key!r}; "
                "_meta keys must be strings"
            )
        if key in _RESERVED_KEYS or key.startswith(_RESERVED_PREFIXES):
            raise ValueError(
                f"the meta= resolver of MCP server {server!r} returned the key {key!r}, "
                "which the protocol or the trace context owns; use a key of your own, "
                "such as 'tenant' or 'example.com/tenant'"
            )
    try:
        json.dumps(meta, allow_nan=False)  # NaN and infinities are no JSON numbers
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"the meta= resolver of MCP server {server!r} returned a value that is not "
            f"JSON ({exc}); return strings, numbers, booleans, lists and mappings"
        ) from None
    return meta
