"""The calls of a plan that are in flight, so that ending the plan can stop them and wait.

A call is *admitted* once its checks have passed and *released* when its caller
has the result. Ending a plan closes its `Flights` (later calls are refused),
cancels every call still in flight and waits for them, within a limit. A sync
call left running (at its own timeout, or when its caller's task is cancelled)
stays in flight until its thread ends, so the plan's end waits for it too before
deactivating the plan's tools.

When a plan has ended, nothing here is keyed by its id: a call that finishes
late only drops itself from the `Flights` object it was admitted to, which the
plan no longer holds.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any

from toolcycle.cancellation import _run_callback

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from toolcycle._scope import _CallScope
    from toolcycle.cancellation import CancellationToken
    from toolcycle.execution._threads import Straggler

__all__ = ["Flight", "Flights", "wait_for"]


def _noop() -> None:
    return None


# One lock (and condition) for every flight of every plan: its sections are a few
# attribute writes and a set operation, so it is never held for long.
_lock = threading.Lock()
_changed = threading.Condition(_lock)


class Flight:
    """One call of a plan, from its admission until its work has really ended.

    It stands in for the plan's token where the call's stages are run: a stage
    registered with `on_cancel` is cancelled when the plan's token is, and also
    when the plan ends while the call is in flight.

    Attributes:
        ended: the plan ended while the call was in flight.
        left: the caller gave up (a timeout, a cancelled task) while a sync thread
            of the call ran on: set when that thread ends; None otherwise.
        done: the flight is over (its caller has the result and no thread of it runs).
        record: the call's trace record; the plan's end marks it ``abandoned``
            when it stops waiting for the call.
    """

    __slots__ = ("_hook", "_scope", "done", "ended", "group", "left", "owner", "reason", "record")

    def __init__(self, group: Flights, record: Any, owner: object) -> None:
        self.group = group
        self.record = record
        self.owner = owner
        self.ended = False
        self.done = False
        self.reason = ""
        self.left: threading.Event | None = None
        self._scope: _CallScope | None = None
        self._hook: Callable[[], object] | None = None

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` once when the plan's token is cancelled or the plan ends.

        The call's stages run one at a time, so one stage's callback is held here
        and `Flights` hands it the plan token's cancellation: no callback is added
        to the plan's token per call. A second callback while one is held (not
        done by the runtime) is registered with the token as well.

        Lock-free unless the plan is already cancelled or ending: the hook is
        written before ``ended`` and the token are read, and a canceller sets
        those before it takes the hook (under the lock), so one of the two sees
        the other, and whichever takes the hook runs it, once.

        Returns:
            A function that unregisters it; calling it again is harmless.
        """
        group = self.group
        if not group.listening:
            group.listen()
        if self._hook is not None:
            return self._also(callback)
        self._hook = callback
        if self.ended or group.token.is_cancelled:
            with _lock:
                mine = self._hook is callback
                if mine:
                    self._hook = None
            if mine:
                callback()
            return _noop
        return self._unhook

    def _unhook(self) -> None:
        # Only the call's own stage unregisters, before its next stage registers;
        # a canceller that took the hook meanwhile runs it all the same.
        self._hook = None

    def _also(self, callback: Callable[[], object]) -> Callable[[], None]:
        """A second callback at once: the plan's token runs it; the plan's end does not."""
        with _lock:
            if not self.ended:
                return self.group.token.on_cancel(callback)
        callback()
        return _noop

    def attach(self, scope: _CallScope) -> None:
        """Follow the running call's scope, whose token the plan's end cancels.

        Lock-free: ``_scope`` is written before ``ended`` is read, and `cancel`
        writes ``ended`` before it reads ``_scope``, so at least one of the two
        cancels the scope (twice is harmless).
        """
        self._scope = scope
        if self.ended:
            scope.cancel(self.reason)

    def cancel(self, reason: str) -> None:
        """The plan ends: cancel the call's token and the stage running now, if it can stop."""
        with _lock:
            if self.ended:
                return
            self.ended, self.reason = True, reason
            scope, hook = self._scope, self._hook
            self._hook = None
        if scope is not None:
            scope.cancel(reason)
        if hook is not None:
            _run_callback(hook)  # a stage that cannot be reached must not stop the plan's end

    @property
    def orphaned(self) -> bool:
        """The call's task belongs to an event loop that has closed: it can never finish."""
        owner = self.owner
        return isinstance(owner, asyncio.Task) and owner.get_loop().is_closed()

    def leave(self, straggler: Straggler) -> None:
        """The caller gives up on a sync thread that runs on: stay until it ends.

        The caller's limit passed, or its task was cancelled; Python cannot stop the thread.
        """
        self.left = straggler.finished
        straggler.when_done(lambda _error: self.group.drop(self))

    def is_caller(self, owner: object, scope: _CallScope | None) -> bool:
        """Whether code in thread or task ``owner``, in call ``scope``, is this call itself.

        The tool may run on another thread or task than the caller that owns the
        flight (the pool, a thread of its own, the portal), but its call scope
        goes with it. The owner counts only while it still waits for the call.
        """
        return (scope is not None and scope is self._scope) or (
            self.owner == owner and self.left is None
        )


