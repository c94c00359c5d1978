"""The agent loop's glue: tool definitions for models, tool calls in, result messages out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from toolcycle import (
    NullTracer,
    ToolCall,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.agent._names import provider_name
from toolcycle.agent._schemas import drop_absent_nulls, openai_strict
from toolcycle.testing import FakeTool
from toolcycle.validation import SchemaCompiler

FORMATS = ["openai", "openai-responses", "anthropic", "gemini", "mcp"]


@tool(writes=False, checkpointable=True)
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: the city's name.
        unit: celsius or fahrenheit.
    """
    return {"city": city, "temperature": 21, "unit": unit}


@tool(name="notes.save")
def save_note(text: str) -> str:
    """Save a note."""
    return "saved"


class Unavailable:
    """A tool whose activation always fails."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="unavailable", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        raise ConnectionError("the backend is down")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        raise AssertionError("never runs")

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with the weather and notes tools."""
    with ToolRuntime(tracer=NullTracer()) as rt:
        rt.register(get_weather)
        rt.register(save_note)
        yield rt


# -- definitions ---------------------------------------------------------------------------


def test_openai_definitions_are_chat_completions_function_tools(runtime: ToolRuntime) -> None:
    """Each tool is {"type": "function", "function": {...}} with its JSON Schema as parameters."""
    with runtime.plan() as ctx:
        weather, notes = runtime.tool_definitions(ctx, format="openai")
    assert weather["type"] == "function"
    function = weather["function"]
    assert function["name"] == "get_weather"
    assert function["description"].startswith("Current weather of a city.")
    assert function["parameters"] == runtime.descriptor("get_weather").input_schema
    assert function["strict"] is False
    assert notes["function"]["name"] == provider_name("notes.save", "openai")


@pytest.mark.parametrize(
    ("fmt", "keys"),
    [
        ("openai-responses", {"type", "name", "description", "parameters", "strict"}),
        ("anthropic", {"name", "description", "input_schema"}),
        ("gemini", {"name", "description", "parametersJsonSchema"}),
        ("mcp", {"name", "description", "inputSchema", "outputSchema", "annotations"}),
    ],
)
def test_each_format_has_its_providers_keys(runtime: ToolRuntime, fmt: str, keys: set[str]) -> None:
    """The definition of one tool in each format has exactly the keys that format uses."""
    with runtime.plan() as ctx:
        first = runtime.tool_definitions(ctx, format=fmt)[0]  # type: ignore[arg-type]
    assert set(first) == keys
    assert first["name"] == "get_weather"


def test_mcp_definitions_say_whether_the_tool_only_reads(runtime: ToolRuntime) -> None:
    """ReadOnlyHint follows the capability; the output schema is offered when there is one."""
    with runtime.plan() as ctx:
        weather, notes = runtime.tool_definitions(ctx, format="mcp")
    assert weather["annotations"] == {"readOnlyHint": True}
    assert notes["annotations"] == {"readOnlyHint": False}
    assert notes["name"] == "notes.save"  # MCP allows dots


def test_a_plan_is_offered_only_the_tools_it_may_run(runtime: ToolRuntime) -> None:
    """A read-only or checkpoint plan does not see the tool that writes."""
    with runtime.plan(read_only=True) as ctx:
        assert [d["name"] for d in runtime.tool_definitions(ctx, format="anthropic")] == [
            "get_weather"
        ]
    with runtime.plan(requires_checkpoint=True) as ctx:
        assert len(runtime.tool_definitions(ctx, format="gemini")) == 1


def test_an_unknown_format_is_refused_with_the_known_ones(runtime: ToolRuntime) -> None:
    """A typo in the format is an error naming the five formats."""
    with runtime.plan() as ctx, pytest.raises(ValueError, match="openai-responses"):
        runtime.tool_definitions(ctx, format="claude")  # type: ignore[arg-type]


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "name", ["notes.save", "ünïcode", "9lives", "a" * 200, "with space", "a/b:c", "plain_name"]
)
def test_provider_names_are_valid_stable_and_distinct(fmt: str, name: str) -> None:
    """A mapped name fits the provider's rules, is the same every time, and names one tool."""
    mapped = provider_name(name, fmt)
    limit = 128 if fmt == "mcp" else 64
    assert 1 <= len(mapped) <= limit
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    if fmt in {"gemini", "mcp"}:
        allowed.add(".")
    assert set(mapped) <= allowed
    if fmt == "gemini":
        assert mapped[0].isalpha() or mapped[0] == "_"
    assert provider_name(name, fmt) == mapped
    assert provider_name(name + "x", fmt) != mapped


