"""What toolcycle adds to a call to an MCP tool, and to connecting to an MCP server.

Each toolcycle benchmark has a twin that talks to the same kind of server with the
SDK alone, so that the ratio of the two is what the runtime costs:

- Calls, in process and over stdio: ``runtime.execute("add", ...)`` and
  ``runtime.aexecute`` with a warm activation (one plan kept open for the whole
  run, a null tracer), against an SDK ``ClientSession`` that the benchmark holds
  open itself and sends the same request on.
- Activation over stdio: a new plan that activates one tool (start the server
  process, ``initialize``) and ends (stop the process), against entering and
  leaving ``stdio_client`` and ``ClientSession`` with an ``initialize`` in between.

The direct sessions send ``tools/call`` with ``session.send_request(CallToolRequest,
CallToolResult)``, the same request and result parsing the runtime's connection
uses. ``session.call_tool`` is not used: in SDK 2.x it lists the server's tools the
first time it meets a tool name (to learn its output schema) and then checks the
structured content against that schema, work that toolcycle leaves to the runtime's
own output validation, so it would not compare like with like.

The direct sessions live on one event loop in this thread, each opened and served
by a task of its own that stays parked between runs, so the loop, the session and
the server are all warm; a run drives the loop once and awaits a batch of calls in
it, as the async runtime benchmarks do. ``aexecute`` is batched the same way on the
same loop. An in-process plan first activated from the benchmark's loop keeps its
connection there (the default), so its calls cross no thread; one more in-process
server made with ``same_loop=False`` keeps the older path, a hop to the runtime's
MCP loop for each call. Over stdio the same holds: ``aexecute`` runs in a plan
first activated from the benchmark's loop, whose connection (the process's pipes)
lives there; the plan ``execute`` uses was activated from sync code and lives on
the MCP loop, and ``aexecute`` in it is timed too, a hop each call. ``execute`` has
no loop to batch in: it is timed one call at a time, like a sync caller makes them,
against both the batched session and its sync twin: the same SDK session on a
loop in a thread of its own, handed one call at a time, which is what sync code
must do to use the SDK at all.

The runtime asks the server for progress reports on every call (the trace counts
them), which the SDK does only when given a ``progress_callback``: the server then
gets a progress token in the request's ``_meta``. One more in-process twin asks for
progress the same way, so the runner prints the ratio against it too, and what
asking for progress costs the SDK alone.

Three more benchmarks put a fixed piece of caller work (reading a model's reply and
writing a message, with the standard library's ``json``) after each call, with the SDK
alone and with the in-process ``aexecute``, and time that work alone. In a loop of
nothing but SDK calls, the caches hold only the SDK's code; any other code run between
two calls (the runtime's, or a caller's) runs cold and slows the next call too. The
runner prints what the work costs between calls beside what it costs alone.

Batched functions say how many calls they make in their ``calls`` attribute. The
two activation benchmarks start a process each time (about a second), so they say
``number = 1`` and ``repeat = ACTIVATION_REPEATS``: run once per repeat, a fixed
number of times, rather than calibrated by timeit. ``setup()`` opens everything
and ``teardown()`` closes every runtime, session and server process it opened.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import threading
import warnings
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types
from mcp.client import Client, ClientSession
from mcp.client._memory import InMemoryTransport
from mcp.client.stdio import StdioServerParameters, stdio_client

from toolcycle import NullTracer, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.mcp import McpServer
from toolcycle.sources.mcp._stdio import LineSplitter

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager
    from types import ModuleType

    from mcp.client._transport import TransportStreams

SERVERS = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "servers.py"
"""The test suite's MCP server: ``build()`` for in process, run as a script for stdio."""

ASYNC_BATCH = 100
"""Calls awaited per run of a batched in-process benchmark."""

STDIO_BATCH = 20
"""Calls awaited per run of a batched stdio benchmark (each is a round trip to a process)."""

