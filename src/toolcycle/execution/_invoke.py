"""Calling one stage of a tool, whether it is a plain function or a coroutine.

The runtime's pipeline does not care how a tool is written; this module does.
From sync code, a coroutine runs on the runtime's portal thread and a plain
function runs inline. From async code, a coroutine is awaited as a task that the
plan's cancellation token cancels, and a plain function runs on the runtime's
thread pool so that it never blocks the event loop.

A sync function with a timeout, which may outlive its caller (a hung one), runs
on a fresh daemon thread instead of the pool (`toolcycle.execution._threads`).
Who cancelled a stage matters to the caller: `TaskWatch` lets a plan's token
cancel the caller's task only while it awaits the stage, and `caller_cancelled`
tells a cancellation of the caller itself apart from one of the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from typing import TYPE_CHECKING, Any, Protocol

from toolcycle.errors import ToolRuntimeError
from toolcycle.execution._pool import DaemonPool
from toolcycle.execution._portal import (
    CANCEL_GRACE_SECONDS,
    Deadline,
    Portal,
    PortalTimeoutError,
    as_deadline,
    await_result,
    run_blocking,
)
from toolcycle.execution._threads import InvokeTimeoutError, athread, in_thread, straggler_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import CodeType

    from toolcycle.execution._threads import Straggler

__all__ = [
    "PLAIN_VALUES",
    "Cancels",
    "Invoker",
    "TaskWatch",
    "caller_cancelled",
    "own_loop",
    "plan_loop",
]


class Cancels(Protocol):
    """What cancels a stage: a `CancellationToken`, or a call's flight that stands in for it."""

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` once on cancellation; returns a function that unregisters it."""
        ...


PLAIN_VALUES = frozenset({dict, list, str, int, float, bool, tuple, type(None)})
"""Types of results that are certainly not awaitable: checked before asking inspect."""
_PLAIN = PLAIN_VALUES


class Invoker:
    """Runs tool stages for one runtime; owns its portal thread and worker pool.

    ``twins`` goes to the `Portal`, for the advice of a refused sync call.
    """

    __slots__ = ("_lock", "_max_workers", "_pool", "portal")

    def __init__(
        self, *, max_workers: int = 8, twins: Mapping[CodeType, str] | None = None
    ) -> None:
        self.portal = Portal(twins)
        self._max_workers = max_workers
        self._pool: DaemonPool | None = None
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
                    return _on_own_loop(
                        self.portal, loop, fn, args, timeout=timeout, on_cancel=on_cancel
                    )
                return self.portal.call(fn(*args), timeout=timeout, on_cancel=on_cancel)
            result = fn(*args) if timeout is None else in_thread(fn, args, timeout)
        except PortalTimeoutError as exc:
            raise InvokeTimeoutError(str(exc)) from None
        if type(result) not in _PLAIN and inspect.isawaitable(result):
            return self.settle(result, token, timeout)
        return result

    def settle(
        self, result: Any, token: Cancels | None, timeout: float | Deadline | None = None
    ) -> Any:
        """The value of an awaitable a sync stage returned, awaited on the runtime's loop.

        Raises:
            InvokeTimeoutError: it did not finish within ``timeout``.
            asyncio.CancelledError: ``token`` cancelled it.
        """
        on_cancel = token.on_cancel if token is not None else None
        try:
            return self.portal.call(_await(result), timeout=timeout, on_cancel=on_cancel)
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
            result = await athread(fn, args, timeout, on_abandon)
        else:
            context = contextvars.copy_context()
            running = self._ensure_pool().submit(context.run, fn, *args)
            try:
                result = await asyncio.wrap_future(running)
            except asyncio.CancelledError:
                # Cancelling the wrapper cancelled a job not yet started; a started one runs on.
                if on_abandon is not None and not running.cancelled():
                    on_abandon(straggler_of(running))
                raise
        if inspect.isawaitable(result):
            return await _cancellable(_await(result), token, timeout)
        return result

    def _ensure_pool(self) -> DaemonPool:
        with self._lock:
            if self._pool is None:
                if self.portal.closed:  # a call that raced close(): start nothing anew
                    raise ToolRuntimeError("the runtime is closed; it runs no more work")
                self._pool = DaemonPool(self._max_workers, "toolcycle-worker")
            return self._pool

    def close(self, timeout: float = 5.0) -> None:
        """Stop the portal thread and the pool (without waiting for running calls).

        Args:
            timeout: how long to wait for the portal's loop to wind down; 0 does not wait.
        """
        self.portal.close(timeout)
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()


def caller_cancelled() -> bool:
    """Whether the current task is being cancelled by its caller (not by a plan token)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


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
    portal: Portal,
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
        # The portal names the runtime method called, for the advice.
        raise portal.refusal("the thread of the tool's own event loop")
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
            return await await_result(task, deadline)
        except TimeoutError as exc:
            task.cancel()
            # Let it clean up, as wait_for does, but only for a while; and a
            # cancellation of the caller meanwhile is the caller's, so it propagates.
            await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
            task.add_done_callback(_retrieve)  # its late failure is nobody's to log
            raise InvokeTimeoutError(str(exc)) from None
        except asyncio.CancelledError:
            task.cancel()  # the caller was cancelled: so is the work
            # As with wait_for, the cancellation goes on once the work has wound down
            # (a script ends its processes), but only for a while.
            await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
            task.add_done_callback(_retrieve)
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


async def _await(awaitable: Any) -> Any:
    return await awaitable
