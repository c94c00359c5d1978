"""One call as an async stream: each progress report as it comes, then the result.

`CallStream` is what ``runtime.astream`` and ``runtime.astream_call`` return. It
starts the call in a task of its own on first iteration and hands the call a
progress listener (a `_Channel`); reports reach the consumer through a bounded
buffer that drops the oldest when the consumer falls behind.

The task never holds the stream itself, only the channel. So when a consumer
leaves its ``async for`` early and drops the stream, the stream is collected at
once and cancels the call; ``aclose()`` (or ``async with``) does the same and
also waits for the call to end.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import threading
from typing import TYPE_CHECKING, Any, Self

from toolcycle._bounds import shown_value

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from toolcycle.models import ProgressEvent, ToolResult

    Listener = Callable[[ProgressEvent], object]
    Starter = Callable[[Listener], Coroutine[Any, Any, ToolResult]]

__all__ = ["CallStream"]


class _Channel:
    """The buffer between the running call and the consumer, on the consumer's loop.

    ``put`` may be called from any thread: a sync tool reports from a worker
    thread and an MCP server's reports arrive on its connection's thread, so
    those are handed to the loop; a report made on the loop's own thread is
    buffered at once.
    """

    __slots__ = ("closed", "dropped", "events", "limit", "loop", "thread", "wake")

    def __init__(self, limit: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        self.limit = limit
        self.events: collections.deque[ProgressEvent] = collections.deque()
        self.dropped = 0
        self.closed = False
        self.wake = asyncio.Event()

    def put(self, event: ProgressEvent) -> None:
        """Buffer a report (the call's progress listener)."""
        if threading.get_ident() == self.thread:
            self._buffer(event)
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left to read it
            self.loop.call_soon_threadsafe(self._buffer, event)

    def _buffer(self, event: ProgressEvent) -> None:
        if self.closed:
            return
        if len(self.events) >= self.limit:
            self.events.popleft()  # the consumer is behind: the newest news matters most
            self.dropped += 1
        self.events.append(event)
        self.wake.set()

    def ended(self, task: asyncio.Task[ToolResult]) -> None:
        """The call's task is done: buffer no more, wake the consumer, mark its error as seen.

        A report handed over after this (a sync tool's thread left running past
        the call's time limit) is no part of the stream: the result is its last item.
        """
        self.closed = True
        self.wake.set()
        if not task.cancelled():
            # Read here so that asyncio does not log an error the consumer never
            # came back for; the consumer still gets it from task.result().
            task.exception()


class CallStream:
    """The progress events of one call as they are reported, then its result.

    Iterate it with ``async for``: each item is a `ProgressEvent` until the
    last, which is the call's `ToolResult`; an exception the call raises
    comes out of the iteration instead. The call starts on the first
    iteration, in a task of its own on the consumer's loop.

    Leaving early (``break``, ``aclose()``, the end of ``async with``, or the
    consuming task being cancelled) cancels the call. Use ``async with`` or
    ``aclose()`` to wait until the call has ended; a ``break`` alone cancels
    it as the stream is dropped, without waiting.
    """

    __slots__ = ("_channel", "_limit", "_over", "_start", "_task")

    def __init__(self, start: Starter, max_buffered: int) -> None:
        """Make the stream of the call that ``start`` begins when given a progress listener.

        Raises:
            TypeError: ``max_buffered`` is not an integer.
            ValueError: ``max_buffered`` is less than 1.
        """
        self._task: asyncio.Task[ToolResult] | None = None  # set first: __del__ reads it
        if isinstance(max_buffered, bool) or not isinstance(max_buffered, int):
            raise TypeError(f"max_buffered must be an integer, got {max_buffered!r}")
        if max_buffered < 1:
            raise ValueError(f"max_buffered must be at least 1, got {shown_value(max_buffered)}")
        self._start = start
        self._limit = max_buffered
        self._channel: _Channel | None = None
        self._over = False

    @property
    def dropped(self) -> int:
        """How many events were dropped because the consumer fell behind."""
        return self._channel.dropped if self._channel is not None else 0

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ProgressEvent | ToolResult:
        """The next event, or the result after the last one.

        Raises:
            StopAsyncIteration: the result has been given, or the stream closed.
            Exception: whatever the call raised (as ``aexecute`` or ``acall``).
        """
        if self._over:
            raise StopAsyncIteration
        channel, task = self._channel, self._task
        if channel is None or task is None:
            channel, task = self._begin()
        while True:
            if channel.events:
                return channel.events.popleft()
            if task.done():
                self._end(channel)
                return task.result()
            channel.wake.clear()
            try:
                await channel.wake.wait()
            except BaseException:  # the consumer was cancelled: so is the call
                self._end(channel)
                task.cancel()
                raise
            if self._over:  # aclose() from another task: the loop ends, it is not cancelled
                raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop the stream: cancel the call if it is still running and wait for it to end.

        A call that had already ended keeps its result and trace. A consumer
        waiting for the next item in another task stops iterating, as after the
        last item. Idempotent.
        """
        self._over = True
        channel, task = self._channel, self._task
        if channel is not None:
            channel.closed = True
        if task is None:
            return
        if not task.done():
            task.cancel()
            await asyncio.wait([task])

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # a closed loop ended the task with it
                task.get_loop().call_soon_threadsafe(task.cancel)

    def _begin(self) -> tuple[_Channel, asyncio.Task[ToolResult]]:
        """Start the call in its own task, listening to its progress."""
        channel = _Channel(self._limit)
        # The call opens its observer's span (and makes it current) as it starts, and
        # closes it in the task: both must happen in the task's context, or the span
        # stays current for the consumer and cannot be detached from the task.
        context = contextvars.copy_context()
        try:
            # A host's mistake raises here, at once.
            coroutine = context.run(self._start, channel.put)
        except BaseException:
            self._over = True
            raise
        task = asyncio.get_running_loop().create_task(coroutine, context=context)
        task.add_done_callback(channel.ended)
        self._channel, self._task = channel, task
        return channel, task

    def _end(self, channel: _Channel) -> None:
        self._over = True
        channel.closed = True