ACTIVATION_REPEATS = 9
"""How many times each activation benchmark runs; the runner reports best and median."""

ROUNDS = 11
"""Repeats of every other benchmark, in turns, for the restated target's paired ratios."""

ARGUMENTS = {"a": 2, "b": 3}


def _load_servers() -> ModuleType:
    """Import tests/mcp/servers.py by its path (the tests are not a package on the path)."""
    spec = importlib.util.spec_from_file_location("_bench_mcp_servers", SERVERS)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the test MCP server from {SERVERS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _register(runtime: ToolRuntime, server: McpServer) -> None:
    # The test server lists two tools with invalid schemas on purpose; they are skipped.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSkippedWarning)
        runtime.register_source(server)


def _stdio_parameters() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SERVERS)])


def _add_request() -> mcp_types.CallToolRequest:
    return mcp_types.CallToolRequest(
        params=mcp_types.CallToolRequestParams(name="add", arguments=dict(ARGUMENTS))
    )


async def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


class _DirectSession:
    """An SDK session opened, held and closed by one task on ``loop``.

    The transport and the session are anyio contexts that the task entering them
    must also leave, so one owner task does both and waits in between; calls only
    use the session it holds.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: Callable[[], AbstractAsyncContextManager[TransportStreams]],
    ) -> None:
        self._loop = loop
        self._transport = transport
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.session: ClientSession | None = None

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._stop.wait()
        finally:
            self.session = None
            self._ready.set()

    async def start(self) -> None:
        """Start the owner task on the running loop and wait until the session is ready."""
        self._task = asyncio.get_running_loop().create_task(self._own())
        await self._ready.wait()
        if self.session is None:
            await self._task  # raises why it did not open
            raise RuntimeError("the direct MCP session closed while opening")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    def open(self) -> None:
        self._loop.run_until_complete(self.start())

    def close(self) -> None:
        self._loop.run_until_complete(self.stop())

    async def batch(self, count: int) -> None:
        session = self.session
        assert session is not None
        for _ in range(count):
            await session.send_request(_add_request(), mcp_types.CallToolResult)

    async def batch_with_progress(self, count: int) -> None:
        """The same calls, each asking for progress reports as the runtime's do."""
        session = self.session
        assert session is not None
        for _ in range(count):
            await session.send_request(
                _add_request(), mcp_types.CallToolResult, progress_callback=_ignore_progress
            )


