"""toolcycle.adapters.langchain against the real LangChain core and LangGraph.

The model is a scripted chat model (a `BaseChatModel` whose answers a function of the
messages decides, and whose ``bind_tools`` returns itself); the agent is a compiled
LangGraph `StateGraph` with a `ToolNode`. Nothing of LangChain or LangGraph is mocked.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import (
    BaseTool,
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    Tool,
    ToolException,
)
from langchain_core.tools import tool as langchain_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel, Field, field_validator

from toolcycle import (
    ApprovalDecision,
    Image,
    NullTracer,
    PendingApproval,
    Text,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)
from toolcycle.adapters.langchain import from_langchain, langchain_tools
from toolcycle.adapters.langchain._graph import REPLAYS
from toolcycle.otel import OpenTelemetry
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0
KEY_SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


class ScriptedChatModel(BaseChatModel):
    """A chat model whose every answer ``respond`` computes from the messages it got."""

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


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": args, "type": "tool_call"}


def _agent(model: ScriptedChatModel, tools: list[BaseTool], **compile_options: Any) -> Any:
    """The usual LangGraph agent: the model, then its tool calls in a ToolNode, in a loop."""
    bound = model.bind_tools(tools)

    def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(**compile_options)


def _retrying_model() -> tuple[ScriptedChatModel, list[str]]:
    """Calls lookup wrongly, reads the error, retries right and tries an unknown tool."""
    errors_seen: list[str] = []

    def respond(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if not isinstance(last, ToolMessage):
            return AIMessage("", tool_calls=[_call("c1", "lookup", {"key": 3})])
        if last.tool_call_id == "c1":
            assert last.status == "error"
            errors_seen.append(str(last.content))
            return AIMessage(
                "", tool_calls=[_call("c2", "lookup", {"key": "oslo"}), _call("c3", "lokup", {})]
            )
        return AIMessage(f"found {messages[-2].content}")

    return ScriptedChatModel(respond=respond), errors_seen


def _lookup() -> FakeTool:
    return FakeTool(
        name="lookup", input_schema=KEY_SCHEMA, output=lambda params, ctx: params["key"].upper()
    )


@pytest.fixture
def runtime() -> Any:
    with ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT) as built:
        yield built


# -- toolcycle tools in a LangGraph agent ------------------------------------------------


def test_an_agent_run_goes_through_the_runtime_and_the_model_retries_after_its_mistake(
    runtime: ToolRuntime,
) -> None:
    """A sync run: a trace per call that reached the runtime, one activation, and a retry."""
    lookup = _lookup()
    runtime.register(lookup)
    model, errors_seen = _retrying_model()
    with capture_traces(runtime) as traces, runtime.plan(read_only=True) as ctx:
        out = _agent(model, langchain_tools(runtime, ctx)).invoke({"messages": [("user", "?")]})
        assert lookup.count("activate", ctx.plan_id) == 1
    assert lookup.count("deactivate", ctx.plan_id) == 1
    assert errors_seen and "/key" in errors_seen[0] and "string" in errors_seen[0]
    answers = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert answers["c2"].status == "success" and answers["c2"].content == "OSLO"
    assert answers["c3"].status == "error"  # the ToolNode answers a name it does not hold
    assert [(t.tool_name, t.status) for t in traces] == [
        ("lookup", "invalid_input"),
        ("lookup", "ok"),
    ]
    assert out["messages"][-1].content == "found OSLO"


async def test_an_async_agent_run_goes_through_acall(runtime: ToolRuntime) -> None:
    """The graph's ainvoke awaits the runtime's acall; same traces, same retry."""
    lookup = _lookup()
    runtime.register(lookup)
    model, errors_seen = _retrying_model()
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as ctx:
            agent = _agent(model, langchain_tools(runtime, ctx))
            out = await asyncio.wait_for(agent.ainvoke({"messages": [("user", "?")]}), WAIT)
    assert errors_seen
    assert out["messages"][-1].content == "found OSLO"
    assert [t.status for t in traces] == ["invalid_input", "ok"]
    assert lookup.stages(ctx.plan_id) == ["activate", "execute", "deactivate"]


def test_a_read_only_plan_hides_a_writing_tool_and_a_call_to_it_is_a_tool_message(
    runtime: ToolRuntime,
) -> None:
    """The model is never shown the write; calling it anyway answers, not raises."""
    runtime.register(_lookup())
    save = FakeTool(name="save", writes=True)
    runtime.register(save)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("gave up")
        return AIMessage("", tool_calls=[_call("w1", "save", {})])

    model = ScriptedChatModel(respond=respond)
    with runtime.plan(read_only=True) as ctx:
        tools = langchain_tools(runtime, ctx)
        out = _agent(model, tools).invoke({"messages": [("user", "save it")]})
    assert model.bound == [["lookup"]]
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error" and answer.tool_call_id == "w1"
    assert save.count("execute") == 0


def test_a_tool_that_returns_an_image_answers_with_content_blocks(runtime: ToolRuntime) -> None:
    """Rich content reaches a LangChain agent as the tool message's content blocks."""

    @tool(writes=False)
    def snap() -> list[Text | Image]:
        """Take a screenshot."""
        return [Text("the screen"), Image(b"\x89PNG", "image/png")]

    runtime.register(snap)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("seen")
        return AIMessage("", tool_calls=[_call("s1", "snap", {})])

    with runtime.plan() as ctx:
        out = _agent(ScriptedChatModel(respond=respond), langchain_tools(runtime, ctx)).invoke(
            {"messages": [("user", "look")]}
        )
    [answer] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "success"
    assert answer.content == [
        {"type": "text", "text": "the screen"},
        {"type": "image", "base64": "iVBORw==", "mime_type": "image/png"},
    ]