def test_a_name_that_fits_is_kept_as_it_is() -> None:
    """Valid names are never changed, so most tools keep their own names."""
    assert provider_name("get_weather", "openai") == "get_weather"
    assert provider_name("notes.save", "gemini") == "notes.save"


# -- strict mode -----------------------------------------------------------------------------


def test_strict_mode_makes_optional_properties_required_and_nullable() -> None:
    """Every property is required; a left-out one is null; objects are closed."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
        },
        "required": ["city"],
    }
    assert openai_strict(schema) == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]},
            "where": {
                "type": ["object", "null"],
                "properties": {"lat": {"type": ["number", "null"]}},
                "additionalProperties": False,
                "required": ["lat"],
            },
        },
        "required": ["city", "unit", "where"],
        "additionalProperties": False,
    }
    assert "$schema" in schema  # the original is left alone


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": True},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}},
        {"type": "object", "patternProperties": {"^x": {}}},
        {"type": "array"},
        {"anyOf": [{"type": "object"}]},
        {"$ref": "#/definitions/Weather", "minProperties": 1, "definitions": {}},
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["country"]},
    ],
)
def test_schemas_strict_mode_cannot_express_are_offered_without_it(schema: Any) -> None:
    """Open objects, unsupported keywords and non-object roots give no strict schema.

    So do a root $ref with constraints beside it and a required name no property describes.
    """
    assert openai_strict(schema) is None


def test_strict_definitions_fall_back_per_tool(runtime: ToolRuntime) -> None:
    """With strict=True a tool whose schema fits is strict; the flag says which."""
    with runtime.plan() as ctx:
        weather, _ = runtime.tool_definitions(ctx, format="openai", strict=True)
    assert weather["function"]["strict"] is True
    assert weather["function"]["parameters"]["required"] == ["city", "unit"]


def test_nulls_strict_mode_sends_for_left_out_properties_are_dropped(runtime: ToolRuntime) -> None:
    """A strict-mode call with unit: null runs as if unit were left out."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": null}'},
    }
    with runtime.plan() as ctx:
        result = runtime.call(call, ctx)
    assert result.output == {"city": "Oslo", "temperature": 21, "unit": "celsius"}


