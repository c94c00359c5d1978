"""Durable plans: what the runtime asks of an engine that records a plan's calls.

A plan opened with ``durable=`` hands each of its calls to that object, which
records the call's result so that a plan resumed after a crash gets the recorded
result back instead of running the tool again. `toolcycle.hosts.DBOSPlan` is the
engine shipped with toolcycle (on DBOS); another engine implements `DurablePlan`.
The runtime itself never imports an engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.models import ToolResult

__all__ = ["DurablePlan"]


class DurablePlan(Protocol):
    """Records each call of one plan, and replays the recorded ones on resume.

    ``run`` (and its async twin ``arun``) is given the whole call, from the
    capability check to the trace: recording it records the approval decision,
    the output and the changes together. The engine must call exactly one of
    ``call`` (run it now) or ``interrupted`` (it was running when an earlier
    process died), or return a result it recorded before. Calling one of them
    is what announces the call (its start event, its instrumentation observer):
    a result handed back from the record was announced by the run that made it,
    and nothing hears of the call again.

    A recorded result answers one exact call: the engine records the call's
    ``fingerprint`` with it, and on replay raises `toolcycle.PlanResumeError`
    instead of returning a result recorded with another fingerprint (the plan
    now passes other arguments at that point). A record without a fingerprint
    answers any call of its tool.

    An engine may also record the approval ledger's claim of a resumed call, with
    two more methods, ``claim_once(ctx, tool_name, claim) -> bool`` and its async
    twin ``aclaim_once`` (awaitable), where ``claim`` asks the ledger and returns
    its answer. Recording it (True or False) lets a replayed plan get its claim
    back: asked again, the ledger would refuse the call the plan itself claimed.
    A recorded answer is handed back without calling ``claim``, which tells the
    runtime that the claim, and a denial resumed with it, belong to an earlier
    run (which traced that denial). An engine without them has the ledger asked
    on every run.
    """

    def open(self, plan_id: str | None) -> str:
        """Called as the plan opens, with the id the host gave (or None).

        It runs on the thread that opens the plan, for ``aplan()`` the event
        loop's, so it must not block (`toolcycle.hosts.DBOSPlan` only reads the
        running workflow's id).

        Returns:
            The plan's id (an engine may use the id of its own workflow).
        """
        ...

    def run(
        self,
        ctx: Any,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], ToolResult],
        interrupted: Callable[[], ToolResult],
        *,
        fingerprint: str | None,
    ) -> ToolResult:
        """Run one call of the plan from sync code, or replay its recorded result.

        Args:
            ctx: the plan's `ToolExecutionContext`; a replayed result's changes
                are recorded on it again.
            tool_name: the tool called.
            idempotent: the tool's capability says a second run is harmless.
            call: runs the call and returns its result (or raises).
            interrupted: the failed result for a call that an earlier process
                started and never finished, when its tool is not idempotent.
            fingerprint: the call's `toolcycle.approvals.fingerprint` (its tool
                name and normalised arguments), to record with the result; None
                when the arguments are not JSON data (validation refuses them).

        Raises:
            PlanResumeError: the recorded call has another fingerprint.
        """
        ...

    def arun(
        self,
        ctx: Any,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], Awaitable[ToolResult]],
        interrupted: Callable[[], ToolResult],
        *,
        fingerprint: str | None,
    ) -> Awaitable[ToolResult]:
        """Async twin of `run`."""
        ...
