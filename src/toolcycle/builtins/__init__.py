"""Built-in workspace tools (source ``builtin``): read, list, search, write, edit, delete.

They act only inside the directory that a plan binds as a `BoundResource` of kind
``workspace``. Read tools declare ``writes=False``; write tools declare
``writes=True, checkpointable=True`` and record a `Change` per file that
``ctx.rollback`` can undo byte for byte, keeping a file's previous bytes up to
``max_undo_bytes`` (64 MiB by default; see `WriteFile`).

    from toolcycle.builtins import workspace_tools

    runtime.register_source(workspace_tools())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcycle.builtins._read import ListDir, ReadFile, SearchText
from toolcycle.builtins._workspace import (
    NotTextError,
    PathOutsideWorkspaceError,
    WorkspaceError,
    WorkspaceReadOnlyError,
    WorkspaceTool,
)
from toolcycle.builtins._write import (
    DEFAULT_MAX_UNDO_BYTES,
    DeleteFile,
    EditFile,
    MakeDir,
    WriteFile,
)

if TYPE_CHECKING:
    from toolcycle import ToolInstance

__all__ = [
    "DeleteFile",
    "EditFile",
    "ListDir",
    "MakeDir",
    "NotTextError",
    "PathOutsideWorkspaceError",
    "ReadFile",
    "SearchText",
    "WorkspaceError",
    "WorkspaceReadOnlyError",
    "WorkspaceTool",
    "WorkspaceTools",
    "WriteFile",
    "workspace_tools",
]


class WorkspaceTools:
    """The seven built-ins as one tool source, with shared size caps.

    Args:
        max_bytes: the largest file the tools read (read, search, edit).
        max_entries: the most entries ``list_dir`` returns.
        max_undo_bytes: the largest previous content a write tool keeps to undo a
            change (64 MiB by default). A larger file is never read: a plan that
            requires checkpoints refuses to change it, any other records a change
            that rollback reports ``unsupported``.

    Raises:
        ValueError: ``max_undo_bytes`` is not a whole number of bytes (0 or more).
    """

    def __init__(
        self,
        *,
        max_bytes: int = 1_000_000,
        max_entries: int = 1000,
        max_undo_bytes: int = DEFAULT_MAX_UNDO_BYTES,
    ) -> None:
        self._tools: tuple[ToolInstance, ...] = (
            ReadFile(max_bytes=max_bytes),
            ListDir(max_entries=max_entries),
            SearchText(max_bytes=max_bytes),
            WriteFile(max_undo_bytes=max_undo_bytes),
            EditFile(max_bytes=max_bytes, max_undo_bytes=max_undo_bytes),
            DeleteFile(max_undo_bytes=max_undo_bytes),
            MakeDir(),
        )

    def tools(self) -> tuple[ToolInstance, ...]:
        """The tools, read tools first."""
        return self._tools


def workspace_tools(
    *,
    max_bytes: int = 1_000_000,
    max_entries: int = 1000,
    max_undo_bytes: int = DEFAULT_MAX_UNDO_BYTES,
) -> WorkspaceTools:
    """The built-in workspace tools as a source for ``runtime.register_source``.

    The options are `WorkspaceTools`'.
    """
    return WorkspaceTools(
        max_bytes=max_bytes, max_entries=max_entries, max_undo_bytes=max_undo_bytes
    )
