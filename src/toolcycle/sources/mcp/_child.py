"""A stdio server's process: forked on the MCP thread, ended for good from any loop.

The kernel ties a child's parent-death signal (``PR_SET_PDEATHSIG``) to the
thread that forks it, not to the process: a server forked on a short-lived
thread (a worker's ``asyncio.run``) would be killed when that thread ends. So
every server is forked on the MCP loop's thread, which lives as long as the
process, whatever loop then drives its pipes (see ``_stdio`` and ``_sharing``).

The shutdown follows the MCP specification for stdio: close the server's
stdin, wait a grace period, SIGTERM, wait, SIGKILL. Each signal goes to the
whole process group (the server is started in a new session), so a server
started through ``npx``, ``uv run`` or a shell script leaves no grandchild.
Exits are seen by polling ``Popen.poll``, which also reaps the process.

Every process started and not yet ended is registered, for last resorts: the
exit handler ends them all at interpreter exit, and while any is driven from a
caller's loop, a keeper task on the MCP loop ends those whose loop closed under
them (nothing will run that loop's shutdown again), and those whose connection
was closed on a loop that did not run it in time (see `end_by`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from toolcycle.sources.mcp import _loop

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "KILL_GRACE",
    "STDIN_GRACE",
    "TERM_GRACE",
    "end_by",
    "forget",
    "spawn",
    "stop",
    "wait_exit",
]

# Shutdown timings, in seconds: after stdin closes, after SIGTERM, after SIGKILL.
STDIN_GRACE = 2.0
TERM_GRACE = 2.0
KILL_GRACE = 2.0
_POLL = 0.01
# How often the keeper looks for processes whose loop has closed.
_KEEP_POLL = 0.1

_log = logging.getLogger("toolcycle.sources.mcp")


@dataclass(slots=True, eq=False)
class _Started:
    """A process we started and have not yet seen end, and the loop driving its pipes."""

    popen: subprocess.Popen[bytes]
    name: str
    home: asyncio.AbstractEventLoop
    ending: bool = False
    deadline: float | None = None
    """When the keeper ends it if it still runs (see `end_by`)."""


# By process group (the server's pid). Changed from any thread: single dict
# operations, each atomic; readers iterate over a copy.
_live: dict[int, _Started] = {}
_keeper: asyncio.Task[None] | None = None
"""The task ending processes whose loop closed or did not end them in time; MCP loop only."""


async def spawn(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | None, name: str
) -> subprocess.Popen[bytes]:
    """Start a server with piped stdio, forked on the MCP thread, and register it.

    The caller owns it from then on and must `stop` it and `forget` it. A
    cancellation that lands while it starts ends the new process before it goes on.

    Raises:
        OSError: the command could not be started.
    """
    home = asyncio.get_running_loop()
    forking = asyncio.ensure_future(_loop.hop(_fork(argv, env, cwd, name, home)))
    try:
        return await asyncio.shield(forking)
    except asyncio.CancelledError:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):  # it failed to start: nothing to end
                popen = await forking
                try:
                    await stop(popen, _close_stdin(popen))
                finally:
                    _release(popen)
        raise


async def _fork(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    name: str,
    home: asyncio.AbstractEventLoop,
) -> subprocess.Popen[bytes]:
    """On the MCP loop: fork and exec the server, register it, watch its loop if foreign.

    Forked right here, in the loop's own thread, not in an executor: the thread
    that forks is the one whose end the parent-death signal follows.
    """
    popen = _popen(argv, env, cwd)
    _live[popen.pid] = _Started(popen, name, home)
    if home is not asyncio.get_running_loop():
        _keep_watch()
    return popen


def _popen(argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> subprocess.Popen[bytes]:
    try:
        return _start(argv, env, cwd)
    except FileNotFoundError as exc:
        command = argv[0]
        if len(argv) > 1 or len(command.split()) < 2 or os.path.exists(command):
            raise
        # A whole command line given as the command, as the command line's --mcp takes it.
        program, *args = command.split()
        raise FileNotFoundError(
            f"no program {command!r}: the command is one program, and its arguments go in "
            f"args, as in McpServer.stdio({program!r}, {args!r})"
        ) from exc


def _start(argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        bufsize=0,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        # Safe here: the hook calls one libc function looked up beforehand.
        preexec_fn=_die_with_parent if _prctl is not None else None,  # noqa: PLW1509
    )


def end_by(popen: subprocess.Popen[bytes], seconds: float) -> None:
    """From any thread: have the keeper end the process if it still runs ``seconds`` from now.

    For a connection whose close was handed to a caller's loop that may never
    run again; if that loop runs in time, its close ends the process first.
    """
    started = _live.get(popen.pid)
    if started is None or started.popen is not popen:
        return
    started.deadline = time.monotonic() + seconds
    _loop.event_loop().call_soon_threadsafe(_keep_watch)


def forget(popen: subprocess.Popen[bytes]) -> None:
    """Drop an ended process from the registry (see `stop`)."""
    _live.pop(popen.pid, None)


async def wait_exit(popen: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait (bounded) until the process has exited; False if it still runs.

    Polling, not ``wait()``: it would block the loop, and a grandchild holding
    the pipes must not make an exited server look alive.
    """
    deadline = time.monotonic() + timeout
    while popen.poll() is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def stop(popen: subprocess.Popen[bytes], close_stdin: Callable[[], None] | None) -> None:
    """Close stdin, wait, then SIGTERM and SIGKILL the whole group, each wait bounded.

    Without ``close_stdin`` (its pipe belongs to another loop) it starts at SIGTERM.
    """
    if close_stdin is None:
        exited = popen.poll() is not None
    else:
        with contextlib.suppress(OSError):
            close_stdin()
        exited = await wait_exit(popen, STDIN_GRACE)
    group = popen.pid
    if exited and not _group_alive(group):
        return
    # The leader is still running, or it left members of its group behind.
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while (_group_alive(group) or popen.poll() is None) and time.monotonic() < deadline:
        await asyncio.sleep(_POLL)
    if _group_alive(group) or popen.poll() is None:
        _signal_group(group, signal.SIGKILL)
        if not await wait_exit(popen, KILL_GRACE):  # pragma: no cover - unkillable
            _log.warning("server process %d survived SIGKILL; abandoning it", popen.pid)


