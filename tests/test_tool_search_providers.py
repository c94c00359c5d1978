"""The definitions tool search produces, checked against the providers' own SDK types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

from toolcycle import ToolExecutionContext, ToolRuntime, tool

anthropic_types = pytest.importorskip("anthropic.types", reason="needs the anthropic SDK")
responses_types = pytest.importorskip("openai.types.responses", reason="needs the openai SDK")
chat_types = pytest.importorskip("openai.types.chat", reason="needs the openai SDK")


@tool(writes=False)
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool(writes=False, defer_loading=True)
def find_invoice(number: str, year: int | None = None) -> str:
    """Find an invoice by its number."""
    return number


@pytest.fixture
def ctx(runtime: ToolRuntime) -> Iterator[ToolExecutionContext]:
    """A plan of a runtime with one plain tool and one deferred tool."""
    runtime.register(add)
    runtime.register(find_invoice)
    with runtime.plan() as context:
        yield context


def accepted(adapter: TypeAdapter[Any], definitions: list[dict[str, Any]]) -> None:
    """The SDK type validates the definitions and keeps every key (none is unknown to it)."""
    assert adapter.validate_python(definitions) == definitions


@pytest.mark.parametrize("search", ["bm25", "regex", "local"])
def test_anthropic_accepts_the_definitions(
    runtime: ToolRuntime, ctx: ToolExecutionContext, search: str
) -> None:
    """The anthropic SDK's ToolUnionParam takes the search tool, defer_loading and the meta-tool."""
    definitions = runtime.tool_definitions(ctx, format="anthropic", search=search)  # type: ignore[arg-type]
    accepted(TypeAdapter(list[anthropic_types.ToolUnionParam]), definitions)


@pytest.mark.parametrize("search", ["hosted", "local"])
@pytest.mark.parametrize("strict", [False, True])
def test_openai_responses_accepts_the_definitions(
    runtime: ToolRuntime, ctx: ToolExecutionContext, search: str, strict: bool
) -> None:
    """The openai SDK's Responses ToolParam takes tool_search and defer_loading on functions."""
    definitions = runtime.tool_definitions(
        ctx,
        format="openai-responses",
        search=search,  # type: ignore[arg-type]
        strict=strict,
    )
    accepted(TypeAdapter(list[responses_types.ToolParam]), definitions)


@pytest.mark.parametrize("strict", [False, True])
def test_openai_chat_accepts_the_meta_tool(
    runtime: ToolRuntime, ctx: ToolExecutionContext, strict: bool
) -> None:
    """Chat Completions gets plain function tools only, search_tools among them."""
    definitions = runtime.tool_definitions(ctx, format="openai", strict=strict)
    accepted(TypeAdapter(list[chat_types.ChatCompletionFunctionToolParam]), definitions)
    assert definitions[-1]["function"]["name"] == "search_tools"


def test_strict_mode_null_limit_is_the_default(
    runtime: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """In strict mode limit is required and nullable; the null a model sends means 5."""
    [*_, meta] = runtime.tool_definitions(ctx, format="openai", strict=True)
    assert meta["function"]["strict"] is True
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "search_tools", "arguments": '{"query": "invoice", "limit": null}'},
    }
    result = runtime.call(call, ctx)
    assert result.output["tools"][0]["name"] == "find_invoice"
