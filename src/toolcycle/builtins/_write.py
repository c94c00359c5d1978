"""The writing built-ins: write_file, edit_file, delete_file, make_dir.

Each records one `Change` per file with what is needed to undo it (the previous
bytes, or that there were none) and a digest of what it left, so a rollback can
restore the workspace byte for byte and notice later edits by someone else.

``delete_file`` takes a path whose last name is a symbolic link as ``rm`` does: it
removes the link, not what it points to, and records the link's text to make it again.

Previous bytes are kept up to ``max_undo_bytes`` (64 MiB by default); a file's size
is taken from ``stat``, so a larger one is never read. Past the cap, a plan that
requires checkpoints is refused before the file is touched (its change could not
be undone); any other plan goes ahead and records the change as one that rollback
reports ``unsupported``.
"""

from __future__ import annotations

import stat
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from toolcycle._file_undo import link_change
from toolcycle._nofollow import Parts, shown
from toolcycle.builtins._read import read_text
from toolcycle.builtins._workspace import WorkspaceError, WorkspaceTool, now_iso
from toolcycle.errors import shown_value
from toolcycle.rollback import file_change

if TYPE_CHECKING:
    from collections.abc import Iterator

    from toolcycle import BoundResource, ToolExecutionContext
    from toolcycle._confined import ConfinedRoot

__all__ = ["DEFAULT_MAX_UNDO_BYTES", "DeleteFile", "EditFile", "MakeDir", "WriteFile"]

DEFAULT_MAX_UNDO_BYTES = 64 * 1024 * 1024
"""The most previous bytes a write tool keeps to undo one change, unless told otherwise."""


def _undo_cap(max_undo_bytes: int) -> int:
    """``max_undo_bytes`` checked: a whole number of bytes, 0 or more.

    Raises:
        ValueError: it is not.
    """
    value = max_undo_bytes
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"max_undo_bytes must be a whole number of bytes (0 or more), got {shown_value(value)}; "
            f"for example {DEFAULT_MAX_UNDO_BYTES} (64 MiB)"
        )
    return value


class _Writer(WorkspaceTool):
    writes = True

    @contextmanager
    def _target(
        self, params: dict[str, Any], ctx: ToolExecutionContext, *, follow_last: bool = True
    ) -> Iterator[tuple[BoundResource, ConfinedRoot, Parts]]:
        """The writable workspace, its opened root and the target's parts, for one call.

        With ``follow_last`` false, a link that is the path's last name is the target.
        """
        workspace = self.workspace(params, ctx)
        self.writable(workspace)
        with self._opened(workspace) as root:
            target = root.resolve(params["path"], follow_last=follow_last)
            if not target:
                raise WorkspaceError("the workspace root itself cannot be written")
            # From reading the previous bytes to recording the change, no other call
            # of this process writes the file: no edit is lost, the records chain.
            with root.exclusive(target, ctx.call_token.check):
                yield workspace, root, target

    def _record(
        self,
        ctx: ToolExecutionContext,
        kind: Literal["file.write", "file.delete", "dir.create"],
        workspace: BoundResource,
        target: Parts,
        before: bytes | None,
        after: bytes | None,
        mode: int | None = None,
        not_kept: int | None = None,
    ) -> None:
        ctx.record_change(
            file_change(
                kind,
                before=before,
                after=after,
                tool_name=self.name,
                target=shown(target),
                recorded_at=now_iso(),
                workspace=workspace.name,
                mode=mode,
                before_not_kept=not_kept,
            )
        )

    def _make_dirs(
        self, ctx: ToolExecutionContext, workspace: BoundResource, root: ConfinedRoot, dirs: Parts
    ) -> None:
        """Create the missing folders of ``dirs``, recording each as soon as it exists."""
        for made in root.make_dirs(dirs):
            self._record(ctx, "dir.create", workspace, made, None, None)


class _Undoable(_Writer):
    """A write tool that keeps a file's previous bytes, up to ``max_undo_bytes``, to undo.

    Args:
        max_undo_bytes: the largest previous content kept for one change (64 MiB by
            default). Past it, a plan that requires checkpoints is refused and any
            other records a change that rollback reports ``unsupported``.

    Raises:
        ValueError: ``max_undo_bytes`` is not a whole number of bytes (0 or more).
    """

    def __init__(self, *, max_undo_bytes: int = DEFAULT_MAX_UNDO_BYTES) -> None:
        self.max_undo_bytes = _undo_cap(max_undo_bytes)

    def _previous(
        self, ctx: ToolExecutionContext, root: ConfinedRoot, target: Parts, size: int
    ) -> tuple[bytes | None, int | None]:
        """The existing file's bytes to keep, or None and its size when they are over the cap.

        ``size`` is the file's size from ``stat``: a file over the cap is never read,
        and one that grew past it since is read no further than the cap.
        """
        cap = self.max_undo_bytes
        if size <= cap:
            before, size = root.read_capped(target, cap)
            if before is not None:
                return before, None
        else:
            root.file_info(target)  # checked as a read checks it (regular, one link), not read
        return None, self._not_kept(ctx, target, size)

    def _not_kept(self, ctx: ToolExecutionContext, target: Parts, size: int) -> int:
        """``size``, once the plan allows a change it cannot undo.

        Raises:
            WorkspaceError: the plan requires checkpoints.
        """
        if ctx.requires_checkpoint:
            raise WorkspaceError(
                f"{shown(target)} is {size} bytes, more than the {self.max_undo_bytes} "
                "bytes kept to undo a change (max_undo_bytes), and this plan requires "
                "checkpoints, so it is left as it is; raise max_undo_bytes, or change "
                "the file in a plan that does not require checkpoints"
            )
        return size


