"""Hooks an observability backend receives around every call and lifecycle stage.

The runtime knows nothing of any tracing system. When a `ToolRuntime` is built
with ``instrumentation=``, it asks that object for an observer at the start of
each call (and of each ``activate`` and ``deactivate``) and tells the observer
how the call ended. `toolcycle.otel.OpenTelemetry` is the implementation that
ships with the package; a host can write its own against these protocols.

The contract, which the runtime keeps and an implementation may rely on:

- ``call_started`` and the returned observer's ``finish`` run in the same thread
  or task, the caller's, so an implementation may make its span "current" in
  ``call_started`` (a context variable) and restore the previous one in
  ``finish``. The tool itself runs inside that window, so work it does (its own
  spans, an HTTP client's) nests under the call. The same holds for
  ``stage_started`` and its observer's ``finish``, around the tool's
  ``activate`` or ``deactivate``.
- ``finish`` is called exactly once per ``call_started``, however the call ends:
  a result, a refusal, a timeout, a cancellation, an exception.
- ``arguments`` and ``output`` are passed only when the observer's
  ``record_payloads`` is true, both passed through the runtime's `RedactionPolicy`
  first (with the input and the output schema).
- A hook that raises is logged and ignored; it never fails a call.
- An observer may also have a ``progress(event)`` method, which it need not:
  the runtime looks for it once per call and, when there is one, calls it
  with each `ProgressEvent` the call reports, from whichever thread the
  report comes (a sync tool's worker, an MCP connection's), so it must be
  thread-safe. A report can arrive after ``finish`` (a sync tool the runtime
  stopped waiting for); ignore it then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolDescriptor, ToolExecutionTrace

__all__ = ["CallObserver", "Instrumentation", "Stage", "StageObserver"]

Stage = Literal["activate", "deactivate"]
"""A lifecycle stage that is observed apart from calls."""


class CallObserver(Protocol):
    """Watches one call from its start to its trace.

    It may also define ``progress(event: ProgressEvent) -> None`` to hear the
    call's progress reports (see the module docstring); that method is not part
    of the protocol, so observers written without it keep working.
    """

    @property
    def record_payloads(self) -> bool:
        """Whether ``finish`` wants the call's (redacted) arguments and its output."""
        ...

    def finish(
        self,
        trace: ToolExecutionTrace | None,
        *,
        arguments: Any = None,
        output: Any = None,
    ) -> None:
        """The call ended; ``trace`` is its trace (None only if it had none)."""
        ...


class StageObserver(Protocol):
    """Watches one ``activate`` or ``deactivate``."""

    def finish(self, error: BaseException | None) -> None:
        """The stage ended, with the error it raised or None."""
        ...


class Instrumentation(Protocol):
    """Gives the runtime an observer for each call and each lifecycle stage."""

    def call_started(
        self,
        *,
        tool_name: str,
        descriptor: ToolDescriptor | None,
        ctx: ToolExecutionContext,
        call_id: str,
        tool_call_id: str | None,
    ) -> CallObserver:
        """A call reached the runtime.

        Args:
            tool_name: the name it was made with.
            descriptor: the tool's descriptor; None when no tool has that name.
            ctx: the plan's context.
            call_id: the runtime's id of the call (its trace's ``call_id``).
            tool_call_id: the model's id of the call, when it came through
                ``runtime.call``; None for a direct ``execute``.
        """
        ...

    def stage_started(
        self, stage: Stage, *, tool_name: str, ctx: ToolExecutionContext
    ) -> StageObserver:
        """A tool's ``activate`` or ``deactivate`` is about to run for a plan."""
        ...
