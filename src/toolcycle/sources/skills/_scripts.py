"""Running a skill's bundled script in a subprocess that never outlives its call.

The script runs in its own process group (a new session), with the skill's
folder as working directory, a small environment and capped output. However
the call ends, returning, timing out or cancelled, the whole group is killed
and the script reaped before the call returns, so nothing it started keeps
running: only a process that starts a session of its own can escape, as with
any process-group based supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from typing import TYPE_CHECKING, Any

from toolcycle.sources.skills._files import SkillFileError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["command_for", "minimal_environment", "run_script"]

# What a script needs to find programs and write temporary files, and no more:
# the host's secrets stay in the host.
_INHERITED = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "PATH", "SYSTEMROOT", "TEMP", "TMP", "TMPDIR")
# How long the pipes may stay open after the script and its group are gone.
_DRAIN_SECONDS = 2.0


def minimal_environment(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The inherited variables that exist, then ``extra`` on top."""
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    env.update(extra or {})
    return env


def command_for(script: Path, requested: str) -> list[str]:
    """How to start ``script``: Python files with this interpreter, shell files with sh.

    Raises:
        SkillFileError: it is not a regular file, or neither has a known
            extension nor is executable.
    """
    if not script.is_file():
        raise SkillFileError(f"the skill has no script {requested!r}")
    suffix = script.suffix.lower()
    if suffix == ".py":
        return [sys.executable, str(script)]
    if suffix in {".sh", ".bash"}:
        shell = shutil.which("bash") if suffix == ".bash" else None
        return [shell or "/bin/sh", str(script)]
    if os.access(script, os.X_OK):
        return [str(script)]
    raise SkillFileError(
        f"the script {requested!r} cannot be run: it is neither a .py or .sh file nor executable"
    )


async def run_script(
    command: list[str],
    *,
    cwd: Path,
    stdin: str | None,
    env: dict[str, str],
    max_output_bytes: int,
) -> dict[str, Any]:
    """Run ``command`` to its end and return its exit code and capped output.

    The script's end is its exit, not the end of its pipes: a background
    process it left holding them is killed with its group, not waited for.
    Cancelling the awaiting task (a timeout, the plan's cancellation) kills the
    process group and waits for the script before the cancellation goes on.
    """
    loop = asyncio.get_running_loop()
    transport, capture = await loop.subprocess_exec(
        lambda: _Capture(loop, max_output_bytes),
        *command,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    finished = False
    try:
        _feed(transport, stdin)
        # Shielded: cancelling this wait must not cancel the future _settle awaits.
        await asyncio.shield(capture.exited)
        finished = True
    finally:
        # Whatever the script left in its group dies with it, and on cancellation
        # the script itself; the pipes then reach their end.
        _kill_group(transport.get_pid())
        await asyncio.shield(_settle(transport, capture, drain=finished))
    exit_code = transport.get_returncode()
    assert exit_code is not None
    out, out_cut = capture.output(1)
    err, err_cut = capture.output(2)
    return {
        "exit_code": exit_code,
        "stdout": out,
        "stderr": err,
        "stdout_truncated": out_cut,
        "stderr_truncated": err_cut,
    }


class _Capture(asyncio.SubprocessProtocol):
    """Keeps the first ``limit`` bytes of stdout and of stderr, reads (and drops) the rest.

    Reading never stops, so a script writing more than it may keep never blocks
    on a full pipe; ``exited`` is set when the script exits, whether or not its
    pipes are still held open, ``closed`` when both output pipes have ended.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self._limit = limit
        self._kept = {1: bytearray(), 2: bytearray()}
        self._cut = {1: False, 2: False}
        self._open = {1, 2}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data if isinstance(data, bytes) else data.encode()  # pipes are binary
        kept = self._kept[fd]
        room = self._limit - len(kept)
        if len(chunk) > room:
            self._cut[fd] = True
        kept += chunk[: max(room, 0)]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def output(self, fd: int) -> tuple[str, bool]:
        """The text kept from ``fd``, and whether some was left out (or never came)."""
        cut = self._cut[fd] or fd in self._open
        return self._kept[fd].decode("utf-8", errors="replace"), cut


def _feed(transport: asyncio.SubprocessTransport, text: str | None) -> None:
    """Give ``text`` to the script's input and close it; the loop writes it as it is read."""
    pipe = transport.get_pipe_transport(0)
    if text is None or pipe is None:
        return
    assert isinstance(pipe, asyncio.WriteTransport)
    if text:
        pipe.write(text.encode())
    pipe.close()  # a script that stops reading ends the writing: a broken pipe is no error


async def _settle(
    transport: asyncio.SubprocessTransport, capture: _Capture, *, drain: bool
) -> None:
    """Wait for the (killed) script to be reaped, then, if ``drain``, for its pipes' end.

    A pipe still held open by a process that left the group is given up on
    after a while; the transport is closed either way.
    """
    try:
        await capture.exited
        if drain:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(capture.closed), _DRAIN_SECONDS)
    finally:
        transport.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
