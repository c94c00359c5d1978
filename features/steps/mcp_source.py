"""Steps for MCP servers as a tool source, using the test servers of tests/mcp."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import psutil
from behave import given, step, then, when

from toolcycle import CancellationToken, ToolCancelledError, ToolRuntimeError

WAIT = 5.0
"""Upper bound, in seconds, of every wait in these steps."""

SERVERS = Path(__file__).resolve().parents[2] / "tests" / "mcp" / "servers.py"


def _build(**options: Any) -> Any:
    """The in-process test server of tests/mcp/servers.py (a file, not a package module)."""
    spec = importlib.util.spec_from_file_location("toolcycle_test_servers", SERVERS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(**options)


def _mcp() -> Any:
    from toolcycle.sources import mcp

    return mcp


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _started(context: Any) -> set[int]:
    """Processes this scenario started that are still running (zombies excluded)."""
    alive = set()
    for pid in _children() - context.mcp_before:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def _wait_until(predicate: Any) -> bool:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _use(context: Any, server: Any) -> None:
    context.mcp_before = _children()
    context.mcp_server = server


# -- servers ------------------------------------------------------------------------------


@given('the MCP test server "{name:Name}" in process')
def in_process_server(context: Any, name: str) -> None:
    context.mcp_sessions = {}
    _use(context, _mcp().McpServer.in_process(_build(sessions=context.mcp_sessions), name=name))


@given('the MCP test server "{name:Name}" over stdio')
def stdio_server(context: Any, name: str) -> None:
    _use(context, _mcp().McpServer.stdio(sys.executable, [str(SERVERS)], name=name))


@given('the MCP test server "{name:Name}" over stdio, failing at start')
def failing_server(context: Any, name: str) -> None:
    args = [str(SERVERS), "--fail-at-start"]
    _use(context, _mcp().McpServer.stdio(sys.executable, args, name=name))


@given('the MCP test server "{name:Name}" over stdio, shared by every plan')
def shared_server(context: Any, name: str) -> None:
    server = _mcp().McpServer.stdio(sys.executable, [str(SERVERS)], name=name, scope="runtime")
    _use(context, server)


@given('the MCP test server "{name:Name}" started through a shell')
def wrapped_server(context: Any, name: str) -> None:
    command = f"{sys.executable} {SERVERS}; exit 0"  # the shell stays as the parent
    _use(context, _mcp().McpServer.stdio("/bin/sh", ["-c", command], name=name))


@step("I register the MCP server")
def register_server(context: Any) -> None:
    context.error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            context.runtime.register_source(context.mcp_server)
        except ToolRuntimeError as exc:
            context.error = exc
    context.warnings = [str(w.message) for w in caught]


# -- calls --------------------------------------------------------------------------------


def _slow(context: Any, **options: Any) -> None:
    folder = tempfile.TemporaryDirectory(prefix="toolcycle-feature-")
    context.add_cleanup(folder.cleanup)
    context.marker = Path(folder.name) / "cancelled"
    params = {"seconds": 60, "marker": str(context.marker)}
    context.result = context.error = None
    try:
        context.result = context.runtime.execute("slow", params, context.plan, **options)
    except ToolCancelledError as exc:
        context.error = exc


@when(
    'an async caller calls "{name:Name}" with arguments {params} from its loop and from sync code'
)
def from_loop_and_sync(context: Any, name: str, params: str) -> None:
    arguments = json.loads(params)
    runtime = context.runtime

    async def caller() -> tuple[Any, Any, Any]:
        async with runtime.aplan() as ctx:
            here = await runtime.aexecute(name, arguments, ctx)
            # A sync call from a worker thread, so this loop stays free (bounded).
            handed = asyncio.to_thread(runtime.execute, name, arguments, ctx)
            elsewhere = await asyncio.wait_for(handed, WAIT)
            return here, elsewhere, runtime.execute(name, arguments, ctx)

    context.from_loop, context.from_sync, context.from_own_thread = asyncio.run(caller())


@then("its call from the loop returned {output}")
def loop_call_returned(context: Any, output: str) -> None:
    assert context.from_loop.output == json.loads(output), context.from_loop


@then("its call from sync code on another thread returned {output}")
def sync_call_returned(context: Any, output: str) -> None:
    result = context.from_sync
    assert result.success and result.output == json.loads(output), result


@then('its blocking call on the loop\'s own thread failed mentioning "{text}"')
def own_thread_call_failed(context: Any, text: str) -> None:
    result = context.from_own_thread
    assert not result.success and text in (result.error or ""), result


@when("I call the slow MCP tool and cancel the plan once it has started")
def slow_and_cancel(context: Any) -> None:
    started = threading.Event()
    token = CancellationToken()
    context.plan = context.runtime.new_context("p-cancel", cancellation_token=token)
    context.plan.on_progress = lambda event: started.set()

    def cancel() -> None:
        if started.wait(WAIT):
            token.cancel("stop")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    _slow(context)
    canceller.join(WAIT)
    assert not canceller.is_alive()


@when("I call the slow MCP tool with a timeout of {seconds:g} seconds")
def slow_with_timeout(context: Any, seconds: float) -> None:
    _slow(context, timeout=seconds)


# -- outcomes -----------------------------------------------------------------------------


@then('the tool "{name:Name}" comes from MCP server "{server:Name}"')
def comes_from(context: Any, name: str, server: str) -> None:
    descriptor = context.runtime.descriptor(name)
    assert (descriptor.source, descriptor.source_name) == ("mcp", server), descriptor


@then('the registration warned that it skipped "{first:Name}" and "{second:Name}"')
def warned_skipped(context: Any, first: str, second: str) -> None:
    for name in (first, second):
        assert any(repr(name) in text for text in context.warnings), context.warnings


@then('the tool "{name:Name}" does not write and is not checkpointable')
def reads(context: Any, name: str) -> None:
    capability = context.runtime.descriptor(name).capability
    assert (capability.writes, capability.checkpointable) == (False, False), capability


@then('the tool "{name:Name}" writes and is not checkpointable')
def writes(context: Any, name: str) -> None:
    capability = context.runtime.descriptor(name).capability
    assert (capability.writes, capability.checkpointable) == (True, False), capability


@then("the MCP server opened {count:d} connection")
@then("the MCP server opened {count:d} connections")
def opened(context: Any, count: int) -> None:
    # One connection is the discovery's, closed when registration finished.
    assert context.mcp_sessions.get("opened", 0) - 1 == count, context.mcp_sessions


@then("every connection the MCP server opened is closed")
def all_closed(context: Any) -> None:
    sessions = context.mcp_sessions
    assert _wait_until(lambda: sessions.get("closed") == sessions.get("opened")), sessions


@then("the server saw the cancellation")
def server_saw_cancellation(context: Any) -> None:
    assert _wait_until(context.marker.exists), "the server's handler was never cancelled"


@then('the result\'s error is "{text}"')
def result_error_is(context: Any, text: str) -> None:
    assert context.result is not None and context.result.error == text, context.result


@then('the result\'s error mentions "{first}" and "{second}"')
def result_error_mentions(context: Any, first: str, second: str) -> None:
    error = context.result.error or ""
    assert first in error and second in error, error


@then("registering the server failed with McpServerError")
def registration_failed(context: Any) -> None:
    assert isinstance(context.error, _mcp().McpServerError), repr(context.error)
    assert context.runtime.descriptors() == ()


@then("{count:d} process the runtime started is running")
@then("{count:d} processes the runtime started are running")
def processes_running(context: Any, count: int) -> None:
    assert len(_started(context)) == count, _started(context)


@then("no process the runtime started is left")
def no_process_left(context: Any) -> None:
    assert _wait_until(lambda: not _started(context)), _started(context)
