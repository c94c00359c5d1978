"""A call of a durable plan: handed whole to the plan's engine to record or replay.

Only calls of a plan opened with ``durable=`` come here; the pipeline checks one
attribute of the context for every other call. The engine (see
`toolcycle.durable.DurablePlan`) records the call's result as one step, so a
resumed plan gets it back without running the tool again, and records the call's
fingerprint with it, so a replay that now passes other arguments is refused
rather than handed the old arguments' result.

A call is announced (its ``tool.call_started`` event logged, its instrumentation
observer started) only once the engine runs it, or reports it interrupted, and
its observer is told how it ended before the engine records it. A replayed call
is announced by no one: the run that made it did, and its result carries that
run's trace. A call that a check refuses before the engine sees it is refused,
traced and announced the same way on every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.agent._dispatch import REFUSED, refusal
from toolcycle.approvals import fingerprint
from toolcycle.errors import ToolInterruptedError
from toolcycle.runtime._results import Outcome

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.models import ToolResult
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["arun_durably", "run_durably"]


def run_durably(
    steps: CallSteps,
    call: Call,
    params: Any,
    refuse: bool,
    run: Callable[[], ToolResult],
) -> ToolResult:
    """Run ``call`` (with its arguments, ``params``) through its plan's engine from sync code.

    The checks come first and outside the record: a call the plan may not make
    raises (and is traced) the same way on every run. With ``refuse``, such a
    refusal (`REFUSED`) becomes the failed result that answers a model's call.
    """
    engine = call.ctx.durable
    assert engine is not None  # the pipeline checked
    try:
        entry = _checked(steps, call)
        return engine.run(
            call.ctx,
            call.name,
            entry.descriptor.capability.idempotent,
            lambda: _announced(steps, call, run),
            lambda: _interrupted(steps, call),
            fingerprint=_fingerprint(call, entry, params),
        )
    except REFUSED as exc:
        if not refuse:
            raise
        return refusal(None, str(exc), type(exc).__name__, call.trace)


async def arun_durably(
    steps: CallSteps,
    call: Call,
    params: Any,
    refuse: bool,
    run: Callable[[], Awaitable[ToolResult]],
) -> ToolResult:
    """Async twin of `run_durably`."""
    engine = call.ctx.durable
    assert engine is not None  # the pipeline checked
    try:
        entry = _checked(steps, call)
        return await engine.arun(
            call.ctx,
            call.name,
            entry.descriptor.capability.idempotent,
            lambda: _aannounced(steps, call, run),
            lambda: _interrupted(steps, call),
            fingerprint=_fingerprint(call, entry, params),
        )
    except REFUSED as exc:
        if not refuse:
            raise
        return refusal(None, str(exc), type(exc).__name__, call.trace)


def _checked(steps: CallSteps, call: Call) -> Entry:
    """The call's checks, made before the engine sees it; a refused call is announced too.

    Only the refusal tells that the engine will not replay the call, so it is
    announced once its trace is delivered, and its observer is told at once.
    """
    try:
        return steps.check(call)
    except BaseException:
        steps.announce(call)
        if call.observer is not None:
            steps.observed(call)
        raise


def _announced(steps: CallSteps, call: Call, run: Callable[[], ToolResult]) -> ToolResult:
    """Announce the call the engine runs, run it, and tell its observer how it ended."""
    steps.announce(call)
    try:
        result = run()
        if call.observer is not None:  # it reports the trace: build it now
            call.trace, call.result = result.trace, result
        return result
    finally:
        if call.observer is not None:
            steps.observed(call)


async def _aannounced(
    steps: CallSteps, call: Call, run: Callable[[], Awaitable[ToolResult]]
) -> ToolResult:
    """Async twin of `_announced`."""
    steps.announce(call)
    try:
        result = await run()
        if call.observer is not None:
            call.trace, call.result = result.trace, result
        return result
    finally:
        if call.observer is not None:
            steps.observed(call)


def _fingerprint(call: Call, entry: Entry, params: Any) -> str | None:
    """The call's fingerprint: its tool name and its arguments as validation normalises them.

    None for arguments that are not JSON data: validation refuses them, so the
    call fails without running whatever they were.
    """
    try:
        data = entry.input.normalize(params)
    except ValueError:  # JSONCompatibilityError: not JSON data, or past the limits
        return None
    return fingerprint(call.name, data)


def _interrupted(steps: CallSteps, call: Call) -> ToolResult:
    """The failed result of a call that died with an earlier process, announced and traced."""
    steps.announce(call)
    error = ToolInterruptedError(
        f"the call of {call.name!r} was running when the process running plan "
        f"{call.ctx.plan_id!r} stopped, and the tool is not idempotent, so it was not run "
        "again; check what it did, then call it again if needed (or mark the tool "
        "idempotent=True if running it twice is harmless)",
        tool_name=call.name,
        plan_id=call.ctx.plan_id,
    )
    result = steps.failed(call, Outcome(error=error), [])
    if call.observer is not None:
        call.trace, call.result = result.trace, result
        steps.observed(call)
    return result
