"""The changes the built-in file tools record, and the handlers that undo them.

`file_change` builds the `Change` a write, delete or folder creation records: the
previous bytes (or the fact that there were none, or only their size when they were
too large to keep), a digest of what the tool left and the workspace it was made in.
`link_change` builds the one a removed symbolic link records: the link's text.
`file_handlers` undoes such changes, confined to the workspaces a plan binds: each
finds its file again from the workspace and the relative target, walking it without
following any link (``toolcycle._confined``), and leaves alone, as a conflict, a file
someone changed since. ``toolcycle.rollback`` makes `digest` and `file_change` public
and uses these handlers by default.
"""

import base64
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from toolcycle._confined import ConfinedRoot
from toolcycle._nofollow import ConfinementError, Parts, shown
from toolcycle._undo_handler import RollbackConflictError, RollbackUnsupportedError, UndoHandler
from toolcycle.models import BoundResource, Change

__all__ = ["digest", "file_change", "file_handlers", "link_change"]


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


def link_change(
    link: str, *, tool_name: str, target: str, recorded_at: str, workspace: str
) -> Change:
    """Build the change that removing the symbolic link at ``target`` records.

    Args:
        link: the link's text, what it pointed to as written; undoing the change
            makes the link again with this text.
        tool_name: the tool that removed it.
        target: the link's path relative to the workspace root, with ``/`` separators.
        recorded_at: when it was removed (ISO-8601 UTC).
        workspace: the name of the bound workspace.
    """
    return Change(
        kind="link.delete",
        target=target,
        tool_name=tool_name,
        recorded_at=recorded_at,
        description=f"link.delete {target}",
        data={"link": link, "workspace": workspace},
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


def _restore_link(change: Change, root: ConfinedRoot, parts: Parts) -> None:
    """Make the removed link again, with its recorded text, where nothing stands now."""
    text = change.data.get("link")
    if not isinstance(text, str) or not text or "\0" in text:
        raise ConfinementError(f"the change records no link text to restore {change.target}")
    if root.lstat(parts) is not None:
        raise RollbackConflictError(f"{change.target} was created again after the change")
    for _ in root.make_dirs(parts[:-1]):
        pass  # a folder removed since is made again, inside the workspace only
    # Only the name is made: whatever the text points to, nothing is written through it.
    root.symlink(text, parts)


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


def file_handlers(resources: Iterable[BoundResource]) -> dict[str, UndoHandler]:
    """The built-in file handlers, confined to the workspaces among ``resources``."""
    workspaces = {r.name: r for r in resources if r.kind == "workspace"}
    return {
        "file.write": _confined(_restore, workspaces),
        "file.delete": _confined(_restore, workspaces),
        "dir.create": _confined(_remove_dir, workspaces),
        "link.delete": _confined(_restore_link, workspaces),
    }
