"""Step 3: activating a tool at most once per plan, whoever asks and from where.

The cache keeps each plan's activations and decides *who* activates (single
flight); this module plays the activator's part for every call that asks: the
owner has the tool's ``activate`` called (through `LifecycleCalls`) within its
limit, the others wait for it within theirs, and a sync ``activate`` a caller
gave up on is adopted until it ends, so that no second one starts beside it.
What happened becomes one of the errors the runtime documents. It raises and
never traces: the runtime records the trace of the call that was affected.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, NoReturn

from toolcycle.errors import (
    ToolActivationError,
    ToolCancelledError,
    ToolNotActivatedError,
    ToolRuntimeError,
    cut_error_text,
    error_text,
)
from toolcycle.execution._invoke import caller_cancelled
from toolcycle.execution._single_flight import OwnerGone
from toolcycle.execution._threads import InvokeTimeoutError
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from toolcycle.cache import ToolLifecycleCache
    from toolcycle.context import ToolExecutionContext
    from toolcycle.execution._invoke import Cancels
    from toolcycle.execution._lifecycle import LifecycleCalls
    from toolcycle.execution._portal import Deadline
    from toolcycle.execution._single_flight import Activation
    from toolcycle.execution._threads import Straggler
    from toolcycle.protocols import ToolInstance

__all__ = ["Activator", "CallTimedOut"]

_log = get_logger("toolcycle.runtime")


class CallTimedOut(TimeoutError):
    """The call's own limit passed while its tool was activating."""


