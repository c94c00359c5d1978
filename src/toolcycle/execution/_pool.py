"""A small thread pool whose workers never hold up the interpreter's exit.

``concurrent.futures.ThreadPoolExecutor`` joins every worker it ever started
when the interpreter exits, whether or not the pool was shut down. A sync tool
whose async caller was cancelled runs on in its worker (Python cannot stop a
thread), so with that pool a process would hang at exit until the tool
returned, even after ``runtime.close()``. Here the workers are daemon threads:
like a sync call left behind at its timeout, an abandoned one is dropped at exit.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["DaemonPool"]

_Job = tuple["concurrent.futures.Future[Any]", "Callable[..., Any]", tuple[Any, ...]]


class DaemonPool:
    """Up to ``max_workers`` daemon threads running submitted jobs; thread-safe.

    Workers start on demand and are reused while idle. Once the pool is shut
    down, or collected without a shutdown, the idle workers end and busy ones
    end after their job.
    """

    __slots__ = ("__weakref__", "_finalizer", "_idle", "_jobs", "_lock", "_max", "_name", "_open")

    def __init__(self, max_workers: int, name: str) -> None:
        self._max = max_workers
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._open: list[threading.Thread] = []
        # Wakes the workers if the pool is dropped unclosed; not at exit (they are daemons).
        self._finalizer = weakref.finalize(self, self._jobs.put, None)
        self._finalizer.atexit = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on a worker; its outcome lands on the returned future.

        Raises:
            RuntimeError: the pool has been shut down.
        """
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if not self._finalizer.alive:
                raise RuntimeError("cannot run new work after the pool was shut down")
            self._jobs.put((future, fn, args))
            if not self._idle.acquire(blocking=False):
                self._open = [thread for thread in self._open if thread.is_alive()]
                if len(self._open) < self._max:
                    thread = threading.Thread(
                        target=_work,
                        args=(self._jobs, self._idle),
                        name=f"{self._name}_{len(self._open)}",
                        daemon=True,
                    )
                    thread.start()
                    self._open.append(thread)
        return future

    def shutdown(self) -> None:
        """Cancel the jobs not started yet and let the workers end; does not wait. Idempotent."""
        with self._lock:
            if not self._finalizer.alive:
                return
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
            self._finalizer()


def _work(jobs: queue.SimpleQueue[_Job | None], idle: threading.Semaphore) -> None:
    """A worker: run jobs until the stop mark, which it passes on to the next worker."""
    while True:
        job = jobs.get()
        if job is None:
            jobs.put(None)
            return
        future, fn, args = job
        del job
        if future.set_running_or_notify_cancel():
            try:
                result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
        del future, fn, args
        idle.release()
