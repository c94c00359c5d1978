"""Calling one stage of a tool, whether it is a plain function or a coroutine.

The runtime's pipeline does not care how a tool is written; this module does.
From sync code, a coroutine runs on the runtime's portal thread and a plain
function runs inline. From async code, a coroutine is awaited as a task that the
plan's cancellation token cancels, and a plain function runs on the runtime's
thread pool so that it never blocks the event loop.

A call with a timeout that may outlive its caller (a hung sync function) runs
on a fresh daemon thread instead of the pool: Python cannot stop a thread, so
the best it can do is not let the stuck thread hold a pool worker or keep the
process alive at exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import threading
from typing import TYPE_CHECKING, Any, Protocol

from toolcycle.errors import ToolRuntimeError
from toolcycle.execution._portal import (
    CANCEL_GRACE_SECONDS,
    Deadline,
    Portal,
    PortalTimeoutError,
    as_deadline,
    run_blocking,
    wait_result,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Cancels",
    "InvokeTimeoutError",
    "Invoker",
    "Straggler",
    "TaskWatch",
    "own_loop",
    "plan_loop",
]


class Cancels(Protocol):
    """What cancels a stage: a `CancellationToken`, or a call's flight that stands in for it."""

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` once on cancellation; returns a function that unregisters it."""
        ...


# Results that are certainly not awaitable: checked by type before asking inspect.
_PLAIN = frozenset({dict, list, str, int, float, bool, tuple, type(None)})


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


class Invoker:
    """Runs tool stages for one runtime; owns its portal thread and worker pool."""

    __slots__ = ("_lock", "_max_workers", "_pool", "portal")

    def __init__(self, *, max_workers: int = 8) -> None:
        self.portal = Portal()
        self._max_workers = max_workers
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def call(
        self,
        fn: Callable[..., Any],
        *args: Any,
        token: Cancels | None = None,
        timeout: float | Deadline | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        coroutine: bool | None = None,
    ) -> Any:
        """Call ``fn(*args)`` from sync code and return its result.

        Args:
            fn: the stage.
            args: its arguments.
            token: cancels a coroutine mid-run.
            timeout: seconds (or a `Deadline`, which can also give up on a quiet
                call) before giving up with `InvokeTimeoutError`.
            loop: the loop a coroutine ``fn`` must run on (a tool's own), instead
                of the portal's; the call then crosses one thread, not two.
            coroutine: whether ``fn`` is an ``async def``, when the caller knows
                (a tool's, found at registration); None looks.

        Raises:
            InvokeTimeoutError: the call did not finish within ``timeout``.
            asyncio.CancelledError: ``token`` cancelled a coroutine mid-run.
            ToolRuntimeError: ``loop`` is the one running in this thread.
            Exception: whatever ``fn`` raised.
        """
        try:
            if coroutine if coroutine is not None else inspect.iscoroutinefunction(fn):
                on_cancel = token.on_cancel if token is not None else None
                if loop is not None:
                    return _on_own_loop(loop, fn, args, timeout=timeout, on_cancel=on_cancel)
                return self.portal.call(fn(*args), timeout=timeout, on_cancel=on_cancel)
            result = fn(*args) if timeout is None else _in_thread(fn, args, timeout)
            if type(result) not in _PLAIN and inspect.isawaitable(result):
                on_cancel = token.on_cancel if token is not None else None
                return self.portal.call(_await(result), timeout=timeout, on_cancel=on_cancel)
            return result
        except PortalTimeoutError as exc:
            raise InvokeTimeoutError(str(exc)) from None

    async def acall(
        self,
        fn: Callable[..., Any],
        *args: Any,
        token: Cancels | None = None,
        timeout: float | Deadline | None = None,
        detached: bool = False,
        coroutine: bool | None = None,
        on_abandon: Callable[[Straggler], object] | None = None,
        task: asyncio.Task[Any] | None = None,
    ) -> Any:
        """Call ``fn(*args)`` from async code and return its result.

        Args:
            fn: the stage.
            args: its arguments.
            token: cancels an awaited coroutine the moment it is cancelled.
            timeout: seconds before giving up with `InvokeTimeoutError`.
            detached: run a sync ``fn`` on a fresh daemon thread, not the pool.
            coroutine: whether ``fn`` is an ``async def``, when the caller knows;
                None looks.
            on_abandon: called with a `Straggler` when the caller is cancelled
                while a sync ``fn`` runs on a thread, which Python cannot stop:
                it tells how ``fn`` ends, for a caller that must undo it.
            task: the task running this call, when the caller knows it
                (`asyncio.current_task` costs about half a microsecond).

        Raises:
            InvokeTimeoutError: the call did not finish within ``timeout``.
            asyncio.CancelledError: ``token`` or the caller cancelled it.
            Exception: whatever ``fn`` raised.
        """
        if coroutine if coroutine is not None else inspect.iscoroutinefunction(fn):
            current = None
            if timeout is None and token is not None:
                current = task if task is not None else asyncio.current_task()
            if current is None or token is None:
                return await _cancellable(fn(*args), token, timeout)
            # The common case, `_in_current_task` written out here: a coroutine level
            # costs about half a microsecond, as much as all the rest of this.
            coro = fn(*args)
            watch = TaskWatch(current, token)
            try:
                return await coro
            finally:
                watch.release()
        if detached or timeout is not None:
            result = await _athread(fn, args, timeout, on_abandon)
        else:
            context = contextvars.copy_context()
            running = self._ensure_pool().submit(context.run, fn, *args)
            try:
                result = await asyncio.wrap_future(running)
            except asyncio.CancelledError:
                # Cancelling the wrapper cancelled a job not yet started; a started one runs on.
                if on_abandon is not None and not running.cancelled():
                    on_abandon(_straggler_of(running))
                raise
        if inspect.isawaitable(result):
            return await _cancellable(_await(result), token, timeout)
        return result

    def _ensure_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="toolcycle-worker"
                )
            return self._pool

    def close(self) -> None:
        """Stop the portal thread and the pool (without waiting for running calls)."""
        self.portal.close()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def own_loop(instance: object) -> asyncio.AbstractEventLoop | None:
    """The event loop a tool names in its ``event_loop`` attribute, if it is one."""
    loop = getattr(instance, "event_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


def plan_loop(
    instance: object, ctx: object, default: asyncio.AbstractEventLoop | None
) -> asyncio.AbstractEventLoop | None:
    """The loop a tool's ``event_loop_for(ctx)`` names for this plan, else ``default``.

    Only activation and execution ask: a plan end always uses ``event_loop``, so
    that ending a plan on the loop's own thread never waits on that loop.
    """
    pick = getattr(instance, "event_loop_for", None)
    if pick is None:
        return default
    loop = pick(ctx)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else default


def _on_own_loop(
    loop: asyncio.AbstractEventLoop,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    **options: Any,
) -> Any:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise ToolRuntimeError(
            "a sync call of an async tool was made from the thread of the tool's own event "
            "loop, where it would wait on itself; await runtime.aexecute(...) instead"
        )
    return run_blocking(loop, fn(*args), **options)


async def _cancellable(coro: Any, token: Cancels | None, timeout: float | Deadline | None) -> Any:
    """Await ``coro`` as a task that ``token`` cancels, within ``timeout``.

    Raises:
        InvokeTimeoutError: the deadline passed; the task was cancelled first.
    """
    current = asyncio.current_task()
    if timeout is None and token is not None and current is not None:
        return await _in_current_task(coro, token, current)
    task = asyncio.ensure_future(coro)
    unregister = None
    if token is not None:
        loop = asyncio.get_running_loop()
        unregister = token.on_cancel(lambda: _cancel_soon(loop, task))
    deadline = as_deadline(timeout)
    try:
        if deadline is None:
            return await task
        try:
            return await _within(task, deadline)
        except TimeoutError as exc:
            task.cancel()
            # Let it clean up, as wait_for does, but only for a while; and a
            # cancellation of the caller meanwhile is the caller's, so it propagates.
            await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
            task.add_done_callback(_retrieve)  # its late failure is nobody's to log
            raise InvokeTimeoutError(str(exc)) from None
        except asyncio.CancelledError:
            task.cancel()  # the caller was cancelled: so is the work
            raise
    finally:
        if unregister is not None:
            unregister()


def _cancel_soon(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` on its ``loop`` from any thread; nothing if that loop has closed."""
    with contextlib.suppress(RuntimeError):  # a closed loop: the task will never run again
        loop.call_soon_threadsafe(task.cancel)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


class TaskWatch:
    """Lets a token cancel the caller's task only while it awaits one stage.

    Made just before the stage is awaited and released right after it, whatever
    happened: a cancellation of the token is delivered to ``task`` only between
    the two, and one it delivered is then taken back with ``uncancel``, so the
    task's own cancellation count is left as it was.
    """

    __slots__ = ("_unregister", "fired", "inside", "task")

    def __init__(self, task: asyncio.Task[Any], token: Cancels) -> None:
        self.task = task
        self.inside = True
        self.fired = False
        self._unregister = token.on_cancel(self.request)

    def release(self) -> None:
        """The stage is over: stop listening, and take back a cancellation delivered."""
        self.inside = False
        self._unregister()
        if self.fired:
            self.task.uncancel()

    def request(self) -> None:
        """The token was cancelled (on any thread): cancel the task on its loop."""
        with contextlib.suppress(RuntimeError):  # its loop closed: the task will never run again
            self.task.get_loop().call_soon_threadsafe(self._fire)

    def _fire(self) -> None:  # runs on the loop, so it never interleaves with the await
        if self.inside:
            self.fired = True
            self.task.cancel()


async def _in_current_task(coro: Any, token: Cancels, task: asyncio.Task[Any]) -> Any:
    """Await ``coro`` in the caller's own task, which ``token`` cancels while it runs.

    Without a deadline there is no need for a task of its own, and making one
    costs about 15 us a call (the task, and a turn of the loop to start it).
    A cancellation of the token is delivered to the current task only while it
    is suspended inside ``coro`` (the callback runs on the loop, between steps,
    and does nothing once ``coro`` is over), and is then taken back with
    ``uncancel``, so the caller's own cancellation count is left as it was.
    `Invoker.acall` does the same inline for an async tool.
    """
    watch = TaskWatch(task, token)
    try:
        return await coro
    finally:
        watch.release()


async def _within(future: asyncio.Future[Any], deadline: Deadline) -> Any:
    """``future``'s result; TimeoutError (with the deadline's message) if it passes first.

    ``future`` itself is left running: the caller decides what to do with it.
    """
    while True:
        done, _ = await asyncio.wait({future}, timeout=deadline.remaining())
        if done:
            return future.result()
        if deadline.remaining() == 0:
            raise TimeoutError(deadline.message())


def _in_thread(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float | Deadline) -> Any:
    """Run ``fn`` on a fresh daemon thread and wait for it no longer than ``timeout``."""
    deadline = as_deadline(timeout)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    straggler = _start_thread(fn, args, future.set_result, future.set_exception)
    try:
        return wait_result(future, deadline)
    except concurrent.futures.TimeoutError:
        assert deadline is not None
        raise InvokeTimeoutError(deadline.message(), straggler) from None


def _straggler_of(running: concurrent.futures.Future[Any]) -> Straggler:
    """A `Straggler` that ends when the pool job ``running`` does."""
    straggler = Straggler()
    running.add_done_callback(
        lambda done: straggler._end(None if done.cancelled() else done.exception())
    )
    return straggler


async def _athread(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    timeout: float | Deadline | None,
    on_abandon: Callable[[Straggler], object] | None = None,
) -> Any:
    """Async twin of `_in_thread`; the loop is never blocked."""
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
        return await _within(future, deadline)
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


async def _await(awaitable: Any) -> Any:
    return await awaitable
