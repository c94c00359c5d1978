"""Cancellation of a plan, shared by every call made in it.

A `CancellationToken` is a one-way switch. Once ``cancel()`` has been called the
token stays cancelled; later calls change nothing (the first reason wins). It is
safe to use from any thread. Tools poll ``is_cancelled`` or call ``check()`` in
long loops; the runtime also registers callbacks with ``on_cancel`` so that an
awaited async tool is interrupted the moment the token is cancelled.

Callbacks run on the thread that calls ``cancel()``, outside the token's lock, so
a callback may itself use the token. A callback registered after cancellation
runs at once, on the registering thread. A callback that raises is logged and
does not stop the others.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from toolcycle.errors import ToolCancelledError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CancellationToken"]

_log = logging.getLogger("toolcycle.cancellation")


class CancellationToken:
    """A thread-safe, idempotent cancellation signal with an optional reason."""

    __slots__ = ("_callbacks", "_cancelled", "_lock", "_next_key", "_reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._reason: str | None = None
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._next_key = 0

    def __repr__(self) -> str:
        state = f"cancelled, reason={self._reason!r}" if self._cancelled else "active"
        return f"<CancellationToken {state}>"

    @property
    def is_cancelled(self) -> bool:
        """Whether ``cancel()`` has been called."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason given to the first ``cancel()``, if any."""
        return self._reason

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the token and run the registered callbacks.

        Args:
            reason: why, in a few words; kept only from the first call.

        Returns:
            True if this call cancelled the token, False if it already was.
        """
        with self._lock:
            if self._cancelled:
                return False
            self._cancelled = True
            self._reason = reason
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            _run_callback(callback)
        return True

    def check(self) -> None:
        """Raise `ToolCancelledError` if the token is cancelled; otherwise do nothing.

        Raises:
            ToolCancelledError: carrying the reason given to ``cancel()``.
        """
        if self._cancelled:
            message = "the plan was cancelled"
            if self._reason:
                message = f"{message}: {self._reason}"
            raise ToolCancelledError(message, reason=self._reason)

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` once when the token is cancelled (at once if it already is).

        Args:
            callback: a function of no arguments.

        Returns:
            A function that unregisters the callback; calling it again is harmless.
        """
        with self._lock:
            if not self._cancelled:
                key = self._next_key
                self._next_key += 1
                self._callbacks[key] = callback
                return lambda: self._unregister(key)
        _run_callback(callback)
        return _noop

    def _unregister(self, key: int) -> None:
        with self._lock:
            self._callbacks.pop(key, None)


def _run_callback(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        _log.exception("a cancellation callback raised; the other callbacks still ran")


def _noop() -> None:
    return None
