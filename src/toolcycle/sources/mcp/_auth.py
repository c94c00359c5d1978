"""Credentials for servers over streamable HTTP: headers, an ``httpx2.Auth``, per plan.

A server made with ``McpServer.http`` presents fixed ``headers`` and ``auth``
(any ``httpx2.Auth``, the SDK's OAuth providers included) on every
connection, and, with a ``credentials`` resolver, the credentials that
resolver gives for each plan. Every connection puts a `_Guard` in front of
them: it sets the plan's headers on each request, lets the plan's auth run
its flow, and on a final HTTP 401 asks the resolver once for fresh
credentials and sends the request again. A request still refused makes the
call fail with `McpAuthError`, naming the server. Requests refused together
share one fresh set: a request whose credentials were replaced while it was
out is sent again with the new ones, without asking the resolver again.

Calls on one connection run in parallel, so whether a request was refused is
kept per MCP request, not per connection: the connection opens a
`request_scope` around each one, and the guard records a refusal in the
scope of the request that met it. The SDK runs each HTTP request in a copy
of the context of the task that sent the MCP request, which carries the
scope there.

The connection hands every error it raises to `_Transport.vet`, which turns
a refusal into `McpAuthError` and takes every secret it knows (header values,
the tokens an SDK OAuth provider holds) out of the message, and out of the
``data`` a JSON-RPC error carries, so that no token reaches a result, a trace,
a log or a span, nor the exception a host logs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from toolcycle import ToolExecutionContext
from toolcycle.sources.mcp._content import McpCallError, McpServerError

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from types import TracebackType

    from mcp.client._transport import TransportStreams

    from toolcycle.sources.mcp._stdio import StdioProcess

__all__ = [
    "CredentialsResolver",
    "HttpCredentials",
    "HttpEndpoint",
    "McpAuthError",
    "request_scope",
]

_HIDDEN = "[redacted]"
_MIN_SECRET = 4  # shorter values are too common in text to replace safely
# The first word of "Bearer <token>" names a scheme and is no secret; taking it for
# one would blank that word wherever a server's own message uses it.
_SCHEMES = frozenset({"basic", "bearer", "digest", "dpop", "negotiate", "token"})


@dataclass(frozen=True, slots=True)
class HttpCredentials:
    """What a connection presents to an HTTP server: headers, an ``httpx2.Auth``, or both.

    Attributes:
        headers: sent with every request (for example ``Authorization``).
        auth: an ``httpx2.Auth``, such as the SDK's ``OAuthClientProvider``.
    """

    headers: Mapping[str, str] = field(default_factory=dict)
    auth: httpx2.Auth | None = None

    def __repr__(self) -> str:
        # Names only: a repr ends up in logs and error messages.
        return f"HttpCredentials(headers={sorted(self.headers)!r}, auth={type(self.auth).__name__})"


CredentialsResolver: TypeAlias = Callable[
    [ToolExecutionContext],
    "HttpCredentials | Mapping[str, str] | Awaitable[HttpCredentials | Mapping[str, str]]",
]
"""A plan's credentials from its context: `HttpCredentials`, or a mapping of headers."""


class McpAuthError(McpServerError):
    """An MCP server refused the credentials (HTTP 401), after one try with fresh ones.

    Attributes:
        status: the HTTP status of the refusal.
    """

    def __init__(self, message: str, *, server: str, status: int = 401) -> None:
        super().__init__(message, server=server)
        self.status = status


@dataclass(frozen=True, slots=True)
class HttpEndpoint:
    """A server over streamable HTTP and what it is shown; `bind` gives a plan's own."""

    url: str
    name: str
    headers: Mapping[str, str] | None = None
    auth: httpx2.Auth | None = None
    credentials: CredentialsResolver | None = None
    ctx: ToolExecutionContext | None = None

    def bind(self, ctx: ToolExecutionContext) -> HttpEndpoint:
        """The endpoint of one plan: with a resolver, its credentials come from ``ctx``."""
        return self if self.credentials is None else replace(self, ctx=ctx)

    def streams(self, on_lost: Callable[[], None]) -> tuple[_Transport, StdioProcess | None]:
        """A transport for one connection (there is no process behind it)."""
        return _Transport(self), None

    async def resolve(self) -> HttpCredentials:
        """The credentials a new connection (or a refused request) presents.

        Raises:
            TypeError: the resolver returned something other than
                `HttpCredentials` or a mapping of headers.
        """
        if self.credentials is None or self.ctx is None:
            return HttpCredentials(auth=self.auth)
        got = self.credentials(self.ctx)
        if inspect.isawaitable(got):
            got = await got
        # The plan's credentials replace the fixed auth even when they bring none:
        # a service's auth would otherwise sign over the plan's own headers.
        if isinstance(got, HttpCredentials):
            return got
        if isinstance(got, Mapping):
            return HttpCredentials(headers=dict(got))
        raise TypeError(
            f"the credentials resolver of MCP server {self.name!r} returned "
            f"{type(got).__name__}; return HttpCredentials or a mapping of headers"
        )


