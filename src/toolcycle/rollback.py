"""Undoing recorded changes: checkpoints, undo handlers and rollback reports.

A plan's context records every `Change` its tools make. A checkpoint is a
position in that record; rolling back to it undoes the later changes, newest
first, each through the undo handler registered for its ``kind``. The file
handlers here restore a workspace byte for byte from what the built-in tools
record: the previous bytes (or the fact that there were none) and a digest of
what the tool left behind.

Before undoing a change, a handler checks that the target is still as the tool
left it. If someone changed it since, the change is reported as a conflict and
left alone: a rollback never overwrites work it did not make.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from toolcycle.models import Change

__all__ = [
    "DEFAULT_UNDO_HANDLERS",
    "Checkpoint",
    "RollbackConflictError",
    "RollbackReport",
    "UndoHandler",
    "UndoOutcome",
    "digest",
    "file_change",
    "undo_changes",
]

UndoHandler = Callable[[Change], None]
"""Undoes one change; raises `RollbackConflictError` if the target changed since."""


class RollbackConflictError(Exception):
    """The target of a change was modified after the change; it is left as it is."""


class Checkpoint(BaseModel):
    """A position in a plan's record of changes, returned by ``ctx.checkpoint()``."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    plan_id: str
    index: int
    """How many changes the plan had recorded when the checkpoint was taken."""


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


def digest(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex, as file changes record it."""
    return hashlib.sha256(data).hexdigest()


def file_change(
    kind: Literal["file.write", "file.delete", "dir.create"],
    path: Path,
    *,
    before: bytes | None,
    after: bytes | None,
    tool_name: str | None,
    target: str,
    recorded_at: str | None = None,
) -> Change:
    """Build the change a file tool records: enough to undo it and to detect conflicts."""
    return Change(
        kind=kind,
        target=target,
        tool_name=tool_name,
        recorded_at=recorded_at,
        description=f"{kind} {target}",
        data={
            "path": str(path),
            "before": None if before is None else base64.b64encode(before).decode("ascii"),
            "after_sha256": None if after is None else digest(after),
        },
    )


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _check_unchanged(change: Change, path: Path) -> None:
    expected = change.data.get("after_sha256")
    current = _current(path)
    if expected is None:
        if current is not None:
            raise RollbackConflictError(f"{change.target} was created again after the change")
        return
    if current is None:
        raise RollbackConflictError(f"{change.target} was deleted after the change")
    if digest(current) != expected:
        raise RollbackConflictError(f"{change.target} was modified after the change")


def _restore(change: Change) -> None:
    path = Path(change.data["path"])
    _check_unchanged(change, path)
    before = change.data.get("before")
    if before is None:
        if path.exists():
            path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.toolcycle-rollback")
    tmp.write_bytes(base64.b64decode(before))
    os.replace(tmp, path)


def _remove_dir(change: Change) -> None:
    path = Path(change.data["path"])
    if not path.exists():
        return
    try:
        path.rmdir()
    except OSError as exc:
        raise RollbackConflictError(f"{change.target} is no longer empty") from exc


DEFAULT_UNDO_HANDLERS: Mapping[str, UndoHandler] = {
    "file.write": _restore,
    "file.delete": _restore,
    "dir.create": _remove_dir,
}
"""Undo handlers for the changes the built-in workspace tools record."""


def undo_changes(
    changes: Iterable[Change], handlers: Mapping[str, UndoHandler] | None = None
) -> tuple[UndoOutcome, ...]:
    """Undo ``changes`` newest first; never raises for a change that cannot be undone."""
    table: dict[str, UndoHandler] = dict(DEFAULT_UNDO_HANDLERS)
    table.update(handlers or {})
    outcomes: list[UndoOutcome] = []
    for change in reversed(list(changes)):
        handler = table.get(change.kind)
        if handler is None:
            outcomes.append(
                UndoOutcome(
                    change=change,
                    status="unsupported",
                    message=f"no undo handler for changes of kind {change.kind!r}",
                )
            )
            continue
        try:
            handler(change)
        except RollbackConflictError as exc:
            outcomes.append(UndoOutcome(change=change, status="conflict", message=str(exc)))
        except Exception as exc:
            outcomes.append(
                UndoOutcome(change=change, status="failed", message=f"{type(exc).__name__}: {exc}")
            )
        else:
            outcomes.append(UndoOutcome(change=change, status="undone"))
    return tuple(outcomes)
