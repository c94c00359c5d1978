"""What a model reads of a tool carries no control characters; the descriptor keeps them."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from toolcycle import ToolRuntime, tool
from toolcycle._plain import plain_schema, plain_text
from toolcycle.sources.skills._prompt import plain_text as skills_plain_text

HOSTILE = "Clear\x1b[2J the\x00 screen\x7f\x9b.\x85Then\r\nmore\rand\x0b\x0cmore\ttabbed"
CLEAN = "Clear[2J the screen.\nThen\nmore\nand\n\nmore\ttabbed"
PARAMETER = "the \x1b[31mcity\x1b[0m\x07"
TITLE = "City\x00Name"


class Forecast(BaseModel):
    """A forecast."""

    summary: str = Field(description="what the sky \x1bdoes")


@tool(writes=False, description=HOSTILE)
def weather(city: Annotated[str, Field(description=PARAMETER, title=TITLE)]) -> Forecast:
    """Unused: the description is given."""
    return Forecast(summary=city)


@tool(writes=False, description=HOSTILE, defer_loading=True)
def hidden_weather(city: str) -> str:
    """Unused: the description is given."""
    return city


def _function(definition: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = definition.get("function", definition)
    return function


def _schema(definition: dict[str, Any]) -> dict[str, Any]:
    function = _function(definition)
    for key in ("parameters", "input_schema", "parametersJsonSchema", "inputSchema"):
        if key in function:
            return dict(function[key])
    raise AssertionError(f"no schema in {definition}")


@pytest.fixture
def registered(runtime: ToolRuntime) -> ToolRuntime:
    runtime.register(weather)
    return runtime


@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic", "gemini", "mcp"])
@pytest.mark.parametrize("strict", [False, True])
def test_definitions_in_every_format_show_the_description_without_control_characters(
    registered: ToolRuntime, format: Any, strict: bool
) -> None:
    """Each format's description, and each parameter's description and title, is plain text."""
    with registered.plan() as ctx:
        [definition] = registered.tool_definitions(ctx, format=format, strict=strict)
    assert _function(definition)["description"] == CLEAN
    city = _schema(definition)["properties"]["city"]
    assert city["description"] == "the [31mcity[0m"
    assert city["title"] == "CityName"


def test_an_mcp_definitions_output_schema_is_plain_text_too(registered: ToolRuntime) -> None:
    """The output schema a model reads in the MCP format has no control character left."""
    with registered.plan() as ctx:
        [definition] = registered.tool_definitions(ctx, format="mcp")
    properties = definition["outputSchema"]["properties"]
    assert properties["summary"]["description"] == "what the sky does"


def test_native_search_definitions_of_deferred_tools_are_plain_text(
    runtime: ToolRuntime,
) -> None:
    """A deferred tool sent with ``defer_loading`` is shown as cleaned as any other."""
    runtime.register(hidden_weather)
    with runtime.plan() as ctx:
        definitions = runtime.tool_definitions(ctx, format="anthropic", search="native")
    [deferred] = [d for d in definitions if d.get("defer_loading")]
    assert deferred["description"] == CLEAN


def test_a_search_answer_shows_the_first_line_without_control_characters(
    runtime: ToolRuntime,
) -> None:
    """``search_tools`` answers with the cleaned first line; a lone CR or NEL ends it."""
    runtime.register(hidden_weather)
    arguments = '{"query": "clear screen"}'
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search_tools", "arguments": arguments},
    }
    with runtime.plan() as ctx:
        result = runtime.call(call, ctx)
    assert result.success, result.error
    assert result.output["tools"] == [
        {"name": "hidden_weather", "description": "Clear[2J the screen."}
    ]


def test_the_descriptor_keeps_its_text_as_written(registered: ToolRuntime) -> None:
    """Host-side data is exact: the descriptor's description and schema keep every character."""
    with registered.plan() as ctx:
        registered.tool_definitions(ctx, format="mcp")
    descriptor = registered.descriptor("weather")
    assert descriptor.description == HOSTILE
    city = descriptor.input_schema["properties"]["city"]
    assert (city["description"], city["title"]) == (PARAMETER, TITLE)


def test_a_clean_schema_is_returned_as_it_is_not_copied() -> None:
    """No control character, no copy: the usual case allocates nothing."""
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": "an a"}}}
    assert plain_schema(schema) is schema
    assert plain_text("plain words") == "plain words"


def test_a_schema_is_walked_once_and_its_cleaned_copy_reused() -> None:
    """Definitions built again reuse the first answer for the same schema object."""
    schema = {"type": "object", "properties": {"a": {"description": "\x1b"}}}
    first = plain_schema(schema)
    assert first == {"type": "object", "properties": {"a": {"description": ""}}}
    assert plain_schema(schema) is first
    assert plain_schema(dict(schema)) is not first  # another object is walked on its own


def test_values_and_names_in_a_schema_are_left_as_they_are() -> None:
    """Only prose is cleaned: a const, enum, default or example must still match what it did."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "default": {"type": "string", "description": "a\x1b", "default": "x\x1b"},
            "mode": {"enum": ["\x07"], "const": "\x07", "examples": [{"description": "\x1b"}]},
        },
        "$defs": {"Node": {"title": "N\x00", "anyOf": [{"description": "\x85"}]}},
    }
    cleaned = plain_schema(schema)
    assert cleaned["properties"]["default"] == {
        "type": "string",
        "description": "a",
        "default": "x\x1b",
    }
    assert cleaned["properties"]["mode"] is schema["properties"]["mode"]
    assert cleaned["$defs"]["Node"] == {"title": "N", "anyOf": [{"description": "\n"}]}
    assert schema["properties"]["default"]["description"] == "a\x1b"  # the input is untouched


def test_the_core_and_the_skills_cleaning_agree_on_every_control_character() -> None:
    """The skills source keeps its own copy (it imports public names only): the two match."""
    samples = [chr(code) for code in range(0x300)] + ["\r\n", "a\r\nb\rc", HOSTILE]
    for sample in samples:
        assert plain_text(sample) == skills_plain_text(sample), repr(sample)
