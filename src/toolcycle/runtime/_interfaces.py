"""The parts' interfaces: what one part of the runtime sees of another.

The parts never import one another. Where one needs another (the pipeline asks
the approvals part; the dispatcher runs calls through the pipeline; everyone
looks tools up in the registry), it receives it in its constructor, typed by one
of the protocols below, so each part can be read and tested on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import (
        ApprovalRecord,
        ProgressEvent,
        ToolCall,
        ToolDescriptor,
        ToolResult,
    )
    from toolcycle.runtime._shared import Call, Entry

__all__ = ["ApprovalStep", "Catalog", "Runner"]


class Catalog(Protocol):
    """The registered tools, as the other parts read them (the registry provides it)."""

    @property
    def entries(self) -> Mapping[str, Entry]:
        """Every registered tool by name; a lookup needs no lock.

        Always the same mapping, changed in place, so a part may keep it.
        """
        ...

    def names(self) -> list[str]:
        """The registered names, listed under the registry's lock."""
        ...

    def entry(self, name: str) -> Entry:
        """The tool's entry; raises `ToolNotFoundError` if there is none."""
        ...

    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        """Every registered tool's descriptor, in order of registration."""
        ...

    @property
    def generation(self) -> int:
        """Changes whenever a tool is registered or unregistered (for caches of the list)."""
        ...


class ApprovalStep(Protocol):
    """The pipeline's approval step (the approvals part provides it)."""

    def needed(self, call: Call, entry: Entry) -> bool:
        """Whether someone must approve this call before it runs (asked once per call)."""
        ...

    def ask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        """Ask from sync code; None means run the call, a result means answer with it."""
        ...

    async def aask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        """Ask from async code; as `ask`."""
        ...


class Runner(Protocol):
    """Runs one call through the pipeline (the pipeline provides it)."""

    def execute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
    ) -> ToolResult:
        """Run the call; with ``refuse``, a refusal comes back as a failed result.

        A result that answers ``answers`` may carry it already (see `Dispatcher`).
        """
        ...

    async def aexecute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
        progress: Callable[[ProgressEvent], object] | None = None,
    ) -> ToolResult:
        """Async twin of `execute`; ``progress`` hears the call's progress reports."""
        ...
