"""Content parts in each provider's messages, checked against the providers' own SDK types."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import mcp_types
import pytest
from anthropic.types import MessageParam
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from toolcycle import (
    Audio,
    ContentPart,
    File,
    Image,
    ProviderFormat,
    ResourceLink,
    Text,
    ToolCall,
    ToolResult,
)

_CHAT = TypeAdapter(ChatCompletionMessageParam)
_RESPONSES = TypeAdapter(ResponseInputItemParam)
_ANTHROPIC = TypeAdapter(MessageParam)


def _materialised(value: Any) -> Any:
    """The validated value with every lazily checked iterable read (so each item is checked)."""
    if isinstance(value, dict):
        return {key: _materialised(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_materialised(item) for item in value]
    if isinstance(value, Iterator):
        return [_materialised(item) for item in value]
    return value


def _result(parts: tuple[ContentPart, ...], output: Any = None) -> ToolResult:
    return ToolResult(
        success=True, output=output, content=parts, call=ToolCall(id="call_1", name="look")
    )


def accepted(format: ProviderFormat, messages: list[dict[str, Any]]) -> None:
    """Raise unless the provider's SDK types accept every message."""
    for message in messages:
        if format == "openai":
            _materialised(_CHAT.validate_python(message))
        elif format == "openai-responses":
            _materialised(_RESPONSES.validate_python(message))
        elif format == "anthropic":
            _materialised(_ANTHROPIC.validate_python({"role": "user", "content": [message]}))
        elif format == "mcp":
            mcp_types.CallToolResult.model_validate(message)
        else:  # no Gemini SDK here: its documented functionResponse shape, by hand
            body = message["functionResponse"]
            assert set(body) <= {"id", "name", "response", "parts"}
            assert isinstance(body["response"]["output"], str)
            for part in body.get("parts", []):
                assert set(part["inlineData"]) == {"mimeType", "data"}


PNG = b"\x89PNG\r\n\x1a\n\x00"
EVERY_KIND: tuple[ContentPart, ...] = (
    Text("look"),
    Image(PNG, "image/png"),
    Audio(b"ID3", "audio/mpeg"),
    File(b"%PDF-1.7", "application/pdf", name="report.pdf"),
    File(b"a,b\n", "text/csv", name="rows.csv"),
    ResourceLink("file:///big.log", "big.log", "text/plain", "the full log"),
)
FORMATS: tuple[ProviderFormat, ...] = ("openai", "openai-responses", "anthropic", "gemini", "mcp")


@pytest.mark.parametrize("format", FORMATS)
def test_every_kind_of_part_makes_messages_the_providers_sdk_accepts(
    format: ProviderFormat,
) -> None:
    """The openai and anthropic request types (and MCP's) take what to_messages builds."""
    accepted(format, _result(EVERY_KIND).to_messages(format))


def test_openai_chat_gets_binary_parts_in_a_user_message_after_the_tool_message() -> None:
    """A tool message holds text only; images, audio and files follow as a user message."""
    tool_message, user = _result(EVERY_KIND).to_messages("openai")
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert tool_message["content"].startswith("look\n[resource link: file:///big.log")
    assert [part["type"] for part in user["content"]] == [
        "text",
        "image_url",
        "input_audio",
        "file",
        "file",
    ]
    assert user["content"][0]["text"].startswith("[attachments of tool call call_1: ")
    assert user["content"][2]["input_audio"]["format"] == "mp3"
    assert user["content"][3]["file"]["filename"] == "report.pdf"


def test_a_batchs_openai_chat_messages_put_every_tool_message_before_the_attachments() -> None:
    """No user message may come between the tool messages that answer one assistant turn."""
    image = ToolResult(
        success=True, content=(Image(PNG, "image/png"),), call=ToolCall(id="c1", name="look")
    )
    plain = ToolResult(success=True, output="ok", call=ToolCall(id="c2", name="look"))
    pdf = File(b"%PDF-1.7", "application/pdf", name="r.pdf")
    document = ToolResult(success=True, content=(pdf,), call=ToolCall(id="c3", name="look"))
    messages = ToolResult.batch_messages([image, plain, document])
    accepted("openai", messages)
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("tool", "c1"),
        ("tool", "c2"),
        ("tool", "c3"),
        ("user", None),
        ("user", None),
    ]
    assert messages[3]["content"][0]["text"] == "[attachments of tool call c1: image_url]"
    assert messages[4]["content"][0]["text"] == "[attachments of tool call c3: file]"
    anonymous = ToolResult(
        success=True, content=(Image(PNG, "image/png"),), call=ToolCall(name="a")
    )
    _, user = anonymous.to_messages("openai")
    assert user["content"][0]["text"] == "[attachments of the tool call above: image_url]"
    blocks = ToolResult.batch_messages([image, plain], "anthropic")
    assert [block["tool_use_id"] for block in blocks] == ["c1", "c2"]


def test_to_message_refuses_a_result_that_needs_two_and_names_to_messages() -> None:
    """One message cannot carry an image to OpenAI Chat: the error says what to call."""
    with pytest.raises(ValueError, match=r"needs 2 messages .*to_messages"):
        _result((Image(PNG, "image/png"),)).to_message("openai")
    assert _result((Text("a"),)).to_message("openai")["content"] == "a"
    assert _result((Image(PNG, "image/png"),)).to_message("anthropic")["type"] == "tool_result"