class WriteFile(_Undoable):
    """Create or overwrite a text file."""

    name = "write_file"
    description = "Create or overwrite a UTF-8 text file in the workspace."
    properties: ClassVar[dict[str, Any]] = {
        "path": {"type": "string", "description": "File path inside the workspace."},
        "content": {"type": "string", "description": "The complete new text of the file."},
    }
    required = ("path", "content")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Write the file, creating missing folders, and record how to undo it."""
        with self._target(params, ctx) as (workspace, root, target):
            info = root.lstat(target)
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f"{shown(target)} is a directory")
            before, not_kept = (
                (None, None) if info is None else self._previous(ctx, root, target, info.st_size)
            )
            data = params["content"].encode("utf-8")
            self._make_dirs(ctx, workspace, root, target[:-1])
            root.write_atomic(target, data)
            self._record(ctx, "file.write", workspace, target, before, data, not_kept=not_kept)
        return {"path": shown(target), "bytes": len(data), "created": info is None}


class EditFile(_Undoable):
    """Replace one exact, unique occurrence of a string in a text file."""

    name = "edit_file"
    description = "Replace one exact occurrence of a string in a workspace text file."
    properties: ClassVar[dict[str, Any]] = {
        "path": {"type": "string"},
        "old": {
            "type": "string",
            "minLength": 1,
            "description": "Text to replace; must be unique.",
        },
        "new": {"type": "string", "description": "Replacement text."},
    }
    required = ("path", "old", "new")

    def __init__(
        self, *, max_bytes: int = 1_000_000, max_undo_bytes: int = DEFAULT_MAX_UNDO_BYTES
    ) -> None:
        super().__init__(max_undo_bytes=max_undo_bytes)
        self.max_bytes = max_bytes

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Edit the file if ``old`` occurs exactly once; record how to undo it."""
        with self._target(params, ctx) as (workspace, root, target):
            text = read_text(root, target, self.max_bytes)
            count = text.count(params["old"])
            if count != 1:
                where = "does not occur" if count == 0 else f"occurs {count} times"
                raise WorkspaceError(
                    f"the text to replace {where} in {shown(target)}; give a unique, exact excerpt"
                )
            previous = text.encode("utf-8")
            before: bytes | None = previous
            not_kept = None
            if len(previous) > self.max_undo_bytes:  # read to be edited (within max_bytes)
                before, not_kept = None, self._not_kept(ctx, target, len(previous))
            after = text.replace(params["old"], params["new"], 1).encode("utf-8")
            root.write_atomic(target, after)
            self._record(ctx, "file.write", workspace, target, before, after, not_kept=not_kept)
        return {"path": shown(target), "bytes": len(after)}


class DeleteFile(_Undoable):
    """Delete a file, or a symbolic link itself (never what it points to)."""

    name = "delete_file"
    description = "Delete a file in the workspace."
    properties: ClassVar[dict[str, Any]] = {"path": {"type": "string"}}
    required = ("path",)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Delete the file (or link) and record what is needed to restore it."""
        with self._target(params, ctx, follow_last=False) as (workspace, root, target):
            info = root.lstat(target)
            if info is not None and stat.S_ISLNK(info.st_mode):
                # Only a name in the workspace goes, wherever the link points.
                text = root.readlink(target)
                root.unlink(target)
                change = link_change(
                    text,
                    tool_name=self.name,
                    target=shown(target),
                    recorded_at=now_iso(),
                    workspace=workspace.name,
                )
                ctx.record_change(change)
                return {"path": shown(target), "deleted": True}
            if info is None or not stat.S_ISREG(info.st_mode):
                raise FileNotFoundError(f"{shown(target)} is not an existing file")
            before, not_kept = self._previous(ctx, root, target, info.st_size)
            root.unlink(target)
            self._record(
                ctx, "file.delete", workspace, target, before, None, info.st_mode, not_kept
            )
        return {"path": shown(target), "deleted": True}


class MakeDir(_Writer):
    """Create a directory and any missing parents."""

    name = "make_dir"
    description = "Create a directory (and missing parents) in the workspace."
    properties: ClassVar[dict[str, Any]] = {"path": {"type": "string"}}
    required = ("path",)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Create the directories that are missing and record each one."""
        with self._target(params, ctx) as (workspace, root, target):
            info = root.lstat(target)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f"{shown(target)} exists and is not a directory")
            self._make_dirs(ctx, workspace, root, target)
        return {"path": shown(target), "created": info is None}
