"""The plan registry: open plans, and end them (drain their calls, then deactivate)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

from toolcycle.cancellation import CancellationToken
from toolcycle.context import ToolExecutionContext, _call_scope
from toolcycle.execution._inflight import wait_for
from toolcycle.protocols import PlanHost
from toolcycle.runtime._limits import check_seconds
from toolcycle.runtime._shared import here
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from toolcycle.cache import ToolLifecycleCache
    from toolcycle.context import _CallScope
    from toolcycle.errors import ToolDeactivationError
    from toolcycle.execution._inflight import Flight
    from toolcycle.execution._lifecycle import LifecycleCalls
    from toolcycle.runtime._shared import Settings

__all__ = ["PlanRegistry"]

_log = get_logger("toolcycle.runtime")


class PlanRegistry:
    """Opens plans and ends them, so that every activated tool is deactivated once.

    Args:
        cache: where the open plans and their activations are tracked.
        calls: deactivates a plan's tools (with its time limit).
        settings: the runtime's shared settings (whether it is closed).
        before_plan: called before each new plan (the registry refreshes stale
            sources there).
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
        after_plan: Callable[[ToolExecutionContext], object],
        drain_timeout: float | None,
        abandon_timeout: float | None,
    ) -> None:
        self._cache = cache
        self._calls = calls
        self._settings = settings
        self._before_plan = before_plan
        self._after_plan = after_plan
        self._drain_timeout = check_seconds("drain_timeout", drain_timeout, zero=True)
        self._abandon_timeout = check_seconds("abandon_timeout", abandon_timeout, zero=True)
        # The thread of each plan end under way, so that closing waits for them.
        self._ending: list[int] = []
        self._ends = threading.Condition()

    def new_context(self, plan_id: str | None, **options: Any) -> ToolExecutionContext:
        """A tracked context for a new plan (see `ToolRuntime.new_context`)."""
        self._settings.check_open()
        if plan_id is not None and (not isinstance(plan_id, str) or not plan_id):
            # "" is not "no id": a made-up id would hide the caller's empty variable.
            raise ValueError(
                f"plan_id must be a non-empty string, or None for a new id, got {plan_id!r}"
            )
        self._before_plan()
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
        with self._under_way():
            flights = self._cache.close(ctx)
            if flights is None:
                return []
            if flights:
                self._drain(ctx, flights)
            errors = self._cache.end_plan(ctx, self._calls.teardown)
            if ctx.host is not None:  # its tools are deactivated: now the worker ends
                ctx.host.end(ctx)
            return self._ended(ctx, errors)

    async def aend_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """End the plan from async code (see `ToolRuntime.aend_plan`)."""
        with self._under_way():
            flights = self._cache.close(ctx)
            if flights is None:
                return []
            if flights:
                drain = asyncio.ensure_future(
                    asyncio.to_thread(self._drain, ctx, flights, here(), _call_scope.get())
                )
                # Cancelled meanwhile, the end must not deactivate tools under calls still
                # running: it ends the plan after the drain all the same, then re-raises.
                cancelled = await _despite_cancellation(drain, ctx.plan_id)
                if cancelled is not None:
                    await _despite_cancellation(asyncio.ensure_future(self._aend(ctx)), ctx.plan_id)
                    raise cancelled
            return await self._aend(ctx)

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
            others = [owner for owner in self._ending if owner != me]
            if others:
                lifecycle_event("runtime.awaiting_plan_ends", count=len(others))
            self._ends.wait_for(lambda: all(owner == me for owner in self._ending))

    @contextlib.contextmanager
    def _under_way(self) -> Iterator[None]:
        """Count a plan end as under way on this thread while the block runs."""
        me = threading.get_ident()
        with self._ends:
            self._ending.append(me)
        try:
            yield
        finally:
            with self._ends:
                self._ending.remove(me)
                self._ends.notify_all()

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


async def _despite_cancellation(
    task: asyncio.Future[Any], plan_id: str
) -> asyncio.CancelledError | None:
    """Wait for ``task`` to end, however often the awaiting task is cancelled meanwhile.

    Returns:
        The first cancellation, for the caller to raise once it is done; None if none came.
    """
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            lifecycle_event("plan.end_cancelled", plan_id=plan_id)
            cancelled = cancelled or exc
    task.result()  # raises if the work itself was cancelled (its loop is shutting down)
    return cancelled


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
