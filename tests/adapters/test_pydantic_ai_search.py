"""Deferred tools in pydantic-ai runs: found through search_tools, then called.

Every run uses pydantic-ai's own FunctionModel, scripted step by step.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from search_kit import ISSUE, add, create_issue, deferred_runtime

from toolcycle import ToolRuntime
from toolcycle.adapters.pydantic_ai import ToolcycleToolset

pytest.importorskip("bm25s")

WAIT = 10.0


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with one tool shown and two deferred ones."""
    yield from deferred_runtime()


def _returned(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    """The tool returns the model was shown, by call id."""
    return {
        part.tool_call_id: part
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    }


class Script:
    """A FunctionModel script: each step sees the offered tools and the returns so far."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.offered: list[list[str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.offered.append([t.name for t in info.function_tools])
        step = self.steps[len(self.offered) - 1]
        parts = step(_returned(messages)) if callable(step) else step
        return ModelResponse(parts=parts)


async def test_a_run_finds_a_deferred_tool_with_search_tools_and_calls_it(
    runtime: ToolRuntime,
) -> None:
    """The search answers through the runtime; the tool it finds is offered at the next step."""

    def call_what_was_found(returned: dict[str, ToolReturnPart]) -> list[Any]:
        found = returned["s1"].content["tools"]
        assert [tool["name"] for tool in found] == [ISSUE]  # the name it is offered under
        return [ToolCallPart(ISSUE, {"repo": "o/r", "title": "bug"}, tool_call_id="c1")]

    def answer(returned: dict[str, ToolReturnPart]) -> list[Any]:
        return [TextPart(str(returned["c1"].content))]

    script = Script(
        [ToolCallPart("search_tools", {"query": "open a github issue"}, tool_call_id="s1")],
        call_what_was_found,
        answer,
    )
    agent = Agent(FunctionModel(script), toolsets=[ToolcycleToolset(runtime)])
    result = await asyncio.wait_for(agent.run("file a bug"), WAIT)

    assert result.output == "created 'bug' in o/r"
    assert script.offered == [
        ["add", "search_tools"],
        ["add", ISSUE, "search_tools"],
        ["add", ISSUE, "search_tools"],
    ]
    traces = runtime.recent_traces()
    assert [(t.tool_name, t.tool_call_id, t.status) for t in traces] == [
        ("search_tools", "s1", "ok"),
        ("github.create_issue", "c1", "ok"),
    ]
    assert traces[0].revealed_tools == ("github.create_issue",)


async def test_a_search_with_one_deferred_tool_runs_the_search_not_the_tool() -> None:
    """The search call is the search, however many tools wait for it."""
    script = Script(
        [ToolCallPart("search_tools", {"query": "github issue"}, tool_call_id="s1")],
        lambda returned: [TextPart(json.dumps(returned["s1"].content))],
    )
    with ToolRuntime() as runtime:
        runtime.register(add)
        runtime.register(create_issue)
        agent = Agent(FunctionModel(script), toolsets=[ToolcycleToolset(runtime)])
        result = await asyncio.wait_for(agent.run("find"), WAIT)

    assert json.loads(result.output)["tools"][0]["name"] == ISSUE


async def test_a_bad_search_is_a_retry_and_the_search_goes_once_nothing_waits(
    runtime: ToolRuntime,
) -> None:
    """A search without a query is the model's to fix; with all found, no search is offered."""

    def retried_then_search_again(returned: dict[str, ToolReturnPart]) -> list[Any]:
        assert returned["s1"].outcome == "retried"
        assert "needs a 'query'" in str(returned["s1"].content)
        return [ToolCallPart("search_tools", {"query": "github slack", "limit": 5})]

    script = Script(
        [ToolCallPart("search_tools", {"limit": 2}, tool_call_id="s1")],
        retried_then_search_again,
        [TextPart("found")],
    )
    agent = Agent(FunctionModel(script), toolsets=[ToolcycleToolset(runtime)])
    await asyncio.wait_for(agent.run("find"), WAIT)

    assert script.offered[-1] == ["add", ISSUE, "slack_post"]
    statuses = [(t.tool_name, t.status) for t in runtime.recent_traces()]
    assert statuses == [("search_tools", "invalid_input"), ("search_tools", "ok")]


async def test_a_deferred_tool_called_by_name_is_offered_from_the_next_step(
    runtime: ToolRuntime,
) -> None:
    """pydantic-ai refuses the call of a tool it was not given; the call reveals the tool."""

    def called_again(returned: dict[str, ToolReturnPart]) -> list[Any]:
        assert returned["c0"].outcome == "retried"  # pydantic-ai's answer: nothing ran
        return [ToolCallPart(ISSUE, {"repo": "o/r", "title": "bug"}, tool_call_id="c1")]

    script = Script(
        [ToolCallPart(ISSUE, {"repo": "o/r", "title": "bug"}, tool_call_id="c0")],
        called_again,
        lambda returned: [TextPart(str(returned["c1"].content))],
    )
    agent = Agent(FunctionModel(script), toolsets=[ToolcycleToolset(runtime)])
    result = await asyncio.wait_for(agent.run("file a bug"), WAIT)

    assert result.output == "created 'bug' in o/r"
    assert script.offered == [
        ["add", "search_tools"],
        ["add", ISSUE, "search_tools"],
        ["add", ISSUE, "search_tools"],
    ]
    traces = runtime.recent_traces()
    assert [(t.tool_name, t.tool_call_id) for t in traces] == [("github.create_issue", "c1")]


async def test_search_tools_goes_in_the_step_that_reveals_the_last_waiting_tool() -> None:
    """A call by name that leaves nothing to find withdraws search_tools from the next step."""
    script = Script(
        [ToolCallPart(ISSUE, {"repo": "o/r", "title": "bug"}, tool_call_id="c0")],
        [TextPart("will call it now")],
    )
    with ToolRuntime() as runtime:
        runtime.register(add)
        runtime.register(create_issue)
        agent = Agent(FunctionModel(script), toolsets=[ToolcycleToolset(runtime)])
        await asyncio.wait_for(agent.run("file a bug"), WAIT)

    assert script.offered == [["add", "search_tools"], ["add", ISSUE]]


def _weather(city: str) -> str:
    """Get the weather forecast for a city."""
    return f"sunny in {city}"


async def _search_then_call(runtime: ToolRuntime, toolsets: list[Any]) -> tuple[str, Script]:
    """A run that searches with pydantic-ai's search_tools, then calls what it found."""

    def call_what_was_found(returned: dict[str, ToolReturnPart]) -> list[Any]:
        found = returned["s1"].content["discovered_tools"]
        assert [tool["name"] for tool in found] == [ISSUE]
        return [ToolCallPart(ISSUE, {"repo": "o/r", "title": "bug"}, tool_call_id="c1")]

    script = Script(
        [ToolCallPart("search_tools", {"queries": ["github issue"]}, tool_call_id="s1")],
        call_what_was_found,
        lambda returned: [TextPart(str(returned["c1"].content))],
    )
    agent = Agent(FunctionModel(script), toolsets=toolsets)
    result = await asyncio.wait_for(agent.run("file a bug"), WAIT)
    return result.output, script


async def test_search_pydantic_ai_shares_one_search_with_the_agents_own_deferred_tools(
    runtime: ToolRuntime,
) -> None:
    """Beside pydantic-ai deferred tools, its one search_tools finds the runtime's too."""
    own: FunctionToolset[None] = FunctionToolset()
    own.add_function(_weather, defer_loading=True)
    with runtime.plan() as plan:
        toolset = ToolcycleToolset(runtime, plan=plan, search="pydantic-ai")
        output, script = await _search_then_call(runtime, [own, toolset])
        assert "github.create_issue" in plan.revealed_tools  # the plan was told

    assert output == "created 'bug' in o/r"
    assert script.offered == [["add"], ["add", ISSUE], ["add", ISSUE]]
    assert [t.tool_name for t in runtime.recent_traces()] == ["github.create_issue"]


async def test_search_pydantic_ai_hands_the_deferred_tools_to_pydantic_ais_search_alone(
    runtime: ToolRuntime,
) -> None:
    """Without deferred tools of the agent's own, pydantic-ai's search is still the one offered."""
    output, script = await _search_then_call(
        runtime, [ToolcycleToolset(runtime, search="pydantic-ai")]
    )

    assert output == "created 'bug' in o/r"
    assert script.offered[0] == ["add"]  # neither the waiting tools nor a second search


def test_a_search_other_than_toolcycle_or_pydantic_ai_is_refused(runtime: ToolRuntime) -> None:
    """A misspelt search is refused when the toolset is made, not at the first run."""
    with pytest.raises(ValueError, match="search must be"):
        ToolcycleToolset(runtime, search="pydantic_ai")  # type: ignore[arg-type]
