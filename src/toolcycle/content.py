"""What a tool shows the model beside (or instead of) its output: rich content parts.

A tool may return one of these parts, a list of them, or a `ToolReturn`, which
keeps three audiences apart:

- ``value`` goes to the host as ``ToolResult.output``, and is what the tool's
  output schema checks;
- ``content`` goes to the model, as the parts of its tool-result message;
- ``metadata`` goes to neither: the host reads it from ``ToolResult.metadata``,
  and no message, trace or span carries it.

Binary parts hold raw bytes. They are base64-encoded exactly once, when a
provider's message is built (``ToolResult.to_messages``); bytes that happen to
be base64 text themselves are data like any other and are never decoded. Use
``from_base64`` to make a part from base64 text, which decodes it once.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, ClassVar, Generic, Literal, TypeAlias, TypeVar

from toolcycle._value import FrozenValue, frozen_value

__all__ = [
    "PART_TYPES",
    "Audio",
    "ContentKind",
    "ContentPart",
    "File",
    "Image",
    "ResourceLink",
    "Text",
    "ToolReturn",
    "part_size",
    "parts_of",
]

ContentKind: TypeAlias = Literal["text", "image", "audio", "file", "resource_link"]
"""The kind of a content part, as traces and spans name it."""

_T = TypeVar("_T")
_set = object.__setattr__  # how a frozen value's __init__ sets its fields


def _check_mime(owner: str, mime_type: object, prefix: str = "") -> None:
    if not isinstance(mime_type, str) or "/" not in mime_type:
        raise ValueError(
            f"{owner}.mime_type must be a MIME type such as {prefix or 'application/'}..., "
            f"got {mime_type!r}"
        )
    if prefix and not mime_type.startswith(prefix):
        raise ValueError(
            f"{owner}.mime_type must start with {prefix!r}, got {mime_type!r}; "
            "use File for other kinds of data"
        )


def _raw(owner: str, data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(
        f"{owner}.data must be the raw bytes, got {type(data).__name__}; "
        f"for base64 text use {owner}.from_base64(...)"
    )


def _decoded(owner: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{owner}.from_base64 got text that is not base64: {exc}") from exc


@frozen_value
class Text(FrozenValue):
    """Text for the model.

    Attributes:
        text: the text.
    """

    text: str
    type: ClassVar[Literal["text"]] = "text"

    def __init__(self, text: str) -> None:
        _set(self, "text", text)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Text.text must be a str, got {type(self.text).__name__}")


@frozen_value
class Image(FrozenValue):
    """An image for the model, as raw bytes.

    Attributes:
        data: the image file's bytes (not base64).
        mime_type: its MIME type, such as ``image/png``.

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: ``mime_type`` is not an ``image/`` type.
    """

    data: bytes = field(repr=False)
    mime_type: str
    type: ClassVar[Literal["image"]] = "image"

    def __init__(self, data: bytes, mime_type: str) -> None:
        _set(self, "data", data)
        _set(self, "mime_type", mime_type)
        self.__post_init__()

    def __post_init__(self) -> None:
        _set(self, "data", _raw("Image", self.data))
        _check_mime("Image", self.mime_type, "image/")

    @classmethod
    def from_base64(cls, data: str, mime_type: str) -> Image:
        """An image from base64 text, decoded once here.

        Raises:
            ValueError: ``data`` is not base64.
        """
        return cls(_decoded("Image", data), mime_type)


@frozen_value
class Audio(FrozenValue):
    """Audio for the model, as raw bytes.

    Attributes:
        data: the audio file's bytes (not base64).
        mime_type: its MIME type, such as ``audio/wav``.

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: ``mime_type`` is not an ``audio/`` type.
    """

    data: bytes = field(repr=False)
    mime_type: str
    type: ClassVar[Literal["audio"]] = "audio"

    def __init__(self, data: bytes, mime_type: str) -> None:
        _set(self, "data", data)
        _set(self, "mime_type", mime_type)
        self.__post_init__()

    def __post_init__(self) -> None:
        _set(self, "data", _raw("Audio", self.data))
        _check_mime("Audio", self.mime_type, "audio/")

    @classmethod
    def from_base64(cls, data: str, mime_type: str) -> Audio:
        """Audio from base64 text, decoded once here.

        Raises:
            ValueError: ``data`` is not base64.
        """
        return cls(_decoded("Audio", data), mime_type)


@frozen_value
class File(FrozenValue):
    """A document or any other file for the model, as raw bytes.

    Attributes:
        data: the file's bytes (not base64).
        mime_type: its MIME type, such as ``application/pdf`` or ``text/csv``.
        name: a file name to show the model, if any.
        uri: where the file comes from, if it has an address (an MCP
            embedded resource keeps its URI here).

    Raises:
        TypeError: ``data`` is not bytes.
        ValueError: ``mime_type`` is not a MIME type.
    """

    data: bytes = field(repr=False)
    mime_type: str
    name: str | None = None
    uri: str | None = None
    type: ClassVar[Literal["file"]] = "file"

    def __init__(
        self, data: bytes, mime_type: str, name: str | None = None, uri: str | None = None
    ) -> None:
        _set(self, "data", data)
        _set(self, "mime_type", mime_type)
        _set(self, "name", name)
        _set(self, "uri", uri)
        self.__post_init__()

    def __post_init__(self) -> None:
        _set(self, "data", _raw("File", self.data))
        _check_mime("File", self.mime_type)

    @classmethod
    def from_base64(
        cls, data: str, mime_type: str, name: str | None = None, uri: str | None = None
    ) -> File:
        """A file from base64 text, decoded once here.

        Raises:
            ValueError: ``data`` is not base64.
        """
        return cls(_decoded("File", data), mime_type, name, uri)


@frozen_value
class ResourceLink(FrozenValue):
    """A link to a resource the model may ask for, rather than its content.

    Attributes:
        uri: the resource's URI.
        name: a short name for it.
        mime_type: its MIME type, if known.
        description: what it holds.
    """

    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None
    type: ClassVar[Literal["resource_link"]] = "resource_link"

    def __init__(
        self,
        uri: str,
        name: str | None = None,
        mime_type: str | None = None,
        description: str | None = None,
    ) -> None:
        _set(self, "uri", uri)
        _set(self, "name", name)
        _set(self, "mime_type", mime_type)
        _set(self, "description", description)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri:
            raise ValueError(f"ResourceLink.uri must be a non-empty str, got {self.uri!r}")


ContentPart: TypeAlias = Text | Image | Audio | File | ResourceLink
"""One part of what a tool shows the model."""

PART_TYPES: frozenset[type] = frozenset({Text, Image, Audio, File, ResourceLink})
"""The classes of `ContentPart`, for checks by exact type."""


@frozen_value
class ToolReturn(FrozenValue, Generic[_T]):
    """A tool's return that says apart what the host, the model and nobody else get.

    Args:
        value: the output the host gets (``ToolResult.output``), checked
            against the tool's output schema.
        content: the parts the model sees instead of the output: one part or
            any iterable of parts, kept as a tuple.
        metadata: data for the host alone (``ToolResult.metadata``); never in
            a message, a trace or a span. Kept as a copy.

    Raises:
        TypeError: an item of ``content`` is not a content part, or
            ``metadata`` is not a mapping.
    """

    value: _T
    content: tuple[ContentPart, ...]
    metadata: dict[str, Any]

    def __init__(
        self,
        value: _T = None,  # type: ignore[assignment]  # a return of content alone has no value
        content: ContentPart | Iterable[ContentPart] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TypeError(f"ToolReturn.metadata must be a mapping, got {type(metadata).__name__}")
        _set(self, "value", value)
        _set(self, "content", parts_of(content, "ToolReturn.content"))
        _set(self, "metadata", dict(metadata or {}))


def parts_of(content: object, where: str) -> tuple[ContentPart, ...]:
    """``content`` (a part, or an iterable of parts) as a tuple of parts.

    Raises:
        TypeError: something in ``content`` is not a content part.
    """
    if type(content) in PART_TYPES:
        return (content,)  # type: ignore[return-value]  # checked by exact type
    if type(content) is tuple:  # parts already, as a source hands them over: nothing to copy
        for item in content:
            if type(item) not in PART_TYPES:
                break  # the general case below says which item is wrong
        else:
            return content
    if isinstance(content, str | bytes | Mapping) or not hasattr(content, "__iter__"):
        raise TypeError(f"{where} must be a content part or a list of them, got {content!r:.80}")
    items = tuple(content)
    for index, item in enumerate(items):
        if type(item) not in PART_TYPES:
            raise TypeError(
                f"{where}[{index}] is a {type(item).__name__}, not a content part "
                "(Text, Image, Audio, File, ResourceLink); put other data in "
                "ToolReturn(value=...)"
            )
    return items


def part_size(part: ContentPart) -> int:
    """The bytes a part carries: UTF-8 text, raw binary, or a link's text fields."""
    if type(part) is Text:
        text = part.text
        return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if type(part) is ResourceLink:
        fields = (part.uri, part.name or "", part.mime_type or "", part.description or "")
        return sum(len(item.encode("utf-8", "surrogatepass")) for item in fields)
    return len(part.data)  # type: ignore[union-attr]  # the three binary kinds