def test_kinds_a_provider_cannot_take_become_a_text_line_saying_so() -> None:
    """Anthropic gets no audio and no unknown image type; the model is told they exist."""
    parts = (Audio(b"RIFF", "audio/wav"), Image(b"BM", "image/bmp"), File(b"\0", "application/zip"))
    (block,) = _result(parts).to_messages("anthropic")
    texts = [item["text"] for item in block["content"]]
    assert all(item["type"] == "text" for item in block["content"])
    assert "Anthropic takes no audio" in texts[0]
    assert "jpeg, png, gif and webp" in texts[1]
    assert "PDF and plain-text documents" in texts[2]
    (output,) = _result((Audio(b"RIFF", "audio/wav"),)).to_messages("openai-responses")
    assert "no audio" in output["output"][0]["text"]
    (tool_message,) = _result((Audio(b"x", "audio/ogg"),)).to_messages("openai")
    assert "wav and mp3" in tool_message["content"]


def test_a_text_file_is_an_anthropic_text_document_and_a_binary_one_is_not() -> None:
    """Text that is not UTF-8 cannot be a plain-text document, and is described instead."""
    (block,) = _result((File(b"a,b", "text/csv", name="r.csv"),)).to_messages("anthropic")
    assert block["content"][0]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": "a,b",
    }
    assert block["content"][0]["title"] == "r.csv"
    (bad,) = _result((File(b"\xff\xfe", "text/plain"),)).to_messages("anthropic")
    assert bad["content"][0]["type"] == "text"


def test_mcp_gets_structured_content_from_a_dict_value_beside_the_blocks() -> None:
    """The value is structuredContent when it is an object; the parts are the blocks."""
    (message,) = _result((Text("hi"),), output={"n": 1}).to_messages("mcp")
    assert message == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
        "structuredContent": {"n": 1},
    }
    (binary,) = _result((File(b"\xff", "text/plain", uri="u://b"),)).to_messages("mcp")
    assert binary["content"][0]["resource"] == {
        "uri": "u://b",
        "mimeType": "text/plain",
        "blob": "/w==",
    }


def test_gemini_puts_text_in_the_response_and_binary_in_inline_parts() -> None:
    """Gemini's functionResponse gets text as its output and binary as inlineData parts."""
    (message,) = _result((Text("a"), Image(PNG, "image/png"))).to_messages("gemini")
    body = message["functionResponse"]
    assert body["response"] == {"output": "a"} and body["id"] == "call_1"
    assert body["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}}
    ]


@pytest.mark.parametrize("format", FORMATS)
def test_bytes_that_are_base64_text_are_encoded_once_and_decode_back_as_given(
    format: ProviderFormat,
) -> None:
    """Binary is encoded exactly once: decoding the message gives the part's bytes back."""
    data = base64.b64encode(b"already base64")  # data that looks encoded is still just data
    text = str(_result((Image(data, "image/png"),)).to_messages(format))
    once = base64.b64encode(data).decode()
    assert once in text
    assert base64.b64encode(once.encode()).decode() not in text  # never a second time


def test_a_result_without_content_gives_the_one_message_it_always_gave() -> None:
    """to_messages of a plain result is [to_message()]."""
    plain = ToolResult(success=True, output={"a": 1}, call=ToolCall(id="c", name="t"))
    assert plain.to_messages() == [plain.to_message()]


_binary = st.binary(max_size=64)
_parts = st.one_of(
    st.builds(Text, st.text(max_size=40)),
    st.builds(Image, _binary, st.sampled_from(["image/png", "image/jpeg", "image/svg+xml"])),
    st.builds(Audio, _binary, st.sampled_from(["audio/wav", "audio/mpeg", "audio/ogg"])),
    st.builds(
        File,
        _binary,
        st.sampled_from(["application/pdf", "text/plain", "text/markdown", "application/zip"]),
        st.none() | st.text(min_size=1, max_size=10),
        st.none() | st.just("file:///x"),
    ),
    st.builds(
        ResourceLink,
        st.just("https://example.com/r"),
        st.none() | st.text(max_size=10),
        st.none() | st.just("text/plain"),
        st.none() | st.text(max_size=10),
    ),
)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(_parts, min_size=1, max_size=6), format=st.sampled_from(FORMATS))
def test_any_content_list_makes_messages_each_provider_accepts(
    parts: list[ContentPart], format: ProviderFormat
) -> None:
    """Property: whatever parts a tool returns, each provider's schema takes the messages."""
    accepted(format, _result(tuple(parts)).to_messages(format))


def test_a_result_from_execute_has_no_messages_to_give() -> None:
    """Without a tool call there is no id to answer: both methods say to use runtime.call."""
    result = ToolResult(success=True, content=(Text("a"),))
    with pytest.raises(ValueError, match="runtime.call"):
        result.to_messages()
    with pytest.raises(ValueError, match="runtime.call"):
        result.to_message()


def test_a_call_without_an_id_and_a_file_without_a_name_still_make_messages() -> None:
    """Gemini leaves out the id it was not given; Anthropic a document's missing title."""
    result = ToolResult(
        success=True,
        content=(File(b"%PDF", "application/pdf"),),
        call=ToolCall(name="look", format="gemini"),
    )
    (gemini,) = result.to_messages()
    assert "id" not in gemini["functionResponse"]
    (anthropic,) = result.to_messages("anthropic")
    assert "title" not in anthropic["content"][0]


def test_text_alone_needs_no_inline_parts_and_a_bare_link_no_optional_fields() -> None:
    """Gemini gets no ``parts`` for text alone; an MCP link carries only the fields it has."""
    (gemini,) = _result((Text("a"),)).to_messages("gemini")
    assert "parts" not in gemini["functionResponse"]
    (mcp,) = _result((ResourceLink("u://x"),)).to_messages("mcp")
    assert mcp["content"] == [{"type": "resource_link", "uri": "u://x", "name": "u://x"}]