def test_only_nulls_the_schema_does_not_accept_are_dropped() -> None:
    """A required property, one that may be null, or an unknown one keeps its null."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}},
        "required": ["a"],
    }
    assert drop_absent_nulls({"a": None, "b": None}, schema) == {"a": None, "b": None}
    assert drop_absent_nulls({"a": "x", "b": "y", "c": None}, schema) == {
        "a": "x",
        "b": "y",
        "c": None,
    }
    assert drop_absent_nulls(
        {"a": "x", "d": {"e": None}},
        {"properties": {"a": {"type": "string"}, "d": {"properties": {"e": {"type": "integer"}}}}},
    ) == {"a": "x", "d": {}}


# -- calls and messages: one recorded conversation per provider ------------------------------


def test_openai_chat_completions_round_trip(runtime: ToolRuntime) -> None:
    """An assistant tool call in, a role=tool message with the same id out."""
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc123",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    with runtime.plan() as ctx:
        [result] = [runtime.call(c, ctx) for c in assistant["tool_calls"]]  # type: ignore[attr-defined]
    assert result.to_message() == {
        "role": "tool",
        "tool_call_id": "call_abc123",
        "content": '{"city":"Paris","temperature":21,"unit":"celsius"}',
    }


def test_openai_responses_round_trip(runtime: ToolRuntime) -> None:
    """A function_call item in, a function_call_output item with its call_id out."""
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "get_weather",
        "arguments": '{"city": "Rome", "unit": "fahrenheit"}',
    }
    with runtime.plan() as ctx:
        result = runtime.call(item, ctx)
    message = result.to_message()
    assert message["type"] == "function_call_output"
    assert message["call_id"] == "call_9"
    assert json.loads(message["output"])["unit"] == "fahrenheit"


def test_anthropic_round_trip_with_an_error(runtime: ToolRuntime) -> None:
    """A tool_use block in, a tool_result block with is_error out, for success and failure."""
    content = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"town": "Oslo"}},
    ]
    with runtime.plan() as ctx:
        results = [runtime.call(block, ctx) for block in content if block["type"] == "tool_use"]
    ok, bad = (r.to_message() for r in results)
    assert ok == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": '{"city":"Oslo","temperature":21,"unit":"celsius"}',
        "is_error": False,
    }
    assert bad["tool_use_id"] == "toolu_02"
    assert bad["is_error"] is True
    assert "city" in bad["content"]  # says what was wrong


def test_gemini_round_trip(runtime: ToolRuntime) -> None:
    """A functionCall part in, a functionResponse part with the name and id out."""
    part = {"functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Lima"}}}
    with runtime.plan() as ctx:
        result = runtime.call(part, ctx)
    assert result.to_message() == {
        "functionResponse": {
            "id": "g1",
            "name": "get_weather",
            "response": {"output": {"city": "Lima", "temperature": 21, "unit": "celsius"}},
        }
    }


def test_mcp_round_trip(runtime: ToolRuntime) -> None:
    """A tools/call request in, a CallToolResult with structuredContent out."""
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": "Kyiv"}},
    }
    with runtime.plan() as ctx:
        result = runtime.call(request, ctx)
    assert result.call is not None and result.call.id == "7"
    message = result.to_message()
    assert message["isError"] is False
    assert message["structuredContent"]["city"] == "Kyiv"
    assert json.loads(message["content"][0]["text"])["city"] == "Kyiv"


def test_an_mcp_answer_never_sends_an_object_that_missed_its_output_schema() -> None:
    """strict_output=False lets the output through; MCP clients would refuse it as structuredContent."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = FakeTool("count", output_schema=schema, output={"n": "many"})
    with ToolRuntime() as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            result = runtime.call({"id": "c1", "name": "count", "arguments": {}}, ctx)
    assert result.success and result.trace is not None and result.trace.output_valid is False
    message = result.to_message("mcp")
    assert message["isError"] is True and "structuredContent" not in message
    assert json.loads(message["content"][0]["text"]) == {"n": "many"}  # the model still sees it
    assert result.to_messages("mcp") == [message]
    assert result.to_message("openai")["content"] == '{"n":"many"}'  # other formats: unchanged


