"""Undoing recorded changes: checkpoints, undo handlers and rollback reports.

A plan's context records every `Change` its tools make. A checkpoint names a
point in that history (how many changes had been recorded then); rolling back
to it undoes the changes recorded after that point and still in the record,
newest first, each through the undo handler registered for its ``kind``. The
file handlers used by default restore a workspace byte for byte from what the
built-in tools record: the previous bytes (or the fact that there were none) and
a digest of what the tool left behind, or the text of a symbolic link removed.

A file change whose previous bytes were too large to keep (the built-in tools'
``max_undo_bytes``) records only their size: nothing can bring them back, and a
rollback reports it ``unsupported`` and leaves the file alone.

Before undoing a change, a handler checks that the target is still as the tool
left it. If someone changed it since, the change is reported as a conflict and
left alone: a rollback never overwrites work it did not make.

A file change names its workspace and its path relative to it, never where to
write: the handlers find the file again from the workspace the plan binds now
and that relative path, walking it without following any symbolic link
(``toolcycle._confined``). A change whose path is absolute, climbs with ``..``
or meets a link is refused and nothing is written, so an edited, persisted
change cannot make a rollback write anywhere else.
"""

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict

from toolcycle._file_undo import digest, file_change, file_handlers
from toolcycle._history import ChangeHistory
from toolcycle._nofollow import ConfinementError
from toolcycle._undo_handler import RollbackConflictError, RollbackUnsupportedError, UndoHandler
from toolcycle.models import BoundResource, Change

__all__ = [
    "DEFAULT_UNDO_HANDLERS",
    "Checkpoint",
    "RollbackConflictError",
    "RollbackReport",
    "RollbackUnsupportedError",
    "UndoHandler",
    "UndoOutcome",
    "digest",
    "file_change",
    "undo_changes",
]


class Checkpoint(BaseModel):
    """A point in a plan's history of changes, returned by ``ctx.checkpoint()``.

    It stays valid for the whole plan: rolling back to it undoes exactly the
    changes recorded after it was taken that are still in the record, whatever
    rollbacks ran in between.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    plan_id: str
    index: int
    """How many changes the plan had ever recorded when the checkpoint was taken.

    Changes a rollback undid still count, so this is a point in the plan's
    history, not a position in ``ctx.changes`` (which a rollback shortens).
    """


class UndoOutcome(BaseModel):
    """What happened to one change during a rollback."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    change: Change
    status: Literal["undone", "conflict", "unsupported", "failed"]
    message: str = ""


class RollbackReport(BaseModel):
    """The outcome of ``ctx.rollback``: one entry per change, newest first."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    checkpoint: Checkpoint
    outcomes: tuple[UndoOutcome, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every change after the checkpoint was undone."""
        return all(outcome.status == "undone" for outcome in self.outcomes)

    @property
    def undone(self) -> tuple[Change, ...]:
        """The changes that were undone."""
        return tuple(o.change for o in self.outcomes if o.status == "undone")

    @property
    def not_undone(self) -> tuple[UndoOutcome, ...]:
        """The outcomes of changes that could not be undone, with the reason."""
        return tuple(o for o in self.outcomes if o.status != "undone")


DEFAULT_UNDO_HANDLERS: Mapping[str, UndoHandler] = file_handlers(())
"""The kinds the built-in workspace tools record, with their undo handlers.

Called on their own these know no workspace and refuse every change;
`undo_changes` (and so ``ctx.rollback``) binds them to the plan's workspaces.
"""


def undo_changes(
    changes: Iterable[Change],
    handlers: Mapping[str, UndoHandler] | None = None,
    *,
    resources: Iterable[BoundResource] = (),
) -> tuple[UndoOutcome, ...]:
    """Undo ``changes`` newest first; never raises for a change that cannot be undone.

    Args:
        changes: the changes to undo, oldest first.
        handlers: undo handlers by kind, in addition to (or replacing) the
            built-in file handlers.
        resources: the resources the plan binds; the built-in file handlers act
            only in its workspaces and refuse a change of any other.

    Raises:
        TypeError: a handler is a coroutine function; a rollback runs
            synchronously and could not await it.
    """
    table = _handler_table(handlers, resources)
    return tuple(_undo_one(change, table) for change in reversed(list(changes)))


