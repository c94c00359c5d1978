"""The screened path of a call: validated, guarded, approved and looked up before it runs.

The call pipeline (``_pipeline``) drives a plain call itself and hands here the call of
a tool that is not plain: one with guardrails, a result cache, or a call to approve.
Such a call validates its input first, so that a call its input guardrails, its
approver or a cache hit turn away starts nothing (a hit activates no tool); only then
does its time start, its tool activate and run, and a cached tool keep the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle._scope import _start_collecting, _stop_collecting
from toolcycle.models import Validation
from toolcycle.runtime._shared import deadlines

if TYPE_CHECKING:
    import asyncio

    from toolcycle.execution._inflight import Flight
    from toolcycle.models import ToolResult
    from toolcycle.runtime._guards import GuardStep
    from toolcycle.runtime._interfaces import ApprovalStep
    from toolcycle.runtime._running import ToolStages
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["ScreenedCalls"]


class ScreenedCalls:
    """Runs the calls of tools that are screened before they run, from sync or async code.

    Args:
        steps: the steps that do not wait, and the calls' traces.
        approvals: the approval step.
        guards: the guardrail step, which asks the approval step among its guardrails.
        stages: activates the tool and runs it.
    """

    def __init__(
        self, steps: CallSteps, approvals: ApprovalStep, guards: GuardStep, stages: ToolStages
    ) -> None:
        self._steps = steps
        self._approvals = approvals
        self._guards = guards
        self._stages = stages

    def run(
        self,
        call: Call,
        entry: Entry,
        flight: Flight,
        params: Any,
        timeout: float | None,
        idle_timeout: float | None,
        asks: bool | None,
    ) -> ToolResult:
        """Run a checked and admitted call of a tool that is not plain, from sync code.

        ``asks`` is the approval rule's answer for the call, or None when the rule
        has not been asked yet (a guarded tool asks it after its early guardrails).
        """
        steps = self._steps
        cache, key = entry.cache, None
        data = steps.validate_input(call, entry, params)
        if type(data) is Validation:
            return steps.invalid(call, entry, data)
        if asks is None and entry.guards is None:
            asks = self._approvals.needed(call, entry)  # a cached tool's call
        if asks or entry.guards is not None:
            # Validate, guard and ask first, so that a call turned away starts nothing.
            verdict = self._guards.screen(call, entry, data, asks)
            if verdict is not None:
                return verdict
            if cache is not None:
                key, kept = cache.look_up(call.ctx, data, call.record.scrub)
                if kept is not None:
                    return self._guards.hit(call, entry, data, kept)
        else:
            # Cached: validate and look up before activating: a hit must not activate
            # the tool. (A guarded tool takes the branch above: a hit passes its input
            # guardrails.)
            assert cache is not None
            key, kept = cache.look_up(call.ctx, data, call.record.scrub)
            if kept is not None:
                return steps.cache_hit(call, kept)
        # The call's time starts once it may run, not while a person decides.
        before, limit = deadlines(call, entry, timeout, idle_timeout)
        late = self._stages.ensure_active(call, entry, before)
        if late is not None:
            return steps.failed(call, late, [])
        call.scope, collecting = _start_collecting(call.ctx, call.record)
        flight.attach(call.scope)
        try:
            result = self._stages.invoke(call, entry, data, limit, call.scope.changes)
        finally:
            _stop_collecting(call.scope, collecting)
        if key is not None and cache is not None:
            cache.keep(key, call.ctx, result)
        return result

    async def arun(
        self,
        call: Call,
        entry: Entry,
        flight: Flight,
        task: asyncio.Task[Any] | None,
        params: Any,
        timeout: float | None,
        idle_timeout: float | None,
        asks: bool | None,
    ) -> ToolResult:
        """Async twin of `run`."""
        steps = self._steps
        cache, key = entry.cache, None
        data = steps.validate_input(call, entry, params)
        if type(data) is Validation:
            return steps.invalid(call, entry, data)
        if asks is None and entry.guards is None:
            asks = self._approvals.needed(call, entry)
        if asks or entry.guards is not None:
            verdict = await self._guards.ascreen(call, entry, data, asks)
            if verdict is not None:
                return verdict
            if cache is not None:
                key, kept = cache.look_up(call.ctx, data, call.record.scrub)
                if kept is not None:
                    return await self._guards.ahit(call, entry, data, kept)
        else:
            assert cache is not None
            key, kept = cache.look_up(call.ctx, data, call.record.scrub)
            if kept is not None:
                return steps.cache_hit(call, kept)
        before, limit = deadlines(call, entry, timeout, idle_timeout)
        late = await self._stages.aensure_active(call, entry, before)
        if late is not None:
            return steps.failed(call, late, [])
        call.scope, collecting = _start_collecting(call.ctx, call.record)
        flight.attach(call.scope)
        try:
            result = await self._stages.ainvoke(call, entry, data, limit, call.scope.changes, task)
        finally:
            _stop_collecting(call.scope, collecting)
        if key is not None and cache is not None:
            cache.keep(key, call.ctx, result)
        return result
