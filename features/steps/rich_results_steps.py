"""Steps for rich results: content parts, ToolReturn, provider messages and the size cap."""

from __future__ import annotations

from typing import Any

from behave import given, then, when

from toolcycle import Image, Text, ToolReturn, tool

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


@given("a chart tool that returns a value, a text, a PNG image and metadata")
def chart_tool(context: Any) -> None:
    @tool(writes=False)
    def chart() -> ToolReturn[dict[str, int]]:
        """Draw a chart."""
        return ToolReturn(
            value={"rows": 3},
            content=[Text("a chart of 3 rows"), Image(PNG, "image/png")],
            metadata={"render_ms": 12},
        )

    context.runtime.register(chart)


@given("a runtime whose results are capped at {limit:d} bytes")
def capped_runtime(context: Any, limit: int) -> None:
    context.make_runtime(max_result_bytes=limit)


@given("a tool that returns a 400-byte text and a 400-byte image")
def parts_tool(context: Any) -> None:
    @tool(writes=False)
    def parts() -> list[Text | Image]:
        """Return two large parts."""
        return [Text("x" * 400), Image(bytes(400), "image/png")]

    context.runtime.register(parts)


@when('the model calls the chart tool with id "{call_id}"')
def call_chart(context: Any, call_id: str) -> None:
    call = {"id": call_id, "name": "chart", "arguments": {}}
    context.result = context.runtime.call(call, context.plan)


@when("I run the parts tool")
def run_parts(context: Any) -> None:
    context.result = context.runtime.execute("parts", {}, context.plan)


@then("the host gets the value and the metadata")
def host_gets(context: Any) -> None:
    result = context.result
    assert result.output == {"rows": 3}, result
    assert result.metadata == {"render_ms": 12}, result.metadata
    assert [part.type for part in result.content] == ["text", "image"]


@then('the trace records the content kinds "{kinds}" but not the metadata')
def trace_kinds(context: Any, kinds: str) -> None:
    trace = context.traces[-1]
    assert list(trace.content_kinds) == [kind.strip() for kind in kinds.split(",")]
    assert trace.content_bytes == len("a chart of 3 rows") + len(PNG)
    assert "render_ms" not in trace.model_dump_json()


def _contains(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return (
            key in value
            or value.get("type") == key
            or any(_contains(v, key) for v in value.values())
        )
    if isinstance(value, list):
        return any(_contains(item, key) for item in value)
    return False


@then('the "{fmt}" messages are {count:d} and the image is a "{where}"')
def messages_hold_image(context: Any, fmt: str, count: int, where: str) -> None:
    messages = context.result.to_messages(fmt)
    assert len(messages) == count, messages
    assert _contains(messages[-1], where), messages
    assert "render_ms" not in str(messages)


@then('asking for one "{fmt}" message raises an error naming to_messages')
def one_message_refused(context: Any, fmt: str) -> None:
    try:
        context.result.to_message(fmt)
    except ValueError as exc:
        assert "to_messages" in str(exc), exc
    else:
        raise AssertionError("to_message gave one message for a result that needs two")


@then("the result is truncated and the image is left out with a marker saying so")
def capped(context: Any) -> None:
    result = context.result
    assert result.truncated, result
    assert [part.type for part in result.content] == ["text", "text"]
    assert "1 part(s) cut or left out" in result.content[-1].text
