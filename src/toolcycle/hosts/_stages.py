"""Which of one plan's tools are active in a host's worker, and which of their stages run there.

A worker (a `ProcessHost` process, a `RayHost` actor) may go on running a stage
its caller gave up on: a sync body past a timeout, an activation past a cancel.
`ToolStages` is what a worker keeps per plan so that such a stage never costs a
tool its lifecycle: a tool is activated at most once (an activate of a tool
active already is done at once; one that comes while the first runs waits and
shares its outcome, or tries afresh if the first failed), its ``deactivate`` is
held until its stages running there have ended, and as the worker lets the plan
go it learns which tools were activated with no call to take them up, to
deactivate them itself. It knows nothing of how stages run: the worker says when
one starts and ends, and gets its answers as callbacks, run outside its lock, so
a thread pool and an event loop use it alike.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ToolStages"]

W = TypeVar("W")


class ToolStages(Generic[W]):
    """One plan's tools in a worker: the active ones, the activations under way, the stages running.

    ``W`` is what a worker keeps of an activate that waits for another (its
    message, a future): `activated` hands them back when the first ends.
    Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[str, None] = {}  # activated, not yet deactivated, in order
        self._activating: dict[str, list[W]] = {}  # the activations under way, and who waits
        self._running: dict[str, int] = {}  # stages started and not ended, by tool
        self._idle: dict[str, list[Callable[[], object]]] = {}  # what waits for a tool's stages
        self._open = 0  # stages running or held, of every tool
        self._quiet: list[Callable[[], object]] = []  # what waits for none to be open

    def activate(self, name: str, waiter: W) -> Literal["run", "done", "wait"]:
        """Whether an activate of ``name`` should run, is done already, or waits for the first.

        On ``"run"`` the caller runs it, marked as a stage (`begin`), and says how it
        ended (`activated`); on ``"wait"``, ``waiter`` is handed back then.
        """
        with self._lock:
            waiting = self._activating.get(name)
            if waiting is not None:
                waiting.append(waiter)
                return "wait"
            if name in self._active:  # it ended after its caller gave up on it
                return "done"
            self._activating[name] = []
            return "run"

    def activated(self, name: str, ok: bool) -> list[W]:
        """The activation of ``name`` ended; those who waited for it, in order.

        If it failed, each of them tries afresh (through `activate`), as the
        runtime's cache would have.
        """
        with self._lock:
            if ok:
                self._active[name] = None
            return self._activating.pop(name, [])

    def begin(self, name: str) -> None:
        """A stage of ``name`` starts running (`end` says when it ended)."""
        with self._lock:
            self._running[name] = self._running.get(name, 0) + 1
            self._open += 1

    def end(self, name: str) -> None:
        """A stage of ``name`` has ended; what waited for it to be the last runs now."""
        with self._lock:
            left = self._running[name] = self._running.get(name, 1) - 1
            idle = self._idle.pop(name, []) if left <= 0 else []
            if left <= 0:
                del self._running[name]
            self._open -= 1
            quiet = self._taken_quiet()
        for action in (*idle, *quiet):
            action()

    def deactivate(self, name: str, start: Callable[[], object]) -> None:
        """Call ``start`` to run ``name``'s deactivation once none of its stages runs.

        Held, the deactivation counts as open (`when_quiet` waits for it); once
        ``start`` is called it is a running stage of the tool, which its `end`
        ends. The tool is no longer active from then on, whatever its outcome.
        """
        with self._lock:
            self._open += 1
            if self._running.get(name, 0) > 0:
                self._idle.setdefault(name, []).append(lambda: self._deactivate(name, start))
                return
        self._deactivate(name, start)

    def _deactivate(self, name: str, start: Callable[[], object]) -> None:
        with self._lock:
            if self._running.get(name, 0) > 0:  # a stage began as the last one ended
                self._idle.setdefault(name, []).append(lambda: self._deactivate(name, start))
                return
            self._running[name] = 1  # the held deactivation, now running: still open
            self._active.pop(name, None)  # tried now: never again as the worker lets go
        start()

    def when_quiet(self, action: Callable[[], object]) -> None:
        """Call ``action`` once no stage runs or is held (at once if none is)."""
        with self._lock:
            if self._open > 0:
                self._quiet.append(action)
                return
        action()

    def leftover(self) -> list[str]:
        """The tools still active, newest first, forgotten here: the worker deactivates them."""
        with self._lock:
            names, self._active = list(self._active), {}
        return names[::-1]

    def _taken_quiet(self) -> list[Callable[[], object]]:
        if self._open > 0:
            return []
        quiet, self._quiet = self._quiet, []
        return quiet
