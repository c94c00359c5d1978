"""Step 3 and teardown: activating a tool once per plan and deactivating it once.

The cache decides *who* activates (single flight) and *what* to tear down; this
module calls the tool's (possibly async) ``activate`` and ``deactivate`` and
turns what happened into one of the errors the runtime documents. It raises and
never traces: the runtime records the trace of the call that was affected.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING

from toolcycle._invoke import InvokeTimeoutError, own_loop
from toolcycle.errors import (
    ToolActivationError,
    ToolCancelledError,
    ToolDeactivationError,
    ToolNotActivatedError,
    ToolRuntimeError,
)
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Iterator

    from toolcycle._invoke import Invoker, Straggler
    from toolcycle.cache import Activation, ToolLifecycleCache
    from toolcycle.context import ToolExecutionContext
    from toolcycle.instrumentation import Instrumentation, Stage, StageObserver
    from toolcycle.protocols import ToolInstance

__all__ = ["Activator", "caller_cancelled"]

_log = get_logger("toolcycle.runtime")


class Activator:
    """Activates and deactivates tools for one runtime."""

    __slots__ = (
        "_activate_timeout",
        "_cache",
        "_deactivate_timeout",
        "_instrumentation",
        "_invoker",
        "_lock",
        "_straggling",
    )

    def __init__(
        self,
        cache: ToolLifecycleCache,
        invoker: Invoker,
        deactivate_timeout: float | None,
        activate_timeout: float | None = None,
        instrumentation: Instrumentation | None = None,
    ) -> None:
        self._cache = cache
        self._invoker = invoker
        self._deactivate_timeout = deactivate_timeout
        self._activate_timeout = activate_timeout
        self._instrumentation = instrumentation
        # (plan id, tool name) of sync activates still running past activate_timeout.
        self._straggling: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def ensure(
        self, ctx: ToolExecutionContext, name: str, instance: ToolInstance, *, on_demand: bool
    ) -> None:
        """Make sure the tool is active in the plan, activating it if this call is first.

        Args:
            ctx: the plan.
            name: the tool's registered name.
            instance: the tool.
            on_demand: activate if needed; otherwise an inactive tool is an error.

        Raises:
            ToolNotActivatedError: not active, and ``on_demand`` is false.
            ToolActivationError: ``activate`` raised (shared by concurrent callers).
            ToolCancelledError, asyncio.CancelledError: the activation was cancelled.
            ToolRuntimeError: the plan ended meanwhile.
        """
        claim = self._claim(ctx, name, instance, on_demand=on_demand)
        if claim is None:
            return
        activation, owner = claim
        if not owner:
            activation.wait()
            self._raise_for(activation, ctx)
            return
        try:
            with self._watched("activate", name, ctx):
                self._invoker.call(
                    instance.activate,
                    ctx,
                    token=ctx.cancellation_token,
                    timeout=self._activate_timeout,
                    loop=own_loop(instance),
                )
        except InvokeTimeoutError as exc:
            self._timed_out(ctx, activation, exc)
        except (Exception, asyncio.CancelledError) as exc:
            self._finish(ctx, activation, exc)
        except BaseException as exc:  # KeyboardInterrupt and friends: wake waiters, obey
            self._cache.finish(ctx, activation, exc)
            raise
        else:
            self._finish(ctx, activation, None)

    async def aensure(
        self, ctx: ToolExecutionContext, name: str, instance: ToolInstance, *, on_demand: bool
    ) -> None:
        """Async twin of `ensure`; an async ``activate`` is awaited on the caller's loop.

        Raises:
            asyncio.CancelledError: also when the awaiting task itself is cancelled,
                in which case nothing is cached and waiting callers see the failure.
        """
        claim = self._claim(ctx, name, instance, on_demand=on_demand)
        if claim is None:
            return
        activation, owner = claim
        if not owner:
            await activation.wait_async()
            self._raise_for(activation, ctx)
            return
        try:
            with self._watched("activate", name, ctx):
                await self._invoker.acall(
                    instance.activate,
                    ctx,
                    token=ctx.cancellation_token,
                    timeout=self._activate_timeout,
                    on_abandon=lambda straggler: self._track_late(ctx, activation, straggler),
                )
        except InvokeTimeoutError as exc:
            self._timed_out(ctx, activation, exc)
        except Exception as exc:
            self._finish(ctx, activation, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._cache.finish(ctx, activation, exc)
                raise
            self._finish(ctx, activation, exc)
        except BaseException as exc:
            self._cache.finish(ctx, activation, exc)
            raise
        else:
            self._finish(ctx, activation, None)

    @contextmanager
    def _watched(self, stage: Stage, name: str, ctx: ToolExecutionContext) -> Iterator[None]:
        """Tell the instrumentation, if any, of one stage and how it ended.

        A hook that raises is logged and never changes the stage's outcome.
        """
        if self._instrumentation is None:
            yield
            return
        observer: StageObserver | None = None
        try:
            observer = self._instrumentation.stage_started(stage, tool_name=name, ctx=ctx)
        except Exception as exc:
            _log.warning("instrumentation.failed", hook="stage_started", error=repr(exc))
        error: BaseException | None = None
        try:
            yield
        except BaseException as exc:
            error = exc
            raise
        finally:
            if observer is not None:
                try:
                    observer.finish(error)
                except Exception as exc:
                    _log.warning("instrumentation.failed", hook="stage_finish", error=repr(exc))

    def _timed_out(
        self, ctx: ToolExecutionContext, activation: Activation, exc: InvokeTimeoutError
    ) -> None:
        """Fail the activation; a sync ``activate`` still running is undone when it ends.

        Until it ends, calls in the plan are refused rather than activating the
        tool a second time beside it (see `_claim`).
        """
        late = TimeoutError(
            f"activate did not finish within {self._activate_timeout} seconds (activate_timeout)"
        )
        if exc.straggler is not None:
            self._track_late(ctx, activation, exc.straggler)
        self._finish(ctx, activation, late)

    def _track_late(
        self, ctx: ToolExecutionContext, activation: Activation, straggler: Straggler
    ) -> None:
        """A sync ``activate`` its caller gave up on (timeout, cancellation) runs on.

        Until it ends, calls in the plan are refused (see `_claim`); if it then
        succeeds, what it activated is deactivated.
        """
        key = (ctx.plan_id, activation.name)
        with self._lock:
            self._straggling.add(key)
        straggler.when_done(lambda error: self._ended_late(ctx, activation, key, error))

    def _ended_late(
        self,
        ctx: ToolExecutionContext,
        activation: Activation,
        key: tuple[str, str],
        error: BaseException | None,
    ) -> None:
        """On the abandoned activate's thread: deactivate what it activated after all."""
        try:
            if error is None:
                self.teardown(activation, ctx)
        except Exception as exc:
            _log.warning(
                "tool.deactivate_failed", tool=activation.name, plan_id=ctx.plan_id, error=str(exc)
            )
        finally:
            with self._lock:
                self._straggling.discard(key)
        # Logged once the plan may activate the tool again.
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
        if self._straggling and (ctx.plan_id, name) in self._straggling:
            raise ToolActivationError(
                f"activating tool {name!r} for plan {ctx.plan_id!r} failed: its earlier "
                f"activate is still running past activate_timeout ({self._activate_timeout} "
                "seconds); try again once it has finished",
                tool_name=name,
                plan_id=ctx.plan_id,
            )
        return self._cache.begin(ctx, name, instance)

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
                self.teardown(activation, ctx)
            except Exception as exc:
                _log.warning(
                    "tool.deactivate_failed",
                    tool=activation.name,
                    plan_id=ctx.plan_id,
                    error=str(exc),
                )
        self._raise_for(activation, ctx)

    @staticmethod
    def _raise_for(activation: Activation, ctx: ToolExecutionContext) -> None:
        error = activation.error
        if error is None:
            return
        if isinstance(error, ToolCancelledError | ToolRuntimeError | asyncio.CancelledError):
            raise error
        raise ToolActivationError(
            f"activating tool {activation.name!r} for plan {ctx.plan_id!r} failed: "
            f"{type(error).__name__}: {error}",
            tool_name=activation.name,
            plan_id=ctx.plan_id,
        ) from error

    def teardown(self, activation: Activation, ctx: ToolExecutionContext) -> None:
        """Deactivate one tool from sync code, within the deactivate timeout.

        Raises:
            ToolDeactivationError: it did not finish in time.
            Exception: whatever ``deactivate`` raised.
        """
        timeout = self._deactivate_timeout
        instance = activation.instance
        with self._watched("deactivate", activation.name, ctx):
            try:
                self._invoker.call(
                    instance.deactivate, ctx, timeout=timeout, loop=own_loop(instance)
                )
            except InvokeTimeoutError:
                raise _hung(activation, ctx, timeout) from None
        lifecycle_event("tool.deactivated", tool=activation.name, plan_id=ctx.plan_id)

    async def ateardown(self, activation: Activation, ctx: ToolExecutionContext) -> None:
        """Deactivate one tool from async code, within the deactivate timeout."""
        timeout = self._deactivate_timeout
        with self._watched("deactivate", activation.name, ctx):
            try:
                await self._invoker.acall(
                    activation.instance.deactivate, ctx, timeout=timeout, detached=True
                )
            except InvokeTimeoutError:
                raise _hung(activation, ctx, timeout) from None
        lifecycle_event("tool.deactivated", tool=activation.name, plan_id=ctx.plan_id)


def caller_cancelled() -> bool:
    """Whether the current task is being cancelled by its caller (not by a plan token)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _hung(
    activation: Activation, ctx: ToolExecutionContext, timeout: float | None
) -> ToolDeactivationError:
    return ToolDeactivationError(
        f"deactivating tool {activation.name!r} for plan {ctx.plan_id!r} did not finish "
        f"within {timeout} seconds; it was abandoned",
        tool_name=activation.name,
        plan_id=ctx.plan_id,
    )
