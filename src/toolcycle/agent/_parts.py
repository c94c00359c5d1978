"""The messages that hand a result's content parts to a model, in each provider's format.

Each provider takes a different set of kinds inside a tool result; a part it
cannot take there goes where it can (OpenAI Chat: a user message after the tool
message), or is described in a text line, so the model always learns it exists.
The mapping, as ``docs/concepts/rich-results.md`` shows it as a table:

| part | openai | openai-responses | anthropic | gemini | mcp |
| --- | --- | --- | --- | --- | --- |
| text | tool message text | ``input_text`` | ``text`` | ``response.output`` | ``text`` |
| image | user ``image_url`` | ``input_image`` | ``image`` (jpeg, png, gif, webp) | ``inlineData`` | ``image`` |
| audio | user ``input_audio`` (wav, mp3) | text line | text line | ``inlineData`` | ``audio`` |
| file | user ``file`` | ``input_file`` | ``document`` (pdf, text/*) | ``inlineData`` | ``resource`` |
| link | text line | text line | text line | text line | ``resource_link`` |

Binary data is base64-encoded here, once per message: raw bytes in, text out.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, cast

from toolcycle.agent._messages import mcp_message
from toolcycle.content import Audio, File, Image, ResourceLink, Text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolcycle.content import ContentPart

__all__ = ["content_messages", "describe", "mcp_block"]

_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_OPENAI_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def content_messages(
    format: str,
    *,
    call_id: str | None,
    name: str,
    parts: Sequence[ContentPart],
    output: Any,
    truncated: bool = False,
    output_valid: bool | None = None,
) -> list[dict[str, Any]]:
    """The messages for a successful result with content ``parts``, in ``format``.

    ``truncated`` says the runtime cut the output or the parts to ``max_result_bytes``;
    ``output_valid`` is False for an output that missed its output schema.
    """
    if format == "openai":
        return _openai(call_id, parts)
    if format == "openai-responses":
        items = [_responses_item(part) for part in parts]
        return [{"type": "function_call_output", "call_id": call_id, "output": items}]
    if format == "anthropic":
        blocks = [_anthropic_block(part) for part in parts]
        return [
            {"type": "tool_result", "tool_use_id": call_id, "content": blocks, "is_error": False}
        ]
    if format == "gemini":
        return [_gemini(call_id, name, parts)]
    blocks = [mcp_block(part) for part in parts]
    message = mcp_message(
        blocks, success=True, output=output, truncated=truncated, output_valid=output_valid
    )
    return [message]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _data_url(mime_type: str, data: bytes) -> str:
    return f"data:{mime_type};base64,{_b64(data)}"


def _label(part: File) -> str:
    return part.name or part.uri or "file"


def describe(part: ContentPart, why: str = "") -> str:
    """A text line standing for a part the format cannot carry (or a link)."""
    if type(part) is ResourceLink:
        line = f"[resource link: {part.uri}"
        details = [item for item in (part.name, part.mime_type, part.description) if item]
        return line + (f" ({'; '.join(details)})]" if details else "]")
    size = len(part.data)  # type: ignore[union-attr]  # text and links are handled above
    what = f"{part.type} {_label(part)}" if type(part) is File else part.type
    return f"[{what} of {size} bytes, {part.mime_type}, not shown: {why}]"  # type: ignore[union-attr]


def _openai(call_id: str | None, parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    lines: list[str] = []
    attached: list[dict[str, Any]] = []
    for part in parts:
        if type(part) is Text:
            lines.append(part.text)
        elif type(part) is Image:
            attached.append(
                {"type": "image_url", "image_url": {"url": _data_url(part.mime_type, part.data)}}
            )
        elif type(part) is Audio:
            audio_format = _OPENAI_AUDIO.get(part.mime_type)
            if audio_format is None:
                lines.append(describe(part, "OpenAI Chat takes wav and mp3 audio only"))
            else:
                attached.append(
                    {
                        "type": "input_audio",
                        "input_audio": {"data": _b64(part.data), "format": audio_format},
                    }
                )
        elif type(part) is File:
            file = {"file_data": _data_url(part.mime_type, part.data), "filename": _label(part)}
            attached.append({"type": "file", "file": file})
        else:
            lines.append(describe(part))
    if attached:
        kinds = ", ".join(item["type"] for item in attached)
        lines.append(f"[{len(attached)} attachment(s) of this result: {kinds}]")
    tool = {"role": "tool", "tool_call_id": call_id, "content": "\n".join(lines)}
    if not attached:
        return [tool]
    # Named, since in a batch the user messages follow all the tool messages.
    call = "the tool call above" if call_id is None else f"tool call {call_id}"
    whose = {"type": "text", "text": f"[attachments of {call}: {kinds}]"}
    return [tool, {"role": "user", "content": [whose, *attached]}]


def _responses_item(part: ContentPart) -> dict[str, Any]:
    if type(part) is Text:
        return {"type": "input_text", "text": part.text}
    if type(part) is Image:
        return {"type": "input_image", "image_url": _data_url(part.mime_type, part.data)}
    if type(part) is File:
        return {
            "type": "input_file",
            "file_data": _data_url(part.mime_type, part.data),
            "filename": _label(part),
        }
    why = "" if type(part) is ResourceLink else "the Responses API takes no audio in a tool result"
    return {"type": "input_text", "text": describe(part, why)}


def _anthropic_block(part: ContentPart) -> dict[str, Any]:
    if type(part) is Text:
        return {"type": "text", "text": part.text}
    if type(part) is Image:
        if part.mime_type in _ANTHROPIC_IMAGES:
            source = {"type": "base64", "media_type": part.mime_type, "data": _b64(part.data)}
            return {"type": "image", "source": source}
        why = "Anthropic takes jpeg, png, gif and webp images"
    elif type(part) is File:
        document = _anthropic_document(part)
        if document is not None:
            return document
        why = "Anthropic takes PDF and plain-text documents"
    elif type(part) is Audio:
        why = "Anthropic takes no audio"
    else:
        why = ""
    return {"type": "text", "text": describe(part, why)}


def _anthropic_document(part: File) -> dict[str, Any] | None:
    source: dict[str, Any]
    if part.mime_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": _b64(part.data)}
    elif part.mime_type.startswith("text/"):
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        return None
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.name:
        block["title"] = part.name
    return block


def _gemini(call_id: str | None, name: str, parts: Sequence[ContentPart]) -> dict[str, Any]:
    lines: list[str] = []
    inline: list[dict[str, Any]] = []
    for part in parts:
        if type(part) is Text:
            lines.append(part.text)
        elif type(part) is ResourceLink:
            lines.append(describe(part))
        else:
            binary = cast("Image | Audio | File", part)
            data = {"mimeType": binary.mime_type, "data": _b64(binary.data)}
            inline.append({"inlineData": data})
    body: dict[str, Any] = {"name": name, "response": {"output": "\n".join(lines)}}
    if inline:
        body["parts"] = inline
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


def mcp_block(part: ContentPart) -> dict[str, Any]:
    """A part as an MCP content block (camelCase JSON, base64 data)."""
    if type(part) is Text:
        return {"type": "text", "text": part.text}
    if type(part) is ResourceLink:
        link: dict[str, Any] = {
            "type": "resource_link",
            "uri": part.uri,
            "name": part.name or part.uri,
        }
        if part.mime_type is not None:
            link["mimeType"] = part.mime_type
        if part.description is not None:
            link["description"] = part.description
        return link
    if type(part) is File:
        resource: dict[str, Any] = {
            "uri": part.uri or part.name or "file",
            "mimeType": part.mime_type,
        }
        text = _as_text(part)
        if text is None:
            resource["blob"] = _b64(part.data)
        else:
            resource["text"] = text
        return {"type": "resource", "resource": resource}
    return {"type": part.type, "data": _b64(part.data), "mimeType": part.mime_type}  # type: ignore[union-attr]


def _as_text(part: File) -> str | None:
    """A text file's content as text, for an MCP text resource; None for binary."""
    if not part.mime_type.startswith("text/"):
        return None
    try:
        return part.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