class Activator:
    """Activates tools for one runtime, at most once per plan.

    Args:
        cache: each plan's activations, and who owns a pending one.
        calls: calls a tool's ``activate``, and ``deactivate`` to undo one no
            call may keep.
        activate_timeout: seconds an ``activate`` may take; None waits for it.
    """

    __slots__ = ("_activate_timeout", "_cache", "_calls")

    def __init__(
        self,
        cache: ToolLifecycleCache,
        calls: LifecycleCalls,
        activate_timeout: float | None = None,
    ) -> None:
        self._cache = cache
        self._calls = calls
        self._activate_timeout = activate_timeout

    def settled(self, ctx: ToolExecutionContext, name: str) -> bool:
        """Whether the tool is active in the plan already (lock-free; False may be stale)."""
        return self._cache.settled(ctx.plan_id, name, ctx)

    def ensure(
        self,
        ctx: ToolExecutionContext,
        name: str,
        instance: ToolInstance,
        *,
        on_demand: bool,
        token: Cancels | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        """Make sure the tool is active in the plan, activating it if this call is first.

        Args:
            ctx: the plan.
            name: the tool's registered name.
            instance: the tool.
            on_demand: activate if needed; otherwise an inactive tool is an error.
            token: cancels a coroutine ``activate`` (the call's flight); the
                plan's token by default.
            deadline: the call's own limit, which its wait for the activation
                counts against.

        Raises:
            ToolNotActivatedError: not active, and ``on_demand`` is false.
            ToolActivationError: ``activate`` raised (shared by concurrent callers)
                or outlived ``activate_timeout``.
            CallTimedOut: ``deadline`` passed first. A sync ``activate`` still
                running goes on, and its outcome is the plan's.
            ToolCancelledError, asyncio.CancelledError: the activation was cancelled.
            ToolRuntimeError: the plan ended meanwhile.
        """
        while True:
            claim = self._claim(ctx, name, instance, on_demand=on_demand)
            if claim is None:
                return
            activation, owner = claim
            if owner:
                self._own(ctx, activation, instance, token, deadline)
                return
            if not activation.wait(self._patience(activation, deadline)):
                raise self._gave_up(ctx, activation, deadline)
            if not isinstance(activation.error, OwnerGone):
                self._raise_for(activation, ctx)
                return

    def _own(
        self,
        ctx: ToolExecutionContext,
        activation: Activation,
        instance: ToolInstance,
        token: Cancels | None,
        deadline: Deadline | None,
    ) -> None:
        limit, by_call = self._limit(deadline)
        try:
            self._calls.activate(ctx, activation.name, instance, token=token, limit=limit)
        except InvokeTimeoutError as exc:
            self._outlived(ctx, activation, exc, by_call=by_call)
        except (Exception, asyncio.CancelledError) as exc:
            self._finish(ctx, activation, exc)
        except BaseException as exc:  # KeyboardInterrupt and friends: obey
            if limit is None:  # activate was interrupted: a waiter takes over
                self._cache.retry(ctx, activation)
            else:  # its thread runs on: the waiters must not start another beside it
                self._cache.finish(ctx, activation, exc)
            raise
        else:
            self._finish(ctx, activation, None)

    async def aensure(
        self,
        ctx: ToolExecutionContext,
        name: str,
        instance: ToolInstance,
        *,
        on_demand: bool,
        token: Cancels | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        """Async twin of `ensure`; an async ``activate`` is awaited on the caller's loop.

        Raises:
            asyncio.CancelledError: also when the awaiting task itself is cancelled.
                Nothing is cached then; a call waiting for the same activation
                takes it over (or, when a sync ``activate`` runs on in its
                thread, waits for that and shares its outcome).
        """
        while True:
            claim = self._claim(ctx, name, instance, on_demand=on_demand)
            if claim is None:
                return
            activation, owner = claim
            if owner:
                await self._aown(ctx, activation, instance, token, deadline)
                return
            if not await activation.wait_async(self._patience(activation, deadline)):
                raise self._gave_up(ctx, activation, deadline)
            if not isinstance(activation.error, OwnerGone):
                self._raise_for(activation, ctx)
                return

    async def _aown(
        self,
        ctx: ToolExecutionContext,
        activation: Activation,
        instance: ToolInstance,
        token: Cancels | None,
        deadline: Deadline | None,
    ) -> None:
        limit, by_call = self._limit(deadline)
        adopted: list[Straggler] = []

        def abandon(straggler: Straggler) -> None:
            adopted.append(straggler)
            self._adopt(ctx, activation, straggler)

        try:
            await self._calls.aactivate(
                ctx, activation.name, instance, token=token, limit=limit, on_abandon=abandon
            )
        except InvokeTimeoutError as exc:
            self._outlived(ctx, activation, exc, by_call=by_call)
        except Exception as exc:
            self._finish(ctx, activation, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                if not adopted:  # activate was cancelled with its caller: a waiter takes over
                    self._cache.retry(ctx, activation)
                raise
            self._finish(ctx, activation, exc)
        except BaseException:
            self._cache.retry(ctx, activation)
            raise
        else:
            self._finish(ctx, activation, None)

    def _limit(self, deadline: Deadline | None) -> tuple[float | Deadline | None, bool]:
        """The owner's limit for ``activate``, and whether it is the call's own."""
        left = None if deadline is None else deadline.remaining()
        limit = self._activate_timeout
        if left is not None and (limit is None or left < limit):
            return deadline, True
        return limit, False

    @staticmethod
    def _patience(activation: Activation, deadline: Deadline | None) -> float | None:
        """How long a waiter may wait: its call's limit, and the activation's own."""
        parts = [] if deadline is None else [deadline.remaining()]
        if activation.expires is not None:
            parts.append(max(0.0, activation.expires - time.monotonic()))
        found = [part for part in parts if part is not None]
        return min(found) if found else None

    def _gave_up(
        self, ctx: ToolExecutionContext, activation: Activation, deadline: Deadline | None
    ) -> Exception:
        """Why a waiter stopped waiting: its call's limit, or the activation's."""
        if deadline is not None and deadline.remaining() == 0:
            return CallTimedOut(f"{deadline.message()} (its activate was still running)")
        return ToolActivationError(
            f"activating tool {activation.name!r} for plan {ctx.plan_id!r} failed: its "
            f"activate is still running past activate_timeout ({self._activate_timeout} "
            "seconds); try again once it has finished",
            tool_name=activation.name,
            plan_id=ctx.plan_id,
        )

    def _outlived(
        self,
        ctx: ToolExecutionContext,
        activation: Activation,
        exc: InvokeTimeoutError,
        *,
        by_call: bool,
    ) -> NoReturn:
        """The owner's limit passed: the call's own, or ``activate_timeout``.

        An async ``activate`` was cancelled. A sync one runs on in its thread, and
        the activation waits for it (see `_adopt`), so that no second ``activate``
        starts beside it.
        """
        if exc.straggler is not None:
            self._adopt(ctx, activation, exc.straggler)
        if by_call:
            if exc.straggler is None:
                self._cache.retry(ctx, activation)
            raise CallTimedOut(f"{exc} (its activate was still running)")
        late = self._late()
        if exc.straggler is None:
            self._finish(ctx, activation, late)
        raise _failed(activation, ctx, late) from None

    def _late(self) -> TimeoutError:
        return TimeoutError(
            f"activate did not finish within {self._activate_timeout} seconds (activate_timeout)"
        )

    def _adopt(
        self, ctx: ToolExecutionContext, activation: Activation, straggler: Straggler
    ) -> None:
        """A sync ``activate`` its caller gave up on (a timeout, a cancellation) runs on.

        The activation stays pending until it ends: calls of the tool in the plan
        wait for it (no longer than their own limits and ``activate_timeout``),
        never start a second one beside it, and share its outcome.
        """
        straggler.when_done(lambda error: self._ended_late(ctx, activation, error))

    def _ended_late(
        self, ctx: ToolExecutionContext, activation: Activation, error: BaseException | None
    ) -> None:
        """On the adopted activate's thread: settle the activation as it ended.

        One that succeeded within ``activate_timeout`` is the plan's, as if its
        caller had waited; one that succeeded after it is deactivated at once,
        since every call was told it failed.
        """
        expires = activation.expires
        late = expires is not None and time.monotonic() > expires
        if error is None and not late:
            # The plan ended meanwhile (ToolCancelledError): _finish undid the activation.
            with contextlib.suppress(ToolRuntimeError, ToolCancelledError):
                self._finish(ctx, activation, None)
            return
        try:
            if error is None:
                self._calls.teardown(activation, ctx)
        except Exception as exc:
            _log.warning(
                "tool.deactivate_failed",
                tool=activation.name,
                plan_id=ctx.plan_id,
                error=cut_error_text(error_text(exc)),
            )
        finally:
            self._cache.finish(ctx, activation, error or self._late())
        if late:  # logged once the plan may activate the tool again
            _log.info(
                "tool.late_activation_ended",
                tool=activation.name,
                plan_id=ctx.plan_id,
                undone=error is None,
            )

    def _claim(
        self, ctx: ToolExecutionContext, name: str, instance: ToolInstance, *, on_demand: bool
    ) -> tuple[Activation, bool] | None:
        """The activation to wait for or to own, or None when there is nothing to do."""
        if self._cache.settled(ctx.plan_id, name, owner=ctx):
            return None
        if not on_demand:
            self._cache.track(ctx)  # refuses another context of an open plan id
            if not self._cache.is_active(ctx.plan_id, name):
                raise self._not_active(ctx, name)
            return None
        return self._cache.begin(ctx, name, instance, self._activate_timeout)

    @staticmethod
    def _not_active(ctx: ToolExecutionContext, name: str) -> ToolNotActivatedError:
        return ToolNotActivatedError(
            f"tool {name!r} is not activated for plan {ctx.plan_id!r}; call "
            "runtime.activate(name, ctx) first, or build the runtime with auto_activate=True",
            tool_name=name,
            plan_id=ctx.plan_id,
        )

    def _finish(
        self, ctx: ToolExecutionContext, activation: Activation, error: BaseException | None
    ) -> None:
        cached = self._cache.finish(ctx, activation, error)
        if error is None:
            lifecycle_event("tool.activated", tool=activation.name, plan_id=ctx.plan_id)
        if error is None and not cached:
            # The plan ended while the tool was activating: undo it here.
            try:
                self._calls.teardown(activation, ctx)
            except Exception as exc:
                _log.warning(
                    "tool.deactivate_failed",
                    tool=activation.name,
                    plan_id=ctx.plan_id,
                    error=cut_error_text(error_text(exc)),
                )
        self._raise_for(activation, ctx)

    @staticmethod
    def _raise_for(activation: Activation, ctx: ToolExecutionContext) -> None:
        error = activation.error
        if error is None:
            return
        if isinstance(error, ToolCancelledError | ToolRuntimeError | asyncio.CancelledError):
            raise error
        raise _failed(activation, ctx, error) from error


def _failed(
    activation: Activation, ctx: ToolExecutionContext, error: BaseException
) -> ToolActivationError:
    # Cut: hosts log what they catch; the tool's own exception stays whole as the cause.
    return ToolActivationError(
        cut_error_text(
            f"activating tool {activation.name!r} for plan {ctx.plan_id!r} failed: "
            f"{type(error).__name__}: {error_text(error)}"
        ),
        tool_name=activation.name,
        plan_id=ctx.plan_id,
    )
