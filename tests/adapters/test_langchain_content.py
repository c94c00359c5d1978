"""The LangChain adapter with rich content and guardrails, in a LangGraph ToolNode."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from toolcycle import (
    Audio,
    File,
    GuardrailCall,
    GuardrailDecision,
    GuardrailTripped,
    Image,
    NullTracer,
    ResourceLink,
    Text,
    ToolExecutionContext,
    ToolReturn,
    ToolRuntime,
    tool,
)
from toolcycle.adapters.langchain import langchain_tools
from toolcycle.guardrails import allow, reject, stop

PNG = b"\x89PNG\r\n\x1a\n-not-really"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@tool(writes=False)
def chart(rows: int) -> ToolReturn[dict[str, int]]:
    """Draw a chart of the latest rows."""
    return ToolReturn(
        value={"rows": rows},
        content=[
            Text(f"a chart of {rows} rows"),
            Image(PNG, "image/png"),
            Audio(b"RIFF", "audio/wav"),
            File(b"%PDF-1.7", "application/pdf", name="rows.pdf"),
            File(b"a,b", "text/csv"),
            ResourceLink("file:///rows.csv", name="rows", description="all of them"),
        ],
    )


@tool(writes=False)
def echo(text: str) -> str:
    """Say the text back."""
    return text


def _guard(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
    text = call.arguments["text"]
    if text == "later":
        return reject("not now; ask again tomorrow")
    return stop("this text tries to instruct the model") if text == "obey" else allow()


def _graph(tools: list[BaseTool]) -> Any:
    """A graph of one ToolNode, which answers the tool calls of the last message."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    return graph.compile()


def _asked(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "name": name, "args": args, "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


def _answer(runtime: ToolRuntime, name: str, args: dict[str, Any]) -> ToolMessage:
    """What a ToolNode answers one model call of ``name`` with."""
    with runtime.plan() as ctx:
        out = _graph(langchain_tools(runtime, ctx)).invoke(_asked("c1", name, args))
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    return message


def test_content_parts_are_standard_content_blocks_and_the_value_is_the_artifact() -> None:
    """Each part is a langchain-core 1.x block in order; the model never sees the value."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(chart)
        message = _answer(runtime, "chart", {"rows": 3})
    assert message.status == "success" and message.artifact == {"rows": 3}
    assert message.content == [
        {"type": "text", "text": "a chart of 3 rows"},
        {"type": "image", "base64": _b64(PNG), "mime_type": "image/png"},
        {
            "type": "text",
            "text": "[audio of 4 bytes, audio/wav, not shown: "
            "a LangChain tool message takes no audio]",
        },
        {
            "type": "file",
            "base64": _b64(b"%PDF-1.7"),
            "mime_type": "application/pdf",
            "extras": {"filename": "rows.pdf"},
        },
        {"type": "file", "base64": _b64(b"a,b"), "mime_type": "text/csv"},
        {"type": "text", "text": "[resource link: file:///rows.csv (rows; all of them)]"},
    ]
    assert [block["type"] for block in message.content_blocks] == [
        "text",
        "image",
        "text",
        "file",
        "file",
        "text",
    ]


def test_a_result_without_content_is_still_a_text_message_without_artifact() -> None:
    """No content parts: the message is the output's text, as before."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo)
        message = _answer(runtime, "echo", {"text": "hi"})
    assert (message.content, message.artifact) == ("hi", None)


def test_plain_arguments_give_the_value_of_a_tool_that_returns_content() -> None:
    """Invoked without a tool call there is no message: the value is what comes back."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(chart)
        with runtime.plan() as ctx:
            [chart_tool] = langchain_tools(runtime, ctx)
            assert chart_tool.invoke({"rows": 2}) == {"rows": 2}


def test_a_guardrail_rejection_is_an_error_message_the_model_reads() -> None:
    """A reject is a ToolMessage with status error and the guardrail's message."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        message = _answer(runtime, "echo", {"text": "later"})
    assert (message.status, message.content) == ("error", "not now; ask again tomorrow")


def test_a_guardrail_stop_raises_guardrail_tripped_out_of_the_graph() -> None:
    """A stop is for the host: the ToolNode does not turn GuardrailTripped into a message."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        with pytest.raises(GuardrailTripped) as caught:
            _answer(runtime, "echo", {"text": "obey"})
    assert (caught.value.guardrail, caught.value.stage) == ("_guard", "input")


async def test_an_async_graph_gets_the_same_blocks_and_the_same_stop() -> None:
    """An ainvoke goes through acall: blocks for content, GuardrailTripped for a stop."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(chart)
        runtime.register(echo, input_guardrails=[_guard])
        async with runtime.aplan() as ctx:
            graph = _graph(langchain_tools(runtime, ctx))
            out = await graph.ainvoke(_asked("c1", "chart", {"rows": 1}))
            with pytest.raises(GuardrailTripped):
                await graph.ainvoke(_asked("c2", "echo", {"text": "obey"}))
    message = out["messages"][-1]
    assert message.artifact == {"rows": 1} and message.content[0]["type"] == "text"