def _close_stdin(popen: subprocess.Popen[bytes]) -> Callable[[], None]:
    """What closes the process's stdin file directly, when no loop drives it (any more)."""
    stdin = popen.stdin
    assert stdin is not None  # piped, see _popen
    return stdin.close


# -- the keeper: processes whose loop closed under them ------------------------------------------


def _keep_watch() -> None:
    """On the MCP loop: make sure the keeper runs."""
    global _keeper
    if _keeper is None or _keeper.done():
        _keeper = asyncio.get_running_loop().create_task(_keep(), name="toolcycle-mcp-keeper")


async def _keep() -> None:
    """End each process whose loop closed or whose deadline passed; return once none is left."""
    here = asyncio.get_running_loop()
    ending: set[asyncio.Task[None]] = set()
    while foreign := [s for s in list(_live.values()) if s.home is not here]:
        now = time.monotonic()
        for started in foreign:
            closed = started.home.is_closed()
            late = started.deadline is not None and now >= started.deadline
            if (closed or late) and not started.ending:
                started.ending = True
                task = here.create_task(_end_orphan(started, closed=closed))
                ending.add(task)
                task.add_done_callback(ending.discard)
        await asyncio.sleep(_KEEP_POLL)


async def _end_orphan(started: _Started, *, closed: bool) -> None:
    """End a process its loop did not end: that loop closed, or did not run in time."""
    popen = started.popen
    if not closed:
        # Its loop may yet run and close the pipes itself: only signal the group.
        try:
            await stop(popen, None)
        finally:
            forget(popen)
        return
    try:
        await stop(popen, _close_stdin(popen))
    finally:
        _release(popen)


def _release(popen: subprocess.Popen[bytes]) -> None:
    """Forget an ended process no loop drives, and close its pipes here.

    A loop's pipe transports would close them; these have none, or theirs
    closed with their loop and will never run again.
    """
    forget(popen)
    for pipe in [p for p in (popen.stdin, popen.stdout, popen.stderr) if p is not None]:
        pipe.close()


# -- signals -----------------------------------------------------------------------------------


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
    """In the child: ask the kernel for SIGTERM when the thread that forked us ends."""
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
