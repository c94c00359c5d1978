"""pydantic-ai both ways (``toolcycle[pydantic-ai]``).

`ToolcycleToolset` offers a runtime's tools to a pydantic-ai agent as an
``AbstractToolset``: each agent run gets a plan of its own, and every call goes
through the runtime, so plans, capabilities, validation, approvals and traces hold.
`from_toolset` goes the other way: any pydantic-ai toolset (a ``FunctionToolset``,
an MCP server, a wrapper) becomes a toolcycle tool source.

Usage::

    from pydantic_ai import Agent
    from toolcycle import ToolRuntime
    from toolcycle.adapters.pydantic_ai import ToolcycleToolset

    runtime = ToolRuntime()
    agent = Agent("openai:gpt-5", toolsets=[ToolcycleToolset(runtime, read_only=True)])

This package is the only part of toolcycle that imports ``pydantic_ai``.
"""

from __future__ import annotations

try:
    import pydantic_ai as _pydantic_ai  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without pydantic-ai
    raise ImportError(
        "toolcycle.adapters.pydantic_ai needs pydantic-ai, an optional extra: "
        "pip install -e '.[pydantic-ai]' from a clone (toolcycle[pydantic-ai] once published)"
    ) from exc

from toolcycle.adapters.pydantic_ai._source import from_toolset
from toolcycle.adapters.pydantic_ai._toolset import ToolcycleToolset

__all__ = ["ToolcycleToolset", "from_toolset"]
