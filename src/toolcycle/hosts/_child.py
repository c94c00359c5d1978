"""The caller's side of one worker process: start it, send it stages, read what comes back.

A reading thread takes every message the worker sends: a stage's outcome settles
that stage's future, a progress report goes to the stage's listener. When the
pipe closes without a ``stop`` (the worker was killed, or crashed), every stage
still waiting fails with a `ToolHostError` naming the host, and the child is dead.

The worker leads a session and process group of its own (``serve_detached``), so
a terminal's Ctrl-C reaches the caller only; a worker killed at its plan's end
takes its process group along, whatever it started there.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import pickle
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from toolcycle.hosts._tools import ToolHostError, settle, tool_name
from toolcycle.hosts._worker import serve_detached

if TYPE_CHECKING:
    from collections.abc import Callable
    from multiprocessing.context import BaseContext

    from toolcycle.hosts._tools import Call, Settled

    Listener = Callable[[float, float | None, str | None], None]

__all__ = ["Child", "Pending"]

_KILLED_WITHIN = 5.0  # seconds a killed worker may take to be gone before it is left alone


class Pending:
    """One stage sent to the worker: its future and who hears its progress."""

    __slots__ = ("future", "label", "listener")

    def __init__(self, label: str, listener: Listener | None) -> None:
        self.future: concurrent.futures.Future[Settled] = concurrent.futures.Future()
        self.label = label
        self.listener = listener


class Child:
    """One worker process serving one plan.

    Args:
        context: the multiprocessing context that starts it (its start method).
        host: the host's name, for messages.
        plan: the plan's id and what its stages' contexts carry.
    """

    def __init__(self, context: BaseContext, host: str, plan: dict[str, Any]) -> None:
        self.host = host
        self.plan_id: str = plan["plan_id"]
        self.dead = False
        self._stopping = False
        self._numbers = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._lock = threading.Lock()  # the bookkeeping: brief, and taken by the reader
        # One message on the pipe at a time. A write blocks while the worker is not
        # reading, which may be until its outcomes are read: the reader never takes it.
        self._send_lock = threading.Lock()
        mine, theirs = context.Pipe()
        self._conn = mine
        self.process = context.Process(  # type: ignore[attr-defined]
            target=serve_detached,
            args=(theirs,),
            name=f"toolcycle-host-{self.plan_id}",
            daemon=True,
        )
        self.process.start()
        theirs.close()
        self.pid: int = self.process.pid
        self._conn.send(("plan", plan))
        self._reader = threading.Thread(
            target=self._read, name=f"toolcycle-host-reader-{self.pid}", daemon=True
        )
        self._reader.start()

    def send(
        self,
        kind: str,
        name: str,
        argument: Any = None,
        listener: Listener | None = None,
        call: Call | None = None,
    ) -> tuple[int, Pending]:
        """Send one stage; its `Pending` settles with ``(value, changes, revealed)``, or fails."""
        number = next(self._numbers)
        pending = Pending(f"{kind} of tool {tool_name(name)!r}", listener)
        with self._send_lock:
            with self._lock:
                failed = self.dead or self._stopping
                if not failed:
                    self._pending[number] = pending
            if not failed:
                try:
                    self._conn.send((kind, number, name, argument, call))
                except (OSError, ValueError):  # it broke since the check
                    with self._lock:  # unless the reader, at its end, failed it already
                        failed = self._pending.pop(number, None) is not None
        if failed:
            pending.future.set_exception(self._died(pending.label))
        return number, pending

    def cancel(self, number: int, reason: str | None) -> None:
        """Ask the worker to cancel a stage it runs (its token and task)."""
        with self._send_lock:
            with self._lock:
                if self.dead or number not in self._pending:
                    return
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(("cancel", number, reason))

    def stop(self, timeout: float) -> None:
        """Let the worker end, waiting for it no longer than ``timeout``; then kill it.

        The worker gives its stages still running, and then the tools no call took
        up, the same ``timeout`` to end there.
        """
        deadline = time.monotonic() + timeout
        # A send the worker does not read (its main thread stuck in a tool's
        # import) holds the pipe: then the worker is killed without being told.
        told = self._send_lock.acquire(timeout=timeout)
        try:
            with self._lock:
                self._stopping = True
                dead = self.dead
            if told and not dead:
                with contextlib.suppress(OSError, ValueError):
                    self._conn.send(("stop", timeout))
        finally:
            if told:
                self._send_lock.release()
        self.process.join(max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            if hasattr(os, "killpg"):
                # Its group: the servers and scripts it started, which it can no longer
                # stop. Unreaped until the join below, it keeps the group's id its own;
                # a worker killed before it made the group leaves none to find.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            self.process.kill()
            # A killed process ends at once, but not within a timeout of 0: give it a moment.
            self.process.join(max(timeout, _KILLED_WITHIN))
        # Gone, the worker closed its end: the reader is at its own, and closes ours.
        # Closed here instead, the number could be reused while the reader still reads it.
        self._reader.join(_KILLED_WITHIN)
        with contextlib.suppress(ValueError):  # still there (stuck in the kernel): let it be
            self.process.close()

    def _read(self) -> None:
        conn = self._conn
        while True:
            try:
                kind, number, *rest = conn.recv()
            except (EOFError, OSError):
                break
            if kind == "progress":
                pending = self._pending.get(number)
                if pending is not None and pending.listener is not None:
                    with contextlib.suppress(Exception):  # a listener's failure is its own
                        pending.listener(*rest)
                continue
            with self._lock:
                pending = self._pending.pop(number, None)
            if pending is None:  # pragma: no cover - every outcome has its stage
                continue
            try:
                ok, value, changes, revealed = pickle.loads(rest[0])
            except Exception as exc:
                ok, value, changes, revealed = False, _unreadable(pending.label, exc), [], ()
            settle(pending.future, ok, value, changes, revealed)
        with self._lock:
            self.dead = True
            left, self._pending = self._pending, {}
        with self._send_lock:  # no send is writing to it, and none will: dead
            conn.close()
        for pending in left.values():
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                pending.future.set_exception(self._died(pending.label))

    def _died(self, label: str) -> ToolHostError:
        if self._stopping:  # a stage running past the grace, or sent as the plan ended
            how = "was stopped: the plan ended"
        else:
            self.process.join(1.0)
            code = self.process.exitcode
            how = "died" if code is None else f"died (exit code {code})"
            if code is not None and code < 0:
                with contextlib.suppress(ValueError):
                    how = f"died ({signal.Signals(-code).name})"
        return ToolHostError(
            f"the worker process (pid {self.pid}) of host {self.host!r} {how} during the "
            f"{label} in plan {self.plan_id!r}",
            plan_id=self.plan_id,
        )


def _unreadable(label: str, exc: Exception) -> ToolHostError:
    return ToolHostError(
        f"the outcome of the {label} could not be read back from the host ({exc}); the "
        "tool's output and errors must be importable in the caller's process too"
    )
