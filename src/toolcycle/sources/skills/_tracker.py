"""Watching a script's process tree from the host, for when its reaper cannot do its job.

The reaper (see ``_reaper.py``) ends every descendant of a script on Linux, as
long as it lives. A script can kill its reaper, and outside Linux the reaper
sees only its own children; so while a script runs, the host also records the
descendants it sees (with psutil, every few milliseconds at first and then
every quarter second), and at the end kills those still running, and every
process still in the script's session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

try:
    import psutil
except ImportError:  # pragma: no cover - psutil comes with the skills extra
    psutil = None

__all__ = ["ProcessTree"]

# How many processes one call remembers; past it, the ones gone are forgotten.
_MAX_RECORDED = 4096
_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.25


class ProcessTree:
    """The descendants of one process that were ever seen running, and how to end them.

    Args:
        pid: the process at the top (the reaper, leader of a session of its own).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._seen: dict[int, Any] = {}  # pid -> psutil.Process, which knows its start time
        try:
            self._root: Any = psutil.Process(pid) if psutil is not None else None
        except psutil.Error:  # it has already ended
            self._root = None

    def __len__(self) -> int:
        return len(self._seen)

    def snapshot(self) -> None:
        """Record every descendant running now."""
        if self._root is None:
            return
        with contextlib.suppress(psutil.Error):
            for process in self._root.children(recursive=True):
                self._seen.setdefault(process.pid, process)
        if len(self._seen) > _MAX_RECORDED:
            self._seen = {pid: p for pid, p in self._seen.items() if _alive(p)}

    async def watch(self) -> None:
        """Take snapshots until cancelled, often at first and then four times a second."""
        pause = _FIRST_PAUSE
        while True:
            self.snapshot()
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)

    def kill(self, *, session: bool) -> None:
        """Kill every recorded descendant still running and, if ``session``, the session's.

        A recorded pid now used by another process is left alone (psutil compares
        start times). The session is the one the top process leads: every process
        that never called ``setsid`` after it, wherever it was re-parented.
        """
        for process in self._seen.values():
            with contextlib.suppress(psutil.Error):
                if process.is_running():
                    process.kill()
        if session and psutil is not None:
            self._kill_session()

    def _kill_session(self) -> None:
        own = os.getpid()
        for process in psutil.process_iter():
            pid = process.pid
            with contextlib.suppress(OSError, psutil.Error):
                if pid != own and os.getsid(pid) == self.pid:
                    process.kill()


def _alive(process: Any) -> bool:
    try:
        return bool(process.is_running())
    except psutil.Error:
        return False
