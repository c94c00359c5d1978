"""`McpTool`, one tool of an MCP server, and what it uses of that server.

A tool never opens, lists or closes anything itself: it joins, calls through
and leaves its plan's connection by way of its server's `Sharing`, and lets the
server's `Answerer` handle what the server asks during a call. It names its
server only through `ToolServer`, so that the server (which builds its tools)
and the tool do not import each other.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

import mcp_types

from toolcycle import ToolActivationError, ToolResult, current_resumption
from toolcycle.sources.mcp import _loop
from toolcycle.sources.mcp._content import McpServerError, call_output
from toolcycle.sources.mcp._meta import call_meta
from toolcycle.sources.mcp._shares import close_elsewhere

if TYPE_CHECKING:
    from toolcycle import ToolDescriptor, ToolExecutionContext
    from toolcycle.sources.mcp._answering import Answerer
    from toolcycle.sources.mcp._meta import MetaResolver
    from toolcycle.sources.mcp._sharing import Sharing

__all__ = ["McpTool", "ToolServer"]


class ToolServer(Protocol):
    """What an `McpTool` uses of its server (an `McpServer` is one).

    The underscored members are this package's own, not public API.
    """

    @property
    def name(self) -> str:
        """The server's name, in errors and call metadata."""
        ...

    @property
    def meta(self) -> MetaResolver | None:
        """What adds to each call's ``_meta`` (see ``_meta``)."""
        ...

    @property
    def _sharing(self) -> Sharing:
        """The server's connections, per plan."""
        ...

    @property
    def _answerer(self) -> Answerer:
        """What answers the server's requests during a call."""
        ...


class McpTool:
    """One tool of an `McpServer`, a `ToolInstance` like any other.

    Every stage is a coroutine whose work runs on the loop its plan's connection
    lives on: the MCP loop (the tool's ``event_loop``), or the loop of the async
    caller that opened it (``same_loop``, see `event_loop_for`). ``aexecute``
    on that loop awaits the call with no hop at all; from anywhere else it is
    handed to that loop, and the runtime's sync ``execute`` runs it there
    directly.
    """

    def __init__(self, server: ToolServer, descriptor: ToolDescriptor, remote_name: str) -> None:
        self.server = server
        self.remote_name = remote_name
        self._descriptor = descriptor
        self._sharing = server._sharing
        self.event_loop = _loop.event_loop()

    def __repr__(self) -> str:
        return f"McpTool({self._descriptor.name!r}, server={self.server.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the tool as its server's recipe and its listing (the loop stays here)."""
        return (McpTool, (self.server, self._descriptor, self.remote_name))

    def discover(self) -> ToolDescriptor:
        """The descriptor built from the server's listing."""
        return self._descriptor

    def event_loop_for(self, ctx: ToolExecutionContext) -> asyncio.AbstractEventLoop | None:
        """The running caller's loop the plan's connection lives on, or None for ``event_loop``.

        The runtime asks from a sync caller's thread, before it hands the call
        over; from that loop's own thread it then refuses the call, which would
        wait on itself. A plan end never asks (see `deactivate`). Read without
        the MCP loop: a dict lookup and attribute reads, each atomic.
        """
        return self._sharing.running_home(ctx)

    async def activate(self, ctx: ToolExecutionContext) -> None:
        """Join the plan's connection to the server, opening it if this is the first tool.

        Raises:
            ToolActivationError: the server could not be started or reached; its
                `McpServerError` is the cause.
        """
        sharing = self._sharing
        try:
            # A caller cancelled as the plan's share was joined leaves it again.
            await _loop.hop(
                sharing.acquire(ctx, sharing.caller_home()), undo=lambda _: self._leave(ctx)
            )
        except McpServerError as error:
            raise ToolActivationError(
                f"activating tool {self._descriptor.name!r} failed: {error}",
                tool_name=self._descriptor.name,
                plan_id=ctx.plan_id,
            ) from error

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Send ``tools/call``; its content blocks as parts of a `ToolReturn` (see `call_output`)."""
        report = ctx.progress_reporter()
        server = self.server
        sharing = self._sharing
        # Here, in the caller's task, where its current span and context are.
        meta = call_meta(server.meta, server.name, self.remote_name, ctx)

        async def send(answers: dict[str, Any] | None, state: str | None) -> Any:
            connection = sharing.here(ctx)
            if connection is not None:  # same_loop, and this is its loop: no thread to cross
                return await connection.call(self.remote_name, params, report, meta, answers, state)
            home = sharing.caller_home()
            return await _loop.hop(
                sharing.call(ctx, self.remote_name, params, report, home, meta, answers, state)
            )

        name = self._descriptor.name
        answerer = server._answerer
        first = None
        if not answerer.watching and current_resumption() is None:
            # Nothing to answer for yet: the commonest call on its own loop skips
            # the answerer, which gets the answer only if it asks for input.
            connection = sharing.here(ctx)
            if connection is not None:
                first = await connection.call(self.remote_name, params, report, meta)
                if type(first) is mcp_types.CallToolResult:
                    return call_output(first)
        result = await answerer.run(name, self.remote_name, params, ctx, send, first)
        if type(result) is mcp_types.CallToolResult:  # the commonest, told apart at once
            return call_output(result)
        return result if isinstance(result, ToolResult) else call_output(result)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Leave the plan's connection; the last tool to leave closes it."""
        await asyncio.shield(self._leave(ctx))

    async def _leave(self, ctx: ToolExecutionContext) -> None:
        connection = await _loop.hop(self._sharing.release(ctx))
        if connection is None:
            return
        if connection.loop is asyncio.get_running_loop():
            await connection.close()
        else:
            close_elsewhere(connection)
