"""Deferred tools in OpenAI Agents SDK runs: found through search_tools, then called.

Every run uses the SDK's own `ScriptedModel`, with the SDK's tracing switched off.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    RunContextWrapper,
    Runner,
    ToolErrorFormatterArgs,
    set_tracing_disabled,
)
from agents.exceptions import ModelBehaviorError
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from search_kit import ISSUE, deferred_runtime

from toolcycle import ToolRuntime
from toolcycle.adapters.openai_agents import function_tools, reject, tool_not_found_formatter

pytest.importorskip("bm25s")

CONFIG = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The SDK's own switch turns its trace export off, and no socket may connect."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a test tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    set_tracing_disabled(True)
    yield


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with one tool shown and two deferred ones."""
    yield from deferred_runtime()


def _names(call: ModelCall) -> list[str]:
    return [tool.name for tool in call.tools]


def _output(call: ModelCall, call_id: str) -> str:
    [output] = [
        item["output"]
        for item in call.input
        if isinstance(item, dict) and item.get("call_id") == call_id and "output" in item
    ]
    return str(output)


async def test_a_run_finds_a_deferred_tool_with_search_tools_and_calls_it(
    runtime: ToolRuntime,
) -> None:
    """search_tools answers through the runtime; the tool it finds is offered next turn."""

    def call_what_was_found(call: ModelCall) -> Any:
        found = json.loads(_output(call, "s1"))["tools"]
        assert found[0]["name"] == ISSUE  # the name the SDK offers it under
        assert _names(call) == ["add", ISSUE, "search_tools"]
        return [function_call(ISSUE, {"repo": "o/r", "title": "bug"}, call_id="c1")]

    model = ScriptedModel(
        [
            [function_call("search_tools", {"query": "open a github issue"}, call_id="s1")],
            ModelStep.respond(call_what_was_found),
            [assistant_message("filed")],
        ]
    )
    async with runtime.aplan() as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        result = await Runner.run(agent, "file a bug", run_config=CONFIG)
        revealed = plan.revealed_tools

    assert result.final_output == "filed"
    model.assert_complete()
    assert _names(model.calls[0]) == ["add", "search_tools"]
    assert _output(model.calls[2], "c1") == "created 'bug' in o/r"
    assert revealed == {"github.create_issue"}
    traces = runtime.recent_traces()
    assert [(t.tool_name, t.tool_call_id) for t in traces] == [
        ("search_tools", "s1"),
        ("github.create_issue", "c1"),
    ]


async def test_search_tools_is_withdrawn_once_every_deferred_tool_is_revealed(
    runtime: ToolRuntime,
) -> None:
    """As in tool_definitions: nothing left to find, no search offered."""
    model = ScriptedModel(
        [
            [
                function_call(
                    "search_tools", {"query": "github issue slack", "limit": 5}, call_id="s"
                )
            ],
            [assistant_message("found both")],
        ]
    )
    async with runtime.aplan() as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        await Runner.run(agent, "find", run_config=CONFIG)

    assert _names(model.calls[1]) == ["add", ISSUE, "slack_post"]


async def test_tools_revealed_before_are_offered_from_the_start(runtime: ToolRuntime) -> None:
    """Every tool is one FunctionTool; the deferred ones are enabled once revealed."""
    async with runtime.aplan() as plan:
        plan.reveal_tools(["slack_post"])
        tools = function_tools(runtime, plan)
        model = ScriptedModel([[assistant_message("hi")]])
        await Runner.run(Agent(name="a", tools=tools, model=model), "hi", run_config=CONFIG)

    assert [t.name for t in tools] == ["add", ISSUE, "slack_post", "search_tools"]
    assert all(isinstance(t, FunctionTool) for t in tools)
    assert _names(model.calls[0]) == ["add", "slack_post", "search_tools"]


