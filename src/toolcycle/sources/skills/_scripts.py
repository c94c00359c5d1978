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
    from collections.abc import Mapping, Sequence
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

    Cancelling the awaiting task (a timeout, the plan's cancellation) kills the
    process group and waits for the script before the cancellation goes on.
    """
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    readers = [
        asyncio.ensure_future(_capped(process.stdout, max_output_bytes)),
        asyncio.ensure_future(_capped(process.stderr, max_output_bytes)),
    ]
    feeder = asyncio.ensure_future(_feed(process, stdin))
    try:
        exit_code = await process.wait()
    finally:
        # Whatever the script left in its group dies with it, and on cancellation
        # the script itself; the pipes then reach their end.
        _kill_group(process.pid)
        feeder.cancel()
        await asyncio.shield(_reap(process))
    (out, out_cut), (err, err_cut) = await _drain(readers)
    return {
        "exit_code": exit_code,
        "stdout": out,
        "stderr": err,
        "stdout_truncated": out_cut,
        "stderr_truncated": err_cut,
    }


async def _capped(stream: asyncio.StreamReader, limit: int) -> tuple[str, bool]:
    """Read ``stream`` to its end, keeping the first ``limit`` bytes."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if len(chunk) > room:
            cut = True
        kept += chunk[: max(room, 0)]
    return kept.decode("utf-8", errors="replace"), cut


async def _feed(process: asyncio.subprocess.Process, text: str | None) -> None:
    if text is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(text.encode())
        await process.stdin.drain()
    process.stdin.close()


async def _drain(readers: Sequence[asyncio.Future[tuple[str, bool]]]) -> list[tuple[str, bool]]:
    """The readers' results; a pipe held open by an escaped process is given up on."""
    done, pending = await asyncio.wait(readers, timeout=_DRAIN_SECONDS)
    for reader in pending:  # pragma: no cover - needs a process that left the group
        reader.cancel()
    return [reader.result() if reader in done else ("", True) for reader in readers]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _reap(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
