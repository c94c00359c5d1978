"""MCP content blocks as toolcycle content parts, and back, without loss."""

from __future__ import annotations

import base64

import mcp_types as types

from toolcycle import Audio, File, Image, ResourceLink, Text, ToolReturn, ToolRuntime
from toolcycle.sources.mcp._content import call_output, content_parts

from .conftest import register
from .servers import PNG, WAV


def test_every_kind_of_block_becomes_a_part_with_its_bytes_decoded_once(
    runtime: ToolRuntime, in_process
) -> None:
    """Image, audio, link and both embedded resources arrive as parts; output is as before."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("content", {}, ctx)
    assert result.content == (
        Text("hello"),
        Image(base64.b64decode(PNG), "image/png"),
        Audio(base64.b64decode(WAV), "audio/wav"),
        ResourceLink("file:///tmp/a.txt", "a.txt", "text/plain"),
        File(b"a note", "text/plain", uri="mem://note"),
        File(base64.b64decode(PNG), "application/octet-stream", uri="mem://blob"),
    )
    assert isinstance(result.output, list) and result.output[0] == {"type": "text", "text": "hello"}
    assert result.trace is not None
    assert result.trace.content_kinds == ("text", "image", "audio", "resource_link", "file", "file")


def test_the_mcp_message_gives_back_exactly_the_blocks_the_server_sent(
    runtime: ToolRuntime, in_process
) -> None:
    """Round trip: the parts as MCP blocks equal the server's own JSON, block for block."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.call({"id": "c", "name": "content", "arguments": {}}, ctx)
    (message,) = result.to_messages("mcp")
    assert message["content"] == result.output
    assert "structuredContent" not in message


def test_structured_content_is_the_value_and_the_blocks_the_content() -> None:
    """StructuredContent goes to the host, the blocks to the model; both reach the mcp format."""
    sent = types.CallToolResult(
        content=[types.TextContent(type="text", text="3")], structured_content={"sum": 3}
    )
    returned = call_output(sent)
    assert isinstance(returned, ToolReturn)
    assert returned.value == {"sum": 3} and returned.content == (Text("3"),)


def test_blocks_that_cannot_be_read_as_sent_still_reach_the_model() -> None:
    """An odd MIME type becomes a File; data that is not base64 becomes a text saying so."""
    odd = types.ImageContent(type="image", data=PNG, mime_type="application/x-raw")
    broken = types.ImageContent(type="image", data="%%%", mime_type="image/png")
    untyped = types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri="mem://t", text="t")
    )
    unnamed_blob = types.EmbeddedResource(
        type="resource", resource=types.BlobResourceContents(uri="mem://b", blob="AAE=")
    )
    parts = content_parts([odd, broken, untyped, unnamed_blob])
    assert parts[0] == File(base64.b64decode(PNG), "application/x-raw")
    assert isinstance(parts[1], Text) and "could not be read" in parts[1].text
    assert parts[2] == File(b"t", "text/plain", uri="mem://t")
    assert parts[3] == File(b"\x00\x01", "application/octet-stream", uri="mem://b")
