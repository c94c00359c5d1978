"""MCP servers as a tool source, through the official MCP SDK (``toolcycle[mcp]``).

Usage (with ``pip install mcp-server-time`` in the same environment)::

    import sys

    from toolcycle import ToolRuntime
    from toolcycle.sources.mcp import McpServer

    with ToolRuntime() as runtime:
        runtime.register_source(McpServer.stdio(sys.executable, ["-m", "mcp_server_time"]))
        with runtime.plan() as ctx:
            runtime.execute("get_current_time", {"timezone": "UTC"}, ctx)

This package is the only part of toolcycle that imports ``mcp``.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without mcp
    raise ImportError(
        "toolcycle.sources.mcp needs the MCP SDK, which is an optional extra: "
        "pip install -e '.[mcp]' from a clone (toolcycle[mcp] once published)"
    ) from exc

from toolcycle.sources.mcp._auth import CredentialsResolver, HttpCredentials, McpAuthError
from toolcycle.sources.mcp._content import McpCallError, McpServerError, McpToolError
from toolcycle.sources.mcp._meta import McpCallInfo
from toolcycle.sources.mcp._requests import (
    DEFAULT_MAX_ROUNDS,
    ElicitAnswer,
    Elicitation,
    ElicitHandler,
    LogHandler,
    LogMessage,
    McpRequests,
    RequestContext,
    Root,
    RootsSource,
    SampleHandler,
    SamplingAnswer,
    SamplingRequest,
)
from toolcycle.sources.mcp._rounds import ELICITATION_PENDING
from toolcycle.sources.mcp._server import McpServer
from toolcycle.sources.mcp._tokens import FileTokenStorage, MemoryTokenStorage, TokenStorage
from toolcycle.sources.mcp._tool import McpTool

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "ELICITATION_PENDING",
    "CredentialsResolver",
    "ElicitAnswer",
    "ElicitHandler",
    "Elicitation",
    "FileTokenStorage",
    "HttpCredentials",
    "LogHandler",
    "LogMessage",
    "McpAuthError",
    "McpCallError",
    "McpCallInfo",
    "McpRequests",
    "McpServer",
    "McpServerError",
    "McpTool",
    "McpToolError",
    "MemoryTokenStorage",
    "RequestContext",
    "Root",
    "RootsSource",
    "SampleHandler",
    "SamplingAnswer",
    "SamplingRequest",
    "TokenStorage",
]
