"""A stdio MCP server as a child process: start it, pump its pipes, end it for good.

We own this transport rather than use the SDK's ``stdio_client`` for what it
does not give us: the parent-death signal, the exit code and stderr tail for
error messages, a process registry for the exit handler, and a hard rule that
a line on stdout that is not JSON-RPC is a fault rather than noise.

The process is forked on the MCP thread and ended as the specification asks
(see ``_child``); its pipes are driven on the loop the connection lives on,
the MCP loop or an async caller's own (``same_loop``, see ``_sharing``), so
that a call from that caller crosses no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

import anyio
import mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from toolcycle.sources.mcp import _child

if TYPE_CHECKING:
    import subprocess
    from collections.abc import AsyncIterator, Callable, Mapping, Sequence
    from contextlib import AbstractAsyncContextManager

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client._transport import TransportStreams

__all__ = ["LineSplitter", "StdioEndpoint", "StdioProcess", "StdioSpec"]

_log = logging.getLogger("toolcycle.sources.mcp.stderr")

# How often a live connection checks that its server is still running, and how
# long after the server's exit its stdout may take to end before that is moot.
_EXIT_POLL = 0.1
_EXIT_GRACE = 0.2
# A message larger than this is a fault, not a reason to buffer without end.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A longer stderr line is kept and logged in pieces of this size.
MAX_STDERR_LINE = 64 * 1024
_TAIL_LINES = 20
_CHUNK = 65536


class LineSplitter:
    """Cuts a byte stream into its lines, in time linear in the stream's length.

    Each chunk is searched once. A line that spans chunks is kept as its pieces
    and joined once, when its newline arrives: re-joining and re-splitting the
    whole unfinished line on every chunk made a 16 MB message cost 2.3 s of the
    MCP loop, which every connection on it shares.
    """

    __slots__ = ("_pieces", "pending")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self.pending = 0
        """The bytes of the unfinished line so far."""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` finishes, without their newlines."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            line = chunk[start:end]
            if self._pieces:
                self._pieces.append(line)
                line = b"".join(self._pieces)
                self._pieces.clear()
                self.pending = 0
            lines.append(line)
            start = end + 1
        if start < len(chunk):
            self._pieces.append(chunk[start:])
            self.pending += len(chunk) - start
        return lines

    def flush(self) -> bytes:
        """The unfinished line so far, which the splitter then forgets."""
        line = b"".join(self._pieces)
        self._pieces.clear()
        self.pending = 0
        return line


@dataclass(frozen=True, slots=True)
class StdioSpec:
    """How to start one stdio server."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def environment(self) -> dict[str, str]:
        """The SDK's minimal inherited environment, with the user's variables over it."""
        return get_default_environment() | dict(self.env or {})


