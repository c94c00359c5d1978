"""Sync stages on threads of their own, for callers that may stop waiting.

Python cannot stop a thread. A sync stage run under a time limit (a hung
``activate``, a slow ``execute``) therefore runs on a fresh daemon thread rather
than on the runtime's pool: when its caller gives up, the stuck thread holds no
pool worker and does not keep the process alive at exit. The caller learns how
the stage it left behind ends through a `Straggler`, and one that timed out gets
an `InvokeTimeoutError` carrying it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from typing import TYPE_CHECKING, Any

from toolcycle.execution._portal import as_deadline, await_result, wait_result

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.execution._portal import Deadline

__all__ = ["InvokeTimeoutError", "Straggler", "athread", "in_thread", "straggler_of"]


class Straggler:
    """A sync stage on a thread of its own: when and how it ended, for a caller that gave up.

    Attributes:
        finished: set once the stage has ended, after every `when_done` callback ran.
    """

    __slots__ = ("_callbacks", "_done", "_error", "_lock", "finished")

    def __init__(self) -> None:
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[BaseException | None], object]] = []
        self._done = False
        self._error: BaseException | None = None

    def when_done(self, callback: Callable[[BaseException | None], object]) -> None:
        """Call ``callback(error)`` when the stage ends (None if it returned), or now if it has.

        The callback runs on the stage's thread, or on this one when the stage has
        already ended; it must not raise.
        """
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self._error)

    def _end(self, error: BaseException | None) -> None:
        with self._lock:
            self._done, self._error = True, error
            callbacks, self._callbacks = self._callbacks, []
        try:
            for callback in callbacks:
                callback(error)
        finally:
            self.finished.set()


class InvokeTimeoutError(TimeoutError):
    """A stage did not finish within its timeout.

    Attributes:
        abandoned: for a sync stage, which Python cannot stop, an event set when
            the thread it was left running on finishes; None when the stage was
            cancelled (a coroutine).
        straggler: that thread's stage, to learn how it ended; None when cancelled.
    """

    def __init__(self, message: str, straggler: Straggler | None = None) -> None:
        super().__init__(message)
        self.straggler = straggler
        self.abandoned = straggler.finished if straggler is not None else None


def straggler_of(running: concurrent.futures.Future[Any]) -> Straggler:
    """A `Straggler` that ends when the pool job ``running`` does."""
    straggler = Straggler()
    running.add_done_callback(
        lambda done: straggler._end(None if done.cancelled() else done.exception())
    )
    return straggler


def in_thread(
    fn: Callable[..., Any], args: tuple[Any, ...], timeout: float | Deadline | None
) -> Any:
    """Run ``fn`` on a fresh daemon thread and wait for it no longer than ``timeout``.

    None waits as long as it runs.

    Raises:
        InvokeTimeoutError: the limit passed first; ``fn`` runs on, as its straggler.
        Exception: whatever ``fn`` raised.
    """
    deadline = as_deadline(timeout)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    straggler = _start_thread(fn, args, future.set_result, future.set_exception)
    try:
        return wait_result(future, deadline)
    except concurrent.futures.TimeoutError:
        assert deadline is not None
        raise InvokeTimeoutError(deadline.message(), straggler) from None


async def athread(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    timeout: float | Deadline | None,
    on_abandon: Callable[[Straggler], object] | None = None,
) -> Any:
    """Async twin of `in_thread`; the loop is never blocked.

    Args:
        fn: the stage.
        args: its arguments.
        timeout: seconds (or a `Deadline`) before giving up; None waits as long as it runs.
        on_abandon: called with the `Straggler` when the awaiting task is cancelled.

    Raises:
        InvokeTimeoutError: the limit passed first; ``fn`` runs on, as its straggler.
        asyncio.CancelledError: the awaiting task was cancelled; ``fn`` runs on.
        Exception: whatever ``fn`` raised.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(method: Callable[[Any], object], value: Any) -> None:
        def apply() -> None:
            if not future.done():
                method(value)

        try:
            loop.call_soon_threadsafe(apply)
        except RuntimeError:  # pragma: no cover - the loop closed before the thread ended
            pass

    straggler = _start_thread(
        fn,
        args,
        lambda value: settle(future.set_result, value),
        lambda exc: settle(future.set_exception, exc),
    )
    deadline = as_deadline(timeout)
    try:
        if deadline is None:
            return await future
        return await await_result(future, deadline)
    except TimeoutError as exc:
        raise InvokeTimeoutError(str(exc), straggler) from None
    except asyncio.CancelledError:
        if on_abandon is not None:
            on_abandon(straggler)
        raise


def _start_thread(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    on_result: Callable[[Any], object],
    on_error: Callable[[BaseException], object],
) -> Straggler:
    """Run ``fn`` on a new daemon thread; what it returns tells when and how it ended."""
    context = contextvars.copy_context()
    straggler = Straggler()

    def run() -> None:
        error: BaseException | None = None
        try:
            result = context.run(fn, *args)
        except BaseException as exc:
            error = exc
            on_error(exc)
        else:
            on_result(result)
        finally:
            straggler._end(error)

    threading.Thread(target=run, name="toolcycle-call", daemon=True).start()
    return straggler
