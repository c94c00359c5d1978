"""A call of a durable plan: handed whole to the plan's engine to record or replay.

Only calls of a plan opened with ``durable=`` come here; the pipeline checks one
attribute of the context for every other call. The engine (see
`toolcycle.durable.DurablePlan`) records the call's result as one step, so a
resumed plan gets it back without running the tool again, and records the call's
fingerprint with it, so a replay that now passes other arguments is refused
rather than handed the old arguments' result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.approvals import fingerprint
from toolcycle.errors import ToolInterruptedError
from toolcycle.runtime._results import Outcome

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.durable import DurablePlan
    from toolcycle.models import ToolResult
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["arun_durably", "run_durably"]


def run_durably(
    steps: CallSteps,
    engine: DurablePlan,
    call: Call,
    params: Any,
    run: Callable[[], ToolResult],
) -> ToolResult:
    """Run ``call`` (with its arguments, ``params``) through its plan's ``engine`` from sync code.

    The capability check comes first and outside the record: a call the plan may
    not make raises (and is traced) the same way on every run.
    """
    entry = steps.check(call)
    idempotent = entry.descriptor.capability.idempotent
    return engine.run(
        call.ctx,
        call.name,
        idempotent,
        run,
        lambda: _interrupted(steps, call),
        fingerprint=_fingerprint(call, entry, params),
    )


async def arun_durably(
    steps: CallSteps,
    engine: DurablePlan,
    call: Call,
    params: Any,
    run: Callable[[], Awaitable[ToolResult]],
) -> ToolResult:
    """Async twin of `run_durably`."""
    entry = steps.check(call)
    idempotent = entry.descriptor.capability.idempotent
    return await engine.arun(
        call.ctx,
        call.name,
        idempotent,
        run,
        lambda: _interrupted(steps, call),
        fingerprint=_fingerprint(call, entry, params),
    )


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
    """The failed, traced result of a call that died with an earlier process."""
    error = ToolInterruptedError(
        f"the call of {call.name!r} was running when the process running plan "
        f"{call.ctx.plan_id!r} stopped, and the tool is not idempotent, so it was not run "
        "again; check what it did, then call it again if needed (or mark the tool "
        "idempotent=True if running it twice is harmless)",
        tool_name=call.name,
        plan_id=call.ctx.plan_id,
    )
    return steps.failed(call, Outcome(error=error), [])
