"""From MCP's wire types to ours: tool listings, call results and errors.

Every translation of an MCP type or exception into a toolcycle one is in this
module, so that what a server can send and what a user sees are read side by
side.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolcycle import (
    Audio,
    ContentPart,
    File,
    Image,
    ResourceLink,
    Text,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionError,
    ToolResult,
    ToolReturn,
    ToolRuntimeError,
)

__all__ = [
    "McpCallError",
    "McpServerError",
    "McpToolError",
    "call_output",
    "checked_overrides",
    "content_json",
    "content_parts",
    "descriptor_of",
    "listing",
    "map_error",
]

# How much of an error's structured content its message quotes, in characters.
_MAX_ERROR_JSON = 2000

# The annotation hints we keep on the descriptor, by their wire names.
_HINTS = {
    "title": "title",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


class McpServerError(ToolRuntimeError):
    """An MCP server could not be reached, failed to start, broke the protocol or died.

    Attributes:
        server: the server's name.
        exit_code: the process's exit code, when it is a process that exited.
        stderr_tail: the last lines the process wrote to stderr.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str,
        exit_code: int | None = None,
        stderr_tail: tuple[str, ...] = (),
        tool_name: str | None = None,
        plan_id: str | None = None,
    ) -> None:
        super().__init__(message, tool_name=tool_name, plan_id=plan_id)
        self.server = server
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class McpCallError(ToolExecutionError):
    """The server answered a ``tools/call`` with a JSON-RPC error.

    Attributes:
        code: the JSON-RPC error code, such as -32602 for invalid params.
        data: the error's ``data`` member, if it sent one.
    """

    def __init__(self, message: str, *, code: int, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class McpToolError(ToolExecutionError):
    """The ``error_type`` of a result whose server answered with ``isError: true``.

    It is not raised: the call's `ToolResult` carries the server's text as
    ``error`` and the content blocks as ``output``.
    """


def descriptor_of(
    tool: mcp_types.Tool,
    *,
    server: str,
    prefix: str,
    timeout: float | None,
    override: ToolCapability | Mapping[str, Any] | None,
) -> ToolDescriptor:
    """Describe one listed tool; its capability is derived from its annotations, safely."""
    annotations: dict[str, Any] = {}
    if tool.annotations is not None:
        for attribute, wire in _HINTS.items():
            value = getattr(tool.annotations, attribute)
            if value is not None:
                annotations[wire] = value
    # Only an explicit readOnlyHint: true makes a tool read-only; MCP's own default
    # for the hint is false, and a server's silence must not widen a plan.
    # Likewise only an explicit idempotentHint: true lets a retry policy apply to it.
    capability = ToolCapability(
        writes=annotations.get("readOnlyHint") is not True,
        idempotent=annotations.get("idempotentHint") is True,
    )
    if isinstance(override, ToolCapability):
        capability = override
    elif override is not None:
        capability = ToolCapability.model_validate(capability.model_dump() | dict(override))
    return ToolDescriptor(
        name=prefix + tool.name,
        description=tool.description or annotations.get("title", "") or "",
        input_schema=dict(tool.input_schema),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        capability=capability,
        source="mcp",
        source_name=server,
        annotations=annotations,
        timeout=timeout,
    )


def checked_overrides(
    overrides: Mapping[str, ToolCapability | Mapping[str, Any]] | None,
) -> dict[str, ToolCapability | Mapping[str, Any]]:
    """The ``capabilities=`` option, each entry checked now rather than when its tool is listed.

    A tool may appear only after a changed list, and an override that fails
    then would cost the host every tool of the server at that refresh.

    Raises:
        TypeError: an entry is neither a `ToolCapability` nor a mapping.
        ValueError: a mapping names an unknown field or gives a wrong value.
    """
    checked: dict[str, ToolCapability | Mapping[str, Any]] = {}
    for name, override in (overrides or {}).items():
        if isinstance(override, ToolCapability):
            checked[name] = override
            continue
        if not isinstance(override, Mapping):
            raise TypeError(
                f"capabilities[{name!r}] must be a ToolCapability or a mapping of its "
                f"fields, got {type(override).__name__}"
            )
        try:
            ToolCapability.model_validate(dict(override))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in error.errors()
            )
            raise ValueError(f"capabilities[{name!r}] is not a capability: {problems}") from None
        checked[name] = dict(override)
    return checked


def listing(
    tools: list[mcp_types.Tool],
    *,
    server: str,
    prefix: str,
    timeout: float | None,
    overrides: Mapping[str, ToolCapability | Mapping[str, Any]],
) -> tuple[list[tuple[mcp_types.Tool, ToolDescriptor]], list[str]]:
    """Describe the tools of a listing that toolcycle can use, and say why others are not.

    A server's mistake in one tool must not cost the host all the others, so
    these are left out, each with its reason: a name no descriptor can hold
    (empty, longer than 256 characters, surrounding whitespace, control
    characters), and a name listed twice with two different definitions, as
    nobody can tell which one the server runs (identical copies are kept once).

    Returns:
        The usable tools with their descriptors, in the server's order, and one
        sentence per tool left out.
    """
    by_name: dict[str, list[mcp_types.Tool]] = {}
    for tool in tools:
        by_name.setdefault(tool.name, []).append(tool)
    kept: list[tuple[mcp_types.Tool, ToolDescriptor]] = []
    skipped: list[str] = []
    for name, copies in by_name.items():
        shown = name if len(name) <= 80 else name[:77] + "..."
        what = f"tool {shown!r} of MCP server {server!r} was skipped"
        tool = copies[0]
        if any(copy != tool for copy in copies[1:]):
            skipped.append(f"{what}: the server lists {len(copies)} different tools by that name")
            continue
        try:
            descriptor = descriptor_of(
                tool, server=server, prefix=prefix, timeout=timeout, override=overrides.get(name)
            )
        except ValidationError as error:
            problems = "; ".join(str(item["msg"]) for item in error.errors())
            skipped.append(f"{what}: {problems}")
            continue
        kept.append((tool, descriptor))
    return kept, skipped


