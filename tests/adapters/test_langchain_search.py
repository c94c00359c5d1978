"""Deferred tools in a LangGraph agent: found through search_tools, then called.

The model is a scripted `BaseChatModel` that notes the tools it is bound to at each
step; the agent is a compiled `StateGraph` with a `ToolNode`. Nothing is mocked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field
from search_kit import ISSUE, deferred_runtime

from toolcycle import ToolExecutionContext, ToolRuntime
from toolcycle.adapters.langchain import langchain_tools

pytest.importorskip("bm25s")


class ScriptedChatModel(BaseChatModel):
    """A chat model whose every answer ``respond`` computes; notes each bound tool list."""

    respond: Callable[[list[BaseMessage]], AIMessage]
    bound: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.bound.append([item.name for item in tools])
        return self


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with one tool shown and two deferred ones."""
    yield from deferred_runtime()


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": args, "type": "tool_call"}


def _searching_model() -> ScriptedChatModel:
    """Searches, calls the first tool found under the name the search gave, then answers."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return AIMessage("", tool_calls=[_call("s1", "search_tools", {"query": "github"})])
        if last.tool_call_id == "s1":
            name = json.loads(str(last.content))["tools"][0]["name"]
            return AIMessage("", tool_calls=[_call("c1", name, {"repo": "o/r", "title": "bug"})])
        return AIMessage(f"{last.status}: {last.content}")

    return ScriptedChatModel(respond=respond)


def _agent(model: ScriptedChatModel, runtime: ToolRuntime, plan: ToolExecutionContext) -> Any:
    """The agent the docs show: bound afresh at each step, one ToolNode for every tool."""

    def think(state: MessagesState) -> dict[str, Any]:
        bound = model.bind_tools(langchain_tools(runtime, plan))
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(langchain_tools(runtime, plan, include_deferred=True)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def test_an_agent_finds_a_deferred_tool_with_search_tools_and_calls_it(
    runtime: ToolRuntime,
) -> None:
    """The search names the tool as LangChain knows it; bound next step, the ToolNode runs it."""
    model = _searching_model()
    with runtime.plan() as plan:
        out = _agent(model, runtime, plan).invoke({"messages": [("user", "file a bug")]})

    assert out["messages"][-1].content == "success: created 'bug' in o/r"
    assert model.bound == [
        ["add", "search_tools"],
        ["add", ISSUE, "search_tools"],
        ["add", ISSUE, "search_tools"],
    ]
    traces = runtime.recent_traces()
    assert [(t.tool_name, t.tool_call_id, t.status) for t in traces] == [
        ("search_tools", "s1", "ok"),
        ("github.create_issue", "c1", "ok"),
    ]


async def test_an_async_agent_finds_and_calls_a_deferred_tool(runtime: ToolRuntime) -> None:
    """Ainvoke takes the same way, through acall."""
    model = _searching_model()
    async with runtime.aplan() as plan:
        agent = _agent(model, runtime, plan)
        out = await agent.ainvoke({"messages": [("user", "file a bug")]})

    assert out["messages"][-1].content == "success: created 'bug' in o/r"


def test_the_search_answers_with_the_names_the_tools_have(runtime: ToolRuntime) -> None:
    """The names a search gives are those of the tools, in the list built again after it."""
    with runtime.plan() as plan:
        [_, search] = langchain_tools(runtime, plan)
        answer = search.invoke(_call("s1", "search_tools", {"query": "github issue"}))
        found = [hit["name"] for hit in json.loads(answer.content)["tools"]]
        shown = [t.name for t in langchain_tools(runtime, plan)]

    assert found == [ISSUE]
    assert shown == ["add", ISSUE, "search_tools"]


def test_only_what_is_shown_unless_deferred_tools_are_asked_for(runtime: ToolRuntime) -> None:
    """By default the list is what the model is shown now; all found, no search_tools."""
    with runtime.plan(read_only=True) as plan:
        before = [t.name for t in langchain_tools(runtime, plan)]
        hidden = [t.name for t in langchain_tools(runtime, plan, include_deferred=True)]
        plan.reveal_tools(["github.create_issue", "slack_post"])
        after = [t.name for t in langchain_tools(runtime, plan)]
        every = [t.name for t in langchain_tools(runtime, plan, include_deferred=True)]

    assert before == ["add", "search_tools"]
    assert hidden == ["add", ISSUE, "slack_post", "search_tools"]
    assert after == every == ["add", ISSUE, "slack_post"]


def test_a_deferred_tool_the_model_already_knows_runs_and_is_revealed(
    runtime: ToolRuntime,
) -> None:
    """Called by name before any search, as the runtime allows: it runs and is revealed."""
    with runtime.plan() as plan:
        tools: dict[str, BaseTool] = {
            t.name: t for t in langchain_tools(runtime, plan, include_deferred=True)
        }
        answer = tools[ISSUE].invoke(_call("c1", ISSUE, {"repo": "o/r", "title": "t"}))
        revealed = plan.revealed_tools

    assert answer.status == "success"
    assert revealed == {"github.create_issue"}


def test_an_agent_whose_model_calls_a_deferred_tool_by_name_runs_it(
    runtime: ToolRuntime,
) -> None:
    """The ToolNode holds the waiting tools, so the call runs before any search and reveals it."""

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return AIMessage("", tool_calls=[_call("c1", ISSUE, {"repo": "o/r", "title": "bug"})])
        return AIMessage(f"{last.status}: {last.content}")

    model = ScriptedChatModel(respond=respond)
    with runtime.plan() as plan:
        out = _agent(model, runtime, plan).invoke({"messages": [("user", "file a bug")]})
        revealed = plan.revealed_tools

    assert out["messages"][-1].content == "success: created 'bug' in o/r"
    assert model.bound == [["add", "search_tools"], ["add", ISSUE, "search_tools"]]
    assert revealed == {"github.create_issue"}
    [trace] = runtime.recent_traces()
    assert trace.revealed_tools == ("github.create_issue",)