@pytest.mark.parametrize("output", [["many"], None, "many"], ids=["list", "none", "string"])
def test_an_mcp_answer_never_sends_a_non_object_that_missed_an_object_output_schema(
    output: Any,
) -> None:
    """The tool declares an outputSchema; a success without structuredContent would be refused."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = FakeTool("count", output_schema=schema, output=output)
    with ToolRuntime() as runtime:
        runtime.register(tool)
        definition = runtime.tool_definitions(runtime.new_context(), format="mcp")[0]
        with runtime.plan() as ctx:
            result = runtime.call({"id": "c1", "name": "count", "arguments": {}}, ctx)
    assert "outputSchema" in definition
    assert result.success and result.trace is not None and result.trace.output_valid is False
    message = result.to_message("mcp")
    assert message["isError"] is True and "structuredContent" not in message
    assert result.to_messages("mcp") == [message]


def test_an_mcp_answer_keeps_an_object_that_met_its_output_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = FakeTool("count", output_schema=schema, output={"n": 3})
    with ToolRuntime() as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            result = runtime.call({"id": "c1", "name": "count", "arguments": {}}, ctx)
    message = result.to_message("mcp")
    assert message["isError"] is False and message["structuredContent"] == {"n": 3}


def test_a_mapped_name_from_the_model_reaches_the_tool(runtime: ToolRuntime) -> None:
    """The provider-safe name of notes.save maps back to it."""
    mapped = provider_name("notes.save", "openai")
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": mapped, "arguments": '{"text": "x"}'},
    }
    with runtime.plan() as ctx:
        result = runtime.call(call, ctx)
    assert result.success, result.error
    assert result.trace is not None and result.trace.tool_name == "notes.save"
    assert result.to_message()["tool_call_id"] == "c"


def test_plain_calls_and_sdk_objects_are_read_too(runtime: ToolRuntime) -> None:
    """{"name", "arguments"} with a dict or a JSON string, and pydantic objects, all work."""

    class SdkCall(BaseModel):
        id: str
        type: str = "tool_use"
        name: str
        input: dict[str, Any]

    with runtime.plan() as ctx:
        plain = runtime.call({"name": "get_weather", "arguments": {"city": "A"}}, ctx)
        text = runtime.call({"name": "get_weather", "arguments": '{"city": "B"}'}, ctx)
        sdk = runtime.call(SdkCall(id="t", name="get_weather", input={"city": "C"}), ctx)
        typed = runtime.call(ToolCall(name="get_weather", arguments={"city": "D"}), ctx)
    assert [r.output["city"] for r in (plain, text, sdk, typed)] == ["A", "B", "C", "D"]
    assert sdk.to_message()["tool_use_id"] == "t"


# -- what the model got wrong never raises ---------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "error_type", "words"),
    [
        (
            {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": "{"}},
            "ToolCallError",
            "not valid JSON",
        ),
        ({"name": "get_weather", "arguments": "[1, 2]"}, "ToolCallError", "JSON object"),
        ({"name": "", "arguments": {}}, "ToolCallError", "names no tool"),
        ("get_weather", "ToolCallError", "must be an object"),
        ({"name": "get_wether", "arguments": {}}, "ToolNotFoundError", "no tool named"),
        ({"name": "get_weather", "arguments": {"city": 3}}, "ToolSchemaValidationError", "city"),
    ],
)
def test_model_mistakes_come_back_as_failed_results(
    runtime: ToolRuntime, raw: Any, error_type: str, words: str
) -> None:
    """Malformed calls, unknown tools and invalid arguments give results the model can read."""
    with runtime.plan() as ctx:
        result = runtime.call(raw, ctx)
    assert not result.success
    assert result.error_type == error_type
    assert words in (result.error or "")


def test_a_denied_tool_and_a_failed_activation_are_failed_results(runtime: ToolRuntime) -> None:
    """A read-only plan's refusal and an activation error answer the call, not raise."""
    runtime.register(Unavailable())
    with runtime.plan(read_only=True) as ctx:
        denied = runtime.call({"id": "d", "name": "notes.save", "arguments": {"text": "x"}}, ctx)
        down = runtime.call({"id": "u", "name": "unavailable", "arguments": {}}, ctx)
    assert (denied.success, denied.error_type) == (False, "ToolAccessDeniedError")
    assert "read-only" in (denied.error or "")
    assert (down.success, down.error_type) == (False, "ToolActivationError")
    assert "the backend is down" in (down.error or "")
    assert denied.to_message()["tool_call_id"] == "d"


@pytest.mark.parametrize(
    ("raw", "tool_name", "status", "error_type"),
    [
        ({"name": "get_wether", "arguments": {}}, "get_wether", "error", "ToolNotFoundError"),
        (
            {"name": "get_weather", "arguments": "{"},
            "get_weather",
            "invalid_input",
            "ToolCallError",
        ),
        ({"name": "", "arguments": {}}, "", "invalid_input", "ToolCallError"),
        ("get_weather", "", "invalid_input", "ToolCallError"),
    ],
)
def test_a_call_refused_before_it_reaches_a_tool_still_leaves_one_trace(
    runtime: ToolRuntime, raw: Any, tool_name: str, status: str, error_type: str
) -> None:
    """Unknown and unreadable calls are traced like any failed call, and carry the trace."""
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    with runtime.plan("p") as ctx:
        result = runtime.call(raw, ctx)
    assert len(seen) == 1
    trace = seen[0]
    assert result.trace is trace
    assert (trace.tool_name, trace.plan_id, trace.status) == (tool_name, "p", status)
    assert (trace.error, trace.error_type) == (result.error, error_type)
    assert not trace.success


def test_a_refusal_after_the_tool_is_found_carries_the_delivered_trace(
    runtime: ToolRuntime,
) -> None:
    """A denial answers the call with the same trace the listeners got."""
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    with runtime.plan(read_only=True) as ctx:
        denied = runtime.call({"id": "d", "name": "notes.save", "arguments": {"text": "x"}}, ctx)
    assert [t.status for t in seen] == ["denied"]
    assert denied.trace is seen[0]
    assert denied.error_type == "ToolAccessDeniedError"


async def test_acall_and_batches_trace_their_refusals_too(runtime: ToolRuntime) -> None:
    """The async twin and acall_many give every refused call its trace."""
    seen: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(seen.append)
    async with runtime.aplan(read_only=True) as ctx:
        one = await runtime.acall({"name": "nope"}, ctx)
        batch = await runtime.acall_many(
            [
                {"name": "get_weather", "arguments": {"city": "Oslo"}},
                {"name": "missing"},
                {"name": "notes.save", "arguments": {"text": "x"}},
                42,
            ],
            ctx,
        )
    results = [one, *batch]
    assert [r.trace.status if r.trace else None for r in results] == [
        "error",
        "ok",
        "error",
        "denied",
        "invalid_input",
    ]
    assert sorted(t.call_id for t in seen) == sorted(r.trace.call_id for r in results if r.trace)


