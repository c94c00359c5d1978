"""`McpServer`, an MCP server as a tool source: building, discovery, pickling, closing.

The constructors pick the endpoint (stdio, HTTP, in process) and have the
options checked (``_options``); `tools` lists the server's tools as `McpTool`
objects (``_tool``). Which connection each plan uses, on which loop, and
closing them all, is the job of the server's `Sharing` (``_sharing``); the
server only starts it and ends it. A server pickles as what builds it, and is rebuilt once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
import weakref
from typing import TYPE_CHECKING, Any, Literal

from toolcycle import ToolSkippedWarning
from toolcycle.sources._warn import warn_at_caller
from toolcycle.sources.mcp import _loop
from toolcycle.sources.mcp._answering import Answerer
from toolcycle.sources.mcp._auth import HttpEndpoint
from toolcycle.sources.mcp._content import McpServerError, listing
from toolcycle.sources.mcp._direct import InProcess, Mode
from toolcycle.sources.mcp._headers import header_tools
from toolcycle.sources.mcp._options import checked_options
from toolcycle.sources.mcp._sharing import Scope, Sharing
from toolcycle.sources.mcp._stdio import StdioEndpoint, StdioSpec
from toolcycle.sources.mcp._tool import McpTool
from toolcycle.tracing import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import httpx2
    import mcp_types
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    from toolcycle import ToolCapability
    from toolcycle.sources.mcp._auth import CredentialsResolver
    from toolcycle.sources.mcp._meta import MetaResolver
    from toolcycle.sources.mcp._requests import (
        ElicitHandler,
        LogHandler,
        McpRequests,
        RootsSource,
        SampleHandler,
    )

__all__ = ["McpServer"]

_log = get_logger("toolcycle.sources.mcp")


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
        on_elicit: answers elicitations (see `McpRequests` and docs/sources/mcp.md).
        on_sample: runs the host's model for sampling requests.
        roots: the roots to list to the server.
        on_log: sees every log message the server sends.
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
        options = checked_options(
            endpoint,
            protocol=protocol,
            scope=scope,
            timeout=timeout,
            startup_timeout=startup_timeout,
            capabilities=capabilities,
            meta=meta,
            requests=requests,
            on_elicit=on_elicit,
            on_sample=on_sample,
            roots=roots,
            on_log=on_log,
        )
        protocol = options.protocol
        self._answerer = Answerer(name, options.handlers, protocol)
        self.protocol = protocol
        self._endpoint = endpoint
        self.name = name
        self.prefix = prefix
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.capabilities = options.capabilities
        self.scope: Scope = scope
        self.defer_loading = defer_loading
        self.meta = meta
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
            "requests": options.handlers,
        }
        self._stale = False
        self._listed = False  # whether a listing has finished (see tools)
        self._sharing = Sharing(
            name,
            endpoint,
            scope=scope,
            same_loop=options.same_loop,
            startup_timeout=startup_timeout,
            answerer=self._answerer,
            protocol=protocol,
            on_list_changed=self._stale_marker(),
        )

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        *,
        same_loop: bool | None = None,
        **options: Any,
    ) -> McpServer:
        """A server started as a child process that speaks MCP on stdin and stdout.

        The process gets the SDK's minimal environment (``HOME``, ``LOGNAME``,
        ``PATH``, ``SHELL``, ``TERM``, ``USER``) with ``env`` over it, never the
        whole parent environment. ``options`` are those of `McpServer`; ``name``
        defaults to the command's file name.

        ``same_loop`` works as for `in_process`: by default (with
        ``scope="plan"``) a plan's connection, so the reading and writing of the
        process's pipes, lives on the event loop of the async caller whose
        activation opens it, so that calls from that loop cross no thread;
        ``same_loop=False`` keeps it on toolcycle's MCP thread. Either way the
        process is started from the MCP thread, so a caller's thread that ends
        does not end it, and it is stopped when the plan ends, or as soon as
        the caller's loop closes under it.

        Raises:
            TypeError: ``args`` is one string rather than a list of arguments.
        """
        if isinstance(args, str):
            # A string is a sequence too: each of its characters would be an argument.
            raise TypeError(
                f"args must be a list of arguments, not one string; pass [{args!r}], "
                "or shlex.split(...) of a command line"
            )
        options.setdefault("name", command.rsplit("/", 1)[-1])
        spec = StdioSpec(command, tuple(args), None if env is None else dict(env), cwd)
        return cls(StdioEndpoint(spec, options["name"], same_loop), **options)

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
        return (_arrived, (self._token, self._endpoint, self._options, self._sharing.header_tools))

    # -- the source protocol ------------------------------------------------------------------

    @property
    def stale(self) -> bool:
        """Whether the server announced a changed tool list since the last listing."""
        return self._stale

    def tools(self) -> list[McpTool]:
        """List the server's tools (every page) as `McpTool` objects.

        A listed tool toolcycle cannot use (see `listing`) is left out with a
        `ToolSkippedWarning` that says why; the others are returned. Later
        listings (the runtime's refresh after ``list_changed``) log such a tool instead
        (``source.tool_skipped``): a refresh may run on any thread, and a warning
        filter that raises would cost the server all its tools there.

        Raises:
            McpServerError: the server could not be started or listed within
                ``startup_timeout``.
        """
        self._sharing.check_open()
        listed = _loop.run(self._discover())
        kept, skipped = listing(
            listed,
            server=self.name,
            prefix=self.prefix,
            timeout=self.timeout,
            overrides=self.capabilities,
        )
        first, self._listed = not self._listed, True
        for reason in skipped:
            if first:  # here, in the caller's thread, to point at its line
                warn_at_caller(ToolSkippedWarning(reason))
            else:
                _log.warning("source.tool_skipped", server=self.name, detail=reason)
        return [McpTool(self, descriptor, item.name) for item, descriptor in kept]

    async def _discover(self) -> list[mcp_types.Tool]:
        # Cleared before listing, so a list_changed that arrives meanwhile is kept.
        self._stale = False
        try:
            async with asyncio.timeout(self.startup_timeout):
                listed = await self._sharing.list_tools()
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
            self._sharing.header_tools = header_tools(listed)
        return listed

    def _stale_marker(self) -> Callable[[], None]:
        # Weak, so that neither its Sharing nor a live connection keeps the server
        # alive: an unclosed server must be collectable for __del__ to warn and close.
        server = weakref.ref(self)

        def mark() -> None:
            alive = server()
            if alive is not None:
                alive._stale = True

        return mark

    def close(self) -> None:
        """Close every connection still open (the runtime-scope one, and any left). Idempotent."""
        if not self._sharing.shut():
            return
        if _loop.on_loop():
            _loop.submit(self._sharing.close_all())
        else:
            _loop.run(self._sharing.close_all())

    async def aclose(self) -> None:
        """Async twin of `close`."""
        self._sharing.shut()
        await _loop.hop(self._sharing.close_all())

    def __del__(self) -> None:
        sharing: Sharing | None = getattr(self, "_sharing", None)
        if sharing is not None and not sharing.closed and sharing.in_use():
            warn_at_caller(
                ResourceWarning(
                    f"{self!r} was garbage-collected with open connections; closing them. "
                    "Call runtime.close() (or server.close()) when done."
                )
            )
            sharing.shut()
            with contextlib.suppress(Exception):
                _loop.submit(sharing.close_all())


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
            server._sharing.header_tools = header_tools
            server._token = token
        return server
