"""Each framework adapter offers a tool's description and parameters without control characters."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from toolcycle import ToolRuntime, tool
from toolcycle.adapters.langchain import langchain_tools
from toolcycle.adapters.openai_agents import function_tools
from toolcycle.adapters.pydantic_ai import ToolcycleToolset

HOSTILE = "Erase\x1b[2J\x00 the\x7f screen\x9b.\x85Details"
CLEAN = "Erase[2J the screen.\nDetails"
PARAMETER = "the \x1b[31mcity\x1b[0m"
CLEAN_PARAMETER = "the [31mcity[0m"


@tool(writes=False, description=HOSTILE)
def weather(city: Annotated[str, Field(description=PARAMETER)]) -> str:
    """Unused: the description is given."""
    return city


@tool(writes=False, description=HOSTILE, requires_approval=True)
def guarded_weather(city: Annotated[str, Field(description=PARAMETER)]) -> str:
    """Unused: the description is given."""
    return city


def _city(schema: dict[str, Any]) -> Any:
    return schema["properties"]["city"]["description"]


async def test_pydantic_ai_tool_definitions_are_plain_text(runtime: ToolRuntime) -> None:
    """The toolset's tool definitions carry the cleaned description and parameter text."""
    runtime.register(weather)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    with runtime.plan() as plan:
        tools = await ToolcycleToolset(runtime, plan=plan).get_tools(ctx)
    definition = tools["weather"].tool_def
    assert definition.description == CLEAN
    assert _city(definition.parameters_json_schema) == CLEAN_PARAMETER
    assert runtime.descriptor("weather").description == HOSTILE


def test_openai_agents_function_tools_are_plain_text(runtime: ToolRuntime) -> None:
    """Function tools, those that ask for approval too, are offered cleaned text."""
    runtime.register(weather)
    runtime.register(guarded_weather)
    with runtime.plan() as plan:
        tools = {each.name: each for each in function_tools(runtime, plan)}
    for name in ("weather", "guarded_weather"):
        offered: Any = tools[name]
        assert offered.description == CLEAN
        assert _city(offered.params_json_schema) == CLEAN_PARAMETER
    assert tools["guarded_weather"].needs_approval  # type: ignore[union-attr]


def test_langchain_tools_are_plain_text(runtime: ToolRuntime) -> None:
    """The tool a LangChain model is bound to shows the cleaned description and parameters."""
    runtime.register(weather)
    with runtime.plan() as plan:
        [offered] = langchain_tools(runtime, plan)
    assert offered.description == CLEAN
    function = convert_to_openai_tool(offered)["function"]
    assert function["description"] == CLEAN
    assert _city(function["parameters"]) == CLEAN_PARAMETER
