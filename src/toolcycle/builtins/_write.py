"""The writing built-ins: write_file, edit_file, delete_file, make_dir.

Each records one `Change` per file with what is needed to undo it (the previous
bytes, or that there were none) and a digest of what it left, so a rollback can
restore the workspace byte for byte and notice later edits by someone else.
"""

from __future__ import annotations

import stat
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from toolcycle._confined import ConfinedRoot, Parts, shown
from toolcycle.builtins._read import read_text
from toolcycle.builtins._workspace import WorkspaceError, WorkspaceTool, now_iso
from toolcycle.rollback import file_change

if TYPE_CHECKING:
    from collections.abc import Iterator

    from toolcycle import BoundResource, ToolExecutionContext

__all__ = ["DeleteFile", "EditFile", "MakeDir", "WriteFile"]


class _Writer(WorkspaceTool):
    writes = True

    @contextmanager
    def _target(
        self, params: dict[str, Any], ctx: ToolExecutionContext
    ) -> Iterator[tuple[BoundResource, ConfinedRoot, Parts]]:
        """The writable workspace, its opened root and the target's parts, for one call."""
        workspace = self.workspace(params, ctx)
        self.writable(workspace)
        with self._opened(workspace) as root:
            target = root.resolve(params["path"])
            if not target:
                raise WorkspaceError("the workspace root itself cannot be written")
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
            )
        )

    def _make_dirs(
        self, ctx: ToolExecutionContext, workspace: BoundResource, root: ConfinedRoot, dirs: Parts
    ) -> None:
        """Create the missing folders of ``dirs``, recording each as soon as it exists."""
        for made in root.make_dirs(dirs):
            self._record(ctx, "dir.create", workspace, made, None, None)


class WriteFile(_Writer):
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
            before = None if info is None else root.read_bytes(target)
            data = params["content"].encode("utf-8")
            self._make_dirs(ctx, workspace, root, target[:-1])
            root.write_atomic(target, data)
            self._record(ctx, "file.write", workspace, target, before, data)
        return {"path": shown(target), "bytes": len(data), "created": before is None}


class EditFile(_Writer):
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

    def __init__(self, *, max_bytes: int = 1_000_000) -> None:
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
            before = text.encode("utf-8")
            after = text.replace(params["old"], params["new"], 1).encode("utf-8")
            root.write_atomic(target, after)
            self._record(ctx, "file.write", workspace, target, before, after)
        return {"path": shown(target), "bytes": len(after)}


class DeleteFile(_Writer):
    """Delete a file."""

    name = "delete_file"
    description = "Delete a file in the workspace."
    properties: ClassVar[dict[str, Any]] = {"path": {"type": "string"}}
    required = ("path",)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Delete the file and record its bytes so that it can be restored."""
        with self._target(params, ctx) as (workspace, root, target):
            info = root.lstat(target)
            if info is None or not stat.S_ISREG(info.st_mode):
                raise FileNotFoundError(f"{shown(target)} is not an existing file")
            before = root.read_bytes(target)
            root.unlink(target)
            self._record(ctx, "file.delete", workspace, target, before, None, info.st_mode)
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
