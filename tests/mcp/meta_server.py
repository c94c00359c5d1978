"""An SDK ``MCPServer`` whose tools report what their requests carried, and one that waits.

`build()` returns it to embed in process; run this file to serve it over stdio.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace as otel_trace


def build(events: dict[str, Any] | None = None, *, subscriptions: bool = True) -> MCPServer:
    """The server: ``whoami``, ``era``, ``hold`` and ``grow``.

    ``events`` gets an ``anyio.Event`` under ``"held"`` (set once ``hold`` has
    started) and ``"cancelled"`` set to True when ``hold``'s handler is cancelled.
    With ``subscriptions=False`` the server serves no ``subscriptions/listen``.
    """
    server = MCPServer("meta", subscriptions=None if subscriptions else False)
    state: dict[str, Any] = events if events is not None else {}

    @server.tool()
    def era(ctx: Context) -> str:
        """The protocol version of the request."""
        return ctx.protocol_version or "unknown"

    @server.tool()
    async def hold() -> str:
        """Wait until cancelled, noting that the handler was."""
        try:
            state["held"].set()
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            state["cancelled"] = True
            raise
        return "never"  # pragma: no cover - sleep_forever only ends by cancellation

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Announce a changed tool list."""
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """Report the request's ``_meta`` (less the protocol's own keys) and current trace id."""
        meta = dict(ctx.request_context.meta or {})
        span = otel_trace.get_current_span().get_span_context()
        return {
            "meta": {k: v for k, v in meta.items() if not k.startswith("io.modelcontextprotocol/")},
            "trace_id": format(span.trace_id, "032x") if span.is_valid else None,
        }

    return server


if __name__ == "__main__":
    build().run("stdio")
