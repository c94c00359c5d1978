"""What a server lists or answers that toolcycle cannot take as it is, tool by tool."""

from __future__ import annotations

import base64
import sys
import warnings

import mcp_types as types
import pytest

from toolcycle import Audio, File, Text, ToolCapability, ToolResult, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.mcp import McpServer, McpServerError
from toolcycle.sources.mcp._content import call_output, content_parts

from .conftest import RAW_SERVER
from .servers import build

_HELLO = base64.b64encode(b"hello").decode()


def _odd_server() -> McpServer:
    return McpServer.stdio(sys.executable, [str(RAW_SERVER), "--odd-tools"], name="odd")


def test_unusable_listed_tools_are_skipped_with_a_warning_and_the_others_register(
    runtime: ToolRuntime,
) -> None:
    """Bad names and a name with two definitions cost only those tools."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = [d.name for d in runtime.register_source(_odd_server())]
    assert names == ["late", "quick", "copied"]  # "copied" is listed twice, alike
    skipped = [str(w.message) for w in caught if issubclass(w.category, ToolSkippedWarning)]
    assert {w.filename for w in caught} == {__file__}
    assert len(skipped) == 4
    assert any("tool '' of MCP server 'odd'" in m and "at least 1 character" in m for m in skipped)
    assert any("'trailing space '" in m and "whitespace" in m for m in skipped)
    assert any("'xxxx" in m and "..." in m and "256" in m for m in skipped)
    assert any("'differs'" in m and "2 different tools" in m for m in skipped)
    with runtime.plan() as ctx:
        assert runtime.execute("quick", {"n": 4}, ctx).output == {"n": 4}


def test_a_refresh_with_warnings_as_errors_logs_skipped_tools_and_keeps_the_others(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """A host's warning filter does not make a changed list with one bad tool unregister all."""
    from mcp.server.lowlevel.server import Server

    listed = [types.Tool(name="kept", input_schema={"type": "object"})]

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    server = McpServer.in_process(Server("moody", on_list_tools=list_tools), name="moody")
    runtime.register_source(server)
    listed.append(types.Tool(name="added", input_schema={"type": "object"}))
    listed.extend(
        types.Tool(name="twice", description=description, input_schema={"type": "object"})
        for description in ("one", "another")
    )
    server._stale = True  # as a notifications/tools/list_changed would
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.end_plan(runtime.new_context())
    assert [d.name for d in runtime.descriptors()] == ["kept", "added"]
    assert "source.refresh_failed" not in caplog.text
    [skipped] = [r for r in caplog.records if r.getMessage() == "source.tool_skipped"]
    assert "'twice'" in str(vars(skipped).get("detail"))
    assert "2 different tools" in str(vars(skipped).get("detail"))


def test_a_listing_that_breaks_the_mcp_schema_is_a_server_error_that_says_where(
    runtime: ToolRuntime,
) -> None:
    """A tool whose inputSchema is not an object schema fails discovery as McpServerError."""
    server = McpServer.stdio(sys.executable, [str(RAW_SERVER), "--scalar-tool"], name="scalar")
    with pytest.raises(McpServerError) as raised:
        runtime.register_source(server)
    assert raised.value.server == "scalar"
    assert "MCP server 'scalar' sent a tools/list page that breaks the MCP schema" in str(
        raised.value
    )
    assert "tools.2.inputSchema.type: Input should be 'object'" in str(raised.value)
    assert runtime.descriptors() == ()


def test_a_capability_override_is_checked_when_the_server_is_built(in_process) -> None:
    """A bad override fails at once, even for a tool the server has not listed (yet)."""
    with pytest.raises(ValueError, match=r"capabilities\['later'\].*writes"):
        McpServer.in_process(build(), capabilities={"later": {"writes": "sometimes"}})
    with pytest.raises(TypeError, match=r"capabilities\['later'\] must be a ToolCapability"):
        McpServer.in_process(build(), capabilities={"later": True})
    server = McpServer.in_process(
        build(), capabilities={"later": {"writes": False}, "erase": ToolCapability()}
    )
    assert server.capabilities == {"later": {"writes": False}, "erase": ToolCapability()}


