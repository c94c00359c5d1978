"""The call pipeline: one call's seven steps, driven from sync or from async code.

Both drivers run the same steps in the same order (see `toolcycle.runtime`); the
steps that do not wait live in `CallSteps`, so each driver only adds its way of
waiting: for the activation, for the approver, and for the tool itself. A plain
call runs here from start to end; the call of a tool with guardrails, a result
cache or a call to approve goes on, once checked and admitted, in `ScreenedCalls`
(``_screening``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from toolcycle._scope import _start_collecting, _stop_collecting
from toolcycle.agent._dispatch import REFUSED, refused
from toolcycle.models import ToolResult, Validation
from toolcycle.runtime._guards import GuardStep
from toolcycle.runtime._hosting import hosted
from toolcycle.runtime._limits import check_limits
from toolcycle.runtime._running import ToolStages
from toolcycle.runtime._screening import ScreenedCalls
from toolcycle.runtime._shared import deadlines

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping

    from toolcycle.context import ToolExecutionContext
    from toolcycle.execution._activation import Activator
    from toolcycle.execution._invoke import Invoker
    from toolcycle.models import ApprovalRecord, ProgressEvent, ToolCall
    from toolcycle.runtime._interfaces import ApprovalStep
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call
    from toolcycle.runtime._steps import CallSteps

__all__ = ["CallPipeline"]


class CallPipeline:
    """Runs calls: check, admit, approve, activate, validate, run, finish.

    Args:
        steps: the steps that do not wait, and the calls' traces.
        approvals: the approval step.
        activator: activates a tool for a plan at most once (single flight).
        invoker: runs a tool's ``execute``: sync ones on the pool or inline,
            async ones on the caller's loop or the runtime's own.
        settings: the runtime's shared settings (``auto_activate``).
    """

    def __init__(
        self,
        steps: CallSteps,
        approvals: ApprovalStep,
        activator: Activator,
        invoker: Invoker,
        settings: Settings,
    ) -> None:
        self._steps = steps
        self._approvals = approvals
        self._activator = activator
        self._invoker = invoker
        self._settings = settings
        guards = GuardStep(steps, approvals, invoker, settings)
        self._stages = stages = ToolStages(steps, activator, invoker, settings, guards)
        screened = ScreenedCalls(steps, approvals, guards, stages)
        # Bound once: a screened call looks its driver up as it would a method of ours.
        self._screened = screened.run
        self._ascreened = screened.arun

    def execute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
    ) -> ToolResult:
        """Run one call; with ``refuse``, a refusal (`REFUSED`) becomes a failed result.

        That result carries the refusal's trace: ``call`` answers the model with it.
        A successful run's result carries ``answers``, the model's call it answers.
        """
        if timeout is not None or idle_timeout is not None:
            check_limits(timeout, idle_timeout)
        try:
            durable = ctx.durable
        except AttributeError:  # not a context: `start` raises the TypeError that says so
            durable = None
        if durable is not None:  # its engine records the call, or replays it
            call = self._steps.start_unannounced(name, ctx, tool_call_id, approval)
            call.answers = answers
            if approval is not None:
                self._steps.learn_secrets(call, params)  # as below
            return self._durably(call, params, timeout, idle_timeout, refuse)
        call = self._steps.start(name, ctx, tool_call_id, approval=approval)
        call.answers = answers
        if approval is not None:
            # A resumed call's approval reason may quote its arguments, and the call
            # may fail before validation teaches the record their secrets.
            self._steps.learn_secrets(call, params)
        if call.observer is None and not refuse:
            return self._run(call, params, timeout, idle_timeout)
        try:
            result = self._run(call, params, timeout, idle_timeout)
            if call.observer is not None:  # it reports the trace: build it now
                call.trace, call.result = result.trace, result
            return result
        except REFUSED as exc:
            if not refuse:
                raise
            return refused(exc, call.trace)
        finally:
            if call.observer is not None:
                self._steps.observed(call)

    def aexecute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
        progress: Callable[[ProgressEvent], object] | None = None,
    ) -> Coroutine[Any, Any, ToolResult]:
        """Async twin of `execute`: the coroutine to await for the result.

        A plain function that hands back the driver's coroutine, so an awaited
        call goes through one coroutine level less. Every caller awaits it at once.
        ``progress`` hears the call's progress reports (a stream of the call).
        """
        if timeout is not None or idle_timeout is not None:
            check_limits(timeout, idle_timeout)
        try:
            durable = ctx.durable
        except AttributeError:  # not a context: `start` raises the TypeError that says so
            durable = None
        if durable is None:
            call = self._steps.start(name, ctx, tool_call_id, approval=approval)
        else:  # its engine records the call, or replays it
            call = self._steps.start_unannounced(name, ctx, tool_call_id, approval)
        call.answers = answers
        if approval is not None:
            self._steps.learn_secrets(call, params)  # see `execute`
        if progress is not None:
            call.record.listen(progress)
        if durable is not None:
            return self._adurably(call, params, timeout, idle_timeout, refuse)
        if call.observer is None:
            # `_arun` turns a refusal into the result itself: no coroutine around it.
            call.refuse = refuse
            return self._arun(call, params, timeout, idle_timeout)
        return self._awatched(call, params, timeout, idle_timeout, refuse)

    def _durably(
        self,
        call: Call,
        params: Any,
        timeout: float | None,
        idle_timeout: float | None,
        refuse: bool,
    ) -> ToolResult:
        """`_run` in a durable plan: its engine records the call, or replays it.

        The call is announced (its start logged, its observer started) only if
        the engine runs it: a replayed call was announced by the run that made it.
        """
        # Its own method: a closure in `execute` would make a cell of each of its
        # variables on every call, durable or not.
        from toolcycle.runtime._durable import run_durably  # durable plans are rare

        return run_durably(
            self._steps,
            call,
            params,
            refuse,
            lambda: self._run(call, params, timeout, idle_timeout),
        )

    async def _awatched(
        self,
        call: Call,
        params: Mapping[str, Any],
        timeout: float | None,
        idle_timeout: float | None,
        refuse: bool,
    ) -> ToolResult:
        """`_arun` for an observed call: its observer is told how the call ended."""
        try:
            result = await self._arun(call, params, timeout, idle_timeout)
            call.trace, call.result = result.trace, result  # the observer reports the trace
            return result
        except REFUSED as exc:
            if not refuse:
                raise
            return refused(exc, call.trace)
        finally:
            self._steps.observed(call)

    async def _adurably(
        self,
        call: Call,
        params: Any,
        timeout: float | None,
        idle_timeout: float | None,
        refuse: bool,
    ) -> ToolResult:
        """Async twin of `_durably`."""
        from toolcycle.runtime._durable import arun_durably

        return await arun_durably(
            self._steps,
            call,
            params,
            refuse,
            lambda: self._arun(call, params, timeout, idle_timeout),
        )

    def activate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Activate ahead of the first call, after the same checks; no trace."""
        call = self._steps.start(name, ctx, traced=False)
        entry = self._steps.check(call)
        if ctx.host is not None:
            entry = hosted(entry, call, asynchronous=False)
        self._stages.ensure_active(call, entry, explicit=True)

    async def aactivate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Async twin of `activate`."""
        call = self._steps.start(name, ctx, traced=False)
        entry = self._steps.check(call)
        if ctx.host is not None:
            entry = hosted(entry, call, asynchronous=True)
        await self._stages.aensure_active(call, entry, explicit=True)

    # -- the drivers ---------------------------------------------------------------------

    def _run(
        self, call: Call, params: Any, timeout: float | None, idle_timeout: float | None
    ) -> ToolResult:
        steps = self._steps
        entry = steps.check(call)
        if call.ctx.host is not None:  # the tool's body runs in the plan's host
            entry = hosted(entry, call, asynchronous=False)
        flight = steps.admit(call, threading.get_ident())
        try:
            # A plan's approval rule is asked once per call, and its answer passed on:
            # a rule that answered differently when asked again would split the call.
            if not entry.plain:  # asked later: after validation (and early guardrails)
                return self._screened(call, entry, flight, params, timeout, idle_timeout, None)
            if self._approvals.needed(call, entry):
                return self._screened(call, entry, flight, params, timeout, idle_timeout, True)
            # The plain path, kept as short as it was before guardrails and caching:
            # each feature a tool lacks costs it nothing beyond the check above.
            before, limit = deadlines(call, entry, timeout, idle_timeout)
            if before is None and self._activator.settled(call.ctx, call.name):
                late = None  # warm: nothing to wait for
            else:
                late = self._stages.ensure_active(call, entry, before)
            if late is not None:
                return steps.failed(call, late, [])
            data = steps.validate_input(call, entry, params)
            if type(data) is Validation:
                return steps.invalid(call, entry, data)
            call.scope, collecting = _start_collecting(call.ctx, call.record)
            flight.attach(call.scope)
            try:
                return self._stages.invoke(call, entry, data, limit, call.scope.changes)
            finally:
                _stop_collecting(call.scope, collecting)
        finally:
            flight.group.release(flight)

    async def _arun(
        self, call: Call, params: Any, timeout: float | None, idle_timeout: float | None
    ) -> ToolResult:
        steps = self._steps
        try:
            entry = steps.check(call)
            if call.ctx.host is not None:  # the tool's body runs in the plan's host
                entry = hosted(entry, call, asynchronous=True)
            task = asyncio.current_task()
            flight = steps.admit(call, task)
            try:
                if not entry.plain:  # the rule is asked later, once (see `_run`)
                    return await self._ascreened(
                        call, entry, flight, task, params, timeout, idle_timeout, None
                    )
                if self._approvals.needed(call, entry):
                    return await self._ascreened(
                        call, entry, flight, task, params, timeout, idle_timeout, True
                    )
                before, limit = deadlines(call, entry, timeout, idle_timeout)
                if before is None and self._activator.settled(call.ctx, call.name):
                    late = None  # warm: not even a coroutine to make and await
                else:
                    late = await self._stages.aensure_active(call, entry, before)
                if late is not None:
                    return steps.failed(call, late, [])
                data = steps.validate_input(call, entry, params)
                if type(data) is Validation:
                    return steps.invalid(call, entry, data)
                call.scope, collecting = _start_collecting(call.ctx, call.record)
                flight.attach(call.scope)
                try:
                    return await self._stages.ainvoke(
                        call, entry, data, limit, call.scope.changes, task
                    )
                finally:
                    _stop_collecting(call.scope, collecting)
            finally:
                flight.group.release(flight)
        except REFUSED as exc:  # a model's call is answered with the refusal
            if not call.refuse:
                raise
            return refused(exc, call.trace)
