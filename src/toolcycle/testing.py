"""A test kit for tools and for code that drives the runtime; no mocks needed.

- `FakeTool` is a tool whose every stage is recorded and whose behaviour
  (output, failures, hangs) is set by arguments.
- `capture_traces` collects the traces a runtime emits inside a ``with`` block.
- `make_context` builds a plan context with readable defaults.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcycle import (
    BoundResource,
    CancellationToken,
    Change,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["FakeTool", "StageCall", "capture_traces", "make_context"]

_OPEN_OBJECT: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True, slots=True)
class StageCall:
    """One recorded stage: which, for which plan, with which parameters."""

    stage: str
    plan_id: str | None
    params: dict[str, Any] | None = None


@dataclass(eq=False)
class FakeTool:
    """A sync tool that records every stage and behaves as configured.

    Args:
        name: the tool's name.
        writes: capability flag.
        checkpointable: capability flag.
        input_schema: defaults to any object.
        output_schema: defaults to none.
        output: what ``execute`` returns; a callable is called with
            ``(params, ctx)`` and its result returned.
        execute_error: raised by ``execute`` when set.
        activate_error: raised by ``activate`` when set.
        deactivate_error: raised by ``deactivate`` when set.
        changes: recorded into the context on every ``execute``.
    """

    name: str = "fake"
    writes: bool = False
    checkpointable: bool = True
    input_schema: dict[str, Any] = field(default_factory=lambda: dict(_OPEN_OBJECT))
    output_schema: dict[str, Any] | None = None
    output: Any = None
    execute_error: BaseException | None = None
    activate_error: BaseException | None = None
    deactivate_error: BaseException | None = None
    changes: tuple[Change, ...] = ()
    calls: list[StageCall] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _record(self, stage: str, ctx: ToolExecutionContext | None, params: Any = None) -> None:
        with self._lock:
            self.calls.append(StageCall(stage, ctx.plan_id if ctx else None, params))

    def stages(self, plan_id: str | None = None) -> list[str]:
        """The recorded stage names, optionally for one plan only."""
        with self._lock:
            return [c.stage for c in self.calls if plan_id is None or c.plan_id == plan_id]

    def count(self, stage: str, plan_id: str | None = None) -> int:
        """How often ``stage`` ran (for one plan, when given)."""
        return self.stages(plan_id).count(stage)

    def discover(self) -> ToolDescriptor:
        """Describe the fake from its configuration."""
        self._record("discover", None)
        return ToolDescriptor(
            name=self.name,
            description=f"fake tool {self.name}",
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            capability=ToolCapability(writes=self.writes, checkpointable=self.checkpointable),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Record the activation; raise ``activate_error`` if set."""
        self._record("activate", ctx)
        if self.activate_error is not None:
            raise self.activate_error

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Record the call; raise ``execute_error`` or return ``output``."""
        self._record("execute", ctx, params)
        for change in self.changes:
            ctx.record_change(change)
        if self.execute_error is not None:
            raise self.execute_error
        if callable(self.output):
            return self.output(params, ctx)
        return self.output

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Record the deactivation; raise ``deactivate_error`` if set."""
        self._record("deactivate", ctx)
        if self.deactivate_error is not None:
            raise self.deactivate_error


@contextmanager
def capture_traces(runtime: ToolRuntime) -> Iterator[list[ToolExecutionTrace]]:
    """Collect every trace ``runtime`` emits while the block runs."""
    traces: list[ToolExecutionTrace] = []
    lock = threading.Lock()

    def listener(trace: ToolExecutionTrace) -> None:
        with lock:
            traces.append(trace)

    remove: Callable[[], None] = runtime.add_trace_listener(listener)
    try:
        yield traces
    finally:
        remove()


def make_context(
    plan_id: str = "plan-test",
    *,
    read_only: bool = False,
    requires_checkpoint: bool = False,
    resources: tuple[BoundResource, ...] = (),
    token: CancellationToken | None = None,
) -> ToolExecutionContext:
    """Build a plan context for a test."""
    return ToolExecutionContext(
        plan_id,
        read_only=read_only,
        requires_checkpoint=requires_checkpoint,
        resources=resources,
        cancellation_token=token or CancellationToken(),
    )
