"""An SDK ``MCPServer`` whose tool answers with what its request carried in ``_meta``.

`build()` returns it to embed in process; run this file to serve it over stdio.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace as otel_trace


def build() -> MCPServer:
    """The server: one tool, ``whoami``, that reports the request's ``_meta`` and trace."""
    server = MCPServer("meta")

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
