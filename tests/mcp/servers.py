"""MCP servers for the tests, written with the SDK's low-level server API.

`build()` returns a server to embed in process; run this file to serve the
same tools over stdio:

    python tests/mcp/servers.py [--page-size N] [--garbage] [--fail-at-start] [--loud]
                                [--hang-at-start] [--fail-if-exists PATH]
                                [--hang-if-exists PATH] [--name NAME]

The low-level API is used rather than ``MCPServer`` because the tests need what
a decorator hides: pages of a tool list, schemas that are invalid on purpose,
and the raw ``isError`` and content blocks.
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-an-image").decode()
WAV = base64.b64encode(b"RIFF-not-really-audio").decode()

_OBJECT = {"type": "object"}


def _tool(name: str, schema: dict[str, Any], **extra: Any) -> types.Tool:
    return types.Tool(name=name, description=f"the {name} test tool", input_schema=schema, **extra)


def _read_only() -> types.ToolAnnotations:
    return types.ToolAnnotations(read_only_hint=True)


BASE_TOOLS = [
    _tool(
        "echo",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        output_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}, "length": {"type": "integer"}},
            "required": ["text", "length"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
    _tool(
        "add",
        {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        annotations=_read_only(),
    ),
    _tool(
        "fail",
        _OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    _tool("rpc_error", _OBJECT, annotations=_read_only()),
    _tool(
        "progress",
        {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 0},
                "delay": {"type": "number", "minimum": 0},
            },
        },
        annotations=_read_only(),
    ),
    _tool(
        "slow",
        {
            "type": "object",
            "properties": {"seconds": {"type": "number"}, "marker": {"type": "string"}},
        },
        annotations=_read_only(),
    ),
    _tool("crash", _OBJECT),
    _tool(
        "big",
        {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        annotations=_read_only(),
    ),
    _tool("content", _OBJECT, annotations=_read_only()),
    _tool("environment", _OBJECT, annotations=_read_only()),
    _tool("spawn", _OBJECT),
    _tool("write", {"type": "object", "properties": {"path": {"type": "string"}}}),
    _tool(
        "erase",
        _OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    ),
    _tool(
        "invalid_schema",
        {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
        annotations=_read_only(),
    ),
    _tool(
        "draft7",
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"n": {"type": "integer"}},
            "properties": {"n": {"$ref": "#/definitions/n"}},
            "required": ["n"],
        },
        annotations=_read_only(),
    ),
    _tool(
        "unknown_dialect",
        {"$schema": "https://example.com/no-such-dialect", "type": "object"},
        annotations=_read_only(),
    ),
    _tool("add_tool", _OBJECT),
]

EXTRA_TOOL = _tool("extra", _OBJECT, annotations=_read_only())


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def build(
    *,
    page_size: int | None = None,
    name: str = "testserver",
    stdio: bool = False,
    sessions: dict[str, int] | None = None,
) -> Server:
    """A server with every tool the tests need.

    Args:
        page_size: list the tools in pages of this many.
        name: the server's name.
        stdio: enable the tool that ends the process.
        sessions: counts ``opened`` and ``closed`` connections (in process, each
            connection runs the server once).
    """
    tools = list(BASE_TOOLS)

    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(_: Server) -> AsyncIterator[dict[str, Any]]:
        if sessions is not None:
            sessions["opened"] = sessions.get("opened", 0) + 1
        try:
            yield {}
        finally:
            if sessions is not None:
                sessions["closed"] = sessions.get("closed", 0) + 1

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = len(tools) if page_size is None else start + page_size
        more = end < len(tools)
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        match params.name:
            case "echo":
                text = args["text"]
                return types.CallToolResult(
                    content=_text(text), structured_content={"text": text, "length": len(text)}
                )
            case "add":
                total = args["a"] + args["b"]
                return types.CallToolResult(
                    content=_text(str(total)), structured_content={"sum": total}
                )
            case "fail":
                return types.CallToolResult(content=_text("it broke on purpose"), is_error=True)
            case "rpc_error":
                # -32000, the first server-defined code, is also the SDK's "connection closed".
                code = int(args.get("code", -32099))
                raise MCPError(code, "a custom JSON-RPC failure", {"hint": "none"})
            case "progress":
                steps = int(args.get("steps", 3))
                for step in range(1, steps + 1):
                    await anyio.sleep(float(args.get("delay", 0)))
                    await ctx.session.report_progress(step, steps, f"step {step}")
                return types.CallToolResult(
                    content=_text("done"), structured_content={"steps": steps}
                )
            case "slow":
                marker = args.get("marker")
                await ctx.session.report_progress(0, None, "started")
                try:
                    await anyio.sleep(float(args.get("seconds", 60)))
                except anyio.get_cancelled_exc_class():
                    if marker:
                        Path(marker).write_text("cancelled")
                    raise
                return types.CallToolResult(content=_text("slept"))
            case "crash":
                if not stdio:
                    return types.CallToolResult(content=_text("only over stdio"), is_error=True)
                print("crash: about to exit with code 3", file=sys.stderr, flush=True)
                os._exit(3)
            case "big":
                return types.CallToolResult(content=_text("x" * int(args["size"])))
            case "content":
                return types.CallToolResult(
                    content=[
                        types.TextContent(type="text", text="hello"),
                        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                        types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
                        types.ResourceLink(
                            type="resource_link",
                            uri="file:///tmp/a.txt",
                            name="a.txt",
                            mime_type="text/plain",
                        ),
                        types.EmbeddedResource(
                            type="resource",
                            resource=types.TextResourceContents(
                                uri="mem://note", mime_type="text/plain", text="a note"
                            ),
                        ),
                        types.EmbeddedResource(
                            type="resource",
                            resource=types.BlobResourceContents(
                                uri="mem://blob", mime_type="application/octet-stream", blob=PNG
                            ),
                        ),
                    ]
                )
            case "environment":
                return types.CallToolResult(
                    content=_text("env"), structured_content=dict(os.environ)
                )
            case "spawn":
                child = subprocess.Popen(  # noqa: ASYNC220 - a test server, started once
                    [sys.executable, "-c", "import time; time.sleep(120)"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                return types.CallToolResult(
                    content=_text(str(child.pid)),
                    structured_content={"pid": child.pid, "server": os.getpid()},
                )
            case "write" | "erase" | "draft7" | "extra":
                return types.CallToolResult(
                    content=_text(f"{params.name} ran"), structured_content=args
                )
            case "add_tool":
                if EXTRA_TOOL not in tools:
                    tools.append(EXTRA_TOOL)
                # A handshake-era client hears the notification; a 2026-07-28 one
                # hears the event on its subscriptions/listen stream.
                await ctx.session.send_tool_list_changed()
                await bus.publish(ToolsListChanged())
                return types.CallToolResult(content=_text("added"))
        raise MCPError(-32602, f"unknown tool {params.name!r}")

    server = Server(
        name,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )
    return server


async def _serve_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--name", default="testserver")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--fail-at-start", action="store_true")
    parser.add_argument("--hang-at-start", action="store_true")
    parser.add_argument(
        "--fail-if-exists", help="exit with code 2 if this file exists, else create it"
    )
    parser.add_argument("--hang-if-exists", help="never answer if this file exists")
    parser.add_argument(
        "--loud", action="store_true", help="write a 200 KB line, then 300 KB of lines, to stderr"
    )
    options = parser.parse_args()
    print(f"{options.name}: starting, pid {os.getpid()}", file=sys.stderr, flush=True)
    if options.fail_at_start:
        print("fatal: the configuration file is missing", file=sys.stderr, flush=True)
        sys.exit(2)
    if options.fail_if_exists:
        flag = Path(options.fail_if_exists)
        if flag.exists():
            print("fatal: started a second time", file=sys.stderr, flush=True)
            sys.exit(2)
        flag.write_text("started")
    if options.hang_at_start or (options.hang_if_exists and Path(options.hang_if_exists).exists()):
        time.sleep(600)
    if options.loud:  # more than a pipe holds: blocks unless the client keeps reading
        sys.stderr.write("#" * 200_000 + "\n")
        for n in range(3_000):
            sys.stderr.write(f"log line {n:04d} " + "." * 90 + "\n")
        sys.stderr.write("loud: done\n")
        sys.stderr.flush()
    if options.garbage:
        sys.stdout.write("Welcome to the server! This line is not JSON.\n")
        sys.stdout.flush()
    anyio.run(_serve_stdio, build(page_size=options.page_size, name=options.name, stdio=True))


if __name__ == "__main__":
    main()