async def test_a_deferred_tool_asks_for_approval_and_reject_finds_it_by_name(
    runtime: ToolRuntime,
) -> None:
    """search_tools only reads, so it never asks; the tool it finds asks as any other."""
    model = ScriptedModel(
        [
            [function_call("search_tools", {"query": "github issue"}, call_id="s1")],
            [function_call(ISSUE, {"repo": "o/r", "title": "bug"}, call_id="c1")],
            [assistant_message("refused")],
        ]
    )
    async with runtime.aplan() as plan:
        tools = function_tools(runtime, plan, approval="all")
        first = await Runner.run(Agent(name="a", tools=tools, model=model), "go", run_config=CONFIG)
        [item] = first.interruptions
        state = first.to_state()
        denied = await reject(runtime, plan, state, item, "not today")
        result = await Runner.run(
            Agent(name="a", tools=tools, model=model), state, run_config=CONFIG
        )

    assert item.tool_name == ISSUE
    assert denied.error_type == "ApprovalDenied" and "not today" in (denied.error or "")
    assert result.final_output == "refused"
    assert _output(model.calls[2], "c1") == denied.error


async def test_without_the_formatter_the_sdk_fails_a_run_that_calls_a_waiting_tool(
    runtime: ToolRuntime,
) -> None:
    """The SDK resolves names among the enabled tools only, and fails the run by default."""
    model = ScriptedModel([[function_call(ISSUE, {"repo": "o/r", "title": "bug"}, call_id="c0")]])
    async with runtime.aplan() as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        with pytest.raises(ModelBehaviorError, match=ISSUE):
            await Runner.run(agent, "file a bug", run_config=CONFIG)

    assert not runtime.recent_traces()


async def test_a_waiting_tool_called_by_name_is_revealed_and_runs_when_called_again(
    runtime: ToolRuntime,
) -> None:
    """The formatter answers the SDK's "not found" by revealing the tool, enabled next turn."""

    def call_again(call: ModelCall) -> Any:
        assert "call it again" in _output(call, "c0")
        assert _names(call) == ["add", ISSUE, "search_tools"]
        return [function_call(ISSUE, {"repo": "o/r", "title": "bug"}, call_id="c1")]

    model = ScriptedModel(
        [
            [function_call(ISSUE, {"repo": "o/r", "title": "bug"}, call_id="c0")],
            ModelStep.respond(call_again),
            [assistant_message("filed")],
        ]
    )
    async with runtime.aplan() as plan:
        config = RunConfig(
            tracing_disabled=True,
            tool_not_found_behavior="return_error_to_model",
            tool_error_formatter=tool_not_found_formatter(runtime, plan),
        )
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        result = await Runner.run(agent, "file a bug", run_config=config)
        revealed = plan.revealed_tools

    assert result.final_output == "filed"
    model.assert_complete()
    assert _output(model.calls[2], "c1") == "created 'bug' in o/r"
    assert revealed == {"github.create_issue"}
    traces = runtime.recent_traces()
    assert [(t.tool_name, t.tool_call_id) for t in traces] == [("github.create_issue", "c1")]


async def test_the_formatter_leaves_other_names_and_errors_to_the_sdk(
    runtime: ToolRuntime,
) -> None:
    """A name that is no deferred tool of the plan keeps the SDK's own message."""
    model = ScriptedModel([[function_call("nope", {}, call_id="c0")], [assistant_message("sorry")]])
    async with runtime.aplan() as plan:
        formatter = tool_not_found_formatter(runtime, plan)
        config = RunConfig(
            tracing_disabled=True,
            tool_not_found_behavior="return_error_to_model",
            tool_error_formatter=formatter,
        )
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        await Runner.run(agent, "go", run_config=config)
        failure = ToolErrorFormatterArgs(
            kind="tool_exception",
            tool_type="function",
            tool_name=ISSUE,
            call_id="c1",
            default_message="the SDK's words",
            run_context=RunContextWrapper(context=None),
        )
        other = formatter(failure)
        revealed = plan.revealed_tools

    assert _output(model.calls[1], "c0") == "Tool 'nope' not found."
    assert other is None
    assert revealed == set()
