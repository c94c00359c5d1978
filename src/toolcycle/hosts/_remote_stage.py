"""One stage on a host's far side: its context, its tool, and its outcome on the way back.

Both far sides of a host, a `ProcessHost` worker (`toolcycle.hosts._worker`) and a
`RayHost` actor (`toolcycle.hosts._ray_actor`), run a tool's stages the same way,
and this module is what they share. Every stage gets a context of its own
(`stage_context`): the plan's id, flags, resources, metadata and limits, the id of
the call it serves and the tools the plan has revealed, and a token that mirrors
the caller's call token. What a stage records with ``record_change`` and reveals
with ``reveal_tools`` travels back to the caller with its outcome (`packed`); the
tool itself arrives as a payload (`load_tool`).
"""

from __future__ import annotations

import importlib
import inspect
import pickle
from typing import TYPE_CHECKING, Any

from toolcycle import ToolCancelledError, ToolExecutionContext

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle import CancellationToken, Change, ProgressEvent, ToolInstance
    from toolcycle.hosts._tools import Call

__all__ = ["StageContext", "cancelled_error", "load_tool", "packed", "stage_context", "unheard"]


class StageContext(ToolExecutionContext):
    """A stage's context in a worker: the plan's, answering ``call_id`` as the caller's did.

    The caller's ``call_id`` comes from the call running in its thread or task,
    which a worker does not have; the stage is given it instead. What the stage
    reveals (`revealed_here`) goes back to the caller's plan with its outcome.
    """

    __slots__ = ("_revealed_before", "_stage_call_id")
    _revealed_before: frozenset[str]
    _stage_call_id: str | None

    @property
    def call_id(self) -> str | None:
        """The id of the call this stage serves, as the caller read it; None outside a call."""
        return self._stage_call_id

    def revealed_here(self) -> tuple[str, ...]:
        """The tools the stage revealed, beyond those the plan had revealed at its start."""
        return tuple(sorted(self.revealed_tools.difference(self._revealed_before)))


def stage_context(
    info: dict[str, Any],
    token: CancellationToken,
    on_progress: Callable[[ProgressEvent], object],
    call: Call | None,
) -> StageContext:
    """The context of one stage: the plan's ``info``, its own token, the caller's ``call``."""
    ctx = StageContext(
        info["plan_id"],
        read_only=info.get("read_only", False),
        requires_checkpoint=info.get("requires_checkpoint", False),
        resources=info.get("resources", ()),
        metadata=dict(info.get("metadata", {})),
        timeout=info.get("timeout"),
        idle_timeout=info.get("idle_timeout"),
        cancellation_token=token,
        on_progress=on_progress,
    )
    call_id, revealed = call if call is not None else (None, ())
    ctx._stage_call_id = call_id
    ctx._revealed_before = frozenset(revealed)
    if revealed:
        ctx.reveal_tools(revealed)
    return ctx


def load_tool(payload: tuple[Any, ...]) -> ToolInstance:
    """The tool a payload describes (see `toolcycle.hosts._tools.pack`).

    Raises:
        ImportError, AttributeError: an import path that names nothing.
    """
    kind = payload[0]
    if kind == "pickle":
        tool: ToolInstance = pickle.loads(payload[1])
        return tool
    module_name, _, attribute = payload[1].partition(":")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    if kind == "import" and (isinstance(found, type) or inspect.isfunction(found)):
        found = found(*payload[2], **payload[3])  # a class or a factory function
    built: ToolInstance = found  # "ref": the module's own object, by name
    return built


def unheard(event: ProgressEvent) -> None:
    """Progress of a stage no caller follows."""


def packed(ok: bool, value: Any, changes: list[Change], revealed: tuple[str, ...] = ()) -> bytes:
    """A stage's outcome as bytes the caller can always open; it never raises.

    The caller opens the outer message on its reading thread, which must never
    fail; an outcome it could not open (an unpicklable output, an exception whose
    class does not pickle back, a change whose ``data`` does not pickle) becomes a
    plain error that says so, with the changes that do travel. Raising here instead
    would leave the caller waiting for an outcome that never comes.
    """
    try:
        blob = pickle.dumps((ok, value, changes, revealed))
        if not ok:
            pickle.loads(blob)
    except Exception as exc:
        kept = [change for change in changes if _travels(change)]
        if len(kept) < len(changes):
            what = "recorded changes"
            advice = "keep the data of a Change JSON-compatible"
        else:
            what = "output" if ok else f"error ({type(value).__name__}: {_shown(value)})"
            advice = "return JSON-compatible values and raise exceptions that pickle"
        problem = RuntimeError(
            f"the tool's {what} could not be sent back from the host ({_shown(exc)}); {advice}"
        )
        blob = pickle.dumps((False, problem, kept, revealed))
    return blob


def _travels(value: object) -> bool:
    """Whether ``value`` pickles, and opens again."""
    try:
        pickle.loads(pickle.dumps(value))
    except Exception:
        return False
    return True


def _shown(value: object) -> str:
    """``str(value)``, or its type's name when that fails."""
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def cancelled_error(ctx: ToolExecutionContext) -> ToolCancelledError:
    """The error a stage ends with when its token is cancelled, with the token's reason."""
    reason = ctx.cancellation_token.reason
    return ToolCancelledError(
        "the call was cancelled" + (f": {reason}" if reason else ""), reason=reason
    )