def test_a_refused_call_still_checks_its_context(runtime: ToolRuntime) -> None:
    """Passing something that is not a context is the host's mistake: it raises."""
    with pytest.raises(TypeError, match="ToolExecutionContext"):
        runtime.call({"name": "nope"}, "not a context")  # type: ignore[arg-type]


def test_cancellation_still_raises(runtime: ToolRuntime) -> None:
    """A cancelled plan stops the loop: call raises ToolCancelledError."""
    with runtime.plan() as ctx:
        ctx.cancellation_token.cancel("user stopped")
        with pytest.raises(ToolCancelledError, match="user stopped"):
            runtime.call({"name": "get_weather", "arguments": {"city": "x"}}, ctx)


def test_a_result_from_execute_has_no_message_to_build(runtime: ToolRuntime) -> None:
    """Only a result of call knows the id to answer; execute's says so when asked."""
    with runtime.plan() as ctx:
        result = runtime.execute("get_weather", {"city": "x"}, ctx)
    with pytest.raises(ValueError, match="runtime.call"):
        result.to_message()


async def test_acall_is_the_async_twin(runtime: ToolRuntime) -> None:
    """Acall reads the same shapes and answers the same way."""
    async with runtime.aplan() as ctx:
        ok = await runtime.acall(
            {"type": "tool_use", "id": "a", "name": "get_weather", "input": {"city": "Q"}}, ctx
        )
        missing = await runtime.acall({"name": "nope"}, ctx)
        denied = await runtime.acall({"name": "unknown.tool"}, ctx)
    assert ok.to_message()["is_error"] is False
    assert missing.error_type == denied.error_type == "ToolNotFoundError"


def test_a_format_can_be_chosen_for_the_message(runtime: ToolRuntime) -> None:
    """A plain call answers in OpenAI's format by default, or in the one asked for."""
    with runtime.plan() as ctx:
        result = runtime.call({"id": "p", "name": "get_weather", "arguments": {"city": "Z"}}, ctx)
    assert result.to_message()["role"] == "tool"
    assert result.to_message("anthropic")["tool_use_id"] == "p"


def test_strict_mode_follows_defs_anyof_items_and_type_lists() -> None:
    """Nested schemas in $defs, anyOf and items are rewritten too; a true schema is not strict."""
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {
            "at": {"$ref": "#/$defs/Point"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "maybe": {"type": ["string", "integer"]},
            "already": {"type": ["string", "null"]},
        },
        "required": ["at", "tags", "either"],
    }
    strict = openai_strict(schema)
    assert strict is not None
    assert strict["$defs"]["Point"]["required"] == ["x"]
    assert strict["$defs"]["Point"]["properties"]["x"] == {"type": ["number", "null"]}
    assert strict["properties"]["maybe"] == {"type": ["string", "integer", "null"]}
    assert strict["properties"]["already"] == {"type": ["string", "null"]}
    assert strict["required"] == ["at", "tags", "either", "maybe", "already"]
    assert openai_strict({"type": "object", "properties": {"a": True}}) is None
    assert (
        openai_strict(
            {"type": "object", "properties": {"a": {"type": "array", "items": {"minLength": 1}}}}
        )
        is None
    )


def test_nulls_are_kept_where_the_schema_says_nothing_about_them() -> None:
    """Without a properties map, or for a property whose schema is empty, nothing is dropped."""
    assert drop_absent_nulls({"a": None}, {"type": "object"}) == {"a": None}
    assert drop_absent_nulls({"a": None}, True) == {"a": None}
    assert drop_absent_nulls({"a": None}, {"properties": {"a": {}}}) == {"a": None}
    assert drop_absent_nulls({"a": None}, {"properties": {"a": {"anyOf": [{"type": "null"}]}}}) == {
        "a": None
    }