class Flights:
    """The calls in flight of one plan."""

    __slots__ = ("_calls", "_unlisten", "closed", "listening", "token")

    def __init__(self, token: CancellationToken) -> None:
        self.token = token
        self.closed = False
        self._calls: set[Flight] = set()
        self.listening = False
        self._unlisten: Callable[[], None] | None = None

    def listen(self) -> None:
        """Hand the plan token's cancellation to the stages of the calls in flight.

        One callback for the whole plan, added the first time a stage asks (see
        `Flight.on_cancel`); a plan whose calls never wait on a stage adds none.
        A stage that registers meanwhile is served too: registered after the
        cancellation, the callback runs at once and finds it.
        """
        with _lock:
            if self.listening:
                return
            self.listening = True
        unlisten = self.token.on_cancel(self._token_cancelled)
        with _lock:
            over = self.closed and not self._calls
            if not over:
                self._unlisten = unlisten
        if over:  # the plan's last call ended meanwhile
            unlisten()

    def _quiet(self) -> None:
        """Once the plan is closed and no call of it is left, leave the plan's token.

        A token may outlive its plan (a host passes one token to many plans):
        the callback would otherwise keep these flights for the token's life.
        """
        with _lock:
            unlisten = self._unlisten if self.closed and not self._calls else None
            if unlisten is not None:
                self._unlisten = None
        if unlisten is not None:
            unlisten()

    def _token_cancelled(self) -> None:
        with _lock:
            hooks = []
            for flight in tuple(self._calls):  # a copy: admissions add to it lock-free
                if flight._hook is not None:
                    hooks.append(flight._hook)
                    flight._hook = None
        for hook in hooks:
            _run_callback(hook)

    def admit(self, record: Any, owner: object) -> Flight | None:
        """A new flight for a call, or None once the plan is ending.

        Lock-free: the flight is added before ``closed`` is read, and `close`
        sets ``closed`` before it reads the flights, so one of the two sees the
        other (set operations are atomic).
        """
        flight = Flight(self, record, owner)
        self._calls.add(flight)
        if self.closed:
            self.drop(flight)
            return None
        return flight

    def release(self, flight: Flight) -> None:
        """The call's caller has its result; the flight ends unless a thread of it runs on."""
        if flight.left is None:
            # Lock-free on the common path: ``done`` is written before ``closed`` is
            # read; a plan end that waits sets ``closed`` first and checks ``done``
            # under the lock, so it either sees it or is woken below.
            flight.done = True
            self._calls.discard(flight)
            if self.closed:
                with _changed:
                    _changed.notify_all()
                self._quiet()
            return
        with _changed:
            if not flight.left.is_set() and not flight.done:
                _changed.notify_all()  # no longer in progress, though its thread runs on
                return
            self._drop(flight)
        self._quiet()

    def drop(self, flight: Flight) -> None:
        """The flight is over, whatever its state."""
        with _changed:
            self._drop(flight)
        self._quiet()

    def _drop(self, flight: Flight) -> None:
        flight.done = True
        self._calls.discard(flight)
        if self.closed:
            _changed.notify_all()

    def current(self) -> tuple[Flight, ...]:
        """The flights in the plan now."""
        with _lock:
            return tuple(self._calls)

    def close(self) -> tuple[Flight, ...]:
        """Refuse later calls; the flights still in the plan."""
        with _lock:
            self.closed = True
            calls = tuple(self._calls)
        self._quiet()
        return calls


def wait_for(flights: Sequence[Flight], limit: float | None, *, live: bool) -> list[Flight]:
    """Wait, no longer than ``limit`` seconds, for ``flights`` to end; those that did not.

    With ``live``, a flight whose caller gave up on it at its own timeout (its
    thread runs on) counts as ended: the wait is for the calls still in progress.
    """

    def running() -> list[Flight]:
        return [f for f in flights if not f.done and not (live and f.left is not None)]

    deadline = None if limit is None else time.monotonic() + limit
    with _changed:
        while True:
            left = running()
            remaining = None if deadline is None else deadline - time.monotonic()
            if not left or (remaining is not None and remaining <= 0):
                return left
            _changed.wait(remaining)
