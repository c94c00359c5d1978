"""What a durable plan's DBOS steps record, and how a replay is checked against it.

`toolcycle.hosts.DBOSPlan` (in ``_dbos``) runs each call of a durable plan as
DBOS steps; this module holds what those steps write and read back:

- the marker step of a tool that is not idempotent (``<name>:started``), whose
  output is the call's fingerprint (`began`, `abegan`);
- the call's own record, ``{"result": ..., "fingerprint": ...}``, tried with
  DBOS's serializer before DBOS writes it (`record`), and handed back on replay
  after the fingerprint check (`replayed`, `check_same_call`);
- the approval ledger's claim of a resumed call, a step of its own (`claimed`,
  `aclaimed`);
- `Raised`, which carries an exception past a step so that DBOS records nothing.

DBOS writes a step's output with its serializer (pickle by default) after the
step's function returns. A result it cannot write would leave the step
unrecorded behind a bare pickling error, after the tool ran; each result is
tried with the serializer first, and one that fails raises `ToolRuntimeError`
naming the tool, with nothing recorded for the call.

It reads two things DBOS keeps private: the serializer configured, and the id
of the step that just ran (for messages only). Only ``_dbos`` imports it, after
checking that DBOS is installed.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

from dbos import DBOS
from dbos._context import get_local_dbos_context
from dbos._dbos import _get_dbos_instance

from toolcycle.errors import PlanResumeError, ToolRuntimeError, error_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolResult

__all__ = [
    "Raised",
    "abegan",
    "aclaimed",
    "began",
    "check_same_call",
    "claimed",
    "record",
    "replayed",
]

# The name DBOS gives its default serializer, which pickles.
_PICKLE = "py_pickle"


class Raised(BaseException):
    """Carries an exception of a call past DBOS's step, which records only `Exception`s.

    A call that raised (cancelled, refused, an activation that failed) has no
    result to give back on resume, so it is left unrecorded.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def began(ctx: ToolExecutionContext, tool_name: str, name: str, fingerprint: str | None) -> bool:
    """Record that the call starts; False when an earlier run recorded it already.

    Raises:
        PlanResumeError: the earlier run recorded the start of a call with
            other arguments.
    """
    ran: list[bool] = []

    def mark() -> str | None:
        ran.append(True)
        return fingerprint

    marker = f"{name}:started"
    recorded = DBOS.run_step({"name": marker}, mark)
    if not ran:
        check_same_call(ctx, tool_name, marker, recorded, fingerprint, marked=False)
    return bool(ran)


async def abegan(
    ctx: ToolExecutionContext, tool_name: str, name: str, fingerprint: str | None
) -> bool:
    """Async twin of `began`."""
    ran: list[bool] = []

    async def mark() -> str | None:
        ran.append(True)
        return fingerprint

    marker = f"{name}:started"
    recorded = await DBOS.run_step_async({"name": marker}, mark)
    if not ran:
        check_same_call(ctx, tool_name, marker, recorded, fingerprint, marked=False)
    return bool(ran)


def _carried(claim: Callable[[], bool]) -> Callable[[], bool]:
    """The claim as a step: an error is carried past DBOS, unrecorded, to try again on resume."""

    def step() -> bool:
        try:
            return bool(claim())
        except BaseException as exc:
            raise Raised(exc) from None

    return step


def claimed(name: str, claim: Callable[[], bool]) -> bool:
    """Run the claim as the step ``name``, or give back its recorded answer."""
    try:
        return DBOS.run_step({"name": name}, _carried(claim))
    except Raised as carried:
        raise carried.error from None


async def aclaimed(name: str, claim: Callable[[], bool]) -> bool:
    """Async twin of `claimed`."""
    try:
        return await DBOS.run_step_async({"name": name}, _carried(claim))
    except Raised as carried:
        raise carried.error from None