def test_a_batch_call_answered_as_cancelled_carries_its_arguments_masked() -> None:
    """A call the batch never ran still quotes itself with its secrets redacted."""
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}}
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t", input_schema=schema))
        with runtime.plan() as ctx:
            ctx.cancellation_token.cancel("stop")
            [result] = runtime.call_many(
                [{"id": "c1", "name": "t", "arguments": {"api_key": "sk-live-123456"}}], ctx
            )
    assert result.error_type == "ToolCancelledError"
    assert result.call is not None
    assert result.call.arguments == {"api_key": "[redacted]"}


def test_a_call_whose_tool_is_unregistered_while_it_runs_still_answers() -> None:
    with ToolRuntime(tracer=NullTracer()) as runtime:

        def run(params: Any, ctx: Any) -> str:
            runtime.unregister("t")
            return "done"

        runtime.register(FakeTool(name="t", output=run))
        with runtime.plan() as ctx:
            result = runtime.call({"id": "c1", "name": "t", "arguments": {"q": "x"}}, ctx)
    assert result.success and result.output == "done"
    assert result.call is not None and result.call.id == "c1"


def test_arguments_with_names_that_are_not_strings_are_a_failed_result() -> None:
    """Only reachable from Python (JSON names are strings), and still not an exception."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx:
            call = {"type": "tool_use", "id": "x", "name": "t", "input": {1: "a"}}
            result = runtime.call(call, ctx)
    assert not result.success
    assert result.error_type == "ToolCallError"
    assert result.error == "the arguments' names must be strings, got 1"


ROWS_AND_ADDRESS = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "note": {"type": "string"}},
                "required": ["name"],
            },
        },
        "addr": {"$ref": "#/$defs/Address"},
    },
    "required": ["rows", "addr"],
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["street"],
        }
    },
}


@pytest.mark.parametrize(
    "arguments",
    [
        {"rows": [{"name": "a", "note": None}], "addr": {"street": "s"}},
        {"rows": [], "addr": {"street": "s", "zip": None}},
    ],
)
def test_strict_calls_with_nulls_in_array_items_and_refs_pass_validation(
    arguments: dict[str, Any],
) -> None:
    """Nulls strict mode sends inside array items and $ref'd objects are dropped too."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t", input_schema=ROWS_AND_ADDRESS))
        with runtime.plan() as ctx:
            [definition] = runtime.tool_definitions(ctx, format="openai", strict=True)
            assert definition["function"]["strict"] is True
            call = {
                "id": "c1",
                "type": "function",
                "function": {"name": "t", "arguments": json.dumps(arguments)},
            }
            result = runtime.call(call, ctx)
    assert result.success, result.error


def test_absent_nulls_are_dropped_inside_array_items() -> None:
    """Each item of an array is an object of its own; prefixItems, never strict, are left alone."""
    arguments = {"rows": [{"name": "a", "note": None}, {"name": "b", "note": "n"}]}
    assert drop_absent_nulls(arguments, ROWS_AND_ADDRESS) == {
        "rows": [{"name": "a"}, {"name": "b", "note": "n"}]
    }
    pair = {"type": "object", "properties": {"note": {"type": "string"}}}
    tuple_schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [pair]},
            "list": {"type": "array", "items": pair},
        },
    }
    assert openai_strict(tuple_schema) is None
    assert drop_absent_nulls(
        {"pair": [{"note": None}], "list": [{"note": None}]}, tuple_schema
    ) == {"pair": [{"note": None}], "list": [{}]}


