"""The one event-loop thread a runtime owns, for running coroutines from sync code.

A sync caller (``runtime.execute``) of an async tool cannot await, and must not
start a loop of its own: it may already be inside one. So each runtime starts,
on first need, a daemon thread running its own loop, and sync callers submit
coroutines to it and block until they finish. The loop is made with
``asyncio.new_event_loop()``, which honours the host's policy without changing
it, and it is stopped by ``close()``.

Calling a portal from its own thread would wait on itself forever, so that is
refused with a clear error instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

from toolcycle.errors import ToolRuntimeError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping
    from types import CodeType, FrameType

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "Deadline",
    "Portal",
    "PortalTimeoutError",
    "as_deadline",
    "await_result",
    "run_blocking",
    "wait_result",
    "waker",
]

T = TypeVar("T")

# After a cancellation request, how long a caller waits for the task to run its
# cleanup before returning anyway.
CANCEL_GRACE_SECONDS = 5.0


class PortalTimeoutError(TimeoutError):
    """A coroutine run through the portal did not finish within its timeout."""


class Deadline:
    """When a wait gives up: after ``total`` seconds, or after ``idle`` seconds of quiet.

    ``active_at`` returns the ``time.monotonic()`` of the last sign of life (a
    progress report); each one restarts the ``idle`` count, and ``total`` caps
    the whole wait whatever happens.
    """

    __slots__ = ("_active_at", "_start", "idle", "total")

    def __init__(
        self,
        total: float | None,
        idle: float | None = None,
        active_at: Callable[[], float] | None = None,
    ) -> None:
        self.total = total
        self.idle = idle
        self._active_at = active_at
        self._start = time.monotonic()

    def _left(self) -> tuple[float | None, float | None]:
        now = time.monotonic()
        total = None if self.total is None else self._start + self.total - now
        if self.idle is None:
            return total, None
        last = self._start if self._active_at is None else max(self._start, self._active_at())
        return total, last + self.idle - now

    def remaining(self) -> float | None:
        """Seconds until the wait gives up (0 once it has), None if never."""
        total, idle = self._left()
        parts = [part for part in (total, idle) if part is not None]
        return max(0.0, min(parts)) if parts else None

    def message(self) -> str:
        """What ran out, for the error: the total time, or the patience for quiet."""
        total, idle = self._left()
        if idle is not None and (total is None or idle <= total):
            return f"reported no progress for {self.idle:g} seconds"
        return f"did not finish within {self.total:g} seconds"


def as_deadline(limit: float | Deadline | None) -> Deadline | None:
    """A `Deadline` for a limit in seconds (or one already), None for no limit."""
    if limit is None or isinstance(limit, Deadline):
        return limit
    return Deadline(limit)


def wait_result(future: concurrent.futures.Future[T], deadline: Deadline | None) -> T:
    """``future``'s result, waiting no longer than ``deadline`` allows.

    Raises:
        concurrent.futures.TimeoutError: the deadline passed first.
    """
    while True:
        remaining = None if deadline is None else deadline.remaining()
        try:
            return future.result(remaining)
        except concurrent.futures.TimeoutError:
            if deadline is None or deadline.remaining() == 0:
                raise


def waker(loop: asyncio.AbstractEventLoop) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A future on ``loop``, and a function any thread may call to resolve it.

    The function does nothing once the future's waiter was cancelled or its loop has
    closed: the thread that calls it (ending a plan, closing the runtime) must not fail
    for a waiter gone.
    """
    over: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(_resolve, over)

    return over, wake


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # its waiter was cancelled meanwhile
        future.set_result(None)


async def await_result(future: asyncio.Future[T], deadline: Deadline) -> T:
    """``future``'s result, awaited no longer than ``deadline`` allows (`wait_result`'s twin).

    ``future`` itself is left running when the deadline passes: the caller decides
    what to do with it.

    Raises:
        TimeoutError: the deadline passed first, with its message.
    """
    while True:
        done, _ = await asyncio.wait({future}, timeout=deadline.remaining())
        if done:
            return future.result()
        if deadline.remaining() == 0:
            raise TimeoutError(deadline.message())


