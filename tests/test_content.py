"""Content parts and ToolReturn: what they accept, refuse and measure."""

from __future__ import annotations

import base64

import pytest

from toolcycle import Audio, File, Image, ResourceLink, Text, ToolResult, ToolReturn
from toolcycle.content import part_size, parts_of


def test_binary_parts_keep_the_raw_bytes_they_are_given() -> None:
    """Bytearray and memoryview become bytes; bytes stay the same object."""
    data = b"\x89PNG\r\n"
    assert Image(data, "image/png").data is data
    assert Audio(bytearray(b"RIFF"), "audio/wav").data == b"RIFF"
    assert File(memoryview(b"%PDF"), "application/pdf", name="a.pdf").data == b"%PDF"


def test_a_binary_part_refuses_text_and_points_at_from_base64() -> None:
    """Base64 text given as data is refused, naming the constructor that decodes it."""
    with pytest.raises(TypeError, match=r"Image.from_base64"):
        Image("aGVsbG8=", "image/png")  # type: ignore[arg-type]


def test_from_base64_decodes_once_and_refuses_what_is_not_base64() -> None:
    """from_base64 gives the decoded bytes; text that is not base64 is a ValueError."""
    assert Image.from_base64(base64.b64encode(b"img").decode(), "image/png").data == b"img"
    assert Audio.from_base64("AAE=", "audio/mpeg").data == b"\x00\x01"
    assert File.from_base64("AAE=", "text/csv", "a.csv", "file:///a.csv").uri == "file:///a.csv"
    with pytest.raises(ValueError, match="not base64"):
        File.from_base64("not base64!", "application/pdf")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(b"x", "audio/wav"), "must start with 'image/'"),
        (lambda: Audio(b"x", "image/png"), "must start with 'audio/'"),
        (lambda: File(b"x", "pdf"), "must be a MIME type"),
        (lambda: ResourceLink(""), "non-empty"),
    ],
)
def test_parts_refuse_a_wrong_mime_type_or_an_empty_uri(make: object, message: str) -> None:
    """Each part checks its MIME type (or URI) and says what it expects."""
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_text_refuses_what_is_not_a_string() -> None:
    """Text holds a str and nothing else."""
    with pytest.raises(TypeError, match="Text.text must be a str"):
        Text(3)  # type: ignore[arg-type]


def test_the_repr_of_a_binary_part_leaves_the_bytes_out() -> None:
    """A megabyte image does not flood a log line."""
    assert repr(Image(b"x" * 10, "image/png")) == "Image(mime_type='image/png')"


def test_tool_return_keeps_content_as_a_tuple_and_copies_metadata() -> None:
    """A single part or a list becomes a tuple; metadata is the tool's own copy."""
    meta = {"cost": 1}
    single = ToolReturn(value=1, content=Text("a"), metadata=meta)  # type: ignore[arg-type]
    assert single.content == (Text("a"),)
    meta["cost"] = 2
    assert single.metadata == {"cost": 1}
    assert ToolReturn(content=[Text("a"), Text("b")]).content == (Text("a"), Text("b"))
    assert ToolReturn().value is None


def test_tool_return_refuses_content_that_is_not_parts_and_metadata_not_a_mapping() -> None:
    """The errors name the offending item and what to do instead."""
    with pytest.raises(TypeError, match=r"ToolReturn.content\[1\] is a dict.*ToolReturn\(value"):
        ToolReturn(content=[Text("a"), {"b": 1}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a content part or a list"):
        ToolReturn(content="text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="metadata must be a mapping"):
        ToolReturn(metadata=[1])  # type: ignore[arg-type]


def test_part_size_counts_utf8_text_raw_bytes_and_link_fields() -> None:
    """Sizes are what the parts carry, not their base64 form."""
    assert part_size(Text("é")) == 2
    assert part_size(Text("ab")) == 2
    assert part_size(Image(b"x" * 300, "image/png")) == 300
    assert part_size(ResourceLink("u://x", "n", "text/plain", "d")) == len("u://xntext/plaind")


def test_parts_of_accepts_any_iterable_of_parts() -> None:
    """A generator of parts is read into a tuple."""
    assert parts_of((Text(t) for t in "ab"), "content") == (Text("a"), Text("b"))


def test_parts_of_keeps_a_tuple_of_parts_and_checks_every_item_of_one() -> None:
    """A tuple of parts comes back as it is; a tuple holding anything else is refused."""
    parts = (Text("a"), Image(b"x", "image/png"))
    assert parts_of(parts, "content") is parts
    with pytest.raises(TypeError, match=r"content\[1\] is a str, not a content part"):
        parts_of((Text("a"), "b"), "content")


def test_a_result_with_binary_parts_survives_a_json_round_trip() -> None:
    """A JSON dump holds the parts' bytes as (URL-safe) base64; validating the dump decodes them."""
    raw = b"\x89PNG\r\n\x1a\n\x00\xff"
    result = ToolResult(
        success=True,
        output={"n": 1},
        content=(Text("chart"), Image(raw, "image/png"), File(raw, "application/pdf", "a.pdf")),
    )
    dumped = result.model_dump_json()
    assert base64.urlsafe_b64encode(raw).decode() in dumped
    again = ToolResult.model_validate_json(dumped)
    assert again == result
    assert again.content[1].data == raw  # type: ignore[union-attr]
