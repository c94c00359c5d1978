"""Running a skill's bundled script in a subprocess that never outlives its call.

The script runs under a small reaper process (``_reaper.py``) that leads a
session of its own, with the skill's folder as working directory, a small
environment and capped output. However the call ends, returning, timing out or
cancelled, every process the script started is killed before the call returns:
on Linux the reaper is a child subreaper, so even a process that calls
``setsid`` or double-forks stays below it and is ended with the others. The
host also records the processes it sees and kills those, and the session's, if
the reaper was killed before it could do its work (`ProcessTree`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import sys
from importlib import resources
from typing import TYPE_CHECKING, Any

from toolcycle.sources.skills._files import SkillFileError
from toolcycle.sources.skills._tracker import ProcessTree

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["checked_env", "command_for", "minimal_environment", "run_script"]

# What a script needs to find programs and write temporary files, and no more:
# the host's secrets stay in the host.
_INHERITED = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "PATH", "SYSTEMROOT", "TEMP", "TMP", "TMPDIR")
# How long the pipes may stay open after the script and its group are gone.
_DRAIN_SECONDS = 2.0
# How long a reaper asked to stop may take to end the script and its descendants
# before its whole group is killed without it.
_GRACE_SECONDS = 2.0
# The reaper runs isolated from the host's PYTHON* variables and site packages.
_REAPER_COMMAND = (sys.executable, "-I", "-S", "-c")
# Whether the reaper can hold every descendant (Linux's child subreaper).
_SUBREAPER = sys.platform.startswith("linux")


def checked_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """A copy of ``env``, the variables a source adds to its scripts' environment.

    Checked when the source is made, so that a value no process could receive
    is a clear error there rather than a failure of every script call.

    Raises:
        TypeError: a name or a value is not text.
        ValueError: a name is empty or holds ``=`` or a NUL, or a value holds a NUL.
    """
    if env is None:
        return None
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"env[{name!r}] = {value!r}: the variables given to scripts must be text, "
                "names and values alike; pass str(value)"
            )
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise ValueError(
                f"env[{name!r}]: a variable's name must be non-empty without '=' or a NUL, "
                "and its value without a NUL; rename or clean the variable"
            )
    return dict(env)


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

    The command runs under a reaper (``_reaper.py``) in a session of its own;
    when the command exits, the reaper ends every process it left. The
    script's end is its exit, not the end of its pipes. Cancelling the
    awaiting task (a timeout, the plan's cancellation) asks the reaper to end
    the script and everything below it, and waits for that before the
    cancellation goes on. The host also records the processes it sees below
    the reaper and kills them, with the session's, if the reaper did not
    finish its work (see `ProcessTree`).

    Raises:
        OSError: the command could not be started.
    """
    loop = asyncio.get_running_loop()
    status, status_out = os.pipe()
    try:
        transport, capture = await loop.subprocess_exec(
            lambda: _Capture(loop, max_output_bytes),
            *_REAPER_COMMAND,
            _reaper_source(),
            str(status_out),
            *command,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=(status_out,),
        )
    except BaseException:
        os.close(status)
        raise
    finally:
        os.close(status_out)
    tree = ProcessTree(transport.get_pid())
    watcher = asyncio.ensure_future(tree.watch())
    finished = False
    try:
        _feed(transport, stdin)
        # Shielded: cancelling this wait must not cancel the future _settle awaits.
        await asyncio.shield(capture.exited)
        finished = True
    finally:
        report = await asyncio.shield(
            _settle(transport, capture, tree, watcher, status, finished=finished)
        )
    if report.startswith("E"):  # "E<errno>", then "D" once the reaper has ended
        code = int(report[1:].rstrip("D") or 0)
        raise OSError(code, os.strerror(code))
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


@functools.cache
def _reaper_source() -> str:
    """The text of ``_reaper.py``, run with ``-c`` so that it needs no import of toolcycle."""
    return resources.files(__package__).joinpath("_reaper.py").read_text(encoding="utf-8")


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
    transport: asyncio.SubprocessTransport,
    capture: _Capture,
    tree: ProcessTree,
    watcher: asyncio.Future[None],
    status: int,
    *,
    finished: bool,
) -> str:
    """End whatever is left of the script, then return the reaper's report.

    If the script has not ended (the call was cancelled), the reaper is asked
    to end it and its descendants, and given `_GRACE_SECONDS` to do so. Then
    the reaper's process group is killed (the reaper too, if it still runs);
    if the reaper did not report ``D`` (done), every process recorded below it
    and every process of its session is killed as well. If ``finished``, the
    output pipes are then given a moment to reach their end. The transport and
    the status pipe are closed either way.

    Returns:
        ``"D"`` when the reaper ended everything, ``"E<errno>D"`` when the
        command could not be started, or what little it wrote before dying.
    """
    pid = transport.get_pid()
    try:
        watcher.cancel()
        await asyncio.wait([watcher])
        if not finished:
            _signal(pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(capture.exited), _GRACE_SECONDS)
        _kill_group(pid)
        await capture.exited
        report = _read_report(status)
        tree.kill(session=not report.endswith("D") or not _SUBREAPER)
        if finished:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(capture.closed), _DRAIN_SECONDS)
        return report
    finally:
        os.close(status)
        transport.close()


def _read_report(status: int) -> str:
    """What the (ended) reaper wrote on the status pipe; its write end is closed by now."""
    os.set_blocking(status, False)
    with contextlib.suppress(BlockingIOError):
        return os.read(status, 64).decode("ascii", errors="replace")
    return ""  # pragma: no cover - no process holds the write end once the reaper is gone


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
