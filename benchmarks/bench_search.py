"""Tool search over 10,000 deferred tools: one search, and building the index.

``setup()`` registers `TOOL_COUNT` deferred tools on one runtime, named like the
tools of many MCP servers (``{service}__{verb}_{thing}_{n}``, such as
``github__create_issue_17``), each with a one-sentence description and two
parameters, opens a read-only plan and runs one search, so the index is built.

- ``time_search_call_10k``: what an agent loop does, end to end: a model's
  ``search_tools`` call through ``runtime.call`` (reading the call, finding the
  index of the plan's kind, ranking with BM25, revealing, the trace). The target
  is under 5 ms.
- ``time_search_index_10k``: the ranking alone (the index's ``search``), to show
  how much of that the BM25 scoring takes.
- ``track_search_index_build_ms``: building the index of 10,000 tools once, in
  milliseconds: what the first search after a registration pays.
- ``time_unknown_name_call_10k``: a model's call of a tool name that is not
  registered, through ``runtime.call``: the runtime maps provider names back with
  a map per format it keeps until the registry changes.
- ``time_unknown_name_uncached_10k``: the same mapping computed afresh
  (``resolve``, what every such call cost before the map was kept): the provider
  name of every tool in the call's format.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from toolcycle import NullTracer, ToolCapability, ToolDescriptor, ToolRuntime
from toolcycle.agent._names import resolve
from toolcycle.agent._search import SearchIndex

TOOL_COUNT = 10_000
"""How many deferred tools the runtime holds."""

TARGET_MS = 5.0
"""One search of 10,000 tools: under this."""

QUERY = "create an issue in the tracker for a repository"

UNKNOWN = {
    "id": "call_x",
    "type": "function",
    "function": {"name": "github__open_ticket", "arguments": "{}"},
}
"""A model's call of a tool that does not exist (in the OpenAI format)."""

_SERVICES = ["github", "gitlab", "jira", "slack", "gmail", "calendar", "drive", "notion"]
_VERBS = ["create", "list", "get", "update", "delete", "search", "archive", "share"]
_THINGS = ["issue", "file", "user", "message", "event", "page", "comment", "label", "folder"]

_state: dict[str, Any] = {}


class _Tool:
    """A deferred tool that is only ever described, never run."""

    def __init__(self, descriptor: ToolDescriptor) -> None:
        self.descriptor = descriptor

    def discover(self) -> ToolDescriptor:
        return self.descriptor

    def activate(self, ctx: Any) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        return None

    def deactivate(self, ctx: Any) -> None:
        return None


def descriptors() -> list[ToolDescriptor]:
    """The 10,000 deferred tools."""
    shapes = itertools.cycle(itertools.product(_SERVICES, _VERBS, _THINGS))
    made = []
    for number in range(TOOL_COUNT):
        service, verb, thing = next(shapes)
        made.append(
            ToolDescriptor(
                name=f"{service}__{verb}_{thing}_{number}",
                description=f"{verb.title()} a {thing} in {service.title()} (variant {number}).",
                input_schema={
                    "type": "object",
                    "properties": {f"{thing}_id": {"type": "string"}, "note": {"type": "string"}},
                },
                capability=ToolCapability(writes=verb in {"create", "update", "delete"}),
                defer_loading=True,
            )
        )
    return made


def setup() -> None:
    """Register the tools, open a plan and search once (which builds the index)."""
    runtime = ToolRuntime(tracer=NullTracer())
    for descriptor in descriptors():
        runtime.register(_Tool(descriptor))
    ctx = runtime.new_context()
    call = {"name": "search_tools", "arguments": {"query": QUERY}}
    assert runtime.call(call, ctx).output["tools"]
    assert runtime.call(UNKNOWN, ctx).error_type == "ToolNotFoundError"  # builds the map
    names = [d.name for d in runtime.descriptors()]
    _state.update(
        runtime=runtime, ctx=ctx, call=call, index=SearchIndex(descriptors()), names=names
    )


def teardown() -> None:
    """Close the runtime."""
    _state.pop("runtime").close()


def time_search_call_10k() -> None:
    """A model's search_tools call through runtime.call, 10,000 deferred tools."""
    _state["runtime"].call(_state["call"], _state["ctx"])


def time_search_index_10k() -> None:
    """The BM25 ranking alone."""
    _state["index"].search(QUERY, 5)


def track_search_index_build_ms() -> float:
    """Milliseconds to build the index of 10,000 tools (median of three builds)."""
    made = descriptors()
    times = []
    for _ in range(3):
        began = time.perf_counter()
        SearchIndex(made)
        times.append((time.perf_counter() - began) * 1000.0)
    return sorted(times)[1]


def time_unknown_name_call_10k() -> None:
    """A model's call of an unknown tool name through runtime.call, 10,000 tools."""
    _state["runtime"].call(UNKNOWN, _state["ctx"])


def time_unknown_name_uncached_10k() -> None:
    """Mapping the unknown name back afresh, as every such call did before."""
    resolve("github__open_ticket", "openai", _state["names"])
