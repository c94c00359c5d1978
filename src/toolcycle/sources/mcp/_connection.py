"""One MCP session, opened, served and closed by one long-lived task.

The SDK's transports and sessions are anyio contexts: the task that enters one
must be the task that leaves it, or anyio raises "Attempted to exit cancel
scope in a different task". So a `Connection` starts an owner task that enters
the transport and the session, answers the handshake, then waits to be told to
stop; activation, calls and deactivation only talk to the session it holds.
Everything here runs on the loop that opened the connection: the MCP loop (see
``_loop``), or for an in-process or stdio plan first activated from an async
caller, that caller's loop (see ``_sharing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types
from mcp.client._probe import negotiate_auto
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from toolcycle.sources.mcp._auth import request_scope
from toolcycle.sources.mcp._child import KILL_GRACE, STDIN_GRACE, TERM_GRACE
from toolcycle.sources.mcp._content import McpServerError, map_error
from toolcycle.sources.mcp._direct import InProcess
from toolcycle.sources.mcp._faults import describe, leaf, places, problems
from toolcycle.sources.mcp._session import Session

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from mcp.client import ClientSession, IncomingMessage
    from mcp.client._transport import TransportStreams

    from toolcycle.sources.mcp._answering import Answerer
    from toolcycle.sources.mcp._stdio import StdioProcess

__all__ = ["Connection", "Endpoint"]

_log = logging.getLogger("toolcycle.sources.mcp")

# How long close() waits for the owner task to wind down before cancelling it.
SHUTDOWN_DEADLINE = STDIN_GRACE + TERM_GRACE + KILL_GRACE + 2.0
# How long a failed call waits for the transport to say why the server went away.
_FAULT_WAIT = 1.5
_CLIENT_INFO = mcp_types.Implementation(name="toolcycle", version="0")
_CALL_RESULT: TypeAdapter[mcp_types.CallToolResult | mcp_types.InputRequiredResult] = TypeAdapter(
    mcp_types.CallToolResult | mcp_types.InputRequiredResult
)


class Endpoint(Protocol):
    """Where a server is: opens the transport's streams for one connection."""

    def streams(
        self, on_lost: Callable[[], None]
    ) -> tuple[AbstractAsyncContextManager[TransportStreams], StdioProcess | None]:
        """The transport to enter, and the process behind it when there is one."""
        ...


