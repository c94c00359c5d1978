"""pydantic-ai's MCP toolset as a toolcycle source (`from_toolset`), over stdio.

The server is the stdio test server of tests/mcp, started with the current
interpreter. The toolset is given a transport that does not keep the server
alive between connections, so each plan starts a server at its first activation
and stops it when it ends.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

pytest.importorskip("pydantic_ai.mcp", reason="needs pydantic-ai-slim[mcp]")

from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset

from toolcycle import (
    NullTracer,
    ToolAccessDeniedError,
    ToolCapability,
    ToolRuntime,
)
from toolcycle.adapters.pydantic_ai import from_toolset
from toolcycle.testing import capture_traces

SERVERS = Path(__file__).parents[1] / "mcp" / "servers.py"
# Two of the server's tools have schemas that are unusable on purpose.
UNUSABLE = {"invalid_schema", "unknown_dialect"}
READS = ToolCapability(writes=False)
CAPABILITIES = {"echo": READS, "add": READS, "fail": READS, "write": ToolCapability(writes=True)}
GONE_WITHIN = 15.0


class Server:
    """The toolset's stdio server, as the test process sees it: the pids its log names."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def started(self) -> list[int]:
        """The pid of every server started so far, in order."""
        if not self.log.exists():
            return []
        return [int(pid) for pid in re.findall(r"starting, pid (\d+)", self.log.read_text())]

    def running(self) -> list[int]:
        """The servers that are child processes of the tests and still run."""
        return [pid for pid in self.started() if _running(pid)]

    def wait_gone(self, timeout: float = GONE_WITHIN) -> list[int]:
        """Poll (bounded) until no server runs; return those still running."""
        deadline = time.monotonic() + timeout
        alive = self.running()
        while alive and time.monotonic() < deadline:
            time.sleep(0.02)
            alive = self.running()
        return alive


def _running(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and process.ppid() == _ME
    except psutil.NoSuchProcess:
        return False


_ME = psutil.Process().pid


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    return Server(tmp_path_factory.mktemp("mcp") / "server.log")


@pytest.fixture(scope="module")
def runtime(server: Server) -> Iterator[ToolRuntime]:
    """One registration for the module; every test runs plans of its own on it."""
    transport = StdioTransport(
        sys.executable, [str(SERVERS), "--name", "pai"], keep_alive=False, log_file=server.log
    )
    # A pydantic-ai wrapper around the MCP toolset hides the two unusable tools.
    toolset = MCPToolset(transport).filtered(lambda ctx, tool: tool.name not in UNUSABLE)
    rt = ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0)
    try:
        rt.register_source(from_toolset(toolset, capabilities=CAPABILITIES))
        yield rt
    finally:
        rt.close()
    assert server.wait_gone() == []


def test_registration_lists_the_server_tools_and_stops_the_server(
    runtime: ToolRuntime, server: Server
) -> None:
    """Listing started one server and stopped it; the tools keep the server's schemas."""
    names = [descriptor.name for descriptor in runtime.descriptors()]
    assert {"echo", "add", "write", "erase"} <= set(names)
    assert not UNUSABLE & set(names)
    echo = runtime.descriptor("echo")
    assert echo.input_schema["required"] == ["text"]
    assert echo.capability == READS
    assert runtime.descriptor("erase").capability.writes  # not named: taken to write
    assert len(server.started()) >= 1
    assert server.wait_gone() == []


def test_a_server_tool_runs_under_a_read_only_plan_with_validation_and_traces(
    runtime: ToolRuntime,
) -> None:
    """Outputs are the server's; a bad input fails before the server; writing is refused."""
    with capture_traces(runtime) as traces, runtime.plan(read_only=True) as ctx:
        echoed = runtime.execute("echo", {"text": "hello"}, ctx)
        added = runtime.execute("add", {"a": 2, "b": 3}, ctx)
        wrong = runtime.execute("echo", {"text": 7}, ctx)
        failed = runtime.execute("fail", {}, ctx)
        with pytest.raises(ToolAccessDeniedError):
            runtime.execute("write", {"path": "notes.txt"}, ctx)

    assert echoed.success and echoed.output == {"text": "hello", "length": 5}
    assert added.output == {"sum": 5}
    assert not wrong.success
    assert wrong.error_type == "ToolSchemaValidationError"
    assert not failed.success and "it broke on purpose" in (failed.error or "")
    assert failed.error_type == "ModelRetry" and failed.retryable  # the toolset says retry
    assert [(t.tool_name, t.status) for t in traces] == [
        ("echo", "ok"),
        ("add", "ok"),
        ("echo", "invalid_input"),
        ("fail", "error"),
        ("write", "denied"),
    ]
    assert all(t.plan_id == ctx.plan_id for t in traces)


def test_the_server_starts_at_activation_and_is_gone_when_the_plan_ends(
    runtime: ToolRuntime, server: Server
) -> None:
    """No server before the first call of the plan, one during it, none after its end."""
    assert server.wait_gone() == []
    before = len(server.started())
    with runtime.plan() as ctx:
        assert server.running() == []  # a plan alone starts nothing
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
        started = server.started()[before:]
        assert len(started) == 1
        assert server.running() == started
        assert runtime.execute("echo", {"text": "again"}, ctx).success
        assert server.started()[before:] == started  # the plan's second call reuses it
    assert server.wait_gone() == []


async def test_an_async_plan_shares_one_server_between_calls_and_stops_it(
    runtime: ToolRuntime, server: Server
) -> None:
    """Calls made at once in one plan share its server; the plan's end stops it."""
    assert await asyncio.to_thread(server.wait_gone) == []
    before = len(server.started())
    async with runtime.aplan() as ctx:
        results = await asyncio.gather(
            *(runtime.aexecute("add", {"a": n, "b": 1}, ctx) for n in range(4))
        )
        assert [result.output for result in results] == [{"sum": n + 1} for n in range(4)]
        assert len(server.started()[before:]) == 1
    assert await asyncio.to_thread(server.wait_gone) == []


async def test_two_plans_at_once_each_end_cleanly(runtime: ToolRuntime, server: Server) -> None:
    """Two plans on one loop share the toolset's connection; both ends leave no server."""

    async def one(n: int) -> object:
        async with runtime.aplan() as ctx:
            return (await runtime.aexecute("add", {"a": n, "b": n}, ctx)).output

    assert await asyncio.gather(one(1), one(2)) == [{"sum": 2}, {"sum": 4}]
    assert await asyncio.to_thread(server.wait_gone) == []