def record(
    ctx: ToolExecutionContext, tool_name: str, result: ToolResult, fingerprint: str | None
) -> dict[str, Any]:
    """What the call's step records: its result, without the live exception, and fingerprint.

    The record is tried with DBOS's serializer here, because DBOS serializes a
    step's output only after the step returns, and a failure there escapes as
    a bare error (pickle's, for the default serializer) with the step unrecorded.

    Raises:
        Raised: carrying `ToolRuntimeError` (the serializer's error as its
            cause) when the record cannot be serialized; DBOS records nothing.
    """
    kept = result if result.exception is None else result.model_copy(update={"exception": None})
    written = {"result": kept, "fingerprint": fingerprint}
    serializer = _get_dbos_instance()._serializer
    pickled = serializer.name() == _PICKLE
    try:
        if pickled:  # by pickle itself: DBOS's serializer logs the whole result on failing
            pickle.dumps(written)
        else:
            serializer.serialize(written)
    except Exception as exc:
        used = (
            "pickle (DBOS's default serializer)"
            if pickled
            else f"the serializer set in DBOSConfig ({type(serializer).__name__})"
        )
        error = ToolRuntimeError(
            f"the call of {tool_name!r} in durable plan {ctx.plan_id!r} ran, but its result "
            f"cannot be recorded: {used} failed on it ({type(exc).__name__}: "
            f"{error_text(exc)}). A durable plan records each call's whole ToolResult, so "
            "its output and any ToolReturn metadata must be serializable: keep live "
            "objects (locks, clients, open files) out of the metadata, or set a "
            "serializer in DBOSConfig that can write them. Nothing was recorded for this "
            "call: a resumed plan treats it as a call that was running when its process "
            "died",
            tool_name=tool_name,
            plan_id=ctx.plan_id,
        )
        error.__cause__ = exc
        raise Raised(error) from None
    return written


def replayed(
    ctx: ToolExecutionContext,
    tool_name: str,
    name: str,
    recorded: dict[str, Any] | ToolResult,
    fingerprint: str | None,
    *,
    marked: bool,
) -> ToolResult:
    """A recorded result given back on resume; its changes join the plan's record again.

    ``marked``: the call's step follows its marker step (see `check_same_call`).

    Raises:
        PlanResumeError: the result was recorded for a call with other arguments.
    """
    if isinstance(recorded, dict):
        check_same_call(ctx, tool_name, name, recorded["fingerprint"], fingerprint, marked=marked)
        result: ToolResult = recorded["result"]
    else:  # recorded before fingerprints were: it answers any call of its tool
        result = recorded
    for change in result.changes:
        ctx.record_change(change)
    return result


def check_same_call(
    ctx: ToolExecutionContext,
    tool_name: str,
    name: str,
    recorded: str | None,
    fingerprint: str | None,
    *,
    marked: bool,
) -> None:
    """Refuse to replay the step ``name`` for a call whose fingerprint is not the recorded one.

    A record without a fingerprint (made before they were recorded) answers any
    call of its tool, as it did then. ``marked``: the step follows the call's
    marker step, where a fork that runs the call again must start.

    Raises:
        PlanResumeError: naming the step and the tool, and what to do.
    """
    if recorded is None or recorded == fingerprint:
        return
    workflow_id = DBOS.workflow_id
    dbos_context = get_local_dbos_context()
    assert dbos_context is not None  # a step of this workflow just replayed
    step_id = dbos_context.function_id  # the id DBOS gave the step that just replayed
    first = step_id - 1 if marked else step_id
    raise PlanResumeError(
        f"a replay of durable plan {ctx.plan_id!r} reached step {step_id} ({name!r}), "
        f"recorded for a call of {tool_name!r} with other arguments than the plan passes "
        "now, so the recorded result is not handed back. A replay must make the calls of "
        "the run it replays: compute each call's arguments only from the workflow's inputs "
        "and earlier calls' results (read the clock, random numbers and outside data inside "
        "a tool or a DBOS step). If the new arguments are intended, run the plan under a new "
        "workflow id, or fork it with DBOS.fork_workflow"
        f"({workflow_id!r}, {first}), which runs this call again with them",
        tool_name=tool_name,
        plan_id=ctx.plan_id,
    )