@dataclass(slots=True)
class _Outcome:
    """What became of the HTTP requests of one MCP request: refused or not, and why."""

    refused: bool = False
    """Whether the last of them that finished was refused with a 401."""
    refresh_error: Exception | None = None
    """What the resolver raised when that refusal asked it for fresh credentials."""


_OUTCOME: ContextVar[_Outcome | None] = ContextVar("toolcycle_mcp_outcome", default=None)


@contextmanager
def request_scope() -> Iterator[None]:
    """The scope of one MCP request: a refusal met inside it is its own, not a parallel one's.

    Errors are vetted (`_Transport.vet`) inside the scope of the request that
    raised them.
    """
    token = _OUTCOME.set(_Outcome())
    try:
        yield
    finally:
        _OUTCOME.reset(token)


class _Guard(httpx2.Auth):
    """Sets the plan's headers, runs its auth, and on a 401 retries once with fresh credentials."""

    def __init__(
        self,
        credentials: HttpCredentials,
        refresh: Callable[[], Awaitable[HttpCredentials]] | None,
    ) -> None:
        self.credentials = credentials
        self.used = [credentials]
        """Every set of credentials this connection presented, for scrubbing."""
        self._refresh = refresh
        self._refreshing = asyncio.Lock()

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Send ``request`` through the current credentials; once more after a 401."""
        outcome = _OUTCOME.get() or _Outcome()  # outside any request scope: nobody asks
        retried = False
        while True:
            credentials = self.credentials
            request.headers.update(credentials.headers)
            # The plan's auth runs its own flow (an OAuth provider refreshes on a 401 here).
            flow = (credentials.auth or _PASS).async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    try:
                        outgoing = await flow.asend(response)
                    except StopAsyncIteration:
                        break
            finally:
                await flow.aclose()
            if response.status_code != 401:
                outcome.refused = False
                outcome.refresh_error = None
                return
            refresh = self._refresh
            if retried or refresh is None:
                outcome.refused = True
                return
            retried = True
            try:
                await self._renew(refresh, credentials)
            except Exception as exc:
                # Raised through the HTTP client it would drop the connection and read as
                # the server's doing; the refusal stands instead, naming the resolver.
                outcome.refused = True
                outcome.refresh_error = exc
                return
            outcome.refresh_error = None

    async def _renew(
        self, refresh: Callable[[], Awaitable[HttpCredentials]], refused: HttpCredentials
    ) -> None:
        """Ask ``refresh`` for fresh credentials, unless ``refused`` were replaced already.

        Parallel requests refused together ask once: the others wait, then go again
        with what the first one got.
        """
        async with self._refreshing:
            if self.credentials is refused:
                self.credentials = await refresh()
                self.used.append(self.credentials)

    def secrets(self) -> set[str]:
        """The values to keep out of messages: header values and OAuth tokens."""
        found: set[str] = set()
        for credentials in self.used:
            for value in credentials.headers.values():
                found.update(_words(value))
            found.update(_tokens_of(credentials.auth))
        return {secret for secret in found if len(secret) >= _MIN_SECRET}


_PASS = httpx2.Auth()  # sends the request as it is


def _tokens_of(auth: httpx2.Auth | None) -> set[str]:
    if not isinstance(auth, OAuthClientProvider):
        return set()
    tokens = auth.context.current_tokens
    if tokens is None:
        return set()
    return {tokens.access_token, *([tokens.refresh_token] if tokens.refresh_token else [])}


class _Transport:
    """One connection's HTTP client and streams, entered and left by the connection's owner task."""

    def __init__(self, endpoint: HttpEndpoint) -> None:
        self._endpoint = endpoint
        self._stack = AsyncExitStack()
        self._guard: _Guard | None = None

    async def __aenter__(self) -> TransportStreams:
        endpoint = self._endpoint
        refresh = endpoint.resolve if endpoint.credentials is not None else None
        self._guard = _Guard(await endpoint.resolve(), refresh)
        client = create_mcp_http_client(headers=dict(endpoint.headers or {}), auth=self._guard)
        await self._stack.enter_async_context(client)
        return await self._stack.enter_async_context(
            streamable_http_client(endpoint.url, http_client=client)
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, traceback)

    def vet(self, error: Exception) -> Exception:
        """The error a connection raises: `McpAuthError` after a refusal, else ``error`` scrubbed."""
        guard = self._guard
        name = self._endpoint.name
        outcome = _OUTCOME.get()
        if guard is None:
            return error
        if outcome is not None and outcome.refused:
            failed = outcome.refresh_error
            if failed is not None:
                refusal = McpAuthError(
                    f"MCP server {name!r} refused the credentials (HTTP 401), and the "
                    f"credentials resolver raised {_describe(failed)} when asked for fresh "
                    "ones; a later call asks it again",
                    server=name,
                )
                refusal.__cause__ = failed
                return scrub(refusal, guard.secrets() | _static_secrets(self._endpoint))
            again = " and again with fresh credentials" if self._endpoint.credentials else ""
            refusal = McpAuthError(
                f"MCP server {name!r} refused the credentials (HTTP 401){again}; "
                "check the token, or what the credentials resolver returns",
                server=name,
            )
            refusal.__suppress_context__ = True
            return refusal
        return scrub(error, guard.secrets() | _static_secrets(self._endpoint))


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__} ({text})" if text else type(exc).__name__


def _static_secrets(endpoint: HttpEndpoint) -> set[str]:
    values = set((endpoint.headers or {}).values())
    return {v for value in values for v in _words(value) if len(v) >= _MIN_SECRET}


def _words(value: str) -> set[str]:
    """A header value and each of its words (the token of "Bearer <token>"), but no scheme."""
    return {value, *(word for word in value.split() if word.lower() not in _SCHEMES)}


def scrub(error: Exception, secrets: set[str]) -> Exception:
    """Replace each secret in ``error``'s message and, for `McpCallError`, in its ``data``.

    When either held a secret, the cause is dropped too: it is what the SDK
    raised, whose own text and data hold the same values.
    """
    ordered = sorted(secrets, key=len, reverse=True)  # longest first: whole values
    held = False
    if error.args and isinstance(error.args[0], str):
        text = _replaced(error.args[0], ordered)
        if text != error.args[0]:
            error.args = (text, *error.args[1:])
            held = True
    if isinstance(error, McpCallError) and error.data is not None:
        data, changed = _scrubbed(error.data, ordered)
        if changed:
            error.data = data
            held = True
    if held:
        error.__cause__ = None
        error.__suppress_context__ = True
    return error


def _replaced(text: str, ordered: list[str]) -> str:
    for secret in ordered:
        text = text.replace(secret, _HIDDEN)
    return text


def _scrubbed(data: Any, ordered: list[str]) -> tuple[Any, bool]:
    """JSON ``data`` with each secret replaced in its strings and keys; whether any was.

    The error's ``data`` is whatever JSON the server chose to send, nested as
    deep as it likes, so the walk keeps its own stack. It fills new lists and
    objects as it goes, and gives back ``data`` itself when nothing changed.
    Numbers are left as they are: a header value or a token is text.
    """
    holder: list[Any] = [data]
    stack: list[tuple[Any, Any, Any]] = [(data, holder, 0)]
    changed = False
    while stack:
        value, parent, slot = stack.pop()
        if isinstance(value, str):
            text = _replaced(value, ordered)
            if text != value:
                parent[slot] = text
                changed = True
        elif isinstance(value, dict):
            copy: dict[Any, Any] = {}
            for key, item in value.items():
                name = _replaced(key, ordered) if isinstance(key, str) else key
                changed = changed or name != key
                copy[name] = item
                stack.append((item, copy, name))
            parent[slot] = copy
        elif isinstance(value, list):
            items = list(value)
            stack.extend((item, items, index) for index, item in enumerate(items))
            parent[slot] = items
    return (holder[0], True) if changed else (data, False)
