"""An MCP tool's idempotentHint and a source's retry policy."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from toolcycle import RetryPolicy, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.mcp import McpServer

POLICY = RetryPolicy(attempts=2, backoff=0.0, jitter=0.0)


def test_a_sources_retry_policy_reaches_the_tools_whose_hint_says_idempotent(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """The echo tool (idempotentHint: true) runs under the policy; write (no hint) does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)
        runtime.register_source(in_process(), retry=POLICY, max_retries=2)
    assert runtime.descriptor("echo").capability.idempotent is True
    assert runtime.descriptor("write").capability.idempotent is False
    with runtime.plan() as ctx:
        echoed = runtime.execute("echo", {"text": "a"}, ctx)
        written = runtime.execute("write", {"path": "p"}, ctx)
    assert echoed.trace is not None and len(echoed.trace.attempts) == 1  # it ran under a policy
    assert written.trace is not None and written.trace.attempts == ()


def test_an_override_can_say_a_tool_is_idempotent_when_its_server_does_not(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """The per-tool capabilities mapping sets idempotent like any other field."""
    options: dict[str, Any] = {"capabilities": {"write": {"idempotent": True}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)
        runtime.register_source(in_process(**options))
    assert runtime.descriptor("write").capability.idempotent is True