def test_a_refused_call_that_reaches_the_runtime_is_an_error_message(runtime: ToolRuntime) -> None:
    """A call the runtime refuses (here: needs approval, no approver) answers, never raises."""

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    runtime.register(pay)
    with runtime.plan() as ctx:
        [offered] = langchain_tools(runtime, ctx)
        message = offered.invoke(_call("s1", "pay", {"amount": 1}))
    assert isinstance(message, ToolMessage)
    assert message.status == "error" and "has no approver" in str(message.content)


def test_names_a_provider_would_refuse_are_mapped_and_mapped_back(runtime: ToolRuntime) -> None:
    """A dotted name becomes an OpenAI-safe one; a call under it runs the tool."""

    @tool(name="notes.find", writes=False)
    def find(term: str) -> str:
        """Find a note."""
        return f"note about {term}"

    runtime.register(find)
    with runtime.plan() as ctx:
        [found] = langchain_tools(runtime, ctx)
        message = found.invoke(_call("n1", found.name, {"term": "x"}))
    assert found.name.startswith("notes_find_")
    assert found.args_schema == runtime.descriptor("notes.find").input_schema
    assert found.description == "Find a note."
    assert message.content == "note about x"


def test_plain_arguments_give_the_output_or_the_error_text(runtime: ToolRuntime) -> None:
    """Without a tool call there is no message: the output, or the failure's text."""
    runtime.register(_lookup())
    with runtime.plan() as ctx:
        [lookup] = langchain_tools(runtime, ctx)
        assert lookup.invoke({"key": "a"}) == "A"
        assert lookup.invoke('{"key": "b"}') == "B"  # JSON text goes to the runtime as sent
        assert "/key" in lookup.invoke({"key": 1})
        assert "JSON" in lookup.invoke("{not json")


async def test_ainvoke_with_a_tool_call_gives_a_tool_message(runtime: ToolRuntime) -> None:
    """The async path answers a tool call with a ToolMessage, failures with status error."""
    runtime.register(_lookup())
    async with runtime.aplan() as ctx:
        [lookup] = langchain_tools(runtime, ctx)
        good = await lookup.ainvoke(_call("a1", "lookup", {"key": "q"}))
        bad = await lookup.ainvoke(_call("a2", "lookup", {}))
        plain = await lookup.ainvoke({"key": "r"})
    assert (good.content, good.status, good.tool_call_id) == ("Q", "success", "a1")
    assert bad.status == "error" and "key" in bad.content
    assert plain == "R"


