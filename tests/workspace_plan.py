"""A runtime with the built-in tools and one plan bound to a workspace, for the workspace tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolcycle import BoundResource, ToolRuntime
from toolcycle.builtins import workspace_tools


class WorkspacePlan:
    """The built-ins registered on a fresh runtime, and a plan binding ``root`` as ``ws``.

    Calling it runs a tool in the plan: ``plan("read_file", path="a.txt")``.
    """

    def __init__(
        self, root: Path, *, checkpoint: bool = True, max_undo_bytes: int | None = None
    ) -> None:
        self.root = root
        self.resource = BoundResource(kind="workspace", name="ws", location=str(root))
        self.runtime = ToolRuntime()
        options = {} if max_undo_bytes is None else {"max_undo_bytes": max_undo_bytes}
        self.runtime.register_source(workspace_tools(**options))
        self.ctx = self.runtime.new_context(
            resources=[self.resource], requires_checkpoint=checkpoint
        )

    def __call__(self, name: str, **params: Any) -> Any:
        return self.runtime.execute(name, params, self.ctx)
