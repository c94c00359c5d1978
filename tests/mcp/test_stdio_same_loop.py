"""Stdio servers on the caller's loop: no thread crossed, and no process left behind."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import warnings
from typing import Any

import pytest

from toolcycle import ToolActivationError, ToolRuntime
from toolcycle.sources.mcp import McpServer, _child, _loop, _shares, _stdio
from toolcycle.sources.mcp._stdio import StdioSpec, _Writer

from .conftest import SERVERS, children, in_thread, register, stdio, wait_for, wait_gone

WAIT = 10.0


def _server_pid(source: McpServer, plan_id: str) -> int:
    """The pid of the process behind a plan's connection."""
    connection = source._sharing._shares[plan_id].connection
    assert connection is not None and connection._process is not None
    pid = connection._process.pid
    assert pid is not None
    return pid


def test_same_loop_with_runtime_scope_is_refused_for_stdio() -> None:
    """A runtime-wide connection outlives any caller's loop, so the pair is refused."""
    with pytest.raises(ValueError, match="scope='plan'"):
        stdio(same_loop=True, scope="runtime")


async def test_an_async_callers_stdio_calls_cross_no_thread(
    runtime: ToolRuntime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The pipes are driven on the caller's loop and its calls never hop to another loop."""
    caplog.set_level(logging.DEBUG, logger="toolcycle.sources.mcp.stderr")
    source = stdio(name="near")
    register(runtime, source)
    caplog.clear()  # discovery's process, read on the MCP thread
    hops: list[object] = []
    real_hop = _loop.hop

    def counted(coro: Any, target: Any = None) -> Any:
        hops.append(target)
        return real_hop(coro, target)

    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("add", {"a": 1, "b": 2}, ctx)).output == {"sum": 3}
        connection = source._sharing._shares[ctx.plan_id].connection
        assert connection is not None and connection.loop is asyncio.get_running_loop()
        monkeypatch.setattr(_loop, "hop", counted)
        for n in range(5):
            assert (await runtime.aexecute("add", {"a": n, "b": 1}, ctx)).output == {"sum": n + 1}
        monkeypatch.undo()
    assert hops == []
    [heard] = [r for r in caplog.records if "near: testserver: starting" in r.getMessage()]
    assert heard.threadName == threading.current_thread().name


async def test_same_loop_false_keeps_a_stdio_plan_on_the_mcp_thread(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """With same_loop=False the pipes are read on the MCP thread, as before."""
    caplog.set_level(logging.DEBUG, logger="toolcycle.sources.mcp.stderr")
    register(runtime, stdio(name="far", same_loop=False))
    caplog.clear()  # discovery's process, read on the MCP thread too
    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("add", {"a": 1, "b": 2}, ctx)).success
        assert await asyncio.to_thread(wait_for, lambda: bool(caplog.records))
    assert {r.threadName for r in caplog.records} == {"toolcycle-mcp"}


async def test_sync_calls_reach_a_stdio_plan_on_the_callers_loop(runtime: ToolRuntime) -> None:
    """A sync caller's call is handed to the loop the process's pipes live on."""
    register(runtime, stdio())
    before = children()
    async with runtime.aplan() as ctx:
        assert (await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)).success
        server = children() - before
        from_sync = await asyncio.wait_for(
            asyncio.to_thread(runtime.execute, "add", {"a": 2, "b": 2}, ctx), WAIT
        )
        assert children() - before == server  # the same process served it
    assert from_sync.output == {"sum": 4}
    assert wait_gone(server) == []


async def test_a_call_with_megabytes_of_arguments_reaches_a_stdio_server_whole(
    runtime: ToolRuntime,
) -> None:
    """Arguments larger than a pipe holds are written as the server reads them."""
    register(runtime, stdio())
    text = "y" * 3_000_000
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("echo", {"text": text}, ctx)
    assert result.success, result.error
    # The echo is cut to the runtime's output limit, which names its whole size.
    assert "output was 3000028 bytes" in str(result.output)


def _thread_gone(native_id: int) -> bool:
    return not os.path.exists(f"/proc/self/task/{native_id}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_a_server_started_from_a_short_lived_thread_outlives_that_thread(
    runtime: ToolRuntime,
) -> None:
    """The process is forked on the MCP thread: the starting thread's end does not kill it.

    A loop activated on a thread that then ends keeps its connection; the
    process serves a later call on that loop, and ends with the plan.
    """
    source = stdio()
    register(runtime, source)
    ctx = runtime.new_context("short-lived")
    loop = asyncio.new_event_loop()
    started: list[int] = []

    def start() -> None:
        started.append(threading.get_native_id())
        loop.run_until_complete(runtime.aexecute("add", {"a": 1, "b": 1}, ctx))

    try:
        thread = threading.Thread(target=start, name="short-lived")
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive()
        pid = _server_pid(source, ctx.plan_id)
        assert wait_for(lambda: _thread_gone(started[0])), "the thread did not end"
        # A parent-death signal would have ended the server within this bound.
        assert wait_gone([pid], timeout=1.0) == [pid]
        later = loop.run_until_complete(runtime.aexecute("add", {"a": 2, "b": 3}, ctx))
        assert later.output == {"sum": 5}
        assert _server_pid(source, ctx.plan_id) == pid
        loop.run_until_complete(runtime.aend_plan(ctx))
    finally:
        loop.close()
    assert wait_gone([pid]) == []


