"""Rich results through the runtime: output, content and metadata kept apart on every path."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import (
    Audio,
    CachePolicy,
    ContentPart,
    File,
    Image,
    ResourceLink,
    Text,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    tool,
)
from toolcycle.otel import OpenTelemetry

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


@tool(writes=False)
def chart(rows: int) -> ToolReturn[dict[str, int]]:
    """Draw a chart of some rows."""
    return ToolReturn(
        value={"rows": rows},
        content=[Text(f"a chart of {rows} rows"), Image(PNG, "image/png")],
        metadata={"render_ms": 12},
    )


@tool(writes=False)
def snapshot() -> list[ContentPart]:
    """Take a snapshot: parts alone."""
    return [Text("the screen"), Image(PNG, "image/png")]


@tool(writes=False)
def one_image() -> Image:
    """Return one image."""
    return Image(PNG, "image/png")


@tool(writes=False)
async def async_chart(rows: int) -> ToolReturn[dict[str, int]]:
    """The chart, drawn asynchronously."""
    await asyncio.sleep(0)
    return ToolReturn(value={"rows": rows}, content=[Image(PNG, "image/png")])


@tool(writes=False)
def mixed() -> Any:
    """A list that mixes parts and plain values."""
    return [Text("a"), {"b": 1}]


@tool(writes=False)
def echo_key(api_key: str) -> list[Text]:
    """Show the model a text that quotes the key."""
    return [Text(f"used key {api_key}")]


@tool(writes=False)
def many(count: int) -> list[ContentPart]:
    """Several large parts."""
    return [Text("x" * 400), Image(b"\0" * 400, "image/png"), Text("y" * 400)][:count]


class Declared:
    """A custom tool with an output schema, returning whatever it is given."""

    def __init__(self, returns: Any) -> None:
        self.returns = returns

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="declared",
            capability={"writes": False},
            output_schema={"type": "object", "required": ["n"]},
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return self.returns

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_a_tool_return_sends_value_to_the_host_and_content_to_the_trace_as_kinds(
    runtime: ToolRuntime,
) -> None:
    """Output is the value, content the parts, metadata the host's; the trace has kinds and bytes."""
    runtime.register(chart)
    with runtime.plan() as ctx:
        result = runtime.execute("chart", {"rows": 3}, ctx)
    assert result.output == {"rows": 3}
    assert result.content == (Text("a chart of 3 rows"), Image(PNG, "image/png"))
    assert result.metadata == {"render_ms": 12}
    assert result.trace is not None
    assert result.trace.content_kinds == ("text", "image")
    assert result.trace.content_bytes == len("a chart of 3 rows") + len(PNG)
    assert "render_ms" not in result.trace.model_dump_json()


def test_a_tool_return_annotation_declares_the_values_schema() -> None:
    """ToolReturn[T] gives T's output schema; parts alone give none."""
    assert chart.discover().output_schema == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert snapshot.discover().output_schema is None
    assert one_image.discover().output_schema is None


def test_parts_alone_have_no_output_and_skip_the_output_schema(runtime: ToolRuntime) -> None:
    """A list of parts (or one part) is content; output is None and nothing is checked."""
    runtime.register(snapshot)
    runtime.register(one_image)
    runtime.register(Declared([Text("only text")]))
    with runtime.plan() as ctx:
        listed = runtime.execute("snapshot", {}, ctx)
        single = runtime.execute("one_image", {}, ctx)
        declared = runtime.execute("declared", {}, ctx)
    assert listed.output is None and len(listed.content) == 2
    assert single.content == (Image(PNG, "image/png"),)
    assert declared.success and declared.trace is not None
    assert declared.trace.output_valid is None


def test_the_value_of_a_tool_return_is_what_the_output_schema_checks() -> None:
    """A value that breaks the output schema fails under strict_output, content or not."""
    with ToolRuntime(strict_output=True) as runtime:
        runtime.register(Declared(ToolReturn(value={"m": 1}, content=[Text("hi")])))
        with runtime.plan() as ctx:
            result = runtime.execute("declared", {}, ctx)
    assert not result.success
    assert result.error is not None and "output schema" in result.error


def test_a_list_mixing_parts_and_values_is_a_clear_output_error(runtime: ToolRuntime) -> None:
    """The error names the index and says to use ToolReturn(value=...)."""
    runtime.register(mixed)
    with runtime.plan() as ctx:
        result = runtime.execute("mixed", {}, ctx)
    assert not result.success and result.error_type == "ToolOutputError"
    assert result.error is not None and "[1] is a dict" in result.error


