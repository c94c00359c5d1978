"""The workspace a plan binds, and paths that cannot leave it.

Every built-in tool resolves its paths here. A path is taken relative to the
workspace root (an absolute path must already lie inside it), resolved with
symlinks followed, and refused unless the result is the root or below it. So
``..``, absolute paths elsewhere and symlinks that point outside all fail the
same way, before any file is opened.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from toolcycle import (
    BoundResource,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
)

__all__ = [
    "NotTextError",
    "PathOutsideWorkspaceError",
    "WorkspaceError",
    "WorkspaceReadOnlyError",
    "WorkspaceTool",
    "now_iso",
]

WORKSPACE_PARAM = {
    "type": "string",
    "description": "Which bound workspace to use, when the plan binds several.",
}


class WorkspaceError(Exception):
    """A built-in tool cannot do what was asked in the workspace."""


class PathOutsideWorkspaceError(WorkspaceError):
    """A path resolves outside the workspace (through ``..``, an absolute path or a symlink)."""


class WorkspaceReadOnlyError(WorkspaceError):
    """The plan bound the workspace read-only, and the tool would change it."""


class NotTextError(WorkspaceError):
    """The file is binary or not valid UTF-8."""


def now_iso() -> str:
    """The current time in ISO-8601 UTC, as changes record it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class WorkspaceTool:
    """Base of the built-in tools: a fixed descriptor and a workspace lookup."""

    name: str
    description: str
    writes: bool
    properties: ClassVar[dict[str, Any]]
    required: tuple[str, ...] = ()
    output_schema: dict[str, Any] | None = None

    def discover(self) -> ToolDescriptor:
        """Describe the tool; write tools are checkpointable, read tools do not write."""
        return ToolDescriptor(
            name=self.name,
            description=self.description,
            input_schema={
                "type": "object",
                "properties": {**self.properties, "workspace": WORKSPACE_PARAM},
                "required": list(self.required),
                "additionalProperties": False,
            },
            output_schema=self.output_schema,
            capability=ToolCapability(writes=self.writes, checkpointable=True),
            source="builtin",
            tags=frozenset({"workspace", "write" if self.writes else "read"}),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Check, once per plan, that the plan binds a workspace that exists."""
        for resource in ctx.resources:
            if resource.kind == "workspace" and not Path(resource.location).is_dir():
                raise WorkspaceError(
                    f"workspace {resource.name!r} is not a directory: {resource.location!r}"
                )

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to release: the tools hold no state between calls."""

    def workspace(self, params: dict[str, Any], ctx: ToolExecutionContext) -> BoundResource:
        """The workspace this call acts in."""
        try:
            return ctx.resource("workspace", params.get("workspace"))
        except LookupError as exc:
            raise WorkspaceError(
                f"{exc}; bind one with BoundResource(kind='workspace', name=..., location=dir)"
            ) from None

    def resolve(self, workspace: BoundResource, path: str) -> Path:
        """Resolve ``path`` inside the workspace, or raise `PathOutsideWorkspaceError`."""
        root = Path(workspace.location).resolve()
        candidate = Path(path)
        target = (candidate if candidate.is_absolute() else root / candidate).resolve()
        if target != root and root not in target.parents:
            raise PathOutsideWorkspaceError(
                f"{path!r} is outside the workspace {workspace.name!r}; use a path inside it"
            )
        return target

    def relative(self, workspace: BoundResource, target: Path) -> str:
        """``target`` as a POSIX path relative to the workspace root."""
        rel = target.relative_to(Path(workspace.location).resolve()).as_posix()
        return rel or "."

    def writable(self, workspace: BoundResource) -> None:
        """Refuse to change a workspace the plan bound read-only."""
        if workspace.read_only:
            raise WorkspaceReadOnlyError(
                f"workspace {workspace.name!r} is bound read-only; nothing in it can be changed"
            )
