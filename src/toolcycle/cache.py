"""The per-plan activation cache: activate at most once, deactivate exactly once.

For every plan the cache remembers which tools were activated, in order. The
first call of a tool in a plan becomes the *owner* of its activation; calls that
arrive while it is activating wait for it and share its outcome, whether they
come from threads or from tasks (single flight; the record they share, an
`Activation`, is defined in ``toolcycle.execution._single_flight``). A failed
activation is not cached: the waiters see the failure, and the next call tries
again.

An owner that gives up without an outcome (its caller cancelled it, or its
call's own time ran out) hands the activation back with `retry`: the waiters
wake and one of them becomes the owner, so their calls are not failed for
something that happened to another call.

Activations are kept by tool name, so a tool unregistered or replaced under
its name is `retire`d: each open plan keeps the old activation to deactivate
at its end, and activates the tool registered there now before it runs.

The cache also admits each call of a plan (`admit`), so that ending the plan
can refuse new calls at once (`close`) and stop and wait for the calls in
flight before anything is deactivated.

When the plan ends, the cache hands every activated tool to a teardown function
in reverse order of activation, exactly once, and collects what went wrong as
`ToolDeactivationError`s instead of raising. The cache knows the tool protocol
but nothing of validation or tracing; the runtime supplies how to call a
(possibly async) ``deactivate``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from toolcycle.context import ToolExecutionContext
from toolcycle.errors import (
    ToolCancelledError,
    ToolDeactivationError,
    ToolRuntimeError,
    cut_error_text,
    error_text,
)
from toolcycle.execution._inflight import Flights
from toolcycle.execution._single_flight import Activation, OwnerGone

if TYPE_CHECKING:
    from toolcycle.execution._inflight import Flight
    from toolcycle.protocols import ToolInstance

__all__ = ["Activation", "OwnerGone", "ToolLifecycleCache"]


class _Plan:
    """One open plan: its context, its activations by name and in order, its calls in flight."""

    # A plain slotted class: defining a dataclass costs ``import toolcycle`` about
    # half a millisecond (its methods are generated then).
    __slots__ = ("activations", "ctx", "ended", "flights", "order")

    def __init__(self, ctx: ToolExecutionContext) -> None:
        self.ctx = ctx
        self.activations: dict[str, Activation] = {}
        self.order: list[Activation] = []
        self.ended = False
        self.flights: Flights | None = None  # made at the plan's first call


Teardown = Callable[[Activation, ToolExecutionContext], None]
AsyncTeardown = Callable[[Activation, ToolExecutionContext], Awaitable[None]]


class ToolLifecycleCache:
    """Activation state of every open plan; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._plans: dict[str, _Plan] = {}

    def begin(
        self,
        ctx: ToolExecutionContext,
        name: str,
        instance: ToolInstance,
        timeout: float | None = None,
    ) -> tuple[Activation, bool]:
        """Return the activation of ``name`` in the plan and whether the caller owns it.

        The owner must activate the tool and then call `finish` (or `retry`).
        Everyone else waits on the activation (``wait`` or ``wait_async``) and
        reads ``error``. ``timeout`` sets a new activation's ``expires``.

        Raises:
            ToolRuntimeError: the plan has ended.
        """
        with self._lock:
            plan = self._open(ctx)
            activation = plan.activations.get(name)
            if activation is not None and not activation.retired:
                return activation, False
            activation = Activation(name, instance)
            if timeout is not None:
                activation.expires = time.monotonic() + timeout
            plan.activations[name] = activation
            return activation, True

    def finish(
        self, ctx: ToolExecutionContext, activation: Activation, error: BaseException | None
    ) -> bool:
        """Record the owner's outcome and wake the waiters.

        Returns:
            True if the tool is now active in the plan; False if activation failed
            (nothing is cached) or if the plan ended meanwhile, in which case the
            caller must deactivate the tool itself.
        """
        with self._lock:
            plan = self._plans.get(ctx.plan_id)
            current = plan is not None and plan.activations.get(activation.name) is activation
            # A retired activation is the plan's to deactivate, but no call of the
            # tool registered now may count on it.
            cached = (
                error is None
                and (current or activation.retired)
                and plan is not None
                and not plan.ended
            )
            if cached and plan is not None:
                plan.order.append(activation)
            if current and plan is not None and (activation.retired or not cached):
                del plan.activations[activation.name]
        if error is None and not cached:
            # As an async activate is stopped, and as docs/concepts/plans.md says.
            reason = f"plan {ctx.plan_id!r} ended while tool {activation.name!r} was activating"
            error = ToolCancelledError(
                reason, reason=reason, tool_name=activation.name, plan_id=ctx.plan_id
            )
        activation._finish(error)
        return cached

    def retry(self, ctx: ToolExecutionContext, activation: Activation) -> None:
        """Hand back an activation whose owner left without an outcome.

        Nothing is cached; the waiters wake and see `OwnerGone`, and the next
        of them to ask becomes the owner.
        """
        with self._lock:
            plan = self._plans.get(ctx.plan_id)
            if plan is not None and plan.activations.get(activation.name) is activation:
                del plan.activations[activation.name]
        activation._finish(OwnerGone())

    def admit(self, ctx: ToolExecutionContext, record: object, owner: object) -> Flight:
        """Let a call of the plan in, as long as the plan is open.

        Args:
            ctx: the plan.
            record: the call's trace record.
            owner: the task or thread the call runs in.

        Raises:
            ToolRuntimeError: the plan has ended or is ending, or another
                context of the same plan id is open.
        """
        plan = self._plans.get(ctx.plan_id)  # lock-free for a plan that has had a call
        if plan is None or plan.ctx is not ctx or plan.flights is None:
            with self._lock:
                plan = self._open(ctx)
                if plan.flights is None:
                    plan.flights = Flights(ctx.cancellation_token)
        assert plan.flights is not None
        flight = plan.flights.admit(record, owner)
        if flight is None:
            raise _ended(ctx)
        return flight

    def close(self, ctx: ToolExecutionContext) -> tuple[Flight, ...] | None:
        """Start ending the plan: refuse its later calls and activations.

        Returns:
            The plan's calls still in flight; None when the plan had already
            ended or is being ended by someone else.
        """
        with self._lock:
            if ctx.ended:
                return None
            ctx._ended = True
            plan = self._plans.get(ctx.plan_id)
            if plan is None or plan.ctx is not ctx:
                return ()
            plan.ended = True
            flights = plan.flights
        return flights.close() if flights is not None else ()

    def retire(self, name: str) -> None:
        """The tool registered as ``name`` was unregistered or replaced.

        Every open plan keeps what it activated, to deactivate it at the plan's
        end, but activates the tool registered under that name from now on
        afresh, before its first call there. A plan with a host does the same:
        its worker keeps the tool it replaced apart from the new one.
        """
        with self._lock:
            for plan in self._plans.values():
                activation = plan.activations.get(name)
                if activation is None:
                    continue
                if activation.done:
                    del plan.activations[name]
                else:  # finish() takes it out once its activate is over
                    activation.retired = True

    def settled(self, plan_id: str, name: str, owner: ToolExecutionContext | None = None) -> bool:
        """Whether ``name`` finished activating successfully in the plan (lock-free).

        A fast path for warm calls: reading two dicts is atomic in CPython, and a
        stale answer of False only sends the caller down the locked path. With
        ``owner``, only that context's plan counts: another context of the same
        plan id gets False, and the locked path refuses it.
        """
        plan = self._plans.get(plan_id)
        if plan is None or (owner is not None and plan.ctx is not owner):
            return False
        activation = plan.activations.get(name)
        return activation is not None and activation.done and activation.error is None

    def is_active(self, plan_id: str, name: str) -> bool:
        """Whether the tool registered as ``name`` has been activated, successfully, in the plan.

        One unregistered or replaced since (see `retire`) no longer counts.
        """
        with self._lock:
            plan = self._plans.get(plan_id)
            activation = plan.activations.get(name) if plan is not None else None
            return activation is not None and activation.done and activation.error is None

    def active_tools(self, plan_id: str) -> tuple[str, ...]:
        """The tools activated in the plan, in order of activation."""
        with self._lock:
            plan = self._plans.get(plan_id)
            return tuple(a.name for a in plan.order) if plan else ()

    def open_plans(self) -> tuple[ToolExecutionContext, ...]:
        """The contexts of every plan the cache has seen and not yet ended."""
        with self._lock:
            return tuple(plan.ctx for plan in self._plans.values())

    def in_flight(self) -> tuple[Flight, ...]:
        """The calls in flight in every open plan."""
        with self._lock:
            groups = [plan.flights for plan in self._plans.values() if plan.flights is not None]
        return tuple(flight for group in groups for flight in group.current())

    def track(self, ctx: ToolExecutionContext) -> None:
        """Remember a plan even before it activates anything, so ``close`` ends it."""
        with self._lock:
            self._open(ctx)

    def check_owner(self, ctx: ToolExecutionContext) -> None:
        """Refuse, as `admit` would, a context whose plan id another open context holds.

        Opens nothing: for a check that must come before something is spent.
        """
        with self._lock:
            plan = self._plans.get(ctx.plan_id)
            if plan is not None and plan.ctx is not ctx:
                raise _taken(ctx)

    def _open(self, ctx: ToolExecutionContext) -> _Plan:
        if ctx.ended:
            raise _ended(ctx)
        plan = self._plans.get(ctx.plan_id)
        if plan is None:
            plan = self._plans[ctx.plan_id] = _Plan(ctx)
        elif plan.ctx is not ctx:
            # Two contexts of one plan id would share activations, and ending one
            # would deactivate the other's tools under it.
            raise _taken(ctx)
        return plan

    def _take(self, ctx: ToolExecutionContext) -> list[Activation]:
        """Close the plan if it is not yet, and take it out: its tools, newest first."""
        with self._lock:
            ctx._ended = True
            plan = self._plans.get(ctx.plan_id)
            if plan is None or plan.ctx is not ctx:
                return []
            del self._plans[ctx.plan_id]
            plan.ended = True
            if plan.flights is not None:
                plan.flights.close()
            return list(reversed(plan.order))

    def end_plan(
        self, ctx: ToolExecutionContext, teardown: Teardown
    ) -> list[ToolDeactivationError]:
        """End the plan: tear down every activated tool once, newest first.

        Errors are collected, never raised. An interrupt (``KeyboardInterrupt``,
        ``SystemExit``) during one teardown still lets the others run, and is
        raised again afterwards. Ending a plan that has already ended does
        nothing and returns no errors.
        """
        errors: list[ToolDeactivationError] = []
        interrupt: BaseException | None = None
        for activation in self._take(ctx):
            try:
                teardown(activation, ctx)
            except Exception as exc:
                errors.append(_deactivation_error(activation, ctx, exc))
            except BaseException as exc:
                interrupt = interrupt or exc
        if interrupt is not None:
            raise interrupt
        return errors

    async def aend_plan(
        self, ctx: ToolExecutionContext, teardown: AsyncTeardown
    ) -> list[ToolDeactivationError]:
        """Async twin of `end_plan`; awaits each teardown in turn.

        A cancellation of the awaiting task during one teardown still lets the
        others run, and is raised again afterwards.
        """
        errors: list[ToolDeactivationError] = []
        interrupt: BaseException | None = None
        for activation in self._take(ctx):
            try:
                await teardown(activation, ctx)
            except Exception as exc:
                errors.append(_deactivation_error(activation, ctx, exc))
            except BaseException as exc:
                interrupt = interrupt or exc
        if interrupt is not None:
            raise interrupt
        return errors


def _ended(ctx: ToolExecutionContext) -> ToolRuntimeError:
    return ToolRuntimeError(
        f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
        plan_id=ctx.plan_id,
    )


def _taken(ctx: ToolExecutionContext) -> ToolRuntimeError:
    return ToolRuntimeError(
        f"plan {ctx.plan_id!r} is already open with another context; end it "
        "first, or give this plan an id of its own",
        plan_id=ctx.plan_id,
    )


def _deactivation_error(
    activation: Activation, ctx: ToolExecutionContext, exc: Exception
) -> ToolDeactivationError:
    if isinstance(exc, ToolDeactivationError):
        return exc
    # Cut: the plan's end logs it; the tool's own exception stays whole as the cause.
    error = ToolDeactivationError(
        cut_error_text(
            f"deactivating tool {activation.name!r} for plan {ctx.plan_id!r} failed: "
            f"{type(exc).__name__}: {error_text(exc)}"
        ),
        tool_name=activation.name,
        plan_id=ctx.plan_id,
    )
    error.__cause__ = exc
    return error