def test_content_a_server_mislabels_still_reaches_the_model_as_what_it_is() -> None:
    """Audio under an image MIME type, a bad MIME type, or a link without a URI lose nothing."""
    blocks: list[types.ContentBlock] = [
        types.AudioContent(type="audio", data=_HELLO, mime_type="image/png"),
        types.ImageContent(type="image", data=_HELLO, mime_type="png"),
        types.AudioContent(type="audio", data=_HELLO, mime_type="audio/ogg"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="mem://t", text="note", mime_type="text"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="mem://b", blob=_HELLO, mime_type="pdf"),
        ),
        types.ResourceLink(type="resource_link", uri="", name=""),
    ]
    parts = content_parts(blocks)
    assert parts[:5] == (
        File(b"hello", "image/png"),
        File(b"hello", "application/octet-stream"),
        Audio(b"hello", "audio/ogg"),
        File(b"note", "text/plain", uri="mem://t"),
        File(b"hello", "application/octet-stream", uri="mem://b"),
    )
    assert isinstance(parts[5], Text) and "resource_link content" in parts[5].text


def test_a_resource_link_without_uri_does_not_fail_the_call(runtime: ToolRuntime) -> None:
    """The call succeeds; the model is told the link could not be read."""

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="link", input_schema={"type": "object"})]
        )

    async def call_tool(ctx: object, params: object) -> types.CallToolResult:
        link = types.ResourceLink(type="resource_link", uri="", name="nothing")
        return types.CallToolResult(content=[types.TextContent(type="text", text="see"), link])

    from mcp.server.lowlevel.server import Server

    server = Server("links", on_list_tools=list_tools, on_call_tool=call_tool)
    runtime.register_source(McpServer.in_process(server))
    with runtime.plan() as ctx:
        result = runtime.execute("link", {}, ctx)
    assert result.success, result.error
    assert result.content is not None and result.content[0] == Text("see")
    assert "could not be read" in result.content[1].text  # type: ignore[union-attr]


def test_an_error_told_only_in_structured_content_reaches_the_error_message() -> None:
    """IsError with structuredContent and no text: the error quotes the structured content."""
    result = call_output(
        types.CallToolResult(
            content=[], structured_content={"reason": "quota exceeded"}, is_error=True
        )
    )
    assert isinstance(result, ToolResult) and not result.success
    assert result.error == 'the server reported an error: {"reason": "quota exceeded"}'
    big = call_output(
        types.CallToolResult(content=[], structured_content={"x": "y" * 10_000}, is_error=True)
    )
    assert big.error is not None and len(big.error) < 2100 and big.error.endswith("...")
    bare = call_output(types.CallToolResult(content=[], is_error=True))
    assert bare.error == "the server reported an error and sent no text"


def test_a_call_result_that_breaks_the_mcp_schema_fails_as_a_server_error_quoting_nothing(
    runtime: ToolRuntime,
) -> None:
    """The failed result names the server and the broken places, not the values sent."""
    server = McpServer.stdio(sys.executable, [str(RAW_SERVER), "--broken-result"], name="broken")
    runtime.register_source(server)
    with runtime.plan() as ctx:
        first = runtime.execute("quick", {"n": 1}, ctx)
        again = runtime.execute("quick", {"n": 2}, ctx)
    assert not first.success and first.error_type == "McpServerError"
    error = first.error or ""
    assert "MCP server 'broken' sent a tools/call result for 'quick' that breaks the MCP" in error
    assert "content.0.TextContent.text (string_type)" in error
    assert "sk-live-secret" not in error and "sk-live-secret" not in repr(first.exception)
    assert again.error == error  # the plan goes on: the next call is answered alike
