"""A stdio MCP server as a child process: start it, pump its pipes, end it for good.

We own this transport rather than use the SDK's ``stdio_client`` for what it
does not give us: the parent-death signal, the exit code and stderr tail for
error messages, a process registry for the exit handler, and a hard rule that
a line on stdout that is not JSON-RPC is a fault rather than noise.

The shutdown follows the MCP specification for stdio: close the server's
stdin, wait a grace period, SIGTERM, wait, SIGKILL. Each signal goes to the
whole process group (the server is started in a new session), so a server
started through ``npx``, ``uv run`` or a shell script leaves no grandchild.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
from collections import deque
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping, Sequence

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["LineSplitter", "StdioProcess", "StdioSpec"]

_log = logging.getLogger("toolcycle.sources.mcp.stderr")

# Shutdown timings, in seconds: after stdin closes, after SIGTERM, after SIGKILL.
STDIN_GRACE = 2.0
TERM_GRACE = 2.0
KILL_GRACE = 2.0
_POLL = 0.01
# How often a live connection checks that its server is still running, and how
# long after the server's exit its stdout may take to end before that is moot.
_EXIT_POLL = 0.1
_EXIT_GRACE = 0.2
# A message larger than this is a fault, not a reason to buffer without end.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A longer stderr line is kept and logged in pieces of this size.
MAX_STDERR_LINE = 64 * 1024
_TAIL_LINES = 20

# Process groups we started and have not yet seen end, for the exit handler.
_live: dict[int, str] = {}


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
    """Called (on the MCP loop) when the server's stdout ends or turns to garbage."""
    pid: int | None = None
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
        process = await asyncio.create_subprocess_exec(
            self.spec.command,
            *self.spec.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.spec.environment(),
            cwd=self.spec.cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent if _prctl is not None else None,
        )
        # No await between the spawn and the try below: a cancellation landing
        # there would leak the process.
        self.pid = process.pid
        _live[process.pid] = self.name
        to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as pumps:
                pumps.start_soon(self._read_stdout, process, to_session)
                pumps.start_soon(self._write_stdin, process, from_session, to_session)
                pumps.start_soon(self._read_stderr, process)
                pumps.start_soon(self._watch_exit, process)
                try:
                    yield from_server, to_server
                finally:
                    with anyio.CancelScope(shield=True):
                        await _stop(process)
                        self.exit_code = process.returncode
                    pumps.cancel_scope.cancel()
        finally:
            _live.pop(process.pid, None)
            for stream in (to_session, from_server, to_server, from_session):
                stream.close()
            with anyio.CancelScope(shield=True):
                await _drain(process)

    async def _read_stdout(
        self,
        process: asyncio.subprocess.Process,
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdout is not None
        splitter = LineSplitter()
        try:
            while chunk := await process.stdout.read(65536):
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
            await _settle_exit(process)
            self.exit_code = process.returncode
            self.on_lost()

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        """Call ``on_lost`` when the server exits, even if its stdout stays open.

        The end of stdout is the usual sign, but a helper the server started
        may hold the pipe after the server is gone, and a call in flight would
        then wait forever. Polling ``returncode``: ``process.wait()`` also
        waits for the pipes.
        """
        while process.returncode is None:
            await asyncio.sleep(_EXIT_POLL)
        await asyncio.sleep(_EXIT_GRACE)  # the usual way, if stdout ends now
        self.exit_code = process.returncode
        self.on_lost()

    async def _write_stdin(
        self,
        process: asyncio.subprocess.Process,
        from_session: MemoryObjectReceiveStream[SessionMessage],
        to_session: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                process.stdin.write(data.encode() + b"\n")
                await process.stdin.drain()
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the session instead of hanging it.
            to_session.close()

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        """Keep and log the server's stderr, line by line, until it ends.

        Reading must never stop early: a server whose stderr pipe fills up
        blocks on its next write. So a line longer than `MAX_STDERR_LINE` is
        taken in pieces of that size instead of ending the loop.
        """
        assert process.stderr is not None
        splitter = LineSplitter()
        with contextlib.suppress(OSError):
            while chunk := await process.stderr.read(65536):
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


async def _drain(process: asyncio.subprocess.Process, timeout: float = 1.0) -> None:
    """Read the ended server's pipes to their end, so that asyncio closes them.

    A pipe whose reader stopped early (a fault: a message over the cap) is left
    paused with data in it; it never sees its end and stays open, a file
    descriptor leaked until garbage collection. The server has ended by now, so
    the end is close; the wait is bounded for a grandchild that escaped its group.
    """
    with anyio.move_on_after(timeout), contextlib.suppress(OSError):
        for pipe in (process.stdout, process.stderr):
            if pipe is None:
                continue
            chunk = await pipe.read(65536)
            while chunk:  # read and dropped in chunks: a stray writer cannot fill memory
                chunk = await pipe.read(65536)


async def _settle_exit(process: asyncio.subprocess.Process, timeout: float = 1.0) -> None:
    """Give a server whose stdout ended a moment to exit, so its exit code is known."""
    with anyio.CancelScope(shield=True):
        await _wait_exit(process, timeout)


async def _wait_exit(process: asyncio.subprocess.Process, timeout: float) -> bool:
    # Polling returncode, not process.wait(): wait() also waits for pipe EOF, and
    # a grandchild holding the pipes would make an exited server look alive.
    deadline = time.monotonic() + timeout
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close stdin, wait, then SIGTERM and SIGKILL the whole group, each wait bounded."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    exited = await _wait_exit(process, STDIN_GRACE)
    group = process.pid
    if exited and not _group_alive(group):
        return
    # The leader is still running, or it left members of its group behind.
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while (_group_alive(group) or process.returncode is None) and time.monotonic() < deadline:
        await asyncio.sleep(_POLL)
    if _group_alive(group) or process.returncode is None:
        _signal_group(group, signal.SIGKILL)
        if not await _wait_exit(process, KILL_GRACE):  # pragma: no cover - unkillable
            logging.getLogger("toolcycle.sources.mcp").warning(
                "server process %d survived SIGKILL; abandoning it", process.pid
            )


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member we may not signal
        return True
    return True


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):  # pragma: no cover - Linux only
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - no libc symbol
        return None


# Looked up now: the child between fork and exec must not load libraries.
_prctl = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """In the child: ask the kernel for SIGTERM when the thread that started us ends."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@atexit.register
def _end_all() -> None:
    """At interpreter exit, end every server still running: SIGTERM, a moment, SIGKILL."""
    groups = list(_live)
    if not groups:
        return
    for group in groups:
        _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(_group_alive(g) for g in groups):
        time.sleep(_POLL)
    for group in groups:
        if _group_alive(group):
            _signal_group(group, signal.SIGKILL)
