"""Undoing recorded changes: checkpoints, undo handlers and rollback reports.

A plan's context records every `Change` its tools make. A checkpoint names a
point in that history (how many changes had been recorded then); rolling back
to it undoes the changes recorded after that point and still in the record,
newest first, each through the undo handler registered for its ``kind``. The file
handlers here restore a workspace byte for byte from what the built-in tools
record: the previous bytes (or the fact that there were none) and a digest of
what the tool left behind.

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

import base64
import hashlib
import inspect
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict

from toolcycle._confined import ConfinedRoot, ConfinementError, Parts, shown
from toolcycle._history import ChangeHistory
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

UndoHandler = Callable[[Change], None]
"""Undoes one change.

Raises `RollbackConflictError` if the target changed since (reported ``conflict``)
and `RollbackUnsupportedError` if the change records no way back (``unsupported``);
any other exception is reported ``failed``.
"""


class RollbackConflictError(Exception):
    """The target of a change was modified after the change; it is left as it is."""


class RollbackUnsupportedError(Exception):
    """The change recorded no way back (for example, previous bytes too large to keep).

    An undo handler raises it to have the change reported ``unsupported`` rather
    than ``failed``: nothing went wrong, there is just nothing to undo with.
    """


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


def digest(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex, as file changes record it."""
    return hashlib.sha256(data).hexdigest()


def file_change(
    kind: Literal["file.write", "file.delete", "dir.create"],
    path: str | os.PathLike[str] | None = None,
    *,
    before: bytes | None,
    after: bytes | None,
    tool_name: str | None,
    target: str,
    recorded_at: str | None = None,
    workspace: str | None = None,
    mode: int | None = None,
    before_not_kept: int | None = None,
) -> Change:
    """Build the change a file tool records: enough to undo it and to detect conflicts.

    Args:
        kind: what happened to the file or folder.
        path: ignored, kept so that older callers still work; a change never
            records an absolute path, since rollback finds the file from
            ``workspace`` and ``target`` alone.
        before: the file's bytes before the change, or None if it did not exist.
        after: the file's bytes after the change, or None if it no longer exists.
        tool_name: the tool that made the change.
        target: the path relative to the workspace root, with ``/`` separators.
        recorded_at: when the change was made (ISO-8601 UTC).
        workspace: the name of the bound workspace; may be left out when the
            plan that rolls back binds only one.
        mode: the permission bits of the file the change removed, which undoing it
            gives back (a private file is not restored readable by all).
        before_not_kept: the size in bytes of previous bytes too large to keep
            (``before`` is then None): the change records that size instead, and a
            rollback reports it ``unsupported`` rather than undoing it.

    Raises:
        ValueError: ``before_not_kept`` is given together with ``before``.
    """
    del path
    data: dict[str, str | int | None]
    if before_not_kept is None:
        data = {
            "before": None if before is None else base64.b64encode(before).decode("ascii"),
            "after_sha256": None if after is None else digest(after),
        }
    elif before is not None:
        raise ValueError(
            "before_not_kept says the previous bytes were not kept; pass before=None with it"
        )
    else:
        # Neither "before" nor "after_sha256" (``after`` is not needed): a handler that
        # does not know this key then finds nothing it may restore or remove.
        data = {"before_not_kept": before_not_kept}
    if workspace is not None:
        data["workspace"] = workspace
    if mode is not None:
        data["mode"] = format(stat.S_IMODE(mode), "o")
    return Change(
        kind=kind,
        target=target,
        tool_name=tool_name,
        recorded_at=recorded_at,
        description=f"{kind} {target}",
        data=data,
    )


