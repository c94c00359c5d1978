"""The writing built-ins: write_file, edit_file, delete_file, make_dir.

Each records one `Change` per file with what is needed to undo it (the previous
bytes, or that there were none) and a digest of what it left, so a rollback can
restore the workspace byte for byte and notice later edits by someone else.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

from toolcycle.builtins._read import read_text
from toolcycle.builtins._workspace import WorkspaceError, WorkspaceTool, now_iso
from toolcycle.rollback import file_change

if TYPE_CHECKING:
    from pathlib import Path

    from toolcycle import BoundResource, ToolExecutionContext

__all__ = ["DeleteFile", "EditFile", "MakeDir", "WriteFile"]


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.toolcycle-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class _Writer(WorkspaceTool):
    writes = True

    def _target(
        self, params: dict[str, Any], ctx: ToolExecutionContext
    ) -> tuple[BoundResource, Path]:
        workspace = self.workspace(params, ctx)
        self.writable(workspace)
        target = self.resolve(workspace, params["path"])
        if target == self.resolve(workspace, "."):
            raise WorkspaceError("the workspace root itself cannot be written")
        return workspace, target

    def _record(
        self,
        ctx: ToolExecutionContext,
        kind: Any,
        workspace: BoundResource,
        target: Path,
        before: bytes | None,
        after: bytes | None,
    ) -> None:
        ctx.record_change(
            file_change(
                kind,
                target,
                before=before,
                after=after,
                tool_name=self.name,
                target=self.relative(workspace, target),
                recorded_at=now_iso(),
            )
        )

    def _make_parents(
        self, ctx: ToolExecutionContext, workspace: BoundResource, target: Path
    ) -> None:
        missing = []
        parent = target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir()
            self._record(ctx, "dir.create", workspace, directory, None, None)


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
        workspace, target = self._target(params, ctx)
        if target.is_dir():
            raise WorkspaceError(f"{params['path']} is a directory")
        before = target.read_bytes() if target.exists() else None
        data = params["content"].encode("utf-8")
        self._make_parents(ctx, workspace, target)
        _atomic_write(target, data)
        self._record(ctx, "file.write", workspace, target, before, data)
        return {
            "path": self.relative(workspace, target),
            "bytes": len(data),
            "created": before is None,
        }


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
        workspace, target = self._target(params, ctx)
        text = read_text(target, params["path"], self.max_bytes)
        count = text.count(params["old"])
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise WorkspaceError(
                f"the text to replace {where} in {params['path']}; give a unique, exact excerpt"
            )
        before = text.encode("utf-8")
        after = text.replace(params["old"], params["new"], 1).encode("utf-8")
        _atomic_write(target, after)
        self._record(ctx, "file.write", workspace, target, before, after)
        return {"path": self.relative(workspace, target), "bytes": len(after)}


class DeleteFile(_Writer):
    """Delete a file."""

    name = "delete_file"
    description = "Delete a file in the workspace."
    properties: ClassVar[dict[str, Any]] = {"path": {"type": "string"}}
    required = ("path",)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Delete the file and record its bytes so that it can be restored."""
        workspace, target = self._target(params, ctx)
        if not target.is_file():
            raise FileNotFoundError(f"{params['path']} is not an existing file")
        before = target.read_bytes()
        target.unlink()
        self._record(ctx, "file.delete", workspace, target, before, None)
        return {"path": self.relative(workspace, target), "deleted": True}


class MakeDir(_Writer):
    """Create a directory and any missing parents."""

    name = "make_dir"
    description = "Create a directory (and missing parents) in the workspace."
    properties: ClassVar[dict[str, Any]] = {"path": {"type": "string"}}
    required = ("path",)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Create the directories that are missing and record each one."""
        workspace, target = self._target(params, ctx)
        if target.exists() and not target.is_dir():
            raise WorkspaceError(f"{params['path']} exists and is not a directory")
        existed = target.is_dir()
        if not existed:
            self._make_parents(ctx, workspace, target)
            target.mkdir()
            self._record(ctx, "dir.create", workspace, target, None, None)
        return {"path": self.relative(workspace, target), "created": not existed}