def test_the_tool_call_id_reaches_the_trace_the_span_and_the_result(runtime: ToolRuntime) -> None:
    """The trace's tool_call_id and the span's gen_ai.tool.call.id are the LangChain call's id."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumented = ToolRuntime(
        tracer=NullTracer(), instrumentation=OpenTelemetry(tracer_provider=provider), keep_traces=1
    )
    try:
        instrumented.register(_lookup())
        with instrumented.plan() as ctx:
            [lookup] = langchain_tools(instrumented, ctx)
            message = lookup.invoke(_call("span-1", "lookup", {"key": "k"}))
    finally:
        instrumented.close()
        provider.shutdown()
    [span] = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert span.attributes is not None
    assert span.attributes["gen_ai.tool.call.id"] == "span-1"
    assert message.tool_call_id == "span-1"
    assert [trace.tool_call_id for trace in instrumented.recent_traces()] == ["span-1"]


async def test_two_concurrent_runs_keep_separate_plans(runtime: ToolRuntime) -> None:
    """Each run has its own plan; both are inside their tool at once and neither sees the other."""
    both_in = asyncio.Barrier(2)
    plans: list[str] = []
    stages: list[tuple[str, str]] = []

    class Probe:
        def discover(self) -> Any:
            from toolcycle import ToolCapability, ToolDescriptor

            return ToolDescriptor(name="probe", capability=ToolCapability(writes=False))

        def activate(self, ctx: ToolExecutionContext) -> None:
            stages.append(("activate", ctx.plan_id))

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
            plans.append(ctx.plan_id)
            await asyncio.wait_for(both_in.wait(), WAIT)
            return ctx.plan_id

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            stages.append(("deactivate", ctx.plan_id))

    runtime.register(Probe())

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(str(messages[-1].content))
        return AIMessage("", tool_calls=[_call("p", "probe", {})])

    async def run(plan_id: str) -> str:
        async with runtime.aplan(plan_id) as ctx:
            agent = _agent(ScriptedChatModel(respond=respond), langchain_tools(runtime, ctx))
            out = await agent.ainvoke({"messages": [("user", "go")]})
        return str(out["messages"][-1].content)

    answers = await asyncio.wait_for(asyncio.gather(run("run-a"), run("run-b")), WAIT)
    assert answers == ["run-a", "run-b"]
    assert sorted(plans) == ["run-a", "run-b"]
    for plan_id in ("run-a", "run-b"):
        assert [s for s, p in stages if p == plan_id] == ["activate", "deactivate"]


async def test_cancelling_the_run_cancels_the_tool_before_the_plan_ends(
    runtime: ToolRuntime,
) -> None:
    """The running tool sees the cancellation and stops; only then is it deactivated."""
    started = asyncio.Event()
    order: list[str] = []

    class Slow:
        def discover(self) -> Any:
            from toolcycle import ToolCapability, ToolDescriptor

            return ToolDescriptor(name="slow", capability=ToolCapability(writes=False))

        def activate(self, ctx: ToolExecutionContext) -> None:
            order.append("activated")

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                order.append("tool stopped")

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            order.append("deactivated")

    runtime.register(Slow())
    model = ScriptedChatModel(respond=lambda m: AIMessage("", tool_calls=[_call("s", "slow", {})]))

    async def run() -> None:
        async with runtime.aplan() as ctx:
            await _agent(model, langchain_tools(runtime, ctx)).ainvoke(
                {"messages": [("user", "go")]}
            )

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    assert order == ["activated", "tool stopped", "deactivated"]


# -- approvals through LangGraph's interrupt ---------------------------------------------


class Ledger:
    """An approval ledger that remembers what it claimed."""

    def __init__(self) -> None:
        self.claimed: list[str] = []

    def claim(self, approval_id: str) -> bool:
        if approval_id in self.claimed:
            return False
        self.claimed.append(approval_id)
        return True


def _send_setup() -> tuple[ToolRuntime, Ledger, list[str]]:
    sent: list[str] = []

    @tool
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    ledger = Ledger()
    runtime = ToolRuntime(tracer=NullTracer(), approval_ledger=ledger)
    runtime.register(send)
    return runtime, ledger, sent


def _send_model() -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"{messages[-1].status}: {messages[-1].content}")
        return AIMessage("", tool_calls=[_call("t1", "send", {"to": "ann"})])

    return ScriptedChatModel(respond=respond)


def _defer(request: Any) -> ApprovalDecision:
    return ApprovalDecision.defer("a person decides")


def test_a_deferred_call_interrupts_the_graph_and_resuming_runs_it_once() -> None:
    """The interrupt shows the request; Command(resume=True) claims it in the ledger and runs it."""
    runtime, ledger, sent = _send_setup()
    config = {"configurable": {"thread_id": "approve"}}
    with runtime, capture_traces(runtime) as traces, runtime.plan(approver=_defer) as ctx:
        agent = _agent(_send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver())
        paused = agent.invoke({"messages": [("user", "send it")]}, config)
        assert sent == []
        [question] = paused["__interrupt__"]
        done = agent.invoke(Command(resume=True), config)
    assert question.value["type"] == "toolcycle_approval"
    assert question.value["tool_name"] == "send" and question.value["arguments"] == {"to": "ann"}
    assert question.value["tool_call_id"] == "t1" and question.value["reason"] == "a person decides"
    assert sent == ["ann"]
    assert done["messages"][-1].content == "success: sent to ann"
    shown, asked_again, resumed = traces
    assert shown.status == asked_again.status == "pending"
    assert resumed.status == "ok" and resumed.approval is not None and resumed.approval.resumed
    assert shown.approval is not None
    assert ledger.claimed == [shown.approval.approval_id] == [resumed.approval.approval_id]
    assert resumed.approval.fingerprint == question.value["fingerprint"]


async def test_an_async_run_resumes_with_a_denial_the_model_reads() -> None:
    """A denial given as the decision's dict is a failed tool message with its reason."""
    runtime, ledger, sent = _send_setup()
    config = {"configurable": {"thread_id": "deny"}}
    with runtime:
        async with runtime.aplan(approver=_defer) as ctx:
            agent = _agent(
                _send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver()
            )
            paused = await agent.ainvoke({"messages": [("user", "send it")]}, config)
            assert paused["__interrupt__"]
            decision = ApprovalDecision.deny("not today").model_dump()
            done = await agent.ainvoke(Command(resume=decision), config)
    assert sent == []
    assert done["messages"][-1].content.startswith("error: ")
    assert "not today" in done["messages"][-1].content
    assert len(ledger.claimed) == 1