class Connection:
    """A live session with one server; all methods run on the loop that opened it."""

    def __init__(
        self,
        endpoint: Endpoint,
        name: str,
        on_list_changed: Callable[[], None],
        answerer: Answerer | None = None,
        protocol: str = "legacy",
    ) -> None:
        self.name = name
        self._answerer = answerer
        self._protocol = protocol
        self._endpoint = endpoint
        self._on_list_changed = on_list_changed
        self._session: ClientSession | None = None
        self._process: StdioProcess | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._failure: BaseException | None = None
        self._vet: Callable[[Exception], Exception] | None = None
        """The transport's last word on each error raised (HTTP: credentials, see ``_auth``).

        Called in the `request_scope` of the request that failed.
        """
        self.broken = False
        self.header_tools: frozenset[str] = frozenset()
        """Tools with ``x-mcp-header`` arguments (see ``_headers``); set by the server."""
        self._headers_learned = False
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop it lives on, set by `open`."""

    @property
    def usable(self) -> bool:
        """Whether calls may use it: not broken, and its loop has not closed under it."""
        return not self.broken and not (self.loop is not None and self.loop.is_closed())

    def diagnostics(self) -> str:
        """What the transport knows about the server's state: exit code, stderr tail."""
        return self._process.diagnostics() if self._process is not None else ""

    async def open(self, timeout: float | None) -> None:
        """Start the owner task and wait until the handshake is done.

        Raises:
            McpServerError: the server did not start, broke off the handshake,
                or did not finish it within ``timeout`` seconds.
        """
        self.loop = asyncio.get_running_loop()
        # The owner task's context is a copy of this one: the handshake's scope is this one.
        with request_scope():
            self._task = self.loop.create_task(self._own(), name=f"toolcycle-mcp:{self.name}")
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                await self.close()
                raise self._error(f"did not finish starting within {timeout} seconds") from None
            except asyncio.CancelledError:
                await asyncio.shield(self.close())
                raise
            if self._session is None:
                await self.close()
                failure = leaf(self._failure)
                error = self._error(f"failed to start: {describe(failure)}")
                error.__cause__ = failure
                raise self._vetted(error)

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                endpoint = self._endpoint
                options = self._answerer.session_options() if self._answerer else {}
                if isinstance(endpoint, InProcess) and endpoint.direct:
                    session = await endpoint.open_session(
                        stack, self._on_message, _CLIENT_INFO, self._on_list_changed, options
                    )
                else:
                    transport, self._process = endpoint.streams(self._mark_lost)
                    self._vet = getattr(transport, "vet", None)
                    read, write = await stack.enter_async_context(transport)
                    session = Session(
                        read,
                        write,
                        message_handler=self._on_message,
                        client_info=_CLIENT_INFO,
                        **options,
                    )
                    await stack.enter_async_context(session)
                    if self._protocol == "legacy":
                        await session.initialize()
                    else:  # the 2026-07-28 era if the server speaks it, else the handshake
                        await negotiate_auto(session)
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except (Exception, asyncio.CancelledError) as exc:
            # Ours to end: the failure is kept for the error message, not re-raised.
            self._failure = exc
        finally:
            self.broken = True
            self._session = None
            self._ready.set()

    def _mark_lost(self) -> None:
        """The transport lost the server: fail the session, let the owner clean up."""
        self.broken = True
        self._lost.set()
        self._stop.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._on_list_changed()
        elif isinstance(message, Exception):
            _log.debug("MCP server %r: transport error %r", self.name, message)

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, following ``nextCursor`` to the last page."""
        session = self._live_session()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = None if cursor is None else mcp_types.PaginatedRequestParams(cursor=cursor)
            with request_scope():
                try:
                    page = await session.list_tools(params=params)
                except ValidationError as exc:
                    # The SDK checks the page against the negotiated revision's schema
                    # as a whole: one tool that breaks it stops the listing.
                    raise self._error(
                        f"sent a tools/list page that breaks the MCP schema: {problems(exc)}"
                    ) from None
                except Exception as exc:
                    raise await self._translate(exc)  # noqa: B904 - _translate sets the cause
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
            if cursor in seen:
                raise self._error(f"repeated the tools/list cursor {cursor!r}; listing stopped")
            seen.add(cursor)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        on_progress: Callable[[float, float | None, str | None], None],
        meta: dict[str, Any] | None = None,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        """Send one ``tools/call`` with ``meta`` as its ``_meta``; cancelling the caller cancels it.

        ``input_responses`` and ``request_state`` retry a call that came back
        asking for input (2026-07-28 era), which is then what it may return.

        Raises:
            McpServerError: the connection is lost (it is then marked broken), or
                the result breaks the MCP schema (the connection stays usable).
            McpCallError: the server answered with a JSON-RPC error.
        """
        session = self._session
        if session is None or self.broken:
            session = self._live_session()  # raises
        if self.header_tools and name in self.header_tools and not self._headers_learned:
            await self._learn_headers(session)

        async def forward(progress: float, total: float | None, message: str | None) -> None:
            on_progress(progress, total, message)

        # send_request rather than call_tool: call_tool re-lists the tools to check
        # the output itself, a round trip per new tool, while the runtime checks it.
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(
                name=name,
                arguments=arguments,
                # An open map in the SDK's types; the keys are checked in _meta.
                _meta=meta,  # type: ignore[arg-type]
                input_responses=input_responses,
                request_state=request_state,
            )
        )
        # Only the 2026-07-28 era can answer with InputRequiredResult.
        kind = mcp_types.CallToolResult if self._protocol == "legacy" else _CALL_RESULT
        answerer = self._answerer
        watched = answerer is not None and answerer.watching
        if self._vet is None and not watched:
            # Nothing would read a request scope (no HTTP guard) or the call in
            # flight (no handler for the server's requests): send it bare.
            try:
                return await session.send_request(request, kind, progress_callback=forward)
            except ValidationError as exc:
                raise self._schema_error(name, exc) from None
            except Exception as exc:
                raise await self._translate(exc)  # noqa: B904 - _translate sets the cause
        # So the server's own requests on this session can name the call (legacy era).
        serving = (
            answerer.serving(session)
            if answerer is not None and watched
            else contextlib.nullcontext()
        )
        with request_scope():  # a refusal met by a parallel call is not this call's
            try:
                with serving:
                    return await session.send_request(request, kind, progress_callback=forward)
            except ValidationError as exc:
                raise self._schema_error(name, exc) from None
            except Exception as exc:
                raise await self._translate(exc)  # noqa: B904 - _translate sets the cause

    def _schema_error(self, name: str, exc: ValidationError) -> McpServerError:
        """A result the SDK found against the negotiated revision's schema.

        The connection is fine; the answer is not. Its values may hold secrets,
        so neither they nor pydantic's text (which quotes them) are repeated.
        """
        return self._error(
            f"sent a tools/call result for {name!r} that breaks the MCP schema: {places(exc)}"
        )

    async def _learn_headers(self, session: ClientSession) -> None:
        """List the tools on this session once, so the SDK sends their ``Mcp-Param-*`` headers.

        Only a 2026-07-28 session sends those headers; on another nothing is listed.
        """
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self.list_tools()
        self._headers_learned = True

    async def _translate(self, exc: Exception) -> Exception:
        lost = self.broken or (
            isinstance(exc, MCPError)
            and exc.code == mcp_types.CONNECTION_CLOSED
            and not await self._answers()
        )
        if lost and self._process is not None:
            # The session may notice the closed pipe before the process is reaped.
            with anyio.move_on_after(_FAULT_WAIT):
                await self._lost.wait()
        fault = (self.diagnostics() or "") if (lost or self.broken) else None
        mapped = map_error(exc, server=self.name, fault=fault)
        if mapped is None:
            return self._vetted(exc)
        if isinstance(mapped, McpServerError):
            self._mark_lost()
            mapped.exit_code = self._process.exit_code if self._process is not None else None
            mapped.stderr_tail = tuple(self._process.stderr_tail) if self._process else ()
        mapped.__cause__ = exc
        return self._vetted(mapped)

    async def _answers(self) -> bool:
        """Whether the server still answers a ping on this session, within `_FAULT_WAIT`.

        The SDK reports a closed connection as error -32000, which is also the
        first code of the range servers define for their own errors: only a
        server that no longer answers has lost the connection. On a closed
        session the ping fails at once, with no round trip.
        """
        session = self._session
        if session is None or self.broken:
            return False
        with anyio.move_on_after(_FAULT_WAIT):
            try:
                await session.send_ping()
            except MCPError as error:
                # The 2026-07-28 era has no ping: "method not found" is still an answer.
                return error.code == mcp_types.METHOD_NOT_FOUND
            except Exception:
                return False
            return True
        return False

    def _vetted(self, error: Exception) -> Exception:
        return error if self._vet is None else self._vet(error)

    def _live_session(self) -> ClientSession:
        if self._session is None or self.broken:
            detail = self.diagnostics()
            raise self._error("is not connected" + (f" ({detail})" if detail else ""))
        return self._session

    def _error(self, what: str) -> McpServerError:
        detail = self.diagnostics()
        process = self._process
        return McpServerError(
            f"MCP server {self.name!r} {what}"
            + (f" ({detail})" if detail and detail not in what else ""),
            server=self.name,
            exit_code=process.exit_code if process is not None else None,
            stderr_tail=tuple(process.stderr_tail) if process is not None else (),
        )

    def expire(self, seconds: float) -> None:
        """From any thread: a server process still running ``seconds`` from now is ended then.

        For a close handed to a loop that may never run again (see ``_sharing``).
        """
        if self._process is not None:
            self._process.expire(seconds)

    async def close(self) -> None:
        """Tell the owner to leave the session and transport, and wait for it (bounded).

        Run it shielded: the shutdown must finish even when its caller is cancelled.
        """
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self._session is None:
            # Still in the handshake, which never looks at _stop: interrupt it.
            # The transport's shutdown is shielded, so the process still ends.
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_DEADLINE)
        if not done:  # pragma: no cover - a transport that ignores its own deadlines
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task}, timeout=2.0)