def content_parts(blocks: list[mcp_types.ContentBlock]) -> tuple[ContentPart, ...]:
    """Content blocks as toolcycle's content parts, base64 data decoded once.

    A block is never dropped for a server's slip: data under a MIME type that
    is not its kind's (an image sent as ``text/plain``) becomes a `File`, a
    MIME type that is no MIME type at all gives way to the generic one, and
    what still cannot be read (data that is not base64, a link with no URI)
    becomes a `Text` saying what was wrong, so the model still learns of it.
    """
    return tuple(map(_part, blocks))


def _part(block: mcp_types.ContentBlock) -> ContentPart:
    # By exact type first: a pydantic model class answers isinstance slowly.
    if type(block) is mcp_types.TextContent or isinstance(block, mcp_types.TextContent):
        return Text(block.text)
    try:
        if isinstance(block, mcp_types.ResourceLink):
            return ResourceLink(block.uri, block.name, block.mime_type, block.description)
        if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            image = isinstance(block, mcp_types.ImageContent)
            mime = block.mime_type
            if mime.startswith("image/" if image else "audio/"):
                return (Image if image else Audio).from_base64(block.data, mime)
            return File.from_base64(block.data, _mime(mime, "application/octet-stream"))
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            mime = _mime(resource.mime_type, "text/plain")
            return File(resource.text.encode(), mime, uri=resource.uri)
        mime = _mime(resource.mime_type, "application/octet-stream")
        return File.from_base64(resource.blob, mime, uri=resource.uri)
    except ValueError as exc:
        return Text(f"[{block.type} content from the server could not be read: {exc}]")


def _mime(given: str | None, fallback: str) -> str:
    """``given`` if it looks like a MIME type (as `File` wants), else ``fallback``."""
    return given if given and "/" in given else fallback


def content_json(blocks: list[mcp_types.ContentBlock]) -> list[dict[str, Any]]:
    """Content blocks as MCP's own JSON form (base64 data with ``mimeType``, and so on)."""
    return [
        block.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})
        for block in blocks
    ]


def call_output(result: mcp_types.CallToolResult) -> Any:
    """The output of a call, as a `ToolReturn` whose content is the result's blocks as parts.

    Its value is ``structuredContent`` if present, else the content blocks as
    MCP JSON (as before content parts existed, so hosts reading ``output``
    see the same). A result with ``isError: true`` becomes a failed
    `ToolResult` whose error is the server's text.
    """
    if result.is_error:
        texts = [b.text for b in result.content if isinstance(b, mcp_types.TextContent)]
        message = "\n".join(texts) or _untold(result.structured_content)
        return ToolResult(
            success=False,
            output=content_json(result.content),
            error=message,
            error_type=McpToolError.__name__,
        )
    if result.structured_content is not None:
        value = result.structured_content
    else:
        value = content_json(result.content)
    return ToolReturn(value, tuple(map(_part, result.content)))  # content_parts, inlined


def _untold(structured: dict[str, Any] | None) -> str:
    """The error of an ``isError`` result with no text: its structured content, if any."""
    if not structured:
        return "the server reported an error and sent no text"
    told = json.dumps(structured, ensure_ascii=False, default=str)
    if len(told) > _MAX_ERROR_JSON:
        told = told[:_MAX_ERROR_JSON] + "..."
    return f"the server reported an error: {told}"


def map_error(exc: BaseException, *, server: str, fault: str | None) -> Exception | None:
    """Translate what the SDK raised during a request; None if it is not the SDK's.

    Args:
        exc: the exception.
        server: the server's name, for the message.
        fault: what the transport knows when it has lost the server (exit code,
            stderr tail), or None while the transport is healthy. It alone
            makes an `MCPError` a lost connection: the code cannot, as the
            SDK's "connection closed" (-32000) is also a code servers use.

    Returns:
        `McpServerError` when the connection is lost, `McpCallError` for a
        JSON-RPC error response, None for anything else.
    """
    closed = isinstance(
        exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream
    )
    if isinstance(exc, MCPError) and fault is not None:
        closed = True
    if closed:
        detail = f" ({fault})" if fault else ""
        return McpServerError(
            f"MCP server {server!r} closed the connection during the call{detail}", server=server
        )
    if isinstance(exc, MCPError):
        return McpCallError(
            f"MCP server {server!r} answered with error {exc.code}: {exc.message}",
            code=exc.code,
            data=exc.data,
        )
    return None
