"""`McpServer`, a tool source, and `McpTool`, one of its tools.

A server's tools share connections: in each plan, the first activation of any
of its tools opens one connection and the last deactivation closes it; with
``scope="runtime"`` one connection serves every plan until ``close()``. The
bookkeeping (`_Share`) lives on the MCP loop and is changed by nothing else,
so it needs no locks: concurrent first activations find the opening in
progress and wait for it.

A connection lives on the MCP loop, except that of an in-process server in a
plan first activated by an async caller: it lives on that caller's loop, so
that calls from that loop cross no thread (``same_loop``, the default with
``scope="plan"``). Sync callers and other loops reach it by handing the call
to that loop, which must be running; a sync call on that loop's own thread
would wait on itself, so the runtime refuses it (see `McpTool.event_loop_for`).
Nothing ever waits on that loop to end a plan: its connection is closed there,
at once when the plan ends on it, or as soon as it next runs; if it has closed,
so has the connection, and the plan still ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
import weakref
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolcycle import ToolActivationError, ToolResult
from toolcycle.sources._warn import warn_at_caller
from toolcycle.sources.mcp import _loop
from toolcycle.sources.mcp._answering import Answerer
from toolcycle.sources.mcp._auth import HttpEndpoint
from toolcycle.sources.mcp._connection import Connection
from toolcycle.sources.mcp._content import McpServerError, call_output, descriptor_of
from toolcycle.sources.mcp._direct import InProcess, Mode
from toolcycle.sources.mcp._headers import header_tools
from toolcycle.sources.mcp._meta import call_meta
from toolcycle.sources.mcp._requests import McpRequests
from toolcycle.sources.mcp._stdio import StdioProcess, StdioSpec

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import httpx2
    from mcp.client._transport import TransportStreams
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    from toolcycle import ToolCapability, ToolDescriptor, ToolExecutionContext
    from toolcycle.sources.mcp._auth import CredentialsResolver
    from toolcycle.sources.mcp._connection import Endpoint
    from toolcycle.sources.mcp._meta import MetaResolver
    from toolcycle.sources.mcp._requests import (
        ElicitHandler,
        LogHandler,
        RootsSource,
        SampleHandler,
    )

__all__ = ["McpServer", "McpTool"]

_log = logging.getLogger("toolcycle.sources.mcp")

Scope = Literal["plan", "runtime"]
_RUNTIME_KEY = ""  # plan ids are never empty, so this key cannot collide


# -- endpoints: where a server is ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stdio:
    spec: StdioSpec
    name: str

    def streams(
        self, on_lost: Callable[[], None]
    ) -> tuple[AbstractAsyncContextManager[TransportStreams], StdioProcess | None]:
        process = StdioProcess(self.spec, self.name, on_lost)
        return process.connect(), process


# -- sharing connections among a server's tools -----------------------------------------------


class _Share:
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


class McpServer:
    """An MCP server as a tool source for `ToolRuntime.register_source`.

    Build it with `stdio`, `http` or `in_process`; registering it lists its
    tools (paging through ``tools/list``), and each becomes an `McpTool`.

    Args:
        endpoint: where the server is (use the constructors).
        name: the server's name in descriptors, errors and logs.
        prefix: put before every tool name, to keep two servers' tools apart.
        timeout: seconds one call may take (a smaller ``timeout=`` of
            ``execute`` wins); on expiry the request is cancelled on the server
            and the result's trace says ``timed_out``. None for no limit.
        startup_timeout: seconds for starting the server and the handshake,
            and for the whole discovery that ``register_source`` does.
        capabilities: per tool (by the server's name for it), a `ToolCapability`
            or a mapping of fields that replaces what the annotations give.
        scope: ``"plan"`` (one connection per plan, closed at plan end) or
            ``"runtime"`` (one connection for every plan, closed by ``close()``,
            which ``runtime.close()`` calls).
        defer_loading: keep every tool of the server out of a model's
            definitions until a tool search finds it (see docs/tool-search.md).
        meta: called with an `McpCallInfo` before each call; the mapping it
            returns goes into the request's ``_meta`` beside the caller's trace
            context (see ``_meta``).
        protocol: ``"legacy"`` (the initialize handshake) or ``"auto"`` (the
            2026-07-28 era when the server speaks it, else the handshake). None:
            ``"legacy"`` over stdio and HTTP; an in-process server in
            ``mode="auto"`` always speaks its own era, as with the SDK's ``Client``.
        requests: handlers for what servers ask during a call, shared by
            several servers (`McpRequests`); the next four win over it.
        on_elicit, on_sample, roots, on_log: see `McpRequests` and
            docs/sources/mcp.md.
    """

    skip_invalid_schemas = True
    """A tool with an unusable schema is skipped with a warning, the rest register."""

    def __init__(
        self,
        endpoint: Any,
        *,
        name: str,
        prefix: str = "",
        timeout: float | None = None,
        startup_timeout: float = 30.0,
        capabilities: Mapping[str, ToolCapability | Mapping[str, Any]] | None = None,
        scope: Scope = "plan",
        defer_loading: bool = False,
        meta: MetaResolver | None = None,
        protocol: Literal["legacy", "auto"] | None = None,
        requests: McpRequests | None = None,
        on_elicit: ElicitHandler | None = None,
        on_sample: SampleHandler | None = None,
        roots: RootsSource | None = None,
        on_log: LogHandler | None = None,
    ) -> None:
        if protocol not in (None, "legacy", "auto"):
            raise ValueError(f"protocol must be 'legacy' or 'auto', got {protocol!r}")
        handlers = (requests or McpRequests()).with_overrides(
            on_elicit=on_elicit, on_sample=on_sample, roots=roots, on_log=on_log
        )
        if getattr(endpoint, "direct", False):
            if protocol == "legacy":
                raise ValueError(
                    "protocol='legacy' needs the initialize handshake, which an in-process "
                    "server in mode='auto' does not do: pass mode='legacy' too, or drop protocol"
                )
            protocol = "auto"  # driven as the SDK's Client: the server's own era, always
        elif protocol is None:
            protocol = "legacy"  # stdio and HTTP: the handshake unless asked otherwise
        self._answerer = Answerer(name, handlers, protocol)
        self.protocol = protocol
        if scope not in ("plan", "runtime"):
            raise ValueError(f"scope must be 'plan' or 'runtime', got {scope!r}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
        if startup_timeout <= 0:
            raise ValueError(f"startup_timeout must be positive seconds, got {startup_timeout!r}")
        same_loop = getattr(endpoint, "same_loop", False)
        if same_loop and scope == "runtime":
            raise ValueError(
                "same_loop=True needs scope='plan': a runtime-scope connection outlives "
                "the loop of any one caller"
            )
        if same_loop is None:  # in process, by default: the caller's loop when it can
            same_loop = scope == "plan"
        self._endpoint = endpoint
        self.name = name
        self.prefix = prefix
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.capabilities = dict(capabilities or {})
        self.scope: Scope = scope
        self.defer_loading = defer_loading
        if meta is not None and not callable(meta):
            raise TypeError(f"meta must be a callable or None, got {meta!r}")
        self.meta = meta
        self._same_loop = same_loop
        # What rebuilds this server in a plan host (see __reduce__): its endpoint and options.
        self._token = uuid.uuid4().hex
        self._options: dict[str, Any] = {
            "name": name,
            "prefix": prefix,
            "timeout": timeout,
            "startup_timeout": startup_timeout,
            "capabilities": self.capabilities,
            "defer_loading": defer_loading,
            "meta": meta,
            "protocol": None if getattr(endpoint, "direct", False) else protocol,
            "requests": handlers,
        }
        self._shares: dict[str, _Share] = {}
        self._header_tools: frozenset[str] = frozenset()
        self._stale = False
        self._closed = False

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> McpServer:
        """A server started as a child process that speaks MCP on stdin and stdout.

        The process gets the SDK's minimal environment (``HOME``, ``LOGNAME``,
        ``PATH``, ``SHELL``, ``TERM``, ``USER``) with ``env`` over it, never the
        whole parent environment. ``options`` are those of `McpServer`; ``name``
        defaults to the command's file name.
        """
        options.setdefault("name", command.rsplit("/", 1)[-1])
        spec = StdioSpec(command, tuple(args), None if env is None else dict(env), cwd)
        return cls(_Stdio(spec, options["name"]), **options)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        auth: httpx2.Auth | None = None,
        credentials: CredentialsResolver | None = None,
        **options: Any,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url``.

        ``headers`` go with every request and ``auth`` (an ``httpx2.Auth``, such
        as the SDK's OAuth providers) signs them; both serve discovery too.
        ``credentials``, called with each plan's context when its connection
        opens, gives that plan's own `HttpCredentials` (or a mapping of
        headers): its headers go over ``headers`` and it replaces ``auth``
        (which then serves discovery only); it is asked once more when the
        server answers 401. It needs
        ``scope="plan"``, so that no two plans share a connection.

        Raises:
            ValueError: ``credentials`` with ``scope="runtime"``.
        """
        options.setdefault("name", url)
        if credentials is not None and options.get("scope", "plan") != "plan":
            raise ValueError(
                "credentials= gives each plan its own connection; it needs scope='plan'"
            )
        headers = None if headers is None else dict(headers)
        return cls(HttpEndpoint(url, options["name"], headers, auth, credentials), **options)

    @classmethod
    def in_process(
        cls,
        server: Server[Any] | MCPServer,
        *,
        same_loop: bool | None = None,
        mode: Mode | None = None,
        **options: Any,
    ) -> McpServer:
        """An SDK server object (``MCPServer`` or a low-level ``Server``) in this process.

        With ``mode="auto"`` (the default) it is driven as the SDK's own
        ``Client(server)`` drives it: through the direct dispatcher on the
        2026-07-28 protocol, the server's handler awaited in the calling task.
        ``mode="legacy"`` serves it over the in-memory JSON-RPC transport with
        the ``initialize`` handshake instead (see ``_direct``). Without ``mode``,
        ``protocol="legacy"`` (the handshake era) picks ``"legacy"``, anything
        else ``"auto"``.

        A plan's connection (and so the server's own code) lives on the event
        loop of the async caller whose activation opens it, so that calls from
        that loop cross no thread. Sync callers and callers on other loops hand
        their calls to that loop, which must be running then; a sync call made
        on that loop's own thread is refused (it would wait on itself). A plan
        activated from sync code uses toolcycle's MCP thread instead. That is
        ``same_loop=None`` (the default) with ``scope="plan"``; with
        ``scope="runtime"`` the one connection lives on the MCP thread, as it
        does with ``same_loop=False``. ``same_loop=True`` needs ``scope="plan"``.
        """
        options.setdefault("name", getattr(server, "name", None) or "in-process")
        if mode is None:
            mode = "legacy" if options.get("protocol") == "legacy" else "auto"
        if mode not in ("auto", "legacy"):
            raise ValueError(f"mode must be 'auto' or 'legacy', got {mode!r}")
        return cls(InProcess(server, same_loop, mode), **options)

    def __repr__(self) -> str:
        return f"McpServer(name={self.name!r}, scope={self.scope!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the server as what builds it, never its connections.

        A plan host's worker rebuilds it from its endpoint and options (which must
        pickle: a stdio command does; an in-process server object usually not),
        once per worker however many of its tools arrive, and opens its own
        connection there, per plan: in a host the tools connect as with
        ``scope="plan"``, so ending the plan ends the server process.
        """
        return (_arrived, (self._token, self._endpoint, self._options, self._header_tools))

    # -- the source protocol ------------------------------------------------------------------

    @property
    def stale(self) -> bool:
        """Whether the server announced a changed tool list since the last listing."""
        return self._stale

    def tools(self) -> list[McpTool]:
        """List the server's tools (every page) as `McpTool` objects.

        Raises:
            McpServerError: the server could not be started or listed within
                ``startup_timeout``.
        """
        self._check_open()
        return _loop.run(self._discover())

    async def _discover(self) -> list[McpTool]:
        # Cleared before listing, so a list_changed that arrives meanwhile is kept.
        self._stale = False
        try:
            async with asyncio.timeout(self.startup_timeout):
                listed = await self._list()
        except TimeoutError:
            self._stale = True  # not listed: the next plan asks again
            raise McpServerError(
                f"MCP server {self.name!r} did not list its tools within "
                f"{self.startup_timeout} seconds",
                server=self.name,
            ) from None
        except BaseException:
            self._stale = True
            raise
        if self.protocol == "auto" and isinstance(self._endpoint, HttpEndpoint):
            # Only streamable HTTP sends Mcp-Param-* headers (see _headers).
            self._header_tools = header_tools(listed)
        return [
            McpTool(
                self,
                descriptor_of(
                    item,
                    server=self.name,
                    prefix=self.prefix,
                    timeout=self.timeout,
                    override=self.capabilities.get(item.name),
                ),
                item.name,
            )
            for item in listed
        ]

    async def _list(self) -> list[Any]:
        live = next(
            (
                s.connection
                for s in self._shares.values()
                if s.home is None and _usable(s.connection)
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

    def _connection(self, endpoint: Endpoint) -> Connection:
        connection = Connection(
            endpoint, self.name, self._stale_marker(), self._answerer, self.protocol
        )
        connection.header_tools = self._header_tools
        return connection

    def _stale_marker(self) -> Callable[[], None]:
        # Weak, so that a live connection does not keep its server alive: an
        # unclosed server must be collectable for __del__ to warn and close.
        server = weakref.ref(self)

        def mark() -> None:
            alive = server()
            if alive is not None:
                alive._stale = True

        return mark

    def close(self) -> None:
        """Close every connection still open (the runtime-scope one, and any left). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if _loop.on_loop():
            _loop.submit(self._close_all())
        else:
            _loop.run(self._close_all())

    async def aclose(self) -> None:
        """Async twin of `close`."""
        self._closed = True
        await _loop.hop(self._close_all())

    async def _close_all(self) -> None:
        shares, self._shares = list(self._shares.values()), {}
        for connection in await asyncio.gather(*(_retire(share) for share in shares)):
            _close_elsewhere(connection)

    def __del__(self) -> None:
        if not getattr(self, "_closed", True) and any(
            _usable(s.connection) for s in getattr(self, "_shares", {}).values()
        ):
            warn_at_caller(
                ResourceWarning(
                    f"{self!r} was garbage-collected with open connections; closing them. "
                    "Call runtime.close() (or server.close()) when done."
                )
            )
            self._closed = True
            with contextlib.suppress(Exception):
                _loop.submit(self._close_all())

    # -- connections, on the MCP loop -----------------------------------------------------------

    def _key(self, ctx: ToolExecutionContext) -> str:
        return _RUNTIME_KEY if self.scope == "runtime" else ctx.plan_id

    def _caller_home(self) -> asyncio.AbstractEventLoop | None:
        """Where a connection opened by the running caller lives: its loop, or None (MCP's)."""
        if not self._same_loop:
            return None
        here = asyncio.get_running_loop()
        return None if here is _loop.event_loop() else here

    async def _acquire(
        self, ctx: ToolExecutionContext, home: asyncio.AbstractEventLoop | None
    ) -> None:
        self._check_open()
        key = self._key(ctx)
        share = self._shares.get(key)
        if share is None:
            endpoint = self._endpoint
            bind = getattr(endpoint, "bind", None)  # per-plan credentials
            share = self._shares[key] = _Share(home, endpoint if bind is None else bind(ctx))
        share.users += 1
        try:
            await self._connected(share, home, ctx.plan_id)
        except BaseException:
            _close_elsewhere(await asyncio.shield(self._release(ctx, ending=False)))
            raise

    async def _release(
        self, ctx: ToolExecutionContext, *, ending: bool = True
    ) -> Connection | None:
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
            return await _retire(share)
        return None

    async def _connected(
        self, share: _Share, caller: asyncio.AbstractEventLoop | None, plan_id: str
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
        share.connection = connection
        return connection

    async def _open(self, home: asyncio.AbstractEventLoop | None, endpoint: Endpoint) -> Connection:
        connection = self._connection(endpoint)
        # The caller that asked for it awaits this, so its loop is free to run the open.
        await _loop.hop(connection.open(self.startup_timeout), home)
        return connection

    def _here(self, ctx: ToolExecutionContext) -> Connection | None:
        """The plan's usable connection if it lives on the running loop (``same_loop`` only).

        Read from the caller's thread without the MCP loop: a dict lookup and
        attribute reads, each atomic, of values only the MCP loop changes.
        """
        if not self._same_loop:
            return None
        share = self._shares.get(self._key(ctx))
        if share is None or share.home is not asyncio.get_running_loop():
            return None
        connection = share.connection
        return connection if connection is not None and connection.usable else None

    async def _call(
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
        self._check_open()
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

    def _unreachable(self, plan_id: str) -> McpServerError:
        return McpServerError(
            f"MCP server {self.name!r} keeps the connection of plan {plan_id!r} on the "
            "event loop that opened it, which is not running now; call its tools from "
            "that loop with aexecute, or while it runs",
            server=self.name,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    def _closed_error(self) -> McpServerError:
        return McpServerError(f"MCP server {self.name!r} is closed", server=self.name)


# The servers rebuilt in this process from a pickle, by their token, so that the
# tools of one server that arrive apart (one pickle each) share it again.
_rebuilt: weakref.WeakValueDictionary[str, McpServer] = weakref.WeakValueDictionary()
_rebuilt_lock = threading.Lock()


def _arrived(
    token: str, endpoint: Any, options: dict[str, Any], header_tools: frozenset[str]
) -> McpServer:
    """The server a pickle names: the one already rebuilt here, or a new one."""
    with _rebuilt_lock:
        server = _rebuilt.get(token)
        if server is None:
            server = _rebuilt[token] = McpServer(endpoint, scope="plan", **options)
            server._header_tools = header_tools
            server._token = token
        return server


def _cancelling() -> bool:
    """Whether someone asked to cancel the running task."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _usable(connection: Connection | None) -> bool:
    return connection is not None and connection.usable


def _close_elsewhere(connection: Connection | None) -> None:
    """Have a connection that lives on a caller's loop closed there, without waiting.

    Waiting could deadlock: that loop's thread may be the one waiting on us (a
    sync plan end inside a coroutine). If the loop has closed, so has the
    connection's task.
    """
    if connection is None or _on_mcp_loop(connection):
        return
    assert connection.loop is not None
    _loop.start_on(connection.loop, connection.close())


async def _retire(share: _Share) -> Connection | None:
    """Close a share's connection, including one still opening; shielded from cancellation.

    A connection on a caller's loop is returned instead, for the caller to close
    there (see `McpTool.deactivate`) or to hand to `_close_elsewhere`.
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
                if _on_mcp_loop(opened):
                    await opened.close()
                else:
                    _close_elsewhere(opened)
        if connection is not None and _on_mcp_loop(connection):
            await connection.close()

    await asyncio.shield(close())
    return None if connection is None or _on_mcp_loop(connection) else connection


def _on_mcp_loop(connection: Connection) -> bool:
    return connection.loop is None or connection.loop is _loop.event_loop()


class McpTool:
    """One tool of an `McpServer`, a `ToolInstance` like any other.

    Every stage is a coroutine whose work runs on the loop its plan's connection
    lives on: the MCP loop (the tool's ``event_loop``), or the loop of the async
    caller that opened it (``same_loop``, see `event_loop_for`). ``aexecute``
    on that loop awaits the call with no hop at all; from anywhere else it is
    handed to that loop, and the runtime's sync ``execute`` runs it there
    directly.
    """

    def __init__(self, server: McpServer, descriptor: ToolDescriptor, remote_name: str) -> None:
        self.server = server
        self.remote_name = remote_name
        self._descriptor = descriptor
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
        server = self.server
        if not server._same_loop:
            return None
        share = server._shares.get(server._key(ctx))
        home = None if share is None else share.home
        return home if home is not None and home.is_running() else None

    async def activate(self, ctx: ToolExecutionContext) -> None:
        """Join the plan's connection to the server, opening it if this is the first tool.

        Raises:
            ToolActivationError: the server could not be started or reached; its
                `McpServerError` is the cause.
        """
        server = self.server
        try:
            await _loop.hop(server._acquire(ctx, server._caller_home()))
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
        # Here, in the caller's task, where its current span and context are.
        meta = call_meta(server.meta, server.name, self.remote_name, ctx)

        async def send(answers: dict[str, Any] | None, state: str | None) -> Any:
            connection = server._here(ctx)
            if connection is not None:  # same_loop, and this is its loop: no thread to cross
                return await connection.call(self.remote_name, params, report, meta, answers, state)
            home = server._caller_home()
            return await _loop.hop(
                server._call(ctx, self.remote_name, params, report, home, meta, answers, state)
            )

        name = self._descriptor.name
        result = await server._answerer.run(name, self.remote_name, params, ctx, send)
        return result if isinstance(result, ToolResult) else call_output(result)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Leave the plan's connection; the last tool to leave closes it."""
        await asyncio.shield(self._leave(ctx))

    async def _leave(self, ctx: ToolExecutionContext) -> None:
        connection = await _loop.hop(self.server._release(ctx))
        if connection is None:
            return
        if connection.loop is asyncio.get_running_loop():
            await connection.close()
        else:
            _close_elsewhere(connection)
