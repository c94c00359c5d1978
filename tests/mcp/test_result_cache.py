"""Result caching of MCP tools, against a real in-process MCP server."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from toolcycle import CachePolicy, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.mcp import McpServer


def _register(runtime: ToolRuntime, source: McpServer, policy: CachePolicy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)  # the server's two bad schemas
        runtime.register_source(source, cache=policy)


def test_a_cached_mcp_tools_hit_in_a_new_plan_opens_no_connection(
    runtime: ToolRuntime, in_process: Callable[..., McpServer], sessions: dict[str, int]
) -> None:
    """register_source(cache=...): a runtime-scope hit neither activates nor reaches the server."""
    _register(runtime, in_process(), CachePolicy(ttl=60, scope="runtime"))
    with runtime.plan(read_only=True) as ctx:
        miss = runtime.execute("echo", {"text": "hi"}, ctx)
    after_first = dict(sessions)
    with runtime.plan(read_only=True) as ctx:
        hit = runtime.execute("echo", {"text": "hi"}, ctx)
    assert miss.output == hit.output == {"text": "hi", "length": 2}
    assert hit.trace is not None and hit.trace.cache_hit
    assert sessions == after_first  # the second plan connected to nothing


def test_a_sources_policy_leaves_its_writing_tools_and_failures_uncached(
    runtime: ToolRuntime, in_process: Callable[..., McpServer]
) -> None:
    """The server's writing tool runs every time, and so does a read-only tool that fails."""
    _register(runtime, in_process(), CachePolicy(ttl=60))
    results: list[Any] = []
    with runtime.plan() as ctx:
        for _ in range(2):
            results.append(runtime.execute("write", {"path": "a"}, ctx))
            results.append(runtime.execute("fail", {}, ctx))
    assert not any(r.trace.cache_hit for r in results if r.trace is not None)
    assert len(runtime.result_cache) == 0
