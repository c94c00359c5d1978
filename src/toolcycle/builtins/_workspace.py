"""The workspace a plan binds, and paths that cannot leave it.

Every built-in tool opens its files through `WorkspaceTool._opened`: the workspace
root is opened once per call as a directory descriptor and every path is walked
below it one component at a time without following links (``toolcycle._confined``).
A path is taken relative to the root (an absolute path must already lie inside
it); a symbolic link is followed only when what it points to stays inside, and
``..``, absolute paths elsewhere and links that lead outside fail with
`PathOutsideWorkspaceError` before anything is opened. Errors name paths relative
to the workspace, never the host's absolute paths.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from toolcycle import (
    BoundResource,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
)
from toolcycle._confined import ConfinedRoot
from toolcycle._nofollow import ConfinementError, OutsideRootError

if TYPE_CHECKING:
    from collections.abc import Iterator

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
            if resource.kind != "workspace":
                continue
            if not resource.location:  # Path("") is the current folder: not what was meant
                raise WorkspaceError(
                    f"workspace {resource.name!r} has an empty location; bind an existing "
                    "directory by its path"
                )
            if not Path(resource.location).is_dir():
                raise WorkspaceError(
                    f"workspace {resource.name!r} is not a directory; bind an existing one"
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
        """The absolute path ``path`` names inside the workspace, links inside resolved.

        Raises:
            PathOutsideWorkspaceError: ``path`` (or a link on it) leads outside.
        """
        with self._opened(workspace) as root:
            parts = root.resolve(path)
        return Path(workspace.location).resolve().joinpath(*parts)

    def relative(self, workspace: BoundResource, target: Path) -> str:
        """``target`` as a POSIX path relative to the workspace root."""
        rel = target.relative_to(Path(workspace.location).resolve()).as_posix()
        return rel or "."

    @contextmanager
    def _opened(self, workspace: BoundResource) -> Iterator[ConfinedRoot]:
        """The workspace root, opened for one call; confinement errors become ours."""
        try:
            root = ConfinedRoot(workspace.location)
        except OSError as exc:
            raise WorkspaceError(
                f"workspace {workspace.name!r} cannot be opened ({exc.strerror}); "
                "bind an existing directory"
            ) from None
        try:
            with root:
                yield root
        except OutsideRootError as exc:
            via = f" through the symbolic link {exc.link!r}" if exc.link is not None else ""
            raise PathOutsideWorkspaceError(
                f"{exc.path!r} is outside the workspace {workspace.name!r}{via}; "
                "use a path inside it"
            ) from None
        except ConfinementError as exc:
            raise WorkspaceError(str(exc)) from None

    def writable(self, workspace: BoundResource) -> None:
        """Refuse to change a workspace the plan bound read-only."""
        if workspace.read_only:
            raise WorkspaceReadOnlyError(
                f"workspace {workspace.name!r} is bound read-only; nothing in it can be changed"
            )
