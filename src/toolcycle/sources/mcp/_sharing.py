"""Which connection each plan uses for one server, on which loop, and closing them.

A server's tools share connections: in each plan, the first activation of any
of its tools opens one connection and the last deactivation closes it; with
``scope="runtime"`` one connection serves every plan until the server closes.
The bookkeeping (`Sharing`, one per server, and a `Share` per plan) lives on
the MCP loop and is changed by nothing else, so it needs no locks: concurrent
first activations find the opening in progress and wait for it.

A connection lives on the MCP loop, except that of an in-process or stdio
server in a plan first activated by an async caller: it lives on that caller's
loop, so that calls from that loop cross no thread (``same_loop``, the default
with ``scope="plan"``; a stdio server's process is still started from the MCP
thread, see ``_child``). Sync callers and other loops reach it by handing the call
to that loop, which must be running; a sync call on that loop's own thread
would wait on itself, so the runtime refuses it (see `McpTool.event_loop_for`).
Nothing ever waits on that loop to end a plan: its connection is closed there,
at once when the plan ends on it, or as soon as it next runs; if it has closed,
so has the connection, and the plan still ends (a stdio server's process that
outlived its loop is ended from the MCP thread, see ``_child``). Closing a
plan's connection, wherever it lives, is in ``_shares``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from toolcycle.sources.mcp import _loop
from toolcycle.sources.mcp._connection import Connection
from toolcycle.sources.mcp._content import McpServerError
from toolcycle.sources.mcp._shares import Share, close_elsewhere, retire

if TYPE_CHECKING:
    from collections.abc import Callable

    import mcp_types

    from toolcycle import ToolExecutionContext
    from toolcycle.sources.mcp._answering import Answerer
    from toolcycle.sources.mcp._connection import Endpoint

__all__ = ["Scope", "Sharing"]

Scope = Literal["plan", "runtime"]
_RUNTIME_KEY = ""  # plan ids are never empty, so this key cannot collide


class Sharing:
    """One server's connections: which one a plan uses, opening, calling and closing them.

    The server owns one and its tools reach their plan's connection through it.
    Every method that changes it runs on the MCP loop; `here`, `running_home`
    and `caller_home` are read from any thread.

    Args:
        name: the server's name, for errors.
        endpoint: where the server is; bound per plan when it has ``bind``.
        scope: ``"plan"`` (a connection per plan) or ``"runtime"`` (one for all).
        same_loop: whether a connection lives on the loop of the async caller
            that opens it rather than on the MCP loop.
        startup_timeout: seconds for starting the server and the handshake.
        answerer: answers what the server asks during calls.
        protocol: ``"legacy"`` or ``"auto"``, for every connection.
        on_list_changed: called when the server announces a changed tool list.
    """

    def __init__(
        self,
        name: str,
        endpoint: Endpoint,
        *,
        scope: Scope,
        same_loop: bool,
        startup_timeout: float,
        answerer: Answerer,
        protocol: str,
        on_list_changed: Callable[[], None],
    ) -> None:
        self.name = name
        self.header_tools: frozenset[str] = frozenset()
        """Tools with ``x-mcp-header`` arguments, told to every new connection (see ``_headers``)."""
        self._endpoint = endpoint
        self._scope = scope
        self._same_loop = same_loop
        self._startup_timeout = startup_timeout
        self._answerer = answerer
        self._protocol = protocol
        self._on_list_changed = on_list_changed
        self._shares: dict[str, Share] = {}
        self._closed = False

    # -- the server's lifecycle -----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `shut` was called: no connection opens and no call goes out any more."""
        return self._closed

    def shut(self) -> bool:
        """Refuse new connections and calls from now on; False if that was already so."""
        if self._closed:
            return False
        self._closed = True
        return True

    def check_open(self) -> None:
        """Raise unless the server is still open.

        Raises:
            McpServerError: `shut` was called.
        """
        if self._closed:
            raise self._closed_error()

    def in_use(self) -> bool:
        """Whether any plan (or the runtime) holds a usable connection."""
        return any(_usable(share.connection) for share in self._shares.values())

    async def close_all(self) -> None:
        """Close every connection still open, those on callers' loops there, without waiting."""
        shares, self._shares = list(self._shares.values()), {}
        for connection in await asyncio.gather(*(retire(share) for share in shares)):
            close_elsewhere(connection)

    async def list_tools(self) -> list[mcp_types.Tool]:
        """The server's tools, through a live unbound connection on the MCP loop or a fresh one.

        A connection bound to a plan's credentials is not used: discovery is
        served by the fixed ``headers``/``auth`` alone, never by a user's token.

        Raises:
            McpServerError: the server could not be started or listed.
        """
        live = next(
            (
                share.connection
                for share in self._shares.values()
                if share.home is None
                and share.endpoint is self._endpoint
                and _usable(share.connection)
            ),
            None,
        )
        if live is not None:
            return await live.list_tools()
        connection = self._connection(self._endpoint)
        try:
            await connection.open(None)
            return await connection.list_tools()
        finally:
            await asyncio.shield(connection.close())

    # -- where a plan's connection lives, read from any thread ----------------------------------

    def caller_home(self) -> asyncio.AbstractEventLoop | None:
        """Where a connection opened by the running caller lives: its loop, or None (MCP's)."""
        if not self._same_loop:
            return None
        here = asyncio.get_running_loop()
        return None if here is _loop.event_loop() else here

    def running_home(self, ctx: ToolExecutionContext) -> asyncio.AbstractEventLoop | None:
        """The running caller's loop the plan's connection lives on, or None for the MCP loop.

        Read without the MCP loop: a dict lookup and attribute reads, each atomic.
        """
        if not self._same_loop:
            return None
        share = self._shares.get(self._key(ctx))
        home = None if share is None else share.home
        return home if home is not None and home.is_running() else None

    def here(self, ctx: ToolExecutionContext) -> Connection | None:
        """The plan's usable connection if it lives on the running loop (``same_loop`` only).

        Read from the caller's thread without the MCP loop: a dict lookup and
        attribute reads, each atomic, of values only the MCP loop changes.
        """
        if not self._same_loop:
            return None
        share = self._shares.get(_RUNTIME_KEY if self._scope == "runtime" else ctx.plan_id)
        here = asyncio.get_running_loop()
        if share is None or share.home is not here:
            return None
        connection = share.connection
        # On the running loop, which is not closed: usable unless broken.
        if connection is None or connection.loop is not here or connection.broken:
            return None
        return connection

    # -- joining, calling and leaving, on the MCP loop ------------------------------------------

    async def acquire(
        self, ctx: ToolExecutionContext, home: asyncio.AbstractEventLoop | None
    ) -> None:
        """Join the plan's share, opening its connection if it has none.

        Raises:
            McpServerError: the server is closed, or the connection did not open.
        """
        self.check_open()
        key = self._key(ctx)
        share = self._shares.get(key)
        if share is None:
            endpoint = self._endpoint
            bind = getattr(endpoint, "bind", None)  # per-plan credentials
            share = self._shares[key] = Share(home, endpoint if bind is None else bind(ctx))
        share.users += 1
        try:
            await self._connected(share, home, ctx.plan_id)
        except BaseException:
            close_elsewhere(await asyncio.shield(self.release(ctx, ending=False)))
            raise

    async def release(self, ctx: ToolExecutionContext, *, ending: bool = True) -> Connection | None:
        """Leave the plan's share; the last to leave closes its connection.

        A connection on a caller's loop is not closed here, where waiting for
        that loop could deadlock: it is returned for the caller to close.
        ``ending`` is False for an activation that failed, after which the plan
        goes on and keeps what it learned of the server.
        """
        key = self._key(ctx)
        share = self._shares.get(key)
        if share is None:
            return None
        if ending:
            share.retired.pop(ctx.plan_id, None)
        share.users -= 1
        if share.users <= 0 and key != _RUNTIME_KEY:
            del self._shares[key]
            return await retire(share)
        return None

    async def call(
        self,
        ctx: ToolExecutionContext,
        remote: str,
        arguments: dict[str, Any],
        report: Callable[[float, float | None, str | None], None],
        caller: asyncio.AbstractEventLoop | None,
        meta: dict[str, Any] | None = None,
        *answers: Any,
    ) -> Any:
        """Send one call from the MCP loop; ``caller`` is the loop of a same_loop caller.

        A connection on another loop gets the call handed to it (a thread-safe hop).

        Raises:
            McpServerError: the tool was not activated in the plan, its connection
                lives on a loop that is not running, or the connection is lost.
        """
        self.check_open()
        share = self._shares.get(self._key(ctx))
        if share is None:
            raise McpServerError(
                f"MCP server {self.name!r} has no connection for plan {ctx.plan_id!r}; "
                "its tool was not activated in this plan",
                server=self.name,
            )
        reconnect = share.connection is not None and not share.connection.usable
        try:
            connection = await self._connected(share, caller, ctx.plan_id)
        except McpServerError as error:
            if reconnect:
                # One fresh connection per fault; this one failed too, so the
                # plan's later calls fail at once with the same error.
                share.retired[ctx.plan_id] = error
            raise
        home = connection.loop
        if home is not None and home is not caller and not home.is_running():
            raise self._unreachable(ctx.plan_id)  # nobody would run the call
        call = connection.call(remote, arguments, report, meta, *answers)
        return await _loop.hop(call, home)

    async def _connected(
        self, share: Share, caller: asyncio.AbstractEventLoop | None, plan_id: str
    ) -> Connection:
        """The share's usable connection, opening one (once) if it has none.

        A ``same_loop`` share opens its connection on its home loop, which a
        caller elsewhere waits for. Its connection is gone with that loop once
        it closes; a new one opens on the caller's loop.

        Raises:
            McpServerError: the opening failed, or a caller elsewhere needs a
                ``same_loop`` share's connection opened on a loop that is not running.
        """
        retired = share.retired.get(plan_id)
        if retired is not None:
            raise retired
        if _usable(share.connection):
            return share.connection  # type: ignore[return-value]
        home = share.home
        if home is not None and home is not caller:
            if home.is_closed():  # gone with its connection: open on the caller's loop
                if share.opening is None:
                    share.home = caller
            elif not home.is_running():
                # The opening would wait for a loop nobody runs.
                raise self._unreachable(plan_id)
        if share.opening is None:
            share.opening = asyncio.get_running_loop().create_task(
                self._open(share.home, share.endpoint)
            )
        opening = share.opening
        try:
            connection = await asyncio.shield(opening)
        except asyncio.CancelledError:
            if opening.cancelled() and not _cancelling():
                # Not our cancellation: close() interrupted the start.
                raise self._closed_error() from None
            raise
        finally:
            if opening.done() and share.opening is opening:
                share.opening = None
                if not opening.cancelled() and opening.exception() is None:
                    # Kept even when this caller was cancelled as it opened: the
                    # share's release closes it then, rather than nobody.
                    share.connection = opening.result()
        share.connection = connection
        return connection

    async def _open(self, home: asyncio.AbstractEventLoop | None, endpoint: Endpoint) -> Connection:
        connection = self._connection(endpoint)
        # The caller that asked for it awaits this, so its loop is free to run the open.
        try:
            await _loop.hop(connection.open(self._startup_timeout), home)
        except asyncio.CancelledError:
            if home is not None:
                # The open may have finished on its loop as this was cancelled, and
                # nobody else holds the connection: close it there (a no-op if not open).
                _loop.start_on(home, connection.close())
            raise
        return connection

    def _connection(self, endpoint: Endpoint) -> Connection:
        connection = Connection(
            endpoint, self.name, self._on_list_changed, self._answerer, self._protocol
        )
        connection.header_tools = self.header_tools
        return connection

    def _key(self, ctx: ToolExecutionContext) -> str:
        return _RUNTIME_KEY if self._scope == "runtime" else ctx.plan_id

    def _unreachable(self, plan_id: str) -> McpServerError:
        return McpServerError(
            f"MCP server {self.name!r} keeps the connection of plan {plan_id!r} on the "
            "event loop that opened it, which is not running now; call its tools from "
            "that loop with aexecute, or while it runs",
            server=self.name,
        )

    def _closed_error(self) -> McpServerError:
        return McpServerError(f"MCP server {self.name!r} is closed", server=self.name)


def _cancelling() -> bool:
    """Whether someone asked to cancel the running task."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _usable(connection: Connection | None) -> bool:
    return connection is not None and connection.usable
