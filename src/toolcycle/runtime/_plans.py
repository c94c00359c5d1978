"""The plan registry: open plans, and end them (drain their calls, then deactivate)."""

from __future__ import annotations

import asyncio
import os
import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from toolcycle._scope import _call_scope, _CallScope
from toolcycle.cancellation import CancellationToken
from toolcycle.context import ToolExecutionContext
from toolcycle.execution._inflight import wait_for
from toolcycle.execution._portal import waker
from toolcycle.protocols import PlanHost
from toolcycle.runtime._limits import check_seconds
from toolcycle.runtime._shared import despite_cancellation, here
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextvars import Token

    from toolcycle.cache import ToolLifecycleCache
    from toolcycle.errors import ToolDeactivationError
    from toolcycle.execution._inflight import Flight
    from toolcycle.execution._lifecycle import LifecycleCalls
    from toolcycle.runtime._settings import Settings

__all__ = ["PlanRegistry"]

_log = get_logger("toolcycle.runtime")

# The plans whose end the code running here is part of: the end itself, the
# ``deactivate``s it runs, and whatever they start (a helper thread, a task on
# the runtime's loop copies it). A second end of one of them from here is
# re-entrant: waiting for the first end would be waiting for itself.
_ending_here: ContextVar[tuple[ToolExecutionContext, ...]] = ContextVar(
    "toolcycle_ending_here", default=()
)


class _End:
    """One plan end under way: where it runs, the calls it drains, and who waits for it."""

    __slots__ = ("ctx", "flights", "over", "thread", "wakers")

    def __init__(self, ctx: ToolExecutionContext, flights: tuple[Flight, ...]) -> None:
        self.ctx = ctx
        self.flights = flights
        self.thread = threading.get_ident()
        self.over = False
        self.wakers: list[Callable[[], object]] = []


