"""format="mcp": every outputSchema a tool declares is answered by structuredContent that fits it.

The check is the MCP SDK's own: its client lists the runtime's definitions
from an in-process server that answers with the runtime's messages, and
validates every result against the tool's outputSchema as it does for any
server.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import mcp.types as mt
from mcp.server.lowlevel import Server
from pydantic import BaseModel

from mcp import Client
from toolcycle import FunctionTool, Text, ToolReturn, ToolRuntime, tool


class Point(BaseModel):
    x: int
    y: int = 0


class Node(BaseModel):
    name: str
    children: list[Node] = []


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@tool(writes=False)
def count(text: str) -> int:
    """Count words."""
    return len(text.split())


@tool(writes=False)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@tool(writes=False)
def words(text: str) -> list[str]:
    """Split a text into words."""
    return text.split()


@tool(writes=False)
def points(text: str) -> list[Point]:
    """A point per word."""
    return [Point(x=len(word)) for word in text.split()]


@tool(writes=False)
def size(text: str) -> Size:
    """Whether a text is long."""
    return Size.LARGE if len(text) > 3 else Size.SMALL


@tool(writes=False)
def mood(text: str) -> Literal["calm", "loud"]:
    """Whether a text shouts."""
    return "loud" if text.isupper() else "calm"


@tool(writes=False)
def locate(text: str) -> Point:
    """A point for a text."""
    return Point(x=len(text))


@tool(writes=False)
def tally(text: str) -> dict[str, int]:
    """How often each word occurs."""
    return {word: text.split().count(word) for word in text.split()}


@tool(writes=False)
def tree(text: str) -> Node:
    """A tree of the words, the first one at the root."""
    first, *rest = text.split()
    return Node(name=first, children=[Node(name=word) for word in rest])


@tool(writes=False)
def maybe(text: str) -> int | None:
    """The length of a text, or nothing for an empty one."""
    return len(text) or None


@tool(writes=False)
def rich(text: str) -> ToolReturn[int]:
    """Count words, and say so."""
    return ToolReturn(len(text.split()), content=[Text(f"{text!r} has words")])


TOOLS = [count, shout, words, points, size, mood, locate, tally, tree, maybe, rich]


async def _answers(
    tools: list[FunctionTool], text: str, **options: Any
) -> dict[str, mt.CallToolResult]:
    """Each tool's result through the SDK's client, which checks it against the definition.

    ``options`` go to the runtime (``max_result_bytes``, say).
    """
    with ToolRuntime(**options) as runtime:
        for function in tools:
            runtime.register(function)
        ctx = runtime.new_context("mcp")
        definitions = runtime.tool_definitions(ctx, format="mcp")

        async def list_tools(_: Any, __: Any) -> mt.ListToolsResult:
            return mt.ListToolsResult(tools=[mt.Tool.model_validate(d) for d in definitions])

        async def call_tool(_: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            request = {"method": "tools/call", "id": 1, "params": params.model_dump()}
            result = await runtime.acall(request, ctx)
            return mt.CallToolResult.model_validate(result.to_message())

        server = Server("structured", on_list_tools=list_tools, on_call_tool=call_tool)
        async with Client(server, raise_exceptions=True) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == {function.name for function in tools}
            return {
                function.name: await client.call_tool(function.name, {"text": text})
                for function in tools
            }


async def test_the_mcp_client_accepts_every_result_against_its_declared_output_schema() -> None:
    """Object outputs are declared and sent as structuredContent; other values as text only."""
    answers = await _answers(TOOLS, "a bb ccc")
    assert {name: answer.structured_content for name, answer in answers.items()} == {
        "count": None,
        "shout": None,
        "words": None,
        "points": None,
        "size": None,
        "mood": None,
        "locate": {"x": 8, "y": 0},
        "tally": {"a": 1, "bb": 1, "ccc": 1},
        "tree": {
            "name": "a",
            "children": [{"name": "bb", "children": []}, {"name": "ccc", "children": []}],
        },
        "maybe": None,
        "rich": None,
    }
    assert not any(answer.is_error for answer in answers.values())


async def test_an_object_output_cut_to_max_result_bytes_is_an_error_the_client_accepts() -> None:
    """A cut object cannot be structuredContent; as a success the SDK client would refuse it.

    So it goes with isError (its text the cut output and the marker); a cut
    string or list, for which no outputSchema is declared, stays a success.
    """
    long_text = " ".join(f"word{n}" for n in range(200))
    answers = await _answers([tally, tree, shout, words], long_text, max_result_bytes=200)
    for name in ("tally", "tree"):
        answer = answers[name]
        assert answer.is_error and answer.structured_content is None
        (block,) = answer.content
        assert isinstance(block, mt.TextContent)
        assert block.text.startswith('{"') and "[cut: output was" in block.text
    for name in ("shout", "words"):
        answer = answers[name]
        assert not answer.is_error and answer.structured_content is None
        assert "[cut: output was" in answer.content[0].text  # type: ignore[union-attr]


@tool(writes=False)
def captioned(text: str) -> ToolReturn[dict[str, int]]:
    """Count each word, and say how many there are."""
    counts = {word: text.split().count(word) for word in text.split()}
    return ToolReturn(counts, content=[Text(f"{len(counts)} distinct words")])


async def test_a_cut_object_with_content_parts_is_an_error_and_cut_parts_alone_are_not() -> None:
    """With content, only a cut value withholds structuredContent; cut parts leave it whole."""
    many = " ".join(f"w{n}" for n in range(100))
    answer = (await _answers([captioned], many, max_result_bytes=200))["captioned"]
    assert answer.is_error and answer.structured_content is None
    assert {block.type for block in answer.content} == {"text"}  # the parts, as cut
    answer = (await _answers([rich], "a " * 300, max_result_bytes=200))["rich"]
    assert not answer.is_error  # the parts were cut, the value (a number) was not
    assert "cut or left out" in answer.content[-1].text  # type: ignore[union-attr]


def _definitions(*functions: FunctionTool) -> dict[str, dict[str, Any]]:
    with ToolRuntime() as runtime:
        for function in functions:
            runtime.register(function)
        definitions = runtime.tool_definitions(runtime.new_context("p"), format="mcp")
    return {definition["name"]: definition for definition in definitions}


def test_only_an_output_schema_of_objects_is_declared() -> None:
    """MCP wants an object at the root, and a structuredContent for every declared schema."""
    definitions = _definitions(*TOOLS)
    declared = {name for name, definition in definitions.items() if "outputSchema" in definition}
    assert declared == {"locate", "tally", "tree"}
    assert definitions["locate"]["outputSchema"] == locate.discover().output_schema
    # A recursive model's schema is a $ref to its own definition: an object all the same.
    assert tree.discover().output_schema["$ref"] == "#/$defs/Node"  # type: ignore[index]
    assert definitions["tree"]["outputSchema"]["type"] == "object"
    for definition in definitions.values():
        mt.Tool.model_validate(definition)