def test_absent_nulls_are_dropped_inside_a_ref_to_defs_or_definitions() -> None:
    """A local $ref is followed from the root, whether to $defs, definitions or a deeper place."""
    assert drop_absent_nulls(
        {"rows": [], "addr": {"street": "s", "zip": None}}, ROWS_AND_ADDRESS
    ) == {"rows": [], "addr": {"street": "s"}}
    schema = {
        "type": "object",
        "properties": {
            "old": {"$ref": "#/definitions/Point"},
            "deep": {"$ref": "#/properties/old"},
            "missing": {"$ref": "#/$defs/Nowhere"},
        },
        "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    }
    arguments = {"old": {"x": None}, "deep": {"x": None}, "missing": {"x": None}}
    assert drop_absent_nulls(arguments, schema) == {"old": {}, "deep": {}, "missing": {"x": None}}


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"]
    lives: int = 1


class Box(BaseModel):
    width: int
    height: int = 1


def adopt(pet: Cat | Dog) -> str:
    """Adopt a pet."""
    return f"{pet.kind} with {pet.lives} lives"


def stack(items: list[Cat] | list[Box]) -> int:
    """Stack things."""
    return len(items)


@pytest.mark.parametrize(
    ("fn", "arguments", "output"),
    [
        (adopt, {"pet": {"kind": "cat", "lives": None}}, "cat with 9 lives"),
        (adopt, {"pet": {"kind": "dog", "lives": None}}, "dog with 1 lives"),
        (stack, {"items": [{"width": 2, "height": None}]}, 1),
        (stack, {"items": [{"kind": "cat", "lives": None}]}, 1),
    ],
    ids=["cat", "dog", "list-of-box", "list-of-cat"],
)
def test_strict_nulls_are_dropped_in_branches_alike_in_shape(
    fn: Any, arguments: dict[str, Any], output: Any
) -> None:
    """Cat | Dog share their fields: the const of kind tells them apart; items by their keys."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool(writes=False)(fn))
        with runtime.plan() as ctx:
            [definition] = runtime.tool_definitions(ctx, format="openai", strict=True)
            assert definition["function"]["strict"] is True
            call = {"id": "c1", "type": "function", "function": {"name": fn.__name__}}
            call["function"]["arguments"] = json.dumps(arguments)
            result = runtime.call(call, ctx)
    assert result.success, result.error
    assert result.output == output


def test_an_optional_null_property_is_not_made_null_twice_for_strict_mode() -> None:
    """type: null stays as it is; ["null", "null"] is not a valid type list."""
    schema = {"type": "object", "properties": {"nothing": {"type": "null"}}}
    strict = openai_strict(schema)
    assert strict is not None and strict["properties"]["nothing"] == {"type": "null"}


def test_absent_nulls_are_dropped_in_the_one_anyof_branch_that_fits() -> None:
    """An optional model or list is followed; of two models, the one declaring the value's keys."""

    class Address(BaseModel):
        street: str
        zip: str | None = None
        kind: str = "home"

    class Place(BaseModel):
        street: str
        kind: str = "shop"

    class Order(BaseModel):
        ship_to: Address | None = None
        stops: list[Address] | None = None
        place: Address | Place | None = None
        address: Address | Place | None = None

    schema = Order.model_json_schema()
    assert openai_strict(schema) is not None
    arguments = {
        "ship_to": {"street": "s", "zip": None, "kind": None},
        "stops": [{"street": "t", "zip": None, "kind": None}],
        "place": {"street": "u", "kind": None},
        "address": {"street": "v", "zip": None, "kind": None},
    }
    assert drop_absent_nulls(arguments, schema) == {
        "ship_to": {"street": "s", "zip": None},
        "stops": [{"street": "t", "zip": None}],
        "place": {"street": "u"},
        "address": {"street": "v", "zip": None},
    }
    # Two branches alike: the null means "left out" under both, so it goes either way;
    # under one it may be a value, and which branch the model meant cannot be told.
    text = {"type": "object", "properties": {"n": {"type": "string"}}}
    number = {"type": "object", "properties": {"n": {"type": "number"}}}
    either = {"type": "object", "properties": {"x": {"anyOf": [text, number]}}}
    assert drop_absent_nulls({"x": {"n": None}}, either) == {"x": {}}
    nullable = {"type": "object", "properties": {"n": {"type": ["number", "null"]}}}
    unsure = {"type": "object", "properties": {"x": {"anyOf": [text, nullable]}}}
    assert drop_absent_nulls({"x": {"n": None}}, unsure) == {"x": {"n": None}}


def test_a_recursive_ref_schema_drops_absent_nulls_at_every_level() -> None:
    """A schema that refers to itself is followed as deep as the arguments go, and no further."""

    class Node(BaseModel):
        label: str = ""
        child: Node | None = None

    schema = Node.model_json_schema()
    assert openai_strict(schema) is not None
    arguments = {"label": None, "child": {"label": "b", "child": {"label": None, "child": None}}}
    assert drop_absent_nulls(arguments, schema) == {
        "child": {"label": "b", "child": {"child": None}}
    }
    loop = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#"}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"$ref": "#/$defs/A"}]}},
    }
    assert drop_absent_nulls({"a": {"x": None}, "b": {"a": None}}, loop) == {
        "a": {"x": None},
        "b": {"a": None},
    }


