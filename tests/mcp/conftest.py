"""Fixtures for the MCP source: test servers in process and over stdio, and process checks."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import warnings
from collections.abc import Callable, Coroutine, Iterable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolcycle import CancellationToken, NullTracer, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.mcp import McpServer

from .servers import build

SERVERS = Path(__file__).with_name("servers.py")
RAW_SERVER = Path(__file__).with_name("raw_server.py")
# The tools the test server lists that the runtime can register (two are skipped).
VALID_TOOLS = [
    "echo",
    "add",
    "fail",
    "rpc_error",
    "progress",
    "slow",
    "crash",
    "big",
    "content",
    "environment",
    "spawn",
    "write",
    "erase",
    "draft7",
    "add_tool",
]


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime closed when the test ends (which closes its MCP servers)."""
    rt = ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0)
    try:
        yield rt
    finally:
        rt.close()


def register(runtime: ToolRuntime, source: McpServer) -> list[str]:
    """Register a test server's tools, accepting the two warnings for its invalid schemas."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)
        return [d.name for d in runtime.register_source(source)]


@pytest.fixture
def sessions() -> dict[str, int]:
    """Counts of connections the in-process server saw opened and closed."""
    return {}


@pytest.fixture
def in_process(sessions: dict[str, int]) -> Callable[..., McpServer]:
    """Make an in-process test server; keyword arguments go to McpServer."""

    def make(page_size: int | None = None, **options: Any) -> McpServer:
        options.setdefault("name", "local")
        return McpServer.in_process(build(page_size=page_size, sessions=sessions), **options)

    return make


def stdio(*flags: str, **options: Any) -> McpServer:
    """A test server over stdio, started with the current interpreter."""
    options.setdefault("name", "remote")
    return McpServer.stdio(sys.executable, [str(SERVERS), *flags], **options)


def wait_gone(pids: Iterable[int], timeout: float = 10.0) -> list[int]:
    """Wait (bounded) until none of the processes exists; return those still running."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if _running(pid)]
        if alive:
            time.sleep(0.02)
    return alive


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def children() -> set[int]:
    """Every descendant of this test process, zombies included."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def in_thread(scenario: Callable[[], Coroutine[Any, Any, Any]], timeout: float = 10.0) -> Any:
    """Run ``scenario`` under asyncio.run on a thread of its own, bounded; return its result."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(scenario()))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, name="host-loop")
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"the scenario did not finish within {timeout} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def at_once(calls: list[Callable[[], object]], timeout: float = 10.0) -> list[BaseException]:
    """Run each call on its own thread, released together by a barrier; return what they raised."""
    barrier = threading.Barrier(len(calls), timeout=timeout)
    errors: list[BaseException] = []

    def run(call: Callable[[], object]) -> None:
        try:
            barrier.wait()
            call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    assert not any(t.is_alive() for t in threads), f"a call did not return within {timeout} s"
    return errors


def cancel_a_slow_call(runtime: ToolRuntime, marker: Path, reason: str = "stop") -> BaseException:
    """Start the slow tool on a thread, cancel its plan once it has begun, return what it raised.

    The server writes ``marker`` when its handler is cancelled; the caller checks it.
    """
    started = threading.Event()
    token = CancellationToken()
    ctx = runtime.new_context(cancellation_token=token)
    ctx.on_progress = lambda event: started.set()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            runtime.execute("slow", {"seconds": 60, "marker": str(marker)}, ctx)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert started.wait(15), "the slow tool never reported that it started"
        token.cancel(reason)
        thread.join(2)
        assert not thread.is_alive(), "the cancelled call did not return within 2 s"
    finally:
        runtime.end_plan(ctx)
    assert outcome, "the cancelled call returned instead of raising"
    return outcome[0]
