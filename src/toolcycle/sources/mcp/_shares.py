"""A plan's share of a server's connections, and how a share's connection is closed.

A `Share` records the connection one plan (or the whole runtime) uses for one
server, and the opening under way; `Sharing` decides which share a plan uses.
Ending a share never waits on a caller's loop: a connection on the MCP loop is
closed there, while one that lives on a caller's loop (``same_loop``) is
handed back to be closed on that loop, at once when the plan ends on it, or as
soon as it next runs. If that loop has closed, so has the connection; if it
does not run the close in time, a stdio server's process is ended from the MCP
thread all the same (see ``_child``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from toolcycle.sources.mcp import _loop
from toolcycle.sources.mcp._connection import SHUTDOWN_DEADLINE

if TYPE_CHECKING:
    from toolcycle.sources.mcp._connection import Connection, Endpoint
    from toolcycle.sources.mcp._content import McpServerError

__all__ = ["ABANDON_AFTER", "Share", "close_elsewhere", "on_mcp_loop", "retire"]

ABANDON_AFTER = SHUTDOWN_DEADLINE + 2.0
"""Seconds a caller's loop has to close a connection handed to it before its
server process (stdio) is ended from the MCP thread instead."""


class Share:
    """The connection one plan (or the whole runtime) uses for one server."""

    __slots__ = ("connection", "endpoint", "home", "opening", "retired", "users")

    def __init__(self, home: asyncio.AbstractEventLoop | None, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        """Where its connections go, with the plan's own credentials (see `HttpEndpoint.bind`)."""
        self.connection: Connection | None = None
        self.opening: asyncio.Task[Connection] | None = None
        self.users = 0
        self.retired: dict[str, McpServerError] = {}
        """By plan id: a reconnection after a fault failed too, so that plan's calls
        fail at once. Per plan, so that a runtime-wide share lets later plans retry."""
        self.home = home
        """The caller's loop its connections live on (``same_loop``); None for the MCP loop."""


def close_elsewhere(connection: Connection | None) -> None:
    """Have a connection that lives on a caller's loop closed there, without waiting.

    Waiting could deadlock: that loop's thread may be the one waiting on us (a
    sync plan end inside a coroutine). If the loop has closed, so has the
    connection's task (and a stdio server's process is ended by ``_child``);
    if it does not run the close in time, a stdio server's process is ended
    from the MCP thread all the same.
    """
    if connection is None or on_mcp_loop(connection):
        return
    assert connection.loop is not None
    if _loop.start_on(connection.loop, connection.close()):
        connection.expire(ABANDON_AFTER)


async def retire(share: Share) -> Connection | None:
    """Close a share's connection, including one still opening; shielded from cancellation.

    A connection on a caller's loop is returned instead, for the caller to close
    there (see `McpTool.deactivate`) or to hand to `close_elsewhere`.
    """
    opening, share.opening = share.opening, None
    connection, share.connection = share.connection, None

    async def close() -> None:
        if opening is not None:
            # Nobody waits for it any more: interrupt the start rather than let
            # it run to its startup timeout (a cancelled open ends its process).
            opening.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                opened = await opening
                if on_mcp_loop(opened):
                    await opened.close()
                else:
                    close_elsewhere(opened)
        if connection is not None and on_mcp_loop(connection):
            await connection.close()

    await asyncio.shield(close())
    return None if connection is None or on_mcp_loop(connection) else connection


def on_mcp_loop(connection: Connection) -> bool:
    """Whether ``connection`` lives on the MCP loop (or has not opened yet)."""
    return connection.loop is None or connection.loop is _loop.event_loop()