class _SyncDirect:
    """The SDK driven from sync code: a session on a loop in a thread of its own.

    A sync caller cannot await, so to use the SDK it must keep a loop running in
    another thread and hand each call to it, waiting on the answer; this is the
    cheapest way to do that, and the like-for-like twin of ``runtime.execute``.
    """

    def __init__(
        self, transport: Callable[[], AbstractAsyncContextManager[TransportStreams]]
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._direct = _DirectSession(self._loop, transport)

    def open(self) -> None:
        asyncio.run_coroutine_threadsafe(self._direct.start(), self._loop).result()

    def call(self) -> None:
        asyncio.run_coroutine_threadsafe(self._direct.batch(1), self._loop).result()

    def close(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._direct.stop(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()


class _SdkClient:
    """The SDK's own ``Client(server)`` of an in-process server, held open by one owner task.

    This is what an SDK user gets for an in-process server: the direct dispatcher on
    the 2026-07-28 protocol, and ``call_tool`` as the SDK's documented call.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, server: Any) -> None:
        self._loop = loop
        self._server = server
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.client: Client | None = None

    async def _own(self) -> None:
        try:
            async with Client(self._server) as client:
                self.client = client
                self._ready.set()
                await self._stop.wait()
        finally:
            self.client = None
            self._ready.set()

    def open(self) -> None:
        async def start() -> None:
            self._task = asyncio.get_running_loop().create_task(self._own())
            await self._ready.wait()

        self._loop.run_until_complete(start())

    def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._loop.run_until_complete(self._task)

    async def batch(self, count: int) -> None:
        client = self.client
        assert client is not None
        for _ in range(count):
            await client.call_tool("add", ARGUMENTS)


_state: dict[str, Any] = {}


def setup() -> None:
    """Start the servers, open the plans and the direct sessions, warm every path once."""
    if _state:
        return
    servers = _load_servers()
    loop = asyncio.new_event_loop()
    _state["loop"] = loop
    _state["devnull"] = open(os.devnull, "w")  # noqa: SIM115 - closed by teardown()
    try:
        local = ToolRuntime(tracer=NullTracer())
        _state["local"] = local
        _register(local, McpServer.in_process(servers.build(), name="local"))
        same = ToolRuntime(tracer=NullTracer())
        _state["same"] = same
        _register(same, McpServer.in_process(servers.build(), name="same"))
        hop = ToolRuntime(tracer=NullTracer())
        _state["hop"] = hop
        _register(hop, McpServer.in_process(servers.build(), name="hop", same_loop=False))
        remote = ToolRuntime(tracer=NullTracer())
        _state["remote"] = remote
        _register(remote, McpServer.stdio(sys.executable, [str(SERVERS)], name="remote"))
        _state["local_ctx"] = local.new_context("bench-local")
        _state["remote_ctx"] = remote.new_context("bench-remote")
        _state["remote_same_ctx"] = remote.new_context("bench-remote-same")
        _state["same_ctx"] = same.new_context("bench-same")
        _state["hop_ctx"] = hop.new_context("bench-hop")
        # Activated from the benchmark's loop, so the connection lives on it
        # (the hop server's on the MCP loop, as same_loop=False asks).
        loop.run_until_complete(same.aexecute("add", ARGUMENTS, _state["same_ctx"]))
        loop.run_until_complete(hop.aexecute("add", ARGUMENTS, _state["hop_ctx"]))
        loop.run_until_complete(remote.aexecute("add", ARGUMENTS, _state["remote_same_ctx"]))

        def in_memory() -> AbstractAsyncContextManager[TransportStreams]:
            return InMemoryTransport(servers.build())

        def over_stdio() -> AbstractAsyncContextManager[TransportStreams]:
            return stdio_client(_stdio_parameters(), errlog=_state["devnull"])

        for key, transport in (("direct_local", in_memory), ("direct_remote", over_stdio)):
            direct = _DirectSession(loop, transport)
            direct.open()
            _state[key] = direct
            threaded = _SyncDirect(transport)
            _state[f"sync_{key}"] = threaded
            threaded.open()
            threaded.call()
        sdk = _SdkClient(loop, servers.build())
        sdk.open()
        _state["sdk_client"] = sdk
        loop.run_until_complete(sdk.batch(1))
        for runtime, ctx, direct in (
            (local, _state["local_ctx"], _state["direct_local"]),
            (remote, _state["remote_ctx"], _state["direct_remote"]),
        ):
            runtime.execute("add", ARGUMENTS, ctx)
            loop.run_until_complete(runtime.aexecute("add", ARGUMENTS, ctx))
            loop.run_until_complete(direct.batch(1))
    except BaseException:
        teardown()
        raise


def teardown() -> None:
    """Close the runtimes (their plans and servers), the direct sessions and the loop."""
    if not _state:
        return
    if "same_ctx" in _state:  # its connection closes on the loop it lives on
        _state["loop"].run_until_complete(_state["same"].aend_plan(_state["same_ctx"]))
    if "remote_same_ctx" in _state:  # so does this one, and its process ends
        _state["loop"].run_until_complete(_state["remote"].aend_plan(_state["remote_same_ctx"]))
    for key in ("local", "remote", "same", "hop"):
        if key in _state:
            _state[key].close()
    for key in (
        "direct_local",
        "direct_remote",
        "sync_direct_local",
        "sync_direct_remote",
        "sdk_client",
    ):
        if key in _state:
            _state[key].close()
    loop = _state["loop"]
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    _state["devnull"].close()
    _state.clear()


async def _aexecute_batch(runtime: ToolRuntime, ctx: Any, count: int) -> None:
    for _ in range(count):
        await runtime.aexecute("add", ARGUMENTS, ctx)


def time_mcp_direct_inprocess() -> None:
    """SDK session over InMemoryTransport: send_request(CallToolRequest), batched."""
    _state["loop"].run_until_complete(_state["direct_local"].batch(ASYNC_BATCH))


time_mcp_direct_inprocess.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_mcp_sdk_client_inprocess() -> None:
    """The SDK's own Client(server).call_tool of the in-process tool, batched."""
    _state["loop"].run_until_complete(_state["sdk_client"].batch(ASYNC_BATCH))


time_mcp_sdk_client_inprocess.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_mcp_direct_inprocess_progress() -> None:
    """The in-process SDK session asked for progress on each call (a progress token), batched."""
    _state["loop"].run_until_complete(_state["direct_local"].batch_with_progress(ASYNC_BATCH))


time_mcp_direct_inprocess_progress.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_mcp_sync_direct_inprocess() -> None:
    """The in-process SDK session from sync code: one call handed to its loop thread."""
    _state["sync_direct_local"].call()


def time_mcp_sync_direct_stdio() -> None:
    """The stdio SDK session from sync code: one call handed to its loop thread."""
    _state["sync_direct_remote"].call()


def time_mcp_execute_inprocess() -> None:
    """runtime.execute of an in-process MCP tool, warm activation, null tracer."""
    _state["local"].execute("add", ARGUMENTS, _state["local_ctx"])


def time_mcp_aexecute_inprocess() -> None:
    """Await runtime.aexecute of an in-process MCP tool whose plan lives on this loop, batched."""
    _state["loop"].run_until_complete(
        _aexecute_batch(_state["same"], _state["same_ctx"], ASYNC_BATCH)
    )


time_mcp_aexecute_inprocess.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_mcp_aexecute_inprocess_hop() -> None:
    """Await runtime.aexecute of an in-process same_loop=False tool: a hop to the MCP loop."""
    _state["loop"].run_until_complete(
        _aexecute_batch(_state["hop"], _state["hop_ctx"], ASYNC_BATCH)
    )


time_mcp_aexecute_inprocess_hop.calls = ASYNC_BATCH  # type: ignore[attr-defined]


REPLY = json.dumps(
    {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": f"call-{n}", "function": {"name": "add", "arguments": '{"a": 2}'}}
                        for n in range(4)
                    ],
                }
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    }
)
"""A model's reply with four tool calls, as a chat API returns it."""


def _caller_work() -> str:
    """What a caller does between two tool calls: read a model's reply, write a message.

    Plain standard-library JSON, nothing of toolcycle's or the SDK's, so that the
    "with work" benchmarks show what any code run between two SDK calls pays.
    """
    reply = json.loads(REPLY)
    calls = reply["choices"][0]["message"]["tool_calls"]
    arguments = [json.loads(call["function"]["arguments"]) for call in calls]
    return json.dumps({"role": "tool", "content": json.dumps(arguments)})


async def _work_batch(count: int) -> None:
    for _ in range(count):
        _caller_work()


def time_mcp_caller_work() -> None:
    """The caller's work alone (a model reply read, a message written), batched."""
    _state["loop"].run_until_complete(_work_batch(ASYNC_BATCH))


async def _direct_with_work(count: int) -> None:
    session = _state["direct_local"].session
    for _ in range(count):
        await session.send_request(_add_request(), mcp_types.CallToolResult)
        _caller_work()


def time_mcp_direct_inprocess_with_work() -> None:
    """The in-process SDK call with the caller's work after each call, batched."""
    _state["loop"].run_until_complete(_direct_with_work(ASYNC_BATCH))


async def _aexecute_with_work(count: int) -> None:
    runtime, ctx = _state["same"], _state["same_ctx"]
    for _ in range(count):
        await runtime.aexecute("add", ARGUMENTS, ctx)
        _caller_work()


def time_mcp_aexecute_inprocess_with_work() -> None:
    """The in-process tool through aexecute on its plan's loop, with the caller's work after each."""
    _state["loop"].run_until_complete(_aexecute_with_work(ASYNC_BATCH))


for _bench in (
    time_mcp_caller_work,
    time_mcp_direct_inprocess_with_work,
    time_mcp_aexecute_inprocess_with_work,
):
    _bench.calls = ASYNC_BATCH  # type: ignore[attr-defined]


MESSAGE_CHUNKS = [b"x" * 65536] * 256 + [b"\n"]
"""A 16 MiB message as a stdio server's pipe delivers it: 64 KiB reads, then its newline."""


def time_stdio_lines_16mib() -> None:
    """Cut a 16 MiB message out of its 64 KiB reads, as the stdio transport does."""
    splitter = LineSplitter()
    for chunk in MESSAGE_CHUNKS:
        splitter.feed(chunk)


def time_stdio_lines_16mib_joined() -> None:
    """The least that work can cost: join the reads once and split the whole."""
    b"".join(MESSAGE_CHUNKS).split(b"\n")


for _bench in (time_stdio_lines_16mib, time_stdio_lines_16mib_joined):
    _bench.number = 5  # type: ignore[attr-defined]


def time_mcp_direct_stdio() -> None:
    """SDK session over stdio_client: send_request(CallToolRequest), batched."""
    _state["loop"].run_until_complete(_state["direct_remote"].batch(STDIO_BATCH))


time_mcp_direct_stdio.calls = STDIO_BATCH  # type: ignore[attr-defined]


def time_mcp_execute_stdio() -> None:
    """runtime.execute of a tool on a stdio server process, warm activation, null tracer."""
    _state["remote"].execute("add", ARGUMENTS, _state["remote_ctx"])


def time_mcp_aexecute_stdio() -> None:
    """Await runtime.aexecute of a stdio server's tool whose plan lives on this loop, batched."""
    _state["loop"].run_until_complete(
        _aexecute_batch(_state["remote"], _state["remote_same_ctx"], STDIO_BATCH)
    )


time_mcp_aexecute_stdio.calls = STDIO_BATCH  # type: ignore[attr-defined]


def time_mcp_aexecute_stdio_hop() -> None:
    """Await runtime.aexecute of a stdio tool whose plan lives on the MCP loop: a hop each call."""
    _state["loop"].run_until_complete(
        _aexecute_batch(_state["remote"], _state["remote_ctx"], STDIO_BATCH)
    )


time_mcp_aexecute_stdio_hop.calls = STDIO_BATCH  # type: ignore[attr-defined]


def time_mcp_activation_stdio() -> None:
    """A new plan activates the stdio server's tool (start, initialize), then ends (stop)."""
    runtime = _state["remote"]
    with runtime.plan() as ctx:
        runtime.activate("add", ctx)


time_mcp_activation_stdio.number = 1  # type: ignore[attr-defined]
time_mcp_activation_stdio.repeat = ACTIVATION_REPEATS  # type: ignore[attr-defined]
time_mcp_activation_stdio.warmup_time = 0  # type: ignore[attr-defined]


async def _open_and_close() -> None:
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(
            stdio_client(_stdio_parameters(), errlog=_state["devnull"])
        )
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()


def time_mcp_direct_session_open_stdio() -> None:
    """Enter stdio_client and ClientSession, initialize, leave both (start and stop)."""
    _state["loop"].run_until_complete(_open_and_close())


time_mcp_direct_session_open_stdio.number = 1  # type: ignore[attr-defined]
time_mcp_direct_session_open_stdio.repeat = ACTIVATION_REPEATS  # type: ignore[attr-defined]
time_mcp_direct_session_open_stdio.warmup_time = 0  # type: ignore[attr-defined]
