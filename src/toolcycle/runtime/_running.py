"""Steps 3 and 5 of a call: waiting for the tool's activation, and running it.

The call pipeline (`toolcycle.runtime._pipeline`) decides which steps a call
takes; these two are where a call waits, so each has a sync and an async form.
Both trace what goes wrong on the way (an activation that fails, a run that is
cancelled, times out or raises) and hand what the tool returned to the steps
that finish the call.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import TYPE_CHECKING, Any

from toolcycle.errors import ToolCancelledError
from toolcycle.execution._activation import CallTimedOut
from toolcycle.execution._invoke import PLAIN_VALUES, TaskWatch, caller_cancelled
from toolcycle.execution._threads import InvokeTimeoutError
from toolcycle.runtime._results import Outcome
from toolcycle.runtime._retries import arun_attempts, run_attempts

if TYPE_CHECKING:
    from toolcycle.execution._activation import Activator
    from toolcycle.execution._invoke import Invoker
    from toolcycle.execution._portal import Deadline
    from toolcycle.models import Change, ToolResult
    from toolcycle.runtime._guards import GuardStep
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["ToolStages"]


class ToolStages:
    """Activates a call's tool when it must, and runs it.

    Args:
        steps: the steps that do not wait, and the calls' traces.
        activator: activates a tool for a plan at most once (single flight).
        invoker: runs a tool's ``execute``: sync ones on the pool or inline,
            async ones on the caller's loop or the runtime's own.
        settings: the runtime's shared settings (``auto_activate``).
        guards: the guardrail step, for the output of a guarded tool.
    """

    def __init__(
        self,
        steps: CallSteps,
        activator: Activator,
        invoker: Invoker,
        settings: Settings,
        guards: GuardStep,
    ) -> None:
        self._steps = steps
        self._activator = activator
        self._invoker = invoker
        self._settings = settings
        self._guards = guards

    def ensure_active(
        self, call: Call, entry: Entry, deadline: Deadline | None = None, *, explicit: bool = False
    ) -> Outcome | None:
        """Step 3 from sync code; a failure is traced, then raised.

        Returns:
            A timed-out outcome when the call's own limit passed while the tool
            was activating; None when the tool is active.
        """
        if deadline is None and self._activator.settled(call.ctx, call.name):
            return None  # warm: nothing to wait for
        try:
            self._activator.ensure(
                call.ctx,
                call.name,
                entry.instance,
                on_demand=explicit or self._settings.auto_activate,
                token=call.flight,
                deadline=deadline,
            )
        except CallTimedOut as exc:
            return Outcome(timed_out=True, reason=str(exc))
        except BaseException as exc:
            self._steps.activation_failed(call, exc)
            raise
        if getattr(call.record, "idle_limited", False):
            # An idle limit counts from the run: a slow start (a worker, a server)
            # must not use it up. (The run's limit was made before the activation.)
            call.record.active_at = time.monotonic()
        return None

    async def aensure_active(
        self, call: Call, entry: Entry, deadline: Deadline | None = None, *, explicit: bool = False
    ) -> Outcome | None:
        """Step 3 from async code; a failure is traced, then raised (see `ensure_active`)."""
        if deadline is None and self._activator.settled(call.ctx, call.name):
            return None  # warm: no coroutine to make and await
        try:
            await self._activator.aensure(
                call.ctx,
                call.name,
                entry.instance,
                on_demand=explicit or self._settings.auto_activate,
                token=call.flight,
                deadline=deadline,
            )
        except CallTimedOut as exc:
            return Outcome(timed_out=True, reason=str(exc))
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._steps.emit(call, "cancelled", error=exc)
                raise
            self._steps.raise_cancelled(call, exc)
        except BaseException as exc:
            self._steps.activation_failed(call, exc)
            raise
        if getattr(call.record, "idle_limited", False):
            call.record.active_at = time.monotonic()  # see `ensure_active`
        return None

    # -- step 5: running the tool ----------------------------------------------------------

    def invoke(
        self,
        call: Call,
        entry: Entry,
        data: dict[str, Any],
        timeout: float | Deadline | None,
        changes: list[Change],
    ) -> ToolResult:
        """Step 5, then 6 and 7 on what it produced, with the ``changes`` it recorded."""
        ctx = call.ctx
        try:
            if entry.retry is not None:  # an idempotent tool that retries transient faults
                output = run_attempts(self._invoker, call, entry, data, timeout)
            elif timeout is None and not entry.coroutine:
                # Invoker.call's commonest case, here: a call with keywords costs as
                # much as the rest of it.
                output = entry.instance.execute(data, ctx)
                if type(output) not in PLAIN_VALUES and inspect.isawaitable(output):
                    output = self._invoker.settle(output, call.flight or ctx.cancellation_token)
            else:
                output = self._invoker.call(
                    entry.instance.execute,
                    data,
                    ctx,
                    token=call.flight or ctx.cancellation_token,
                    timeout=timeout,
                    loop=entry.loop if entry.loop_for is None else entry.call_loop(ctx),
                    coroutine=entry.coroutine,
                )
        except InvokeTimeoutError as exc:
            outcome = self._steps.timed_out(call, entry, exc)
        except (ToolCancelledError, asyncio.CancelledError) as exc:
            self._steps.raise_cancelled(call, exc)
        except Exception as exc:
            outcome = Outcome(error=exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
            self._steps.emit(call, "cancelled", error=exc)
            raise
        else:
            if entry.guards is not None:
                return self._guards.returned(call, entry, data, output, changes)
            return self._steps.returned(call, entry, output, changes)
        return self._steps.failed(call, outcome, changes)

    async def ainvoke(
        self,
        call: Call,
        entry: Entry,
        data: dict[str, Any],
        timeout: float | Deadline | None,
        changes: list[Change],
        task: asyncio.Task[Any] | None,
    ) -> ToolResult:
        """Async twin of `invoke`."""
        ctx = call.ctx
        token = call.flight or ctx.cancellation_token
        try:
            if entry.retry is not None:  # an idempotent tool that retries transient faults
                output = await arun_attempts(self._invoker, call, entry, data, timeout, task)
            elif entry.coroutine and timeout is None and task is not None:
                # Invoker.acall's commonest case, here: one coroutine level less costs
                # as much as the rest of it.
                coro = entry.instance.execute(data, ctx)
                watch = TaskWatch(task, token)
                try:
                    output = await coro
                finally:
                    watch.release()
            else:
                flight = call.flight
                output = await self._invoker.acall(
                    entry.instance.execute,
                    data,
                    ctx,
                    token=token,
                    timeout=timeout,
                    coroutine=entry.coroutine,
                    # A sync tool runs on when its caller's task is cancelled: the
                    # call stays in flight, so its plan's end waits for it.
                    on_abandon=flight.leave if flight is not None else None,
                    task=task,
                )
        except InvokeTimeoutError as exc:
            outcome = self._steps.timed_out(call, entry, exc)
        except ToolCancelledError as exc:
            self._steps.raise_cancelled(call, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._steps.emit(call, "cancelled", error=exc)
                raise
            self._steps.raise_cancelled(call, exc)
        except Exception as exc:
            outcome = Outcome(error=exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
            self._steps.emit(call, "cancelled", error=exc)
            raise
        else:
            if entry.guards is not None:
                return await self._guards.areturned(call, entry, data, output, changes)
            return self._steps.returned(call, entry, output, changes)
        return self._steps.failed(call, outcome, changes)