def test_content_is_the_same_through_execute_aexecute_call_and_call_many(
    runtime: ToolRuntime,
) -> None:
    """Every entry point gives the same output, content and metadata."""
    runtime.register(chart)
    runtime.register(async_chart)
    model_call = {"id": "c1", "name": "chart", "arguments": {"rows": 2}}

    async def both(ctx: ToolExecutionContext) -> tuple[ToolResult, ToolResult]:
        return (
            await runtime.aexecute("chart", {"rows": 2}, ctx),
            await runtime.acall(model_call, ctx),
        )

    with runtime.plan() as ctx:
        results = [
            runtime.execute("chart", {"rows": 2}, ctx),
            runtime.call(model_call, ctx),
            *runtime.call_many([model_call], ctx),
            *asyncio.run(both(ctx)),
        ]
        sync_of_async = runtime.execute("async_chart", {"rows": 2}, ctx)
    for result in results:
        assert result.output == {"rows": 2}
        assert result.content == results[0].content
        assert result.metadata == {"render_ms": 12}
    assert sync_of_async.content == (Image(PNG, "image/png"),)


def test_a_failed_tool_result_with_content_answers_with_its_error(runtime: ToolRuntime) -> None:
    """A tool's own failed ToolResult keeps its content for the host; the model sees the error."""
    failed = ToolResult(success=False, error="no chart today", content=(Text("partial"),))
    runtime.register(Declared(failed))
    with runtime.plan() as ctx:
        result = runtime.call({"id": "c", "name": "declared", "arguments": {}}, ctx)
    assert result.content == (Text("partial"),)
    assert result.to_messages("openai") == [
        {"role": "tool", "tool_call_id": "c", "content": "no chart today"}
    ]


def test_the_result_size_cap_counts_every_part_and_cuts_in_order() -> None:
    """Over max_result_bytes, parts after the budget are cut or left out and a marker says so."""
    with ToolRuntime(max_result_bytes=1000) as runtime:
        runtime.register(many)
        with runtime.plan() as ctx:
            fits = runtime.execute("many", {"count": 2}, ctx)
            cut = runtime.execute("many", {"count": 3}, ctx)
    assert not fits.truncated and fits.trace is not None
    assert fits.trace.content_bytes == 800
    assert cut.truncated and cut.trace is not None
    kinds = [part.type for part in cut.content]
    assert kinds == ["text", "image", "text", "text"]
    assert isinstance(cut.content[2], Text) and 0 < len(cut.content[2].text) < 400
    marker = cut.content[-1]
    assert isinstance(marker, Text) and "over the limit of 1000" in marker.text
    assert "1 part(s) cut or left out" in marker.text
    assert cut.trace.content_bytes + cut.trace.result_size_bytes <= 1000
    assert cut.trace.content_kinds == tuple(kinds)


@tool(writes=False)
def captioned(size: int) -> ToolReturn[str]:
    """An output of ``size`` characters and a caption too long for the cap."""
    return ToolReturn(value="v" * size, content=[Text("x" * 300)])


@pytest.mark.parametrize("size", [0, 10, 20, 30, 40, 50, 60, 70, 80, 85, 90, 95, 98, 150])
def test_the_marker_of_cut_content_stays_within_the_cap(size: int) -> None:
    """Output, content and the marker that says the content was cut fit max_result_bytes."""
    with ToolRuntime(max_result_bytes=100) as runtime:
        runtime.register(captioned)
        with runtime.plan() as ctx:
            result = runtime.execute("captioned", {"size": size}, ctx)
    assert result.truncated and result.trace is not None
    assert result.trace.result_size_bytes + result.trace.content_bytes <= 100
    room = 100 - result.trace.result_size_bytes
    if room >= len("[content cut]"):  # room for a marker: the model is told
        last = result.content[-1]
        assert isinstance(last, Text) and last.text.endswith("]") and "cut" in last.text


def test_a_binary_part_over_the_cap_is_left_out_whole() -> None:
    """An image is never cut in the middle: it is left out, and the marker counts it."""
    with ToolRuntime(max_result_bytes=600) as runtime:
        runtime.register(many)
        with runtime.plan() as ctx:
            result = runtime.execute("many", {"count": 2}, ctx)
    assert [part.type for part in result.content] == ["text", "text"]
    assert isinstance(result.content[-1], Text)
    assert "1 part(s) cut or left out" in result.content[-1].text