class PlanRegistry:
    """Opens plans and ends them, so that every activated tool is deactivated once.

    Args:
        cache: where the open plans and their activations are tracked.
        calls: deactivates a plan's tools (with its time limit).
        settings: the runtime's shared settings (whether it is closed).
        before_plan: called before each new plan (the registry refreshes stale
            sources there).
        plan_due: whether ``before_plan`` has work to do; an async caller then
            runs it in a worker thread.
        after_plan: called with a plan's context once it has ended (the result
            cache drops the plan's entries there).
        drain_timeout: see `ToolRuntime`.
        abandon_timeout: see `ToolRuntime`.
    """

    def __init__(
        self,
        cache: ToolLifecycleCache,
        calls: LifecycleCalls,
        settings: Settings,
        *,
        before_plan: Callable[[], None],
        plan_due: Callable[[], bool] = lambda: False,
        after_plan: Callable[[ToolExecutionContext], object],
        drain_timeout: float | None,
        abandon_timeout: float | None,
    ) -> None:
        self._cache = cache
        self._calls = calls
        self._settings = settings
        self._before_plan = before_plan
        self._plan_due = plan_due
        self._after_plan = after_plan
        self._drain_timeout = check_seconds("drain_timeout", drain_timeout, zero=True)
        self._abandon_timeout = check_seconds("abandon_timeout", abandon_timeout, zero=True)
        # Each plan end under way, so that closing, and a second end of the same
        # plan, wait for it.
        self._under_way: dict[ToolExecutionContext, _End] = {}
        self._ends = threading.Condition()

    def new_context(self, plan_id: str | None, **options: Any) -> ToolExecutionContext:
        """A tracked context for a new plan (see `ToolRuntime.new_context`)."""
        self._check(plan_id)
        self._before_plan()
        ctx = self._open(plan_id, options)
        if self._settings.closed:  # closed since the check: close() may have missed it
            self.end_plan(ctx)
            self._settings.check_open()  # raises
        return ctx

    async def anew_context(self, plan_id: str | None, **options: Any) -> ToolExecutionContext:
        """As `new_context`, but stale sources are listed in a worker thread, off the loop."""
        self._check(plan_id)
        if self._plan_due():
            await asyncio.to_thread(self._before_plan)
        ctx = self._open(plan_id, options)
        if self._settings.closed:  # as in new_context
            await self.aend_plan(ctx)
            self._settings.check_open()  # raises
        return ctx

    def _check(self, plan_id: str | None) -> None:
        self._settings.check_open()
        if plan_id is not None and (not isinstance(plan_id, str) or not plan_id):
            # "" is not "no id": a made-up id would hide the caller's empty variable.
            raise ValueError(
                f"plan_id must be a non-empty string, or None for a new id, got {plan_id!r}"
            )

    def _open(self, plan_id: str | None, options: dict[str, Any]) -> ToolExecutionContext:
        token = options.pop("cancellation_token", None)
        host = options.get("host")
        if host is not None and not isinstance(host, PlanHost):
            raise TypeError(
                f"host must be a PlanHost (such as toolcycle.hosts.ProcessHost), got {host!r}"
            )
        durable = options.get("durable")
        if durable is not None:  # the engine may name the plan after its workflow
            plan_id = durable.open(plan_id)
        ctx = ToolExecutionContext(
            plan_id if plan_id is not None else f"plan-{os.urandom(6).hex()}",
            resources=tuple(options.pop("resources", ())),
            cancellation_token=token or CancellationToken(),
            metadata=_copied(options.pop("metadata", None)),
            **options,
        )
        # Closing marks the runtime closed before it lists the open plans, and the
        # listing and `track` share the cache's lock: a close that missed this plan
        # is seen by the caller's check of ``closed`` after this, which ends it.
        self._cache.track(ctx)
        lifecycle_event(
            "plan.started",
            plan_id=ctx.plan_id,
            read_only=ctx.read_only,
            requires_checkpoint=ctx.requires_checkpoint,
        )
        return ctx

    def end_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """End the plan from sync code (see `ToolRuntime.end_plan`)."""
        end = self._start(ctx)
        if end is None:
            other = self._other_end(ctx, blocking=True)
            if other is not None:
                with self._ends:
                    self._ends.wait_for(lambda: other.over)
            return []
        token = _ending_here.set((*_ending_here.get(), ctx))
        try:
            if end.flights:
                self._drain(ctx, end.flights)
            errors = self._cache.end_plan(ctx, self._calls.teardown)
            if ctx.host is not None:  # its tools are deactivated: now the worker ends
                ctx.host.end(ctx)
            return self._ended(ctx, errors)
        finally:
            self._finish(end)
            _leave(token)

    async def aend_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """End the plan from async code (see `ToolRuntime.aend_plan`)."""
        end = self._start(ctx)
        if end is None:
            await self._await_other_end(ctx)
            return []
        token = _ending_here.set((*_ending_here.get(), ctx))
        try:
            if end.flights:
                drain = asyncio.ensure_future(
                    asyncio.to_thread(self._drain, ctx, end.flights, here(), _call_scope.get())
                )
                # Cancelled meanwhile, the end must not deactivate tools under calls still
                # running: it ends the plan after the drain all the same, then re-raises.
                cancelled = await despite_cancellation(
                    drain, "plan.end_cancelled", plan_id=ctx.plan_id
                )
                if cancelled is not None:
                    ending = asyncio.ensure_future(self._aend(ctx))
                    await despite_cancellation(ending, "plan.end_cancelled", plan_id=ctx.plan_id)
                    raise cancelled
            return await self._aend(ctx)
        finally:
            self._finish(end)
            _leave(token)

    def end_all(self) -> None:
        """End every open plan, and wait for the ends other threads have under way.

        The runtime is closing: its threads must outlive every deactivation. An
        end running on this very thread (``close`` called from an event loop
        whose task is ending a plan, say) is not waited for: it could only go on
        once this returns.
        """
        for ctx in self._cache.open_plans():
            self.end_plan(ctx)
        me = threading.get_ident()
        with self._ends:
            others = [end for end in self._under_way.values() if end.thread != me]
            if others:
                lifecycle_event("runtime.awaiting_plan_ends", count=len(others))
            self._ends.wait_for(lambda: all(end.thread == me for end in self._under_way.values()))

    async def aend_all(self) -> None:
        """Async twin of `end_all`: each open plan ends as by `aend_plan`, on this loop.

        The ends other threads or tasks have under way are then awaited without
        blocking the loop, those on this loop's other tasks included; not those
        the code running here is part of (a ``deactivate`` that closes the runtime).
        """
        for ctx in self._cache.open_plans():
            await self.aend_plan(ctx)
        with self._ends:
            ending = list(self._under_way)
        for ctx in ending:
            await self._await_other_end(ctx)

    def _start(self, ctx: ToolExecutionContext) -> _End | None:
        """Close the plan and count its end as under way; None if it had ended or is ending."""
        with self._ends:
            flights = self._cache.close(ctx)
            if flights is None:
                return None
            end = self._under_way[ctx] = _End(ctx, flights)
            return end

    def _finish(self, end: _End) -> None:
        """The end is over: wake whoever waits for it."""
        with self._ends:
            del self._under_way[end.ctx]
            end.over = True
            wakers, end.wakers = end.wakers, []
            self._ends.notify_all()
        for wake in wakers:
            wake()

    def _other_end(
        self,
        ctx: ToolExecutionContext,
        *,
        blocking: bool,
        wake: Callable[[], object] | None = None,
    ) -> _End | None:
        """The end of ``ctx`` under way that a second end must wait for, if any.

        None when the plan's end is over, and when the code asking is part of
        that end (a ``deactivate`` it runs) or is one of the calls it drains (a
        tool ending its own plan), or, for a ``blocking`` wait, when the end
        runs on this very thread (an event loop's task in `aend_plan`): the
        first end could only finish once this returns, so waiting would deadlock.
        ``wake`` is called once the end is over: it is registered here, under
        the lock, so that it cannot miss the end.
        """
        with self._ends:
            end = self._under_way.get(ctx)
            if end is None or ctx in _ending_here.get():
                return None
            if blocking and end.thread == threading.get_ident():
                return None
            owner, scope = here(), _call_scope.get()
            if any(flight.is_caller(owner, scope) for flight in end.flights):
                return None
            if wake is not None:
                end.wakers.append(wake)
        lifecycle_event("plan.awaiting_end", plan_id=ctx.plan_id)
        return end

    async def _await_other_end(self, ctx: ToolExecutionContext) -> None:
        """Wait, without blocking the event loop, until another end of ``ctx`` is over."""
        over, wake = waker(asyncio.get_running_loop())  # woken by the ending thread
        end = self._other_end(ctx, blocking=False, wake=wake)
        if end is None:
            return
        try:
            await over
        finally:
            with self._ends:  # a cancelled waiter leaves nothing behind
                if wake in end.wakers:
                    end.wakers.remove(wake)

    async def _aend(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        errors = await self._cache.aend_plan(ctx, self._calls.ateardown)
        if ctx.host is not None:
            await asyncio.to_thread(ctx.host.end, ctx)
        return self._ended(ctx, errors)

    def _ended(
        self, ctx: ToolExecutionContext, errors: list[ToolDeactivationError]
    ) -> list[ToolDeactivationError]:
        self._after_plan(ctx)
        for error in errors:
            _log.warning(
                "tool.deactivate_failed",
                tool=error.tool_name,
                plan_id=error.plan_id,
                error=str(error),
            )
        lifecycle_event("plan.ended", plan_id=ctx.plan_id, errors=len(errors))
        return errors

    def _drain(
        self,
        ctx: ToolExecutionContext,
        flights: tuple[Flight, ...],
        owner: object = None,
        scope: _CallScope | None = None,
    ) -> None:
        """Stop the plan's calls in flight and wait for them, within the limits.

        A call made from the thread or task that ends the plan, or whose tool is
        the code ending it (a tool ending its own plan), is not waited for: it
        could only finish once this returns. ``owner`` and ``scope`` say where the
        ending code runs (`aend_plan` drains on a worker thread); by default, here.
        """
        if owner is None:
            owner, scope = here(), _call_scope.get()
        waiting = [f for f in flights if not f.is_caller(owner, scope)]
        reason = f"plan {ctx.plan_id!r} ended while the call ran"
        lifecycle_event("plan.draining", plan_id=ctx.plan_id, calls=len(waiting))
        for flight in waiting:
            flight.cancel(reason)
        # A call whose event loop has closed can never finish: waiting for it
        # would only spend the drain limit.
        orphans = [flight for flight in waiting if flight.orphaned]
        for flight in orphans:
            flight.group.drop(flight)
        _abandon(ctx, orphans, "plan.calls_orphaned")
        _abandon(ctx, wait_for(waiting, self._drain_timeout, live=True), "plan.calls_abandoned")
        # Sync calls given up on at their own timeout whose threads run on.
        left = [flight for flight in waiting if flight.left is not None]
        stuck = wait_for(left, self._abandon_timeout, live=False) if left else []
        if stuck:
            _log.warning("tool.abandoned_still_running", plan_id=ctx.plan_id, count=len(stuck))


def _copied(metadata: Any) -> dict[str, Any]:
    """The plan's own copy of ``metadata`` (anything ``dict()`` takes; None for none).

    Raises:
        TypeError: ``dict()`` cannot make a dict of it; said plainly, not as
            ``dict()``'s message about sequences.
    """
    if metadata is None:
        return {}
    try:
        return dict(metadata)
    except (TypeError, ValueError):
        raise TypeError(f"metadata must be a dict or None, got {metadata!r}") from None


def _leave(token: Token[tuple[ToolExecutionContext, ...]]) -> None:
    """Undo the `_ending_here` set at the start of a plan end."""
    try:
        _ending_here.reset(token)
    except ValueError:  # pragma: no cover - a coroutine closed outside its task's context
        return


def _abandon(ctx: ToolExecutionContext, flights: list[Flight], event: str) -> None:
    """Mark the calls the plan's end stops waiting for, and log them under ``event``."""
    for flight in flights:
        flight.record.abandoned = True
    if flights:
        _log.warning(
            event,
            plan_id=ctx.plan_id,
            count=len(flights),
            tools=sorted({flight.record.tool_name for flight in flights}),
        )