def test_a_null_the_original_schema_accepts_is_kept() -> None:
    """Only nulls strict mode added are dropped: not one a $ref, anyOf branch or enum allows."""
    schema = {
        "type": "object",
        "properties": {
            "text": {"$ref": "#/$defs/MaybeText"},
            "mode": {"enum": ["on", None]},
            "level": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/MaybeText"}]},
            "rows": {"type": "array", "items": {"$ref": "#"}},
            "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        },
        "$defs": {"MaybeText": {"type": ["string", "null"]}},
    }
    arguments = {"text": None, "mode": None, "level": None, "size": None}
    kept = {"text": None, "mode": None, "level": None}
    assert drop_absent_nulls({**arguments, "rows": [arguments]}, schema) == {**kept, "rows": [kept]}


def test_a_root_that_is_only_a_ref_is_offered_strict_as_the_object_it_names() -> None:
    """Zod's named schemas and pydantic's recursive models put the root behind a $ref."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$ref": "#/definitions/Weather",
        "definitions": {
            "Weather": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            }
        },
    }
    strict = openai_strict(schema)
    assert strict is not None
    assert "$ref" not in strict
    assert strict["properties"] == {"city": {"type": "string"}}
    assert strict["required"] == ["city"]
    compiler = SchemaCompiler()
    assert compiler.compile(strict).validate({"city": "Paris"})[1].valid


def test_a_batch_that_raises_cancels_its_other_calls_first() -> None:
    """The call that finds the plan ended raises; the call still running is cancelled first.

    Before, it was left running on its own, its result lost.
    """
    import asyncio
    import threading

    from toolcycle import ToolRuntimeError

    cancelled = threading.Event()

    class Waits:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="waits")

        def activate(self, ctx: ToolExecutionContext) -> None:
            pass

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            pass

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(Waits())
        runtime.register(FakeTool(name="ends", output=lambda params, ctx: runtime.end_plan(ctx)))
        runtime.register(FakeTool(name="late"))
        ctx = runtime.new_context()
        calls = [
            {"id": str(n), "name": name, "arguments": {}}
            for n, name in enumerate(["waits", "ends", "late"])
        ]

        async def main() -> None:
            with pytest.raises(ToolRuntimeError, match="has ended"):
                await asyncio.wait_for(runtime.acall_many(calls, ctx, max_concurrency=2), 5)
            assert cancelled.is_set()

        asyncio.run(main())


def test_the_models_call_id_is_in_the_trace_and_execute_leaves_it_empty() -> None:
    """A call's trace keeps the model's id beside the runtime's own; execute has no model id."""
    with ToolRuntime(tracer=NullTracer(), keep_traces=3) as rt:
        rt.register(get_weather)
        with rt.plan() as ctx:
            rt.call({"id": "call_7", "name": "get_weather", "arguments": {"city": "Oslo"}}, ctx)
            rt.call({"name": "get_weather", "arguments": {"city": "Oslo"}}, ctx)
            rt.execute("get_weather", {"city": "Oslo"}, ctx)
        traces = rt.recent_traces()
    assert [trace.tool_call_id for trace in traces] == ["call_7", None, None]
    assert len({trace.call_id for trace in traces}) == 3


@pytest.mark.parametrize("fmt", ["openai", "openai-responses", "anthropic", "gemini", "mcp"])
def test_every_format_is_offered_an_object_at_the_schemas_root(fmt: str) -> None:
    """A schema without a type, or only a local $ref at its root, is offered as an object."""
    untyped = {"properties": {"q": {"type": "string"}}, "required": ["q"]}
    named = {
        "$ref": "#/$defs/Query",
        "$defs": {"Query": {"type": "object", "properties": {"q": {"type": "string"}}}},
    }
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="untyped", input_schema=untyped))
        runtime.register(FakeTool(name="named", input_schema=named))
        with runtime.plan() as ctx:
            definitions = runtime.tool_definitions(ctx, format=fmt)  # type: ignore[arg-type]
    key = {"anthropic": "input_schema", "gemini": "parametersJsonSchema", "mcp": "inputSchema"}
    schemas = [
        (d["function"] if fmt == "openai" else d)[key.get(fmt, "parameters")] for d in definitions
    ]
    assert schemas[0] == {"type": "object", **untyped}
    assert schemas[1]["type"] == "object"
    assert schemas[1]["properties"] == {"q": {"type": "string"}}
    assert "$ref" not in schemas[1] and "$defs" in schemas[1]
    assert runtime.descriptor("untyped").input_schema == untyped  # the tool's own is unchanged
