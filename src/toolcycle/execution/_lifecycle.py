"""Calling a tool's ``activate`` and ``deactivate``, each observed as a stage.

The activator (`toolcycle.execution._activation`) decides whether a call
activates a tool and what the outcome means for the plan; this module makes the
calls themselves. ``activate`` runs on the loop the tool names for the plan, with
the caller's token and time limit; ``deactivate`` runs within the runtime's
``deactivate_timeout`` and is abandoned past it. The instrumentation, when the
host gave one, is told of each stage and how it ended, and a hook of it that
raises never changes that outcome.
"""

from __future__ import annotations

import asyncio
import inspect
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolcycle.errors import ToolDeactivationError, error_text
from toolcycle.execution._invoke import own_loop, plan_loop
from toolcycle.execution._threads import InvokeTimeoutError, in_thread
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from toolcycle.context import ToolExecutionContext
    from toolcycle.execution._invoke import Cancels, Invoker
    from toolcycle.execution._portal import Deadline
    from toolcycle.execution._single_flight import Activation
    from toolcycle.execution._threads import Straggler
    from toolcycle.instrumentation import Instrumentation, Stage, StageObserver
    from toolcycle.protocols import ToolInstance

__all__ = ["LifecycleCalls"]

_log = get_logger("toolcycle.runtime")


class LifecycleCalls:
    """Calls tools' ``activate`` and ``deactivate`` for one runtime.

    Args:
        invoker: runs each stage, from sync or async code.
        deactivate_timeout: seconds a ``deactivate`` may take; None waits for it.
        instrumentation: told of each stage, if the host gave one.
    """

    __slots__ = ("_deactivate_timeout", "_instrumentation", "_invoker")

    def __init__(
        self,
        invoker: Invoker,
        deactivate_timeout: float | None,
        instrumentation: Instrumentation | None = None,
    ) -> None:
        self._invoker = invoker
        self._deactivate_timeout = deactivate_timeout
        self._instrumentation = instrumentation

    def activate(
        self,
        ctx: ToolExecutionContext,
        name: str,
        instance: ToolInstance,
        *,
        token: Cancels | None,
        limit: float | Deadline | None,
    ) -> None:
        """Call ``instance.activate(ctx)`` from sync code, on the loop it names for the plan.

        Args:
            ctx: the plan.
            name: the tool's registered name, for the instrumentation.
            instance: the tool.
            token: cancels a coroutine ``activate``; the plan's token when None.
            limit: when to give up on it.

        Raises:
            InvokeTimeoutError: ``limit`` passed first.
            Exception: whatever ``activate`` raised.
        """
        with self._watched("activate", name, ctx):
            self._invoker.call(
                instance.activate,
                ctx,
                token=token or ctx.cancellation_token,
                timeout=limit,
                loop=plan_loop(instance, ctx, own_loop(instance)),
            )

    async def aactivate(
        self,
        ctx: ToolExecutionContext,
        name: str,
        instance: ToolInstance,
        *,
        token: Cancels | None,
        limit: float | Deadline | None,
        on_abandon: Callable[[Straggler], object],
    ) -> None:
        """Async twin of `activate`; an async ``activate`` is awaited on the caller's loop.

        Args:
            ctx: the plan.
            name: the tool's registered name, for the instrumentation.
            instance: the tool.
            token: cancels ``activate``; the plan's token when None.
            limit: when to give up on it.
            on_abandon: given the `Straggler` of a sync ``activate`` left running
                on its thread when the caller is cancelled.
        """
        with self._watched("activate", name, ctx):
            await self._invoker.acall(
                instance.activate,
                ctx,
                token=token or ctx.cancellation_token,
                timeout=limit,
                on_abandon=on_abandon,
            )

    def teardown(self, activation: Activation, ctx: ToolExecutionContext) -> None:
        """Deactivate one tool from sync code, within the deactivate timeout.

        Raises:
            ToolDeactivationError: it did not finish in time.
            Exception: whatever ``deactivate`` raised.
        """
        timeout = self._deactivate_timeout
        instance = activation.instance
        loop = own_loop(instance)
        with self._watched("deactivate", activation.name, ctx):
            try:
                if loop is None and self._invoker.portal.closed and _is_async(instance):
                    # The runtime closed while the tool activated (a late activation
                    # is undone here): its loop is gone, so the coroutine gets its own.
                    in_thread(_run_alone, (instance.deactivate, ctx), timeout)
                else:
                    self._invoker.call(instance.deactivate, ctx, timeout=timeout, loop=loop)
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
            _log.warning(
                "instrumentation.failed",
                hook="stage_started",
                error=f"{type(exc).__name__}: {error_text(exc)}",
            )
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
                    _log.warning(
                        "instrumentation.failed",
                        hook="stage_finish",
                        error=f"{type(exc).__name__}: {error_text(exc)}",
                    )


def _is_async(instance: ToolInstance) -> bool:
    return inspect.iscoroutinefunction(instance.deactivate)


def _run_alone(fn: Callable[..., Any], ctx: ToolExecutionContext) -> None:
    """Run the coroutine function ``fn(ctx)`` to its end on a loop of its own, then close it."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(fn(ctx))
    finally:
        loop.close()


def _hung(
    activation: Activation, ctx: ToolExecutionContext, timeout: float | None
) -> ToolDeactivationError:
    return ToolDeactivationError(
        f"deactivating tool {activation.name!r} for plan {ctx.plan_id!r} did not finish "
        f"within {timeout} seconds; it was abandoned",
        tool_name=activation.name,
        plan_id=ctx.plan_id,
    )