def test_a_loop_closed_by_asyncio_run_ends_its_process_and_the_plan_still_ends(
    runtime: ToolRuntime,
) -> None:
    """asyncio.run cancels the connection's task, which stops the process before the loop closes."""
    source = stdio()
    register(runtime, source)
    ctx = runtime.new_context("outlived")

    async def call() -> tuple[Any, int]:
        result = await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)
        return result.output, _server_pid(source, ctx.plan_id)

    output, pid = in_thread(call, 3 * WAIT)
    assert output == {"sum": 2}
    assert wait_gone([pid]) == []
    runtime.end_plan(ctx)
    assert pid not in _child._live


def test_a_loop_closed_under_live_connections_has_their_processes_ended_from_the_mcp_thread(
    runtime: ToolRuntime,
) -> None:
    """A loop closed with two plans' tasks parked: the keeper ends both processes anyway."""
    source = stdio()
    register(runtime, source)
    plans = [runtime.new_context(f"abandoned-{n}") for n in range(2)]
    loop = asyncio.new_event_loop()
    for ctx in plans:
        assert loop.run_until_complete(runtime.aexecute("add", {"a": 1, "b": 1}, ctx)).success
    pids = [_server_pid(source, ctx.plan_id) for ctx in plans]
    with warnings.catch_warnings():
        # Its pipe transports and parked tasks die with the closed loop, as asyncio warns.
        warnings.simplefilter("ignore", ResourceWarning)
        loop.close()  # nothing will run that loop's tasks again
        assert wait_gone(pids) == []
        for ctx in plans:
            runtime.end_plan(ctx)
        del loop
        gc.collect()
    assert wait_for(lambda: not set(pids) & set(_child._live))
    with runtime.plan() as later:  # the server serves the next plan as usual
        assert runtime.execute("add", {"a": 2, "b": 2}, later).output == {"sum": 4}


def test_writing_to_a_server_that_closed_its_stdin_raises() -> None:
    """Once the reading end is gone, a write fails instead of waiting for the pipe to drain."""

    async def scenario() -> None:
        reading, writing = os.pipe()
        loop = asyncio.get_running_loop()
        with os.fdopen(writing, "wb", buffering=0) as pipe:
            transport, stdin = await loop.connect_write_pipe(_Writer, pipe)
            os.close(reading)
            with pytest.raises(BrokenPipeError):
                for _ in range(100):  # the first write meets the broken pipe; a later one raises
                    await stdin.write(b"x" * 65536)
            transport.close()

    asyncio.run(scenario())


async def test_a_failure_while_attaching_the_pipes_still_ends_the_process(
    runtime: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start that fails between the fork and the session leaves no process and no open pipe."""
    register(runtime, stdio(name="unpiped"))
    before = children()
    real = _stdio._Pipes._attached
    attached: list[object] = []

    def attach_once(self: Any, pipe: Any, transport: Any) -> None:
        if attached:
            transport.close()  # as asyncio closes a transport whose connection failed
            raise OSError("no more pipes")
        attached.append(pipe)
        real(self, pipe, transport)

    monkeypatch.setattr(_stdio._Pipes, "_attached", attach_once)
    async with runtime.aplan() as ctx:
        with pytest.raises(ToolActivationError, match="no more pipes"):
            await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)
    assert await asyncio.to_thread(wait_gone, children() - before) == []


def test_a_plan_ended_while_its_loop_stays_idle_still_has_its_process_ended(
    runtime: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close handed to a loop nobody runs: past its bound the process is ended from the MCP thread.

    When the loop runs after all, its close finds the process gone and tidies up.
    """
    monkeypatch.setattr(_shares, "ABANDON_AFTER", 0.2)
    source = stdio()
    register(runtime, source)
    ctx = runtime.new_context("idle")
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(runtime.aexecute("add", {"a": 1, "b": 1}, ctx)).success
        pid = _server_pid(source, ctx.plan_id)
        runtime.end_plan(ctx)  # the loop is not running: the close waits for it
        assert wait_gone([pid]) == []
        assert wait_for(lambda: pid not in _child._live)
        # The loop runs again: the close handed to it ends the connection's tasks.
        _, left = loop.run_until_complete(asyncio.wait(asyncio.all_tasks(loop), timeout=WAIT))
        assert not left
    finally:
        loop.close()


async def test_a_start_cancelled_while_the_process_forks_ends_that_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fork is not cancelled half-way: the process it made is ended before the caller goes on."""
    forked, release = threading.Event(), threading.Event()
    pids: list[int] = []
    real_popen = _child._popen

    def slow_popen(*args: Any) -> Any:
        popen = real_popen(*args)
        pids.append(popen.pid)
        forked.set()
        release.wait(WAIT)
        return popen

    monkeypatch.setattr(_child, "_popen", slow_popen)
    spec = StdioSpec(sys.executable, [str(SERVERS)])
    starting = asyncio.ensure_future(
        _child.spawn([spec.command, *spec.args], spec.environment(), None, "cancelled")
    )
    assert await asyncio.to_thread(forked.wait, WAIT)
    starting.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(starting, WAIT)
    assert await asyncio.to_thread(wait_gone, pids) == []
    assert pids[0] not in _child._live


async def test_the_exit_handler_ends_every_server_still_running() -> None:
    """At interpreter exit, a server no plan ended yet is signalled with its whole group."""
    spec = StdioSpec(sys.executable, [str(SERVERS)])
    popen = await _child.spawn([spec.command, *spec.args], spec.environment(), None, "left")
    try:
        _child._end_all()
        assert await asyncio.to_thread(popen.wait, WAIT) != 0
    finally:
        _child._release(popen)
    assert popen.pid not in _child._live
