"""Closing a runtime, from sync or async code: end its plans, close its sources, stop its threads.

`Closer.close` and `Closer.aclose` take the same steps in the same order. The
async one awaits on the caller's loop what may need that loop (a plan's async
``deactivate``, a source's ``aclose``) and runs what blocks (a source's sync
``close``, the join of the runtime's loop thread) in a worker thread, so that
the caller's loop stays free throughout.

A sync close made on a running event loop blocks that loop until it is over. It
is refused when it would wait on that very loop: an ``aclose`` under way there,
or calls of the runtime in flight there, which the plan ends drain.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolcycle._scope import _call_scope
from toolcycle.errors import ToolRuntimeError
from toolcycle.runtime._shared import despite_cancellation, here

if TYPE_CHECKING:
    import weakref

    from toolcycle.cache import ToolLifecycleCache
    from toolcycle.execution._invoke import Invoker
    from toolcycle.runtime._plans import PlanRegistry
    from toolcycle.runtime._registry import ToolRegistry
    from toolcycle.runtime._settings import Settings

__all__ = ["Closer"]


class Closer:
    """Closes one runtime, once; a later caller waits for that close to be over.

    Args:
        settings: the runtime's settings, which hold its closed state.
        cache: the open plans, whose calls in flight a sync close may not wait on.
        plans: ends the open plans.
        tools: closes the registered sources.
        invoker: owns the runtime's loop thread and worker pool.
        release: the runtime's finalizer, detached once its threads are stopped.
    """

    __slots__ = ("_cache", "_invoker", "_plans", "_release", "_settings", "_tools")

    def __init__(
        self,
        settings: Settings,
        cache: ToolLifecycleCache,
        plans: PlanRegistry,
        tools: ToolRegistry,
        invoker: Invoker,
        release: weakref.finalize[..., Any],
    ) -> None:
        self._settings = settings
        self._cache = cache
        self._plans = plans
        self._tools = tools
        self._invoker = invoker
        self._release = release

    def close(self) -> None:
        """Close from sync code (see `ToolRuntime.close`).

        Raises:
            ToolRuntimeError: called on a running event loop that it would wait on.
        """
        settings = self._settings
        loop = _running_loop()
        if loop is not None:
            self._check_loop(loop)
        if not settings.close():
            if self._may_wait():
                settings.wait_closed()
            return
        with settings.closing():
            self._plans.end_all()
            self._tools.close_sources()
            self._stop()

    async def aclose(self) -> None:
        """Close from async code (see `ToolRuntime.aclose`)."""
        settings = self._settings
        if not settings.close():
            if self._may_wait():
                await settings.await_closed()
            return
        # A cancelled caller must not leave the runtime half closed: the close runs
        # to its end as a task of its own, and the cancellation is raised after it.
        closing = asyncio.ensure_future(self._aclose(asyncio.get_running_loop()))
        cancelled = await despite_cancellation(closing, "runtime.close_cancelled")
        if cancelled is not None:
            raise cancelled

    async def _aclose(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._settings.closing(loop):
            await self._plans.aend_all()
            await self._tools.aclose_sources()
            if self._invoker.portal.in_portal_thread():
                self._stop()  # awaited on the runtime's own loop, which cannot join itself
            else:
                await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._invoker.close()
        self._release.detach()

    def _may_wait(self) -> bool:
        """Whether a second caller may wait: not in a tool call or on the runtime's loop thread.

        The first close may be waiting on either.
        """
        return _call_scope.get() is None and not self._invoker.portal.in_portal_thread()

    def _check_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Refuse a sync close on ``loop`` that would wait on ``loop`` while blocking it."""
        if self._settings.closing_on(loop):
            what = "an aclose() of the runtime is under way"
        else:
            owner, scope = here(), _call_scope.get()
            waits = any(
                isinstance(flight.owner, asyncio.Task)
                and flight.owner.get_loop() is loop
                and not flight.done
                and flight.left is None
                and not flight.is_caller(owner, scope)
                for flight in self._cache.in_flight()
            )
            if not waits:
                return
            what = "calls of the runtime are in flight"
        raise ToolRuntimeError(
            f"close() was called on a running event loop where {what}; it would wait "
            "on that loop while blocking it; await runtime.aclose() instead"
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # no event loop runs in this thread
        return None
