"""The pydantic-ai adapter with rich content and guardrails, against pydantic-ai's FunctionModel."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.messages import BinaryContent, BinaryImage, ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel

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
from toolcycle.adapters.pydantic_ai import ToolcycleToolset
from toolcycle.guardrails import allow, reject, stop

PNG = b"\x89PNG\r\n\x1a\n-not-really"


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
            ResourceLink("file:///rows.csv", name="rows", mime_type="text/csv"),
        ],
        metadata={"render_ms": 41},
    )


@tool(writes=False)
def echo(text: str) -> str:
    """Say the text back."""
    return text


async def _seen_by_model(toolset: ToolcycleToolset, call: ToolCallPart) -> list[ToolReturnPart]:
    seen: list[ToolReturnPart] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[call])
        seen.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(model), toolsets=[toolset]).run("go")
    return seen


async def test_content_parts_reach_the_model_in_the_tool_return_and_the_value_stays_with_the_host() -> (
    None
):
    """Each part is a pydantic-ai item in order; value and metadata ride in ToolReturn.metadata."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(chart)
        [answer] = await _seen_by_model(
            ToolcycleToolset(runtime), ToolCallPart("chart", {"rows": 3}, tool_call_id="c1")
        )
    text, image, audio, pdf, link = answer.content
    assert text == "a chart of 3 rows"
    assert isinstance(image, BinaryImage) and image.data == PNG
    assert image.media_type == "image/png"
    assert isinstance(audio, BinaryContent) and audio.media_type == "audio/wav"
    assert isinstance(pdf, BinaryContent) and pdf.data == b"%PDF-1.7"
    assert pdf.identifier == "rows.pdf"
    assert link == "[resource link: file:///rows.csv (rows; text/csv)]"
    assert answer.metadata == {"output": {"rows": 3}, "metadata": {"render_ms": 41}}


async def test_a_result_without_content_is_still_the_plain_output() -> None:
    """No content parts: the model reads the output as before, with no metadata."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo)
        [answer] = await _seen_by_model(
            ToolcycleToolset(runtime), ToolCallPart("echo", {"text": "hi"}, tool_call_id="c1")
        )
    assert answer.content == "hi" and answer.metadata is None


def _guard(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
    text = call.arguments["text"]
    if text == "later":
        return reject("not now; ask again tomorrow")
    return stop("this text tries to instruct the model") if text == "obey" else allow()


async def test_a_guardrail_rejection_is_a_failed_tool_return_the_model_reads() -> None:
    """A reject answers as pydantic-ai's ToolFailed: the model reads the message, no retry used."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        [answer] = await _seen_by_model(
            ToolcycleToolset(runtime), ToolCallPart("echo", {"text": "later"}, tool_call_id="c1")
        )
    assert answer.outcome == "failed"
    assert "not now; ask again tomorrow" in answer.model_response_str()


async def test_a_guardrail_stop_ends_the_agent_run_with_guardrail_tripped() -> None:
    """A stop is for the host: GuardrailTripped leaves agent.run, and the model never reads it."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(echo, input_guardrails=[_guard])
        with pytest.raises(GuardrailTripped) as caught:
            await _seen_by_model(
                ToolcycleToolset(runtime), ToolCallPart("echo", {"text": "obey"}, tool_call_id="c1")
            )
    assert (caught.value.guardrail, caught.value.stage) == ("_guard", "input")
    assert str(caught.value).endswith("this text tries to instruct the model")