@dataclass(slots=True)
class StdioProcess:
    """One run of a server process, and what it left behind for error messages."""

    spec: StdioSpec
    name: str
    on_lost: Callable[[], None]
    """Called (on the connection's loop) when the server's stdout ends or turns to garbage."""
    pid: int | None = None
    popen: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None
    fault: str | None = None
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=_TAIL_LINES))

    def diagnostics(self) -> str:
        """Exit code, fault and stderr tail as one parenthesised phrase, or ''."""
        parts = []
        if self.fault:
            parts.append(self.fault)
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.stderr_tail:
            parts.append("stderr ends with:\n  " + "\n  ".join(self.stderr_tail))
        return "; ".join(parts)

    def expire(self, seconds: float) -> None:
        """Have the process ended from the MCP thread if it still runs ``seconds`` from now."""
        if self.popen is not None:
            _child.end_by(self.popen, seconds)

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncIterator[
        tuple[
            MemoryObjectReceiveStream[SessionMessage | Exception],
            MemoryObjectSendStream[SessionMessage],
        ]
    ]:
        """Start the server and yield the session's two streams; end it on exit."""
        spec = self.spec
        popen = await _child.spawn(
            [spec.command, *spec.args], spec.environment(), spec.cwd, self.name
        )
        # No await between the spawn and the try below: a cancellation landing
        # there would leak the process.
        self.pid, self.popen = popen.pid, popen
        pipes = _Pipes(popen)
        stopped = False
        to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            stdin, stdout, stderr = await pipes.connect()
            async with anyio.create_task_group() as pumps:
                pumps.start_soon(self._read_stdout, popen, stdout, to_session)
                pumps.start_soon(self._write_stdin, stdin, from_session, to_session)
                pumps.start_soon(self._read_stderr, stderr)
                pumps.start_soon(self._watch_exit, popen)
                try:
                    yield from_server, to_server
                finally:
                    with anyio.CancelScope(shield=True):
                        await _child.stop(popen, stdin.close)
                        self.exit_code = popen.returncode
                        stopped = True
                    pumps.cancel_scope.cancel()
        finally:
            for stream in (to_session, from_server, to_server, from_session):
                stream.close()
            if not stopped:  # the pipes did not connect: closing them tells the server
                with anyio.CancelScope(shield=True):
                    await _child.stop(popen, pipes.close)
                    self.exit_code = popen.returncode
            pipes.close()
            _child.forget(popen)

    async def _read_stdout(
        self,
        popen: subprocess.Popen[bytes],
        stdout: asyncio.StreamReader,
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        splitter = LineSplitter()
        try:
            while chunk := await stdout.read(_CHUNK):
                lines = splitter.feed(chunk)
                if splitter.pending > MAX_MESSAGE_BYTES:
                    self.fault = f"sent a message larger than {MAX_MESSAGE_BYTES} bytes"
                    return
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                    except ValueError:
                        text = line[:200].decode("utf-8", errors="replace")
                        self.fault = f"wrote a line to stdout that is not JSON-RPC: {text!r}"
                        return
                    await to_session.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone; shutdown is under way
        finally:
            to_session.close()
            with anyio.CancelScope(shield=True):
                # Give a server whose stdout ended a moment to exit, so its exit code is known.
                await _child.wait_exit(popen, 1.0)
            self.exit_code = popen.returncode
            self.on_lost()

    async def _watch_exit(self, popen: subprocess.Popen[bytes]) -> None:
        """Call ``on_lost`` when the server exits, even if its stdout stays open.

        The end of stdout is the usual sign, but a helper the server started
        may hold the pipe after the server is gone, and a call in flight would
        then wait forever.
        """
        while popen.poll() is None:
            await asyncio.sleep(_EXIT_POLL)
        await asyncio.sleep(_EXIT_GRACE)  # the usual way, if stdout ends now
        self.exit_code = popen.returncode
        self.on_lost()

    async def _write_stdin(
        self,
        stdin: _Writer,
        from_session: MemoryObjectReceiveStream[SessionMessage],
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        try:
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stdin.write(data.encode() + b"\n")
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the session instead of hanging it.
            to_session.close()

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        """Keep and log the server's stderr, line by line, until it ends.

        Reading must never stop early: a server whose stderr pipe fills up
        blocks on its next write. So a line longer than `MAX_STDERR_LINE` is
        taken in pieces of that size instead of ending the loop.
        """
        splitter = LineSplitter()
        with contextlib.suppress(OSError):
            while chunk := await stderr.read(_CHUNK):
                for line in splitter.feed(chunk):
                    self._heard(line)
                if splitter.pending > MAX_STDERR_LINE:
                    self._heard(splitter.flush())
        if splitter.pending:  # the last line had no newline
            self._heard(splitter.flush())

    def _heard(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip()
        self.stderr_tail.append(text[:500])
        _log.debug("%s: %s", self.name, text)


@dataclass(frozen=True, slots=True)
class StdioEndpoint:
    """Where a stdio server is: how to start it (see `McpServer.stdio`)."""

    spec: StdioSpec
    name: str
    same_loop: bool | None = None
    """As for an in-process server (see `McpServer.stdio`)."""

    def streams(
        self, on_lost: Callable[[], None]
    ) -> tuple[AbstractAsyncContextManager[TransportStreams], StdioProcess | None]:
        """A fresh process for one connection, and its streams to connect with."""
        process = StdioProcess(self.spec, self.name, on_lost)
        return process.connect(), process


class _Writer(asyncio.Protocol):
    """The server's stdin as a pipe transport on the running loop, with flow control."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self._paused = False
        self._resumed: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def close(self) -> None:
        """Close the server's stdin: its signal to exit."""
        assert self.transport is not None  # connect_write_pipe waits for connection_made
        self.transport.close()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("the server closed its stdin")
        self._wake()

    def _wake(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)

    async def write(self, data: bytes) -> None:
        """Write ``data``, then wait while the pipe is full (the server reads slowly).

        Raises:
            OSError: the pipe is closed.
        """
        if self._lost is not None or self.transport is None or self.transport.is_closing():
            raise BrokenPipeError("the server's stdin is closed")
        self.transport.write(data)
        while self._paused and self._lost is None:
            self._resumed = asyncio.get_running_loop().create_future()
            await self._resumed


class _Pipes:
    """A process's three pipes as transports on the running loop, and closing them."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self._transports: list[asyncio.BaseTransport] = []
        self._unattached: list[IO[bytes]] = [
            p for p in (popen.stdin, popen.stdout, popen.stderr) if p is not None
        ]

    async def connect(self) -> tuple[_Writer, asyncio.StreamReader, asyncio.StreamReader]:
        """Drive stdin, stdout and stderr of the process on the running loop."""
        popen = self._popen
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        loop = asyncio.get_running_loop()
        writing, stdin = await loop.connect_write_pipe(_Writer, popen.stdin)
        self._attached(popen.stdin, writing)
        readers = []
        for pipe in (popen.stdout, popen.stderr):
            reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
            reading, _ = await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader, loop=loop), pipe
            )
            self._attached(pipe, reading)
            readers.append(reader)
        return stdin, readers[0], readers[1]

    def _attached(self, pipe: IO[bytes], transport: asyncio.BaseTransport) -> None:
        self._unattached.remove(pipe)
        self._transports.append(transport)

    def close(self) -> None:
        """Close every pipe, read to its end or not (those a cancellation left unattached too)."""
        for transport in self._transports:
            transport.close()
        for pipe in self._unattached:
            pipe.close()
