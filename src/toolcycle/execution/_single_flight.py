"""One tool's activation in one plan, which the calls that do not own it wait for.

The cache makes an `Activation` for the first call of a tool in a plan, its
*owner*; every later call of that tool in the plan gets the same record. Until
the owner finishes it (successfully, with an error, or with `OwnerGone` when it
left without an outcome) the others wait on it, from threads (`Activation.wait`)
or from tasks (`Activation.wait_async`), and then read its ``error``. The record
keeps its waiting apparatus (an event, callbacks) only while someone waits, so a
plan's finished activations stay small. Which record is current in which plan is
the cache's business (`toolcycle.cache`), not this module's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.protocols import ToolInstance

__all__ = ["Activation", "OwnerGone"]


class OwnerGone(Exception):
    """The owner of an activation left without an outcome: a waiter takes it over."""


class Activation:
    """One tool's activation in one plan; pending until its owner finishes it.

    A thread that waits on a pending activation gets an event made for it; one
    that finds it finished (nearly every later call in a plan) needs none, so a
    plan's idle activations do not each hold an event (about 1 KB apiece).
    """

    __slots__ = (
        "__weakref__",
        "_callbacks",
        "_done",
        "_event",
        "_lock",
        "error",
        "expires",
        "instance",
        "name",
        "retired",
    )

    def __init__(self, name: str, instance: ToolInstance) -> None:
        self.name = name
        self.instance = instance
        self.retired = False
        """Its tool was unregistered or replaced while it was still activating."""
        self.error: BaseException | None = None
        self.expires: float | None = None
        """``time.monotonic()`` past which waiting for it is given up (``activate_timeout``)."""
        self._done = False
        self._event: threading.Event | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] | None = None

    @property
    def done(self) -> bool:
        """Whether the owner has finished, successfully or not."""
        return self._done

    def _finish(self, error: BaseException | None) -> None:
        with self._lock:
            self.error = error
            self._done = True
            event, self._event = self._event, None
            callbacks, self._callbacks = self._callbacks, None
        if event is not None:
            event.set()
        for callback in callbacks or ():
            callback()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the owner has finished, or ``timeout`` seconds; whether it has."""
        if self._done:
            return True
        with self._lock:
            if self._done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    async def wait_async(self, timeout: float | None = None) -> bool:
        """Wait, without blocking the event loop, until the owner has finished; whether it has."""
        if self._done:
            return True
        loop = asyncio.get_running_loop()
        finished = loop.create_future()

        def resolve() -> None:
            if not finished.done():
                finished.set_result(None)

        def wake() -> None:
            # Runs in the owner's thread, which must not fail for a waiter gone with its loop.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(resolve)

        with self._lock:
            registered = not self._done
            if registered:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(wake)
        if not registered:
            return True
        try:
            if timeout is None:
                await finished
            else:
                await asyncio.wait({finished}, timeout=timeout)
            return finished.done()
        finally:
            with self._lock:  # a cancelled waiter leaves nothing behind
                if self._callbacks is not None and wake in self._callbacks:
                    self._callbacks.remove(wake)