@pytest.mark.parametrize("answer", ["yes", {"outcome": "maybe"}, 1])
def test_a_resume_value_that_is_no_decision_denies_the_call(answer: object) -> None:
    """Fail closed: anything but a bool, a decision or its dict denies."""
    runtime, _, sent = _send_setup()
    config = {"configurable": {"thread_id": "odd"}}
    with runtime, runtime.plan(approver=_defer) as ctx:
        agent = _agent(_send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver())
        agent.invoke({"messages": [("user", "send it")]}, config)
        done = agent.invoke(Command(resume=answer), config)
    assert sent == []
    assert "not an approval decision" in done["messages"][-1].content


def test_a_decision_bound_to_another_call_is_refused_sync() -> None:
    """A decision with a foreign fingerprint is a failed tool message; the call does not run."""
    runtime, ledger, sent = _send_setup()
    config = {"configurable": {"thread_id": "foreign"}}
    foreign = ApprovalDecision.approve(fingerprint="sha256:" + "0" * 64)
    with runtime, runtime.plan(approver=_defer) as ctx:
        agent = _agent(_send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver())
        agent.invoke({"messages": [("user", "send it")]}, config)
        done = agent.invoke(Command(resume=foreign), config)
    assert sent == [] and ledger.claimed == []
    assert done["messages"][-1].content.startswith("error: ")


async def test_a_decision_bound_to_another_call_is_refused_async() -> None:
    """The async twin of the refusal above."""
    runtime, ledger, sent = _send_setup()
    config = {"configurable": {"thread_id": "foreign-async"}}
    foreign = ApprovalDecision.approve(fingerprint="sha256:" + "0" * 64)
    with runtime:
        async with runtime.aplan(approver=_defer) as ctx:
            agent = _agent(
                _send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver()
            )
            await agent.ainvoke({"messages": [("user", "send it")]}, config)
            done = await agent.ainvoke(Command(resume=foreign), config)
    assert sent == [] and ledger.claimed == []
    assert "fingerprint" in done["messages"][-1].content


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_in_one_step_only_the_first_call_needing_approval_asks(use_async: bool) -> None:
    """Two calls of one ToolNode step: one interrupt; the other is told to call again."""
    runtime, ledger, sent = _send_setup()
    config = {"configurable": {"thread_id": f"two-{use_async}"}}

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("done")
        calls = [_call("t1", "send", {"to": "ann"}), _call("t2", "send", {"to": "bob"})]
        return AIMessage("", tool_calls=calls)

    def run(agent: Any, value: Any) -> Any:
        if use_async:
            return asyncio.run(asyncio.wait_for(agent.ainvoke(value, config), WAIT))
        return agent.invoke(value, config)

    with runtime, runtime.plan(approver=_defer) as ctx:
        agent = _agent(
            ScriptedChatModel(respond=respond),
            langchain_tools(runtime, ctx),
            checkpointer=InMemorySaver(),
        )
        paused = run(agent, {"messages": [("user", "send both")]})
        [question] = paused["__interrupt__"]
        done = run(agent, Command(resume=True))
    asked = question.value["arguments"]["to"]
    assert sent == [asked] and len(ledger.claimed) == 1
    answers = {m.tool_call_id: m for m in done["messages"] if isinstance(m, ToolMessage)}
    assert [m.status for m in answers.values()].count("success") == 1
    [other] = [m for m in answers.values() if m.status == "error"]
    assert "call it again" in other.content
    assert "__interrupt__" not in done


