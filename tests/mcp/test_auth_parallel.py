"""Parallel calls on one plan's HTTP connection: each call's 401 is its own."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

import httpx2
import pytest

from toolcycle import NullTracer, ToolExecutionContext, ToolResult, ToolRuntime
from toolcycle.sources.mcp import HttpCredentials, McpServer

from .asgi import read_body, replay
from .auth_server import Tokens, serve

WAIT = 10.0


class _Gate:
    """ASGI middleware that answers or holds the calls of chosen tools.

    ``refuse``: a call of that tool is answered with HTTP 401, whatever its token.
    ``hold``: the body of the answer to a call of that tool is held until ``release``.
    ``pair``: calls of that tool wait until two of them have arrived, then go on.
    """

    def __init__(self) -> None:
        self.refuse: str | None = None
        self.hold: str | None = None
        self.release = threading.Event()
        self.pair: str | None = None
        self._arrived = 0
        self._both: asyncio.Event | None = None

    def __call__(self, app: Any) -> Callable[..., Any]:
        async def gated(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or (scope["method"], scope["path"]) != ("POST", "/mcp"):
                return await app(scope, receive, send)
            body = await read_body(receive)
            request = json.loads(body)
            tool = request.get("params", {}).get("name") if isinstance(request, dict) else None
            if request.get("method") != "tools/call" or tool is None:
                return await app(scope, replay(body, receive), send)
            if tool == self.refuse:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                return await send({"type": "http.response.body", "body": b""})
            if tool == self.pair:
                await self._wait_for_the_other()
            if tool == self.hold:
                send = self._held(send)
            return await app(scope, replay(body, receive), send)

        return gated

    async def _wait_for_the_other(self) -> None:
        if self._both is None:
            self._both = asyncio.Event()
        self._arrived += 1
        if self._arrived == 2:
            self._both.set()
        async with asyncio.timeout(WAIT):
            await self._both.wait()

    def _held(self, send: Any) -> Any:
        async def held(message: Any) -> None:
            if message["type"] == "http.response.body":
                assert await asyncio.to_thread(self.release.wait, WAIT)
            await send(message)

        return held


class _Spy(httpx2.Auth):
    """Signs with a fixed token and tells when the answer to a call of ``watched`` arrives."""

    def __init__(self, token: str, watched: str) -> None:
        self.token = token
        self.watched = f'"name":"{watched}"'.encode()
        self.answered = threading.Event()

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request
        if self.watched in request.content:
            self.answered.set()


@pytest.fixture
def tokens() -> Tokens:
    """The token table of the test's server."""
    return Tokens()


@pytest.fixture
def gate() -> _Gate:
    """The middleware in front of the test's server."""
    return _Gate()


@pytest.fixture
def url(tokens: Tokens, gate: _Gate) -> Iterator[str]:
    """The MCP URL of a loopback server that requires a bearer token, behind ``gate``."""
    with serve(tokens, wrap=gate) as address:
        yield address


def _in_thread(work: Callable[[], ToolResult]) -> tuple[threading.Thread, list[ToolResult]]:
    done: list[ToolResult] = []
    thread = threading.Thread(target=lambda: done.append(work()))
    thread.start()
    return thread, done


@pytest.mark.parametrize("resolver", [False, True], ids=["fixed-auth", "raising-resolver"])
def test_a_401_on_one_call_does_not_turn_a_parallel_calls_error_into_an_auth_error(
    url: str, tokens: Tokens, gate: _Gate, resolver: bool
) -> None:
    """A call's own JSON-RPC error stays itself when another call on its connection is refused."""
    spy = _Spy(tokens.issue("mona-token-1", "mona"), watched="quote")
    asked: list[int] = []

    def resolve(ctx: ToolExecutionContext) -> HttpCredentials:
        asked.append(1)
        if len(asked) > 1:
            raise LookupError("the vault is sealed")
        return HttpCredentials(auth=spy)

    source = McpServer.http(
        url, auth=spy, credentials=resolve if resolver else None, name="guarded"
    )
    gate.refuse, gate.hold = "whoami", "quote"
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            runtime.activate("quote", ctx)
            runtime.activate("whoami", ctx)
            # A's answer has arrived (its request was not refused); its error body is held.
            thread, quoted = _in_thread(lambda: runtime.execute("quote", {"leak": False}, ctx))
            try:
                assert spy.answered.wait(WAIT)
                refused = runtime.execute("whoami", {}, ctx)  # B: refused while A is open
            finally:
                gate.release.set()
                thread.join(WAIT)
    assert refused.error_type == "McpAuthError"
    assert ("resolver raised LookupError" in (refused.error or "")) is resolver
    (result,) = quoted
    assert result.error_type == "McpCallError", result.error
    assert "refused the credentials" not in (result.error or "")


def test_parallel_calls_refused_at_once_ask_the_resolver_once(
    url: str, tokens: Tokens, gate: _Gate
) -> None:
    """Two calls refused with the same expired token share one fresh set of credentials."""
    current = {"token": tokens.issue("nina-token-1", "nina")}
    asked: list[str] = []

    def resolve(ctx: ToolExecutionContext) -> dict[str, str]:
        asked.append(current["token"])
        return {"Authorization": f"Bearer {current['token']}"}

    source = McpServer.http(url, auth=_Spy("nina-token-1", "-"), credentials=resolve, name="g")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert runtime.execute("whoami", {}, ctx).output == {"result": "nina"}
            tokens.revoke("nina-token-1")  # it expires; both calls below go out with it
            current["token"] = tokens.issue("nina-token-2", "nina")
            gate.pair = "whoami"
            first, firsts = _in_thread(lambda: runtime.execute("whoami", {}, ctx))
            second, seconds = _in_thread(lambda: runtime.execute("whoami", {}, ctx))
            first.join(WAIT)
            second.join(WAIT)
    assert [r.output for r in firsts + seconds] == [{"result": "nina"}, {"result": "nina"}]
    assert asked == ["nina-token-1", "nina-token-2"]