class Portal:
    """A lazily started event-loop thread; thread-safe.

    Args:
        twins: the code of each sync runtime method that may be refused here,
            mapped to the advice for its async twin (``"await runtime.acall(...)"``).
    """

    __slots__ = ("_closed", "_lock", "_loop", "_thread", "_twins")

    def __init__(self, twins: Mapping[CodeType, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._twins = twins if twins is not None else {}

    @property
    def closed(self) -> bool:
        """Whether `close` was called: the portal runs nothing any more."""
        return self._closed

    def in_portal_thread(self) -> bool:
        """Whether the current thread is the portal's own loop thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise ToolRuntimeError("the runtime is closed; it runs no more async work")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    loop.call_soon(ready.set)
                    try:
                        while True:
                            try:
                                loop.run_forever()
                            except (KeyboardInterrupt, SystemExit):
                                # A task raised it (no signal reaches this thread), and
                                # asyncio lets it out of the loop after setting it on the
                                # task: serve on, so the task's caller receives it.
                                continue
                            break
                    finally:
                        loop.close()

                thread = threading.Thread(target=serve, name="toolcycle-portal", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def call(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        timeout: float | Deadline | None = None,
        on_cancel: Callable[[Callable[[], object]], Callable[[], None]] | None = None,
        caller: str | None = None,
    ) -> T:
        """Run ``coro`` on the loop thread and return its result, blocking this thread.

        The coroutine runs in a copy of the caller's context variables.

        Args:
            coro: the coroutine to run; it is closed unstarted if it cannot run.
            timeout: seconds to wait before cancelling it and raising
                `PortalTimeoutError`; None waits for ever.
            on_cancel: registers a callback to run on cancellation (such as
                ``CancellationToken.on_cancel``); the task is then cancelled and
                `asyncio.CancelledError` is raised here once it has finished.
            caller: the sync runtime method that runs ``coro`` here (``call_many``),
                so that a refusal names its async twin; None for a tool's stage,
                whose twin is ``aexecute``.

        Raises:
            ToolRuntimeError: called from the portal's own thread, or after close.
        """
        if self.in_portal_thread():
            coro.close()
            raise self.refusal("the runtime's own event-loop thread", caller)
        try:
            loop = self._ensure_loop()
        except ToolRuntimeError:
            coro.close()
            raise
        return run_blocking(loop, coro, timeout=timeout, on_cancel=on_cancel)

    def refusal(self, where: str, caller: str | None = None) -> ToolRuntimeError:
        """The error for a sync call made on the loop thread it would have to wait on.

        Its advice names the async twin of the sync method called: ``caller`` when
        given, else the nearest runtime method in ``twins`` on this thread's stack.
        The stack is read only here, so that naming costs a call nothing unless
        it is refused.

        Args:
            where: the thread, for the message ("the runtime's own event-loop thread").
            caller: the sync runtime method that made the call, when known.
        """
        if caller is not None:
            what, advice = f"{caller} was called", f"await runtime.a{caller}(...)"
        else:
            what, advice = "a sync call of an async tool was made", self._advice()
        return ToolRuntimeError(
            f"{what} from {where}, where it would wait on itself; {advice} instead"
        )

    def _advice(self) -> str:
        frame: FrameType | None = sys._getframe(2)  # read only on a refusal
        while frame is not None:
            advice = self._twins.get(frame.f_code)
            if advice is not None:
                return advice
            frame = frame.f_back
        return "await runtime.aexecute(...)"

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread; later calls raise. Idempotent."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(lambda: loop.create_task(_shutdown(loop)))
        if thread is not threading.current_thread():
            thread.join(timeout)


def run_blocking(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, T],
    *,
    timeout: float | Deadline | None = None,
    on_cancel: Callable[[Callable[[], object]], Callable[[], None]] | None = None,
) -> T:
    """Run ``coro`` as a task on ``loop`` (running in another thread) and wait for it.

    The arguments and the behaviour on timeout and cancellation are those of
    `Portal.call`; the caller makes sure this thread is not ``loop``'s own.

    Raises:
        PortalTimeoutError: ``coro`` did not finish within ``timeout``.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro, context=context)
        tasks.append(task)
        task.add_done_callback(lambda t: _settle(t, future))

    def cancel() -> None:
        loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])

    deadline = as_deadline(timeout)
    loop.call_soon_threadsafe(start)
    unregister = on_cancel(cancel) if on_cancel is not None else None
    try:
        return wait_result(future, deadline)
    except concurrent.futures.TimeoutError:
        assert deadline is not None  # only a deadline times out
        message = deadline.message()
        cancel()
        try:
            return future.result(CANCEL_GRACE_SECONDS)
        except (concurrent.futures.TimeoutError, asyncio.CancelledError):
            raise PortalTimeoutError(message) from None
    finally:
        if unregister is not None:
            unregister()


async def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on the loop, then stop it; the loop thread closes it."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_asyncgens()
    loop.stop()


def _settle(task: asyncio.Task[T], future: concurrent.futures.Future[T]) -> None:
    """Copy a finished task's outcome onto the future a sync caller waits on."""
    if task.cancelled():
        future.set_exception(asyncio.CancelledError())
    elif (exc := task.exception()) is not None:
        future.set_exception(exc)
    else:
        future.set_result(task.result())