def _note_and_send(
    runtime: ToolRuntime, ctx: ToolExecutionContext, note: str, use_async: bool
) -> Callable[[Any], Any]:
    """A graph whose first step calls ``note`` and ``send`` together; what runs it."""
    config = {"configurable": {"thread_id": f"{note}-{use_async}"}}

    def respond(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("done")
        calls = [_call("n1", note, {"text": "hi"}), _call("t1", "send", {"to": "ann"})]
        return AIMessage("", tool_calls=calls)

    agent = _agent(
        ScriptedChatModel(respond=respond),
        langchain_tools(runtime, ctx),
        checkpointer=InMemorySaver(),
    )

    def run(value: Any) -> Any:
        if use_async:
            return asyncio.run(asyncio.wait_for(agent.ainvoke(value, config), WAIT))
        return agent.invoke(value, config)

    return run


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_call_of_the_paused_step_does_not_run_again_when_it_resumes(use_async: bool) -> None:
    """LangGraph runs the node again on resume; the answer of the call that ran is replayed."""
    runtime, _, sent = _send_setup()
    notes: list[str] = []

    @tool(writes=False)
    def note(text: str) -> str:
        """Keep a note."""
        notes.append(text)
        return "noted"

    runtime.register(note)
    with runtime, runtime.plan(approver=_defer) as ctx:
        run = _note_and_send(runtime, ctx, "note", use_async)
        run({"messages": [("user", "note and send")]})
        done = run(Command(resume=True))
    assert notes == ["hi"] and sent == ["ann"]
    answers = {m.tool_call_id: m.content for m in done["messages"] if isinstance(m, ToolMessage)}
    assert answers == {"n1": "noted", "t1": "sent to ann"}


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_step_pauses_only_once_its_running_calls_have_answered(use_async: bool) -> None:
    """A call still running when its step pauses answers first, so resuming replays it.

    LangGraph abandons a node's other calls when one of them pauses the run; a sync
    tool's body already running on a thread would finish unremembered and run again.
    """
    runtime, _, sent = _send_setup()
    started, gate, asked = threading.Event(), threading.Event(), threading.Event()
    notes: list[str] = []

    @tool(writes=False)
    def slow_note(text: str) -> str:
        """Keep a note, once the test lets it."""
        started.set()
        assert gate.wait(WAIT)
        notes.append(text)
        return "noted"

    def defer(request: Any) -> ApprovalDecision:
        asked.set()
        return ApprovalDecision.defer("a person decides")

    runtime.register(slow_note)
    with runtime, runtime.plan(approver=defer) as ctx:
        run = _note_and_send(runtime, ctx, "slow_note", use_async)
        first = threading.Thread(target=run, args=({"messages": [("user", "go")]},))
        first.start()
        # The call that pauses has asked while the other one is still running.
        assert started.wait(WAIT) and asked.wait(WAIT)
        gate.set()
        first.join(WAIT)
        assert not first.is_alive()
        run(Command(resume=True))
    assert notes == ["hi"] and sent == ["ann"]


def test_the_answers_kept_for_re_runs_are_bounded(runtime: ToolRuntime) -> None:
    """However many calls a graph makes, the tools keep the latest 128 answers only."""
    runtime.register(_lookup())
    calls = [_call(f"k{n}", "lookup", {"key": "x"}) for n in range(130)]

    def respond(messages: list[BaseMessage]) -> AIMessage:
        return (
            AIMessage("done")
            if isinstance(messages[-1], ToolMessage)
            else AIMessage("", tool_calls=calls)
        )

    with runtime.plan() as ctx:
        tools = langchain_tools(runtime, ctx)
        out = _agent(ScriptedChatModel(respond=respond), tools).invoke(
            {"messages": [("user", "?")]}
        )
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == 130
    assert len(tools[0]._graph._answers) == 128  # the bound itself is private state


def test_what_the_tools_keep_of_answered_approvals_is_bounded() -> None:
    """However many steps pause and are resumed, the tools keep the latest 128 of each."""
    runtime, _, sent = _send_setup()
    with runtime, runtime.plan(approver=_defer) as ctx:
        tools = langchain_tools(runtime, ctx)
        agent = _agent(_send_model(), tools, checkpointer=InMemorySaver())
        for number in range(REPLAYS + 3):
            config = {"configurable": {"thread_id": f"many-{number}"}}
            assert agent.invoke({"messages": [("user", "send it")]}, config)["__interrupt__"]
            agent.invoke(Command(resume=True), config)
    assert len(sent) == REPLAYS + 3
    kept = {name: len(held) for name, held in vars(tools[0]._graph).items() if _sized(held)}
    assert kept and max(kept.values()) <= REPLAYS, kept  # the bound itself is private state


def test_a_paused_step_is_kept_until_it_is_resumed() -> None:
    """A step waiting for a decision is never forgotten for newer ones: its resume still works."""
    runtime, _, sent = _send_setup()
    with runtime, runtime.plan(approver=_defer) as ctx:
        agent = _agent(_send_model(), langchain_tools(runtime, ctx), checkpointer=InMemorySaver())
        waiting = {"configurable": {"thread_id": "waits"}}
        assert agent.invoke({"messages": [("user", "send it")]}, waiting)["__interrupt__"]
        for number in range(REPLAYS + 3):
            config = {"configurable": {"thread_id": f"later-{number}"}}
            agent.invoke({"messages": [("user", "send it")]}, config)
            agent.invoke(Command(resume=True), config)
        done = agent.invoke(Command(resume=True), waiting)
    assert done["messages"][-1].content == "success: sent to ann"
    assert len(sent) == REPLAYS + 4


def _sized(value: object) -> bool:
    return isinstance(value, dict | list | set)


def test_outside_a_graph_a_deferred_call_answers_with_its_pending_record() -> None:
    """No graph to pause: the message says it waits and carries the record to resume."""
    runtime, _, sent = _send_setup()
    with runtime, runtime.plan(approver=_defer) as ctx:
        [send] = langchain_tools(runtime, ctx)
        message = send.invoke(_call("o1", "send", {"to": "bo"}))
        assert message.status == "error" and isinstance(message.artifact, PendingApproval)
        assert runtime.resume(message.artifact, True, ctx).success
    assert sent == ["bo"]


async def test_outside_a_graph_an_async_deferred_call_answers_with_its_pending_record() -> None:
    """The async twin: ainvoke outside a graph does not pause anything."""
    runtime, _, sent = _send_setup()
    with runtime:
        async with runtime.aplan(approver=_defer) as ctx:
            [send] = langchain_tools(runtime, ctx)
            message = await send.ainvoke(_call("o2", "send", {"to": "cy"}))
    assert message.status == "error" and isinstance(message.artifact, PendingApproval)
    assert sent == []


# -- LangChain tools under toolcycle's plans ---------------------------------------------


class Query(BaseModel):
    """The arguments of the search tool."""

    text: str
    limit: int = 3
    secret: Annotated[str, InjectedToolArg] = ""


def _search(text: str, limit: int = 3, secret: str = "") -> list[str]:
    """Search."""
    return [f"{text}-{n}" for n in range(limit)]


def test_a_langchain_tool_runs_under_a_plan_with_validation_and_traces(
    runtime: ToolRuntime,
) -> None:
    """Schema from args_schema (injected arguments left out); the runtime validates and traces."""
    search = StructuredTool.from_function(
        _search, name="search", description="Search.", args_schema=Query, tags=["web"]
    )
    instance = from_langchain(search, writes=False, tags=["mine"])
    descriptor = runtime.register(instance)
    assert set(descriptor.input_schema["properties"]) == {"text", "limit"}
    assert descriptor.tags == {"web", "mine"} and descriptor.source_name == "langchain"
    with capture_traces(runtime) as traces, runtime.plan(read_only=True) as ctx:
        ok = runtime.execute("search", {"text": "a", "limit": 2}, ctx)
        bad = runtime.call({"name": "search", "arguments": {"limit": 2}}, ctx)
    assert ok.output == ["a-0", "a-1"]
    assert bad.error_type == "ToolSchemaValidationError"
    assert [t.status for t in traces] == ["ok", "invalid_input"]


def test_a_langchain_tool_writes_unless_told(runtime: ToolRuntime) -> None:
    """The default capability is the safe one: a read-only plan refuses the tool."""
    runtime.register(from_langchain(StructuredTool.from_function(_search, name="search")))
    with runtime.plan(read_only=True) as ctx:
        refused = runtime.call({"name": "search", "arguments": {"text": "a"}}, ctx)
    assert refused.error_type == "ToolAccessDeniedError"


def test_a_tool_exception_is_a_failed_result(runtime: ToolRuntime) -> None:
    """LangChain's ToolException (and any other) fails the call, never the caller."""

    def broken(text: str) -> str:
        """Fail."""
        raise ToolException("the index is offline")

    runtime.register(from_langchain(StructuredTool.from_function(broken, name="broken")))
    with runtime.plan() as ctx:
        result = runtime.execute("broken", {"text": "a"}, ctx)
    assert not result.success and "the index is offline" in (result.error or "")


@pytest.mark.parametrize("handler", [True, "the model reads this", lambda error: "handled"])
async def test_a_tool_exception_handled_by_langchain_is_still_a_failed_call(
    runtime: ToolRuntime, handler: Any
) -> None:
    """handle_tool_error would turn the exception into a string result: the call fails instead.

    Sync and async, with plain arguments and with the call's id injected, the trace
    says ``error`` with the tool's own message, as without ``handle_tool_error``.
    """

    def broken(text: str) -> str:
        """Fail."""
        raise ToolException("the index is offline")

    async def abroken(text: str) -> str:
        """Fail, asynchronously."""
        raise ToolException("the index is offline")

    def tagged(text: str, call: Annotated[str, InjectedToolCallId]) -> str:
        """Fail, with the call's id injected."""
        raise ToolException("the index is offline")

    tools = [
        StructuredTool.from_function(broken, name="broken", handle_tool_error=handler),
        StructuredTool.from_function(coroutine=abroken, name="abroken", handle_tool_error=handler),
        StructuredTool.from_function(tagged, name="tagged", handle_tool_error=handler),
    ]
    for one in tools:
        runtime.register(from_langchain(one))
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as ctx:
            results = [await runtime.aexecute(one.name, {"text": "a"}, ctx) for one in tools]
    for result in results:
        assert not result.success and result.error_type == "ToolException"
        assert "the index is offline" in (result.error or "")
    assert [t.status for t in traces] == ["error", "error", "error"]
    assert all(one.handle_tool_error == handler for one in tools)  # the user's tools unchanged


class _RelativePath(BaseModel):
    """Arguments with a rule JSON Schema cannot express: the path must be relative."""

    path: str

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/"):
            raise ValueError("the path must be relative")
        return value


@pytest.mark.parametrize("handler", [True, "the model reads this", lambda error: "handled"])
async def test_arguments_the_args_schema_rejects_are_a_failed_call_despite_handle_validation_error(
    runtime: ToolRuntime, handler: Any
) -> None:
    """handle_validation_error would turn the rejection into a string result: the call fails.

    The arguments pass the JSON Schema, so only LangChain's own pydantic validation sees
    the problem; sync and async, the trace says ``error`` with pydantic's message.
    """

    def read(path: str) -> str:
        """Read a file."""
        return "contents"

    async def aread(path: str) -> str:
        """Read a file, asynchronously."""
        return "contents"

    tools = [
        StructuredTool.from_function(
            read, name="read", args_schema=_RelativePath, handle_validation_error=handler
        ),
        StructuredTool.from_function(
            coroutine=aread,
            name="aread",
            args_schema=_RelativePath,
            handle_validation_error=handler,
        ),
    ]
    for one in tools:
        runtime.register(from_langchain(one))
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as ctx:
            results = [
                await runtime.aexecute(one.name, {"path": "/etc/hosts"}, ctx) for one in tools
            ]
    for result in results:
        assert not result.success and result.error_type == "ValidationError"
        assert "the path must be relative" in (result.error or "")
    assert [t.status for t in traces] == ["error", "error"]
    assert all(one.handle_validation_error == handler for one in tools)  # unchanged


async def test_an_async_langchain_tool_stays_async(runtime: ToolRuntime) -> None:
    """A coroutine tool's execute is a coroutine; a dict args_schema is kept as it is."""
    loop_seen: list[asyncio.AbstractEventLoop] = []

    async def fetch(key: str) -> str:
        loop_seen.append(asyncio.get_running_loop())
        return key * 2

    fetcher = StructuredTool.from_function(
        coroutine=fetch, name="fetch", description="Fetch.", args_schema=KEY_SCHEMA
    )
    instance = from_langchain(fetcher, name="fetch2", writes=False)
    assert asyncio.iscoroutinefunction(instance.execute)
    assert runtime.register(instance).input_schema == KEY_SCHEMA
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("fetch2", {"key": "ab"}, ctx)
    assert result.output == "abab" and loop_seen == [asyncio.get_running_loop()]


def test_a_base_tool_subclass_is_sync_unless_it_has_its_own_arun(runtime: ToolRuntime) -> None:
    """A BaseTool that only defines _run is sync; one with _arun too is async."""

    class Echo(BaseTool):
        name: str = "echo"
        description: str = "Echo."

        def _run(self, word: str) -> str:
            return word

    class AsyncEcho(Echo):
        name: str = "aecho"

        async def _arun(self, word: str) -> str:
            return word.upper()

    sync_instance, async_instance = from_langchain(Echo()), from_langchain(AsyncEcho())
    assert not asyncio.iscoroutinefunction(sync_instance.execute)
    assert asyncio.iscoroutinefunction(async_instance.execute)
    runtime.register(sync_instance)
    runtime.register(async_instance)
    with runtime.plan() as ctx:
        assert runtime.execute("echo", {"word": "hi"}, ctx).output == "hi"
        assert runtime.execute("aecho", {"word": "hi"}, ctx).output == "HI"


async def test_a_single_input_tool_takes_one_string_sync_and_async(
    runtime: ToolRuntime,
) -> None:
    """A ``Tool`` without an args_schema is described as LangChain shows it: one string."""

    async def shout(text: str) -> str:
        return text.upper()

    echo = Tool(name="echo", func=lambda text: f"echo {text}", description="Echo a text.")
    loud = Tool(name="shout", func=None, coroutine=shout, description="Shout a text.")
    described = runtime.register(from_langchain(echo, writes=False))
    runtime.register(from_langchain(loud, writes=False))
    assert described.input_schema["required"] == ["__arg1"]
    async with runtime.aplan() as ctx:
        echoed = await runtime.aexecute("echo", {"__arg1": "hi"}, ctx)
        shouted = await runtime.aexecute("shout", {"__arg1": "hi"}, ctx)
        wrong = await runtime.acall({"name": "echo", "arguments": {"__arg1": 3}}, ctx)
    assert echoed.output == "echo hi"
    assert shouted.output == "HI"
    assert wrong.error_type == "ToolSchemaValidationError"


async def test_a_tool_taking_the_call_id_gets_the_runtimes_call_id_sync_and_async(
    runtime: ToolRuntime,
) -> None:
    """InjectedToolCallId needs a tool call: it is invoked with one, its content the output."""

    @langchain_tool
    def tagged(text: str, call: Annotated[str, InjectedToolCallId]) -> str:
        """Tag a text with the call's id."""
        return f"{text} @ {call}"

    @langchain_tool
    async def atagged(text: str, call: Annotated[str, InjectedToolCallId]) -> str:
        """Async twin of tagged."""
        return f"{text} @ {call}"

    @langchain_tool
    def steer(text: str, call: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Answer with a LangGraph command, which only a ToolNode can apply."""
        return Command(update={"messages": [ToolMessage(text, tool_call_id=call)]})

    described = runtime.register(from_langchain(tagged, writes=False))
    runtime.register(from_langchain(atagged, writes=False))
    runtime.register(from_langchain(steer, writes=False))
    assert described.input_schema["required"] == ["text"]  # the id is not the model's
    with runtime.plan() as ctx:
        sync = runtime.execute("tagged", {"text": "hi"}, ctx)
    async with runtime.aplan() as actx:
        asynchronous = await runtime.aexecute("atagged", {"text": "hi"}, actx)
        steered = await runtime.aexecute("steer", {"text": "hi"}, actx)
    for result in (sync, asynchronous):
        assert result.trace is not None
        assert result.output == f"hi @ {result.trace.call_id}"
    assert not steered.success and "only has a meaning inside a ToolNode" in (steered.error or "")


def test_a_pydantic_v1_schema_is_refused_with_a_definition_error() -> None:
    """Only pydantic v2 models and dicts describe a tool; anything else says what to give."""
    from pydantic import v1

    class Old(v1.BaseModel):
        text: str

    old = StructuredTool.from_function(_search, name="old", args_schema=Old)
    with pytest.raises(ToolDefinitionError, match="pydantic"):
        from_langchain(old)


def test_a_missing_langchain_gives_an_import_error_naming_the_extra() -> None:
    """Without langchain-core the import fails with the pip command to fix it."""
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import toolcycle.adapters.langchain\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    assert "pip install -e '.[langchain]' from a clone (toolcycle[langchain] once published)" in out