def test_text_parts_lose_the_calls_argument_secrets(runtime: ToolRuntime) -> None:
    """Redaction scrubs text parts like every other message; binary parts are data."""
    runtime.register(echo_key)
    with runtime.plan() as ctx:
        result = runtime.execute("echo_key", {"api_key": "sk-live-1234"}, ctx)
    assert result.content == (Text("used key [redacted]"),)


def test_metadata_and_bytes_reach_no_message_trace_or_span() -> None:
    """Spans carry the kinds and the byte count; messages and traces never the metadata."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traces: list[ToolExecutionTrace] = []
    otel = OpenTelemetry(tracer_provider=provider, record_payloads=True)
    with ToolRuntime(instrumentation=otel) as runtime:
        runtime.add_trace_listener(traces.append)
        runtime.register(chart)
        with runtime.plan() as ctx:
            result = runtime.call({"id": "c", "name": "chart", "arguments": {"rows": 1}}, ctx)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool chart"]
    attributes = dict(span.attributes or {})
    assert attributes["toolcycle.content_kinds"] == ("text", "image")
    assert attributes["toolcycle.content_bytes"] == len("a chart of 1 rows") + len(PNG)
    exported = [str(attributes), traces[0].model_dump_json()]
    exported += [str(result.to_messages(fmt)) for fmt in ("anthropic", "mcp", "gemini")]
    for text in exported:
        assert "render_ms" not in text
    assert "iVBOR" not in str(attributes)  # no base64 of the image in the span


def test_a_plain_result_has_no_content_and_no_content_span_attributes(
    runtime: ToolRuntime,
) -> None:
    """Nothing changes for a tool that returns plain data."""

    @tool(writes=False)
    def plain() -> int:
        """One."""
        return 1

    runtime.register(plain)
    with runtime.plan() as ctx:
        result = runtime.execute("plain", {}, ctx)
    assert result.content == () and result.metadata is None
    assert result.trace is not None and result.trace.content_kinds == ()


def test_a_result_with_content_dumps_its_bytes_as_base64_json(runtime: ToolRuntime) -> None:
    """model_dump_json works for binary parts: each is base64 text once."""
    runtime.register(one_image)
    with runtime.plan() as ctx:
        result = runtime.execute("one_image", {}, ctx)
    assert '"data":"iVBORw0KGgo' in result.model_dump_json()


@pytest.mark.parametrize(
    "part",
    [Audio(b"RIFF", "audio/wav"), File(b"%PDF", "application/pdf"), ResourceLink("u://x")],
)
def test_every_kind_of_part_is_recorded_in_the_trace(runtime: ToolRuntime, part: Any) -> None:
    """Audio, files and links are named by kind in the trace."""
    runtime.register(Declared([part]))
    with runtime.plan() as ctx:
        result = runtime.execute("declared", {}, ctx)
    assert result.trace is not None and result.trace.content_kinds == (part.type,)


def test_without_redaction_text_parts_are_shown_as_the_tool_wrote_them() -> None:
    """redaction=None leaves text parts alone, as it leaves every message."""
    with ToolRuntime(redaction=None) as runtime:
        runtime.register(echo_key)
        with runtime.plan() as ctx:
            result = runtime.execute("echo_key", {"api_key": "sk-live-1234"}, ctx)
    assert result.content == (Text("used key sk-live-1234"),)


def test_a_returned_tool_result_keeps_its_metadata_without_content() -> None:
    """ToolResult(metadata=...) reaches result.metadata, sync or async, and on a cache hit."""

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def lookup(key: str) -> ToolResult:
        """Look a key up; the row count is for the host."""
        return ToolResult(success=True, output=key.upper(), metadata={"rows": 3})

    @tool(writes=False)
    async def alookup(key: str) -> ToolResult:
        """The lookup, asynchronously."""
        return ToolResult(success=True, output=key, metadata={"rows": 4})

    with ToolRuntime() as runtime:
        runtime.register(lookup)
        runtime.register(alookup)
        with runtime.plan() as ctx:
            first = runtime.execute("lookup", {"key": "a"}, ctx)
            hit = runtime.call({"id": "c", "name": "lookup", "arguments": {"key": "a"}}, ctx)
            later = runtime.execute("alookup", {"key": "b"}, ctx)
    assert (first.output, first.metadata, first.content) == ("A", {"rows": 3}, ())
    assert hit.trace is not None and hit.trace.cache_hit and hit.metadata == {"rows": 3}
    assert later.metadata == {"rows": 4}
    assert first.trace is not None and "rows" not in first.trace.model_dump_json()
