"""The one event-loop thread every MCP connection of the process lives on.

The SDK's sessions and transports are anyio contexts that must be entered and
left by the same task, on the same loop. Callers come from anywhere: the
runtime's sync path runs on its portal thread, async hosts on their own loops,
sometimes several at once. So every connection is opened, served and closed on
this loop, and callers hop to it: one thread switch each way. (The exception is
an in-process or stdio plan first activated from a caller's loop, whose
connection lives on that loop; see ``_sharing``. `hop` reaches that loop the
same way.)

The thread is a daemon, started on first use and never stopped: a server's
parent-death signal is tied to the thread that forked it, so every stdio
server is forked here (see ``_child``), and the thread must live as long as the
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

__all__ = ["event_loop", "hop", "on_loop", "run", "start_on", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _ensure() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=serve, name="toolcycle-mcp", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = loop, thread
        return _loop


def event_loop() -> asyncio.AbstractEventLoop:
    """The MCP loop, started if it was not running yet."""
    return _ensure()


def on_loop() -> bool:
    """Whether the current thread is the MCP loop's thread."""
    return _thread is not None and threading.current_thread() is _thread


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the MCP loop from sync code and return its result.

    Raises:
        RuntimeError: called from the MCP loop's own thread, where it would wait
            on itself.
    """
    if on_loop():
        coro.close()
        raise RuntimeError("a blocking MCP call was made from the MCP loop's own thread")
    future = asyncio.run_coroutine_threadsafe(coro, _ensure())
    try:
        return future.result()
    except BaseException:
        # KeyboardInterrupt in the waiting thread: the work must not outlive the caller.
        future.cancel()
        raise


async def hop(
    coro: Coroutine[Any, Any, T],
    target: asyncio.AbstractEventLoop | None = None,
    *,
    undo: Callable[[T], Coroutine[Any, Any, Any]] | None = None,
) -> T:
    """Await ``coro`` on the MCP loop (or ``target``) from any loop; cancelling the caller cancels it.

    A caller cancelled just as ``coro`` finished never sees its result: ``undo``,
    if given, is then run on that loop with the result, to release what it holds.

    One callback crosses to the other loop to start the task and one crosses back
    with its outcome. (``run_coroutine_threadsafe`` plus ``wrap_future`` does the
    same through a thread-safe future and two chained callbacks: up to about 50 us
    more per call here.) ``target`` must be running and must not be waiting on
    the caller, or this waits forever.
    """
    loop = target if target is not None else _ensure()
    here = asyncio.get_running_loop()
    if here is loop:
        return await coro
    waiter: asyncio.Future[T] = here.create_future()
    started: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro)
        started.append(task)
        task.add_done_callback(report)

    def report(task: asyncio.Task[T]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here, so a caller that gave up leaves no warning
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed
            here.call_soon_threadsafe(_settle, task, waiter)

    def give_up() -> None:
        # start() was queued first, so the task exists when this runs.
        task = started[0]
        if undo is not None:
            task.add_done_callback(lambda done: _undone(done, undo))
        task.cancel()

    loop.call_soon_threadsafe(start)
    try:
        return await waiter
    except asyncio.CancelledError:
        loop.call_soon_threadsafe(give_up)
        raise


def _undone(task: asyncio.Task[T], undo: Callable[[T], Coroutine[Any, Any, Any]]) -> None:
    """Run ``undo`` with the result of a task whose caller gave up, if it succeeded."""
    if task.cancelled() or task.exception() is not None:
        return
    undoing = task.get_loop().create_task(undo(task.result()))
    _detached.add(undoing)
    undoing.add_done_callback(_detached.discard)


def _settle(task: asyncio.Task[T], waiter: asyncio.Future[T]) -> None:
    """Copy a finished task's outcome onto the caller's future, unless it gave up."""
    if waiter.done():
        return
    if task.cancelled():
        waiter.cancel()
    elif (exc := task.exception()) is not None:
        waiter.set_exception(exc)
    else:
        waiter.set_result(task.result())


def start_on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> bool:
    """Start ``coro`` as a task on ``loop`` without waiting for it; False if ``loop`` has closed.

    The task is kept referenced until it ends (a loop holds its tasks only weakly).
    """

    def start() -> None:
        task = loop.create_task(coro)
        _detached.add(task)
        task.add_done_callback(_detached.discard)

    try:
        loop.call_soon_threadsafe(start)
    except RuntimeError:  # closed: nothing of it will run again
        coro.close()
        return False
    return True


_detached: set[asyncio.Task[Any]] = set()


def submit(coro: Coroutine[Any, Any, Any]) -> None:
    """Start ``coro`` on the MCP loop without waiting for it (from any thread)."""
    loop = _ensure()
    if on_loop():
        loop.create_task(coro)
    else:
        asyncio.run_coroutine_threadsafe(coro, loop)
