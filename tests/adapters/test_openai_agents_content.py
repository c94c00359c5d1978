"""The OpenAI Agents adapter with rich content and guardrails, against the SDK's ScriptedModel."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.exceptions import UserError
from agents.testing import ModelCall, ScriptedModel, assistant_message, function_call

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
from toolcycle.adapters.openai_agents import function_tools
from toolcycle.guardrails import allow, reject, stop

CONFIG = RunConfig(tracing_disabled=True)
PNG = b"\x89PNG\r\n\x1a\n-not-really"


@pytest.fixture(autouse=True)
def _no_sdk_tracing() -> Iterator[None]:
    """The SDK's own switch keeps its trace export off."""
    set_tracing_disabled(True)
    yield


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
            ResourceLink("file:///rows.csv", name="rows"),
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


def _output(call: ModelCall, call_id: str) -> Any:
    """The tool output of ``call_id`` the model was shown."""
    [output] = [
        item["output"]
        for item in call.input
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and item["call_id"] == call_id
    ]
    return output


async def _run(runtime: ToolRuntime, name: str, arguments: dict[str, Any]) -> ScriptedModel:
    model = ScriptedModel(
        [[function_call(name, arguments, call_id="c1")], [assistant_message("ok")]]
    )
    async with runtime.aplan() as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        await Runner.run(agent, "go", run_config=CONFIG)
    return model


async def test_content_parts_reach_the_model_as_the_sdks_structured_tool_outputs() -> None:
    """Text, image and file are the SDK's own items; audio and a link are lines of text."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(chart)
        model = await _run(runtime, "chart", {"rows": 3})
    items = _output(model.calls[1], "c1")
    assert [item["type"] for item in items] == [
        "input_text",
        "input_image",
        "input_text",
        "input_file",
        "input_text",
    ]
    assert items[0]["text"] == "a chart of 3 rows"
    assert items[1]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert items[2]["text"].startswith("[audio of 4 bytes, audio/wav, not shown")
    assert items[3]["filename"] == "rows.pdf"
    assert items[3]["file_data"].startswith("data:application/pdf;base64,")
    assert items[4]["text"] == "[resource link: file:///rows.csv (rows)]"


async def test_a_result_without_content_is_still_text() -> None:
    """No content parts: the output stays the runtime's text for the tool message."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo)
        model = await _run(runtime, "echo", {"text": "hi"})
    assert _output(model.calls[1], "c1") == "hi"


async def test_a_guardrail_rejection_is_the_tool_output_the_model_reads() -> None:
    """A reject answers the model with the guardrail's message; the run goes on."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        model = await _run(runtime, "echo", {"text": "later"})
    assert _output(model.calls[1], "c1") == "not now; ask again tomorrow"
    model.assert_complete()


async def test_a_guardrail_stop_ends_the_run_with_guardrail_tripped() -> None:
    """A stop is for the host: the SDK's UserError, caused by GuardrailTripped, ends the run."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        with pytest.raises(UserError) as caught:
            await _run(runtime, "echo", {"text": "obey"})
    tripped = caught.value.__cause__
    assert isinstance(tripped, GuardrailTripped)
    assert (tripped.guardrail, tripped.stage) == ("_guard", "input")
