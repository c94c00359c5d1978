"""Steps for the LangChain and LangGraph adapter; every step text names LangChain or LangGraph."""

from __future__ import annotations

from collections.abc import Callable  # noqa: TC003 - pydantic reads the model's annotations
from typing import Any

from behave import given, then, when
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool as langchain_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from pydantic import Field

from toolcycle import ApprovalDecision, tool
from toolcycle.adapters.langchain import from_langchain, langchain_tools
from toolcycle.testing import FakeTool

_KEY = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


class _ScriptedModel(BaseChatModel):
    """A chat model whose answers ``respond`` computes; ``bind_tools`` records and returns it."""

    respond: Callable[[list[BaseMessage]], AIMessage]
    bound: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> _ScriptedModel:  # type: ignore[override]
        self.bound.append([item.name for item in tools])
        return self


# behave runs step modules without entering them in sys.modules, so pydantic finds the
# names of the annotations only in the namespace of this call.
_ScriptedModel.model_rebuild()


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": args, "type": "tool_call"}


def _agent(model: _ScriptedModel, tools: list[Any], **options: Any) -> Any:
    bound = model.bind_tools(tools)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(**options)


def _answers(context: Any) -> dict[str, ToolMessage]:
    messages = context.lc_out["messages"]
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


# -- an agent run ---------------------------------------------------------------------


@given('a LangChain test runtime with a reading tool "{read}" and a writing tool "{write}"')
def lc_runtime_with_tools(context: Any, read: str, write: str) -> None:
    context.lc_tool = FakeTool(
        name=read, input_schema=_KEY, output=lambda params, ctx: params["key"].upper()
    )
    context.runtime.register(context.lc_tool)
    context.runtime.register(FakeTool(name=write, writes=True))


@when('a LangGraph agent in a read-only plan calls "{name}" with a number, then with "{value}"')
def lc_agent_retries(context: Any, name: str, value: str) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return AIMessage("", tool_calls=[_call("c1", name, {"key": 3})])
        if last.status == "error":
            return AIMessage("", tool_calls=[_call("c2", name, {"key": value})])
        return AIMessage(str(last.content))

    context.lc_model = _ScriptedModel(respond=respond)
    with context.runtime.plan(read_only=True) as ctx:
        agent = _agent(context.lc_model, langchain_tools(context.runtime, ctx))
        context.lc_out = agent.invoke({"messages": [("user", "go")]})
        context.lc_plan = ctx


@then('the LangChain model was offered only "{name}"')
def lc_offered(context: Any, name: str) -> None:
    assert context.lc_model.bound == [[name]], context.lc_model.bound


@then('the LangGraph run answered "{call_id}" with an error about "{text}"')
def lc_answered_error(context: Any, call_id: str, text: str) -> None:
    message = _answers(context)[call_id]
    assert message.status == "error" and text in str(message.content), message


@then('the LangGraph run answered "{call_id}" with "{text}"')
def lc_answered(context: Any, call_id: str, text: str) -> None:
    message = _answers(context)[call_id]
    assert message.status == "success" and message.content == text, message


@then('the LangChain traces are "{statuses}"')
def lc_traces(context: Any, statuses: str) -> None:
    seen = [trace.status for trace in context.traces]
    assert seen == [s.strip() for s in statuses.split(",")], seen


@then('the LangChain plan activated "{name}" once and deactivated it once')
def lc_activated_once(context: Any, name: str) -> None:
    plan_id = context.lc_plan.plan_id
    assert context.lc_tool.count("activate", plan_id) == 1
    assert context.lc_tool.count("deactivate", plan_id) == 1


# -- approvals ------------------------------------------------------------------------


@given('a LangChain test runtime with a writing tool "{name}" and an approver that defers')
def lc_runtime_with_approval(context: Any, name: str) -> None:
    context.lc_sent = []

    def send(to: str) -> str:
        context.lc_sent.append(to)
        return f"sent to {to}"

    context.runtime.register(tool(name=name)(send))
    context.lc_plan = context.runtime.new_context(
        approver=lambda request: ApprovalDecision.defer("a person decides")
    )


@when('a LangGraph agent calls "{name}" for "{to}" and pauses')
def lc_agent_pauses(context: Any, name: str, to: str) -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(str(messages[-1].content))
        return AIMessage("", tool_calls=[_call("t1", name, {"to": to})])

    tools = langchain_tools(context.runtime, context.lc_plan)
    context.lc_agent = _agent(_ScriptedModel(respond=respond), tools, checkpointer=InMemorySaver())
    context.lc_thread = {"configurable": {"thread_id": "feature"}}
    paused = context.lc_agent.invoke({"messages": [("user", "send")]}, context.lc_thread)
    [context.lc_question] = paused["__interrupt__"]
    context.lc_arguments = {"to": to}


@then('the LangGraph interrupt asks about "{name}" with the arguments of the call')
def lc_interrupt_asks(context: Any, name: str) -> None:
    request = context.lc_question.value
    assert request["type"] == "toolcycle_approval" and request["tool_name"] == name
    assert request["arguments"] == context.lc_arguments and context.lc_sent == []


@when("the LangGraph agent is resumed with an approval of that fingerprint")
def lc_resume(context: Any) -> None:
    decision = ApprovalDecision.approve(fingerprint=context.lc_question.value["fingerprint"])
    context.lc_out = context.lc_agent.invoke(Command(resume=decision), context.lc_thread)
    context.runtime.end_plan(context.lc_plan)


@then(
    'the LangChain tool "{name}" ran once for "{to}" and the LangGraph run answered '
    '"{call_id}" with "{text}"'
)
def lc_ran_once(context: Any, name: str, to: str, call_id: str, text: str) -> None:
    assert context.lc_sent == [to]
    lc_answered(context, call_id, text)


@then("the last LangChain trace says the call was resumed")
def lc_resumed(context: Any) -> None:
    approval = context.traces[-1].approval
    assert approval is not None and approval.resumed and approval.outcome == "approved"


# -- the reverse direction ------------------------------------------------------------


@given('a LangChain tool "{name}" registered as reading and as "{other}" by default')
def lc_reverse(context: Any, name: str, other: str) -> None:
    @langchain_tool(name)
    def count(text: str) -> int:
        """Count the words of a text."""
        return len(text.split())

    context.runtime.register(from_langchain(count, writes=False))
    context.runtime.register(from_langchain(count, name=other))
    context.lc_names = (name, other)


@when("the LangChain tools are called in a read-only plan")
def lc_reverse_calls(context: Any) -> None:
    name, other = context.lc_names
    with context.runtime.plan(read_only=True) as ctx:
        context.lc_results = [
            context.runtime.execute(name, {"text": "one two three"}, ctx),
            context.runtime.call({"name": name, "arguments": {"text": 3}}, ctx),
            context.runtime.call({"name": other, "arguments": {"text": "a"}}, ctx),
        ]


@then(
    'the LangChain tool "{name}" counted {count:d} words, a bad call was invalid '
    'and "{other}" was denied'
)
def lc_reverse_results(context: Any, name: str, count: int, other: str) -> None:
    counted, wrong, refused = context.lc_results
    assert counted.output == count
    assert wrong.error_type == "ToolSchemaValidationError"
    assert refused.error_type == "ToolAccessDeniedError"
