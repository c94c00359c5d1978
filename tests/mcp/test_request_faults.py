"""Handlers for a server's requests that raise or answer with the wrong thing.

Against the SDK's own ``MCPServer`` (tests/mcp/asking_server.py). What a broken
handler said stays with the host; the server hears only that it failed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.mcp import (
    ElicitAnswer,
    Elicitation,
    LogMessage,
    McpRequests,
    McpServer,
    RequestContext,
    Root,
    SamplingRequest,
)

from .asking_server import build

SECRET = "sk-live-0123456789"


def _runtime() -> ToolRuntime:
    return ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0)


def _elicit_raises(question: Elicitation, call: RequestContext) -> Any:
    raise RuntimeError(f"vault refused key {SECRET}")


def _sample_raises(request: SamplingRequest, call: RequestContext) -> Any:
    raise RuntimeError(f"model API refused key {SECRET}")


def _roots_raise(call: RequestContext) -> Any:
    raise RuntimeError(f"cannot read {SECRET}")


BROKEN = [
    ("greet", {}, {"on_elicit": _elicit_raises}, "on_elicit"),
    ("summarise", {"topic": "sky"}, {"on_sample": _sample_raises}, "on_sample"),
    ("roots", {}, {"roots": _roots_raise}, "roots"),
]


def _run(tool: str, arguments: dict[str, Any], protocol: str, **handlers: Any) -> Any:
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol=protocol, **handlers))
        with runtime.plan() as ctx:
            return runtime.execute(tool, arguments, ctx, timeout=10)


@pytest.mark.parametrize(("tool", "arguments", "handlers", "handler"), BROKEN)
def test_a_legacy_handler_that_raises_is_logged_here_and_its_text_never_reaches_the_server(
    tool: str, arguments: dict[str, Any], handlers: dict[str, Any], handler: str, caplog
) -> None:
    """The server hears which handler failed and its exception's type, never its message."""
    with caplog.at_level(logging.ERROR, "toolcycle.mcp.asking"):
        result = _run(tool, arguments, "legacy", **handlers)
    assert not result.success and SECRET not in (result.error or "")
    assert f"the client's {handler} handler failed (RuntimeError)" in (result.error or "")
    (record,) = [r for r in caplog.records if r.name == "toolcycle.mcp.asking"]
    assert record.exc_info is not None and SECRET in str(record.exc_info[1])


def test_a_legacy_elicit_handler_of_the_wrong_type_is_named_to_the_server() -> None:
    """The client's own refusal says nothing private, so the server hears it whole."""
    result = _run("greet", {}, "legacy", on_elicit=lambda question, call: "yes")
    assert "the on_elicit handler returned str, not an ElicitAnswer" in (result.error or "")


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_a_roots_function_that_returns_no_list_of_roots_fails_the_call_saying_so(
    protocol: str,
) -> None:
    """A string, or a list with something else in it, is an error, never an empty listing."""
    text = _run("roots", {}, protocol, roots=lambda call: "file:///work")
    assert not text.success and "must return a list of Root: got str" in (text.error or "")
    mixed = _run("roots", {}, protocol, roots=lambda call: [Root("file:///a"), "file:///b"])
    assert "item 1 is str, not a Root" in (mixed.error or "")


def test_a_roots_function_may_return_none_or_a_generator() -> None:
    """None lists no roots; a generator is read once and every root in it is listed."""

    def generated(call: RequestContext) -> Iterator[Root]:
        yield Root("file:///one", "one")

    assert _run("roots", {}, "auto", roots=lambda call: None).output == {"result": []}
    assert _run("roots", {}, "auto", roots=generated).output == {"result": ["one=file:///one"]}


def test_fixed_roots_that_are_not_roots_are_refused_when_given() -> None:
    """A bundle or a server given a string or other values as roots raises at once."""
    with pytest.raises(TypeError, match="roots must be a list of Root.*got str"):
        McpRequests(roots="file:///work")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 0 is str, not a Root"):
        McpServer.in_process(build(), roots=["file:///work"])  # type: ignore[list-item]


def _trusting() -> MCPServer:
    """A server that asks with a bare schema and takes whatever content comes back."""
    server = MCPServer("trusting")

    @server.tool()
    async def age(ctx: Context) -> str:
        """Ask for an age and say what came back."""
        schema = {"type": "object", "properties": {"age": {"type": "integer"}}}
        with warnings.catch_warnings():  # server requests are deprecated in the new era
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            answer = await ctx.request_context.session.elicit_form("Your age?", schema)
        return f"{answer.action}: {answer.content!r}"

    return server


def test_a_legacy_answer_that_breaks_the_schema_never_reaches_the_server() -> None:
    """The legacy era checks a handler's answer as the 2026-07-28 era does, before sending it."""
    source = McpServer.in_process(
        _trusting(),
        protocol="legacy",
        mode="legacy",
        on_elicit=lambda question, call: ElicitAnswer.accept({"age": "old"}),
    )
    with _runtime() as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            result = runtime.execute("age", {}, ctx, timeout=10)
    assert not result.success and "old" not in str(result.output)
    assert "the on_elicit answer to MCP server 'trusting' was refused" in (result.error or "")
    assert "/age: expected integer" in (result.error or "")


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_a_coroutine_on_log_is_awaited_and_what_it_raises_is_logged(protocol: str, caplog) -> None:
    """An async on_log sees each message, as the other handlers may be async too."""
    seen: list[tuple[str, Any, str]] = []

    async def on_log(message: LogMessage, server: str) -> None:
        seen.append((message.level, message.data, server))
        raise RuntimeError("a broken log handler is only logged")

    with caplog.at_level(logging.INFO, "toolcycle.mcp.asking"):
        result = _run("chatty", {"steps": 1}, protocol, on_log=on_log)
    assert result.success
    assert seen == [("info", "starting the chatty tool", "asking")]
    assert any("on_log handler" in r.getMessage() for r in caplog.records)


def test_a_root_that_is_not_a_file_uri_is_refused_when_made() -> None:
    """A plain path or a web address raises at once, not each time a server asks for roots."""
    with pytest.raises(ValueError, match="must be a file:// URI.*got '/srv/data'"):
        Root("/srv/data")
    with pytest.raises(ValueError, match="got 'https://example.invalid/'"):
        Root("https://example.invalid/", "site")
    assert Root("FILE:///srv/data").uri == "FILE:///srv/data"  # the scheme in any case