def _plain_parts(change: Change) -> Parts:
    """The change's target as parts below the root; anything that could leave is refused."""
    target = change.target
    parts = tuple(target.split("/"))
    if (
        not target
        or target.startswith("/")
        or "\0" in target
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise ConfinementError(f"the target {target!r} is not a plain path inside the workspace")
    return parts


def _workspace_of(change: Change, workspaces: Mapping[str, BoundResource]) -> BoundResource:
    """The bound workspace a file change belongs to, re-derived from the plan, not the change."""
    name = change.data.get("workspace")
    if isinstance(name, str):
        found = workspaces.get(name)
        if found is None:
            raise ConfinementError(
                f"the plan binds no workspace named {name!r}; bind it to undo this change"
            )
    elif len(workspaces) == 1:
        (found,) = workspaces.values()
    else:
        raise ConfinementError(
            f"the change names no workspace and the plan binds {len(workspaces)}; "
            "bind the one it was made in"
        )
    if found.read_only:
        raise ConfinementError(f"workspace {found.name!r} is bound read-only")
    return found


def _current(root: ConfinedRoot, parts: Parts) -> str | None:
    """The digest of the file at ``parts`` now, or None if there is none.

    Hashed as it is read: the file may have grown to any size since the change.
    """
    info = root.lstat(parts)
    if info is None:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise ConfinementError(f"{shown(parts)} is now a symbolic link")
    if not stat.S_ISREG(info.st_mode):  # someone put a folder (or a fifo) in its place
        raise RollbackConflictError(f"{shown(parts)} is no longer a regular file")
    return root.sha256(parts)


def _check_unchanged(change: Change, root: ConfinedRoot, parts: Parts) -> None:
    expected = change.data.get("after_sha256")
    current = _current(root, parts)
    if expected is None:
        if current is not None:
            raise RollbackConflictError(f"{change.target} was created again after the change")
        return
    if current is None:
        raise RollbackConflictError(f"{change.target} was deleted after the change")
    if current != expected:
        raise RollbackConflictError(f"{change.target} was modified after the change")


def _restore(change: Change, root: ConfinedRoot, parts: Parts) -> None:
    _check_unchanged(change, root, parts)
    before = change.data.get("before")
    if before is None:
        root.unlink(parts)  # the check above found the file the change created
        return
    for _ in root.make_dirs(parts[:-1]):
        pass  # a folder removed since is made again, inside the workspace only
    root.write_atomic(parts, base64.b64decode(before), mode=_mode(change))


def _mode(change: Change) -> int | None:
    """The permission bits the change recorded (never set-id or sticky bits); None if none."""
    text = change.data.get("mode")
    try:
        return None if text is None else int(text, 8) & 0o777
    except ValueError:  # not written by file_change: restore with the default mode
        return None


def _remove_dir(change: Change, root: ConfinedRoot, parts: Parts) -> None:
    info = root.lstat(parts)
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        raise ConfinementError(f"{change.target} is now a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise RollbackConflictError(f"{change.target} is no longer a directory")
    try:
        root.rmdir(parts)
    except OSError as exc:
        raise RollbackConflictError(f"{change.target} is no longer empty") from exc


_FileUndo = Callable[[Change, ConfinedRoot, Parts], None]


def _confined(undo: _FileUndo, workspaces: Mapping[str, BoundResource]) -> UndoHandler:
    """A handler that runs ``undo`` inside the change's workspace, opened afresh."""

    def handler(change: Change) -> None:
        size = change.data.get("before_not_kept")
        if size is not None:
            raise RollbackUnsupportedError(
                f"{change.target}: its previous content ({size} bytes) was too large "
                "to keep, so this change cannot be undone"
            )
        parts = _plain_parts(change)
        workspace = _workspace_of(change, workspaces)
        try:
            root = ConfinedRoot(workspace.location)
        except OSError as exc:
            raise ConfinementError(
                f"workspace {workspace.name!r} cannot be opened ({exc.strerror})"
            ) from None
        with root, root.exclusive(parts):
            undo(change, root, parts)

    return handler


def _file_handlers(resources: Iterable[BoundResource]) -> dict[str, UndoHandler]:
    """The built-in file handlers, confined to the workspaces among ``resources``."""
    workspaces = {r.name: r for r in resources if r.kind == "workspace"}
    return {
        "file.write": _confined(_restore, workspaces),
        "file.delete": _confined(_restore, workspaces),
        "dir.create": _confined(_remove_dir, workspaces),
    }


DEFAULT_UNDO_HANDLERS: Mapping[str, UndoHandler] = _file_handlers(())
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
    table = _file_handlers(resources)
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