def _handler_table(
    handlers: Mapping[str, UndoHandler] | None, resources: Iterable[BoundResource]
) -> dict[str, UndoHandler]:
    """The built-in file handlers for ``resources``, then ``handlers``, checked before use."""
    table = file_handlers(resources)
    for kind, handler in (handlers or {}).items():
        if inspect.iscoroutinefunction(handler):
            # Called, it would only make a coroutine: the change would be reported
            # undone without anything having run.
            raise TypeError(
                f"the undo handler for {kind!r} is a coroutine function; undo handlers "
                "are called synchronously, so pass a plain function (it may run the "
                "coroutine itself, with asyncio.run or on a loop of its own)"
            )
        table[kind] = handler
    return table


def _undo_one(change: Change, table: Mapping[str, UndoHandler]) -> UndoOutcome:
    """Undo one change with the handler for its kind; every problem becomes the outcome."""
    handler = cast("Callable[[Change], object] | None", table.get(change.kind))
    if handler is None:
        message = f"no undo handler for changes of kind {change.kind!r}"
        return UndoOutcome(change=change, status="unsupported", message=message)
    try:
        returned = handler(change)
    except RollbackUnsupportedError as exc:
        return UndoOutcome(change=change, status="unsupported", message=str(exc))
    except RollbackConflictError as exc:
        return UndoOutcome(change=change, status="conflict", message=str(exc))
    except ConfinementError as exc:
        return UndoOutcome(change=change, status="failed", message=f"refused, not undone: {exc}")
    except Exception as exc:
        return UndoOutcome(change=change, status="failed", message=f"{type(exc).__name__}: {exc}")
    if inspect.isawaitable(returned):
        close = getattr(returned, "close", None)
        if callable(close):  # a coroutine: closed, so it never warns it was not awaited
            close()
        message = (
            f"the undo handler returned an awaitable ({type(returned).__name__}), which a "
            "rollback cannot await: nothing was undone"
        )
        return UndoOutcome(change=change, status="failed", message=message)
    return UndoOutcome(change=change, status="undone")


def _roll_back(
    plan_id: str,
    history: ChangeHistory,
    to: Checkpoint | None,
    handlers: Mapping[str, UndoHandler] | None,
    resources: Iterable[BoundResource],
    call_changes: list[Change] | None = None,
) -> RollbackReport:
    """Undo the changes in ``history`` recorded after ``to``; what ``ctx.rollback`` does.

    A checkpoint keeps the number the plan's next change would get; the changes
    undone are those still recorded with a number from the checkpoint's on.
    Undone changes leave the record; the others, and changes recorded meanwhile,
    keep their numbers, so every checkpoint of the plan keeps its meaning.
    Undone changes also leave ``call_changes``, the changes of the plan's call
    that runs the rollback (if any), so that call's result does not list them.

    Raises:
        TypeError: ``to`` is not a `Checkpoint`, or a handler is a coroutine function.
        ValueError: ``to`` belongs to another plan or lies beyond the record.
        RuntimeError: an undo handler of this plan's rollback rolls it back again.
    """
    if to is not None and not isinstance(to, Checkpoint):
        raise TypeError(
            f"rollback takes a Checkpoint from ctx.checkpoint(), or None for every change; "
            f"got {to!r} (read a stored one back with Checkpoint.model_validate)"
        )
    marker = to if to is not None else Checkpoint(plan_id=plan_id, index=0)
    if marker.plan_id != plan_id:
        raise ValueError(f"checkpoint of plan {marker.plan_id!r} cannot roll back plan {plan_id!r}")
    table = _handler_table(handlers, resources)
    outcomes: list[UndoOutcome] = []
    with history.undoing:
        if history.rolling_back:
            raise RuntimeError(
                f"an undo handler cannot roll back plan {plan_id!r}, which it is rolling back"
            )
        numbers, later = history.since(marker.index)
        # The handlers run unlocked: one may record a compensating change, read
        # the changes, or run a tool of the plan.
        history.rolling_back = True
        try:
            for change in reversed(later):
                outcomes.append(_undo_one(change, table))  # noqa: PERF401  # kept if interrupted
        finally:
            history.rolling_back = False
            # Newest first, like the outcomes: an interrupted rollback (Ctrl-C in a
            # handler) still forgets what it undid, so nothing is undone twice.
            undone = zip(reversed(numbers), outcomes, strict=False)
            history.forget((n for n, o in undone if o.status == "undone"), call_changes)
    return RollbackReport(checkpoint=marker, outcomes=tuple(outcomes))
