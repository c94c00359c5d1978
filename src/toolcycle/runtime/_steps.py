"""The call pipeline's steps that do not wait: shared by the sync and the async path.

Each step takes the `Call` on its way and either returns what the next step
needs or records the call's trace and raises (or returns the failed result the
caller answers with). The drivers in ``_pipeline`` only add the waiting:
activation, the approver, the tool itself. What a call's instrumentation
observer hears is done in ``_observing``, the input check in ``_arguments``, and
the result built in ``_results``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, NoReturn

from toolcycle.capabilities import check_capabilities
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import (
    ModelRetry,
    ToolAccessDeniedError,
    ToolCancelledError,
    ToolCheckpointRequiredError,
    ToolNotFoundError,
    ToolRuntimeError,
)
from toolcycle.models import ToolResult, Validation
from toolcycle.runtime._arguments import check_input, learn_secrets
from toolcycle.runtime._caching import hit_result
from toolcycle.runtime._observing import finish_observer, open_observer, resumed_decision
from toolcycle.runtime._results import Outcome, failed_result, output_result
from toolcycle.runtime._retries import ModelRetries
from toolcycle.runtime._shared import Call
from toolcycle.tracing import lifecycle_enabled, lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle.cache import ToolLifecycleCache
    from toolcycle.execution._inflight import Flight
    from toolcycle.execution._threads import InvokeTimeoutError
    from toolcycle.instrumentation import Instrumentation
    from toolcycle.models import ApprovalRecord, Change, ToolExecutionTrace, TraceStatus
    from toolcycle.runtime._caching import Kept
    from toolcycle.runtime._interfaces import Catalog
    from toolcycle.runtime._recorder import TraceRecorder
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Entry

__all__ = ["CallSteps"]

# The name of agent._deferred.SEARCH_TOOL, not imported: that would load the models'
# validators with the package. The dispatcher answers it, so execute never can.
_SEARCH_TOOL = "search_tools"
_SEARCH_HINT = (
    f": {_SEARCH_TOOL} is the tool search offered to a model, answered by runtime.call "
    "and runtime.acall (or call_many), not by execute"
)


class CallSteps:
    """Opens, checks, validates, finishes and traces calls.

    Args:
        catalog: the registered tools.
        settings: the runtime's shared settings.
        traces: where every call's trace is recorded.
        cache: admits calls into their plan's calls in flight.
        instrumentation: told of every call, when the runtime has one.
    """

    def __init__(
        self,
        catalog: Catalog,
        settings: Settings,
        traces: TraceRecorder,
        cache: ToolLifecycleCache,
        instrumentation: Instrumentation | None,
    ) -> None:
        self._catalog = catalog
        # The registry's live mapping (changed in place, never replaced), read once.
        self._entries = catalog.entries
        self._settings = settings
        self._traces = traces
        self._cache = cache
        self._instrumentation = instrumentation
        self._retries = ModelRetries()

    def start(
        self,
        name: str,
        ctx: ToolExecutionContext,
        tool_call_id: str | None = None,
        *,
        traced: bool = True,
        approval: ApprovalRecord | None = None,
    ) -> Call:
        """Open the call's record (and its observer, if the runtime is instrumented).

        ``approval`` is the decision of a resumed call, made before it started.
        """
        if not isinstance(ctx, ToolExecutionContext):
            raise TypeError(f"ctx must be a ToolExecutionContext, got {type(ctx).__name__}")
        call = Call(name, ctx, self._traces.start(name, ctx.plan_id), traced)
        call.tool_call_id = call.record.tool_call_id = tool_call_id
        if approval is not None:
            call.record.approval = approval
            call.approved = True
        if traced:  # announced as `announce` does, inline: every call comes this way
            if lifecycle_enabled():  # checked first: building the event's fields costs too
                lifecycle_event(
                    "tool.call_started", tool=name, plan_id=ctx.plan_id, call_id=call.record.call_id
                )
                if approval is not None:
                    resumed_decision(call, approval)
            if self._instrumentation is not None:
                call.observer = observer = open_observer(
                    self._instrumentation, self._catalog, call, tool_call_id
                )
                if observer is not None:
                    call.record.uncut = None  # asks for the output before a cut, if one comes
        return call

    def start_unannounced(
        self,
        name: str,
        ctx: ToolExecutionContext,
        tool_call_id: str | None,
        approval: ApprovalRecord | None,
    ) -> Call:
        """`start` for a call announced later, if at all: a durable plan's (see `announce`).

        Its trace is delivered when it ends, as any call's.
        """
        call = self.start(name, ctx, tool_call_id, traced=False, approval=approval)
        call.traced = True  # `traced=False` only kept `start` from announcing it
        return call

    def announce(self, call: Call) -> None:
        """Log the call's start and start its observer, if the runtime is instrumented.

        `start` announces every traced call but those of `start_unannounced`: a
        durable plan's call is announced once its engine runs it, or once a check
        refuses it before the engine sees it. A replayed call is never announced:
        the run that made it announced it.
        """
        if lifecycle_enabled():
            lifecycle_event(
                "tool.call_started",
                tool=call.name,
                plan_id=call.ctx.plan_id,
                call_id=call.record.call_id,
            )
            if call.approved and call.record.approval is not None:
                resumed_decision(call, call.record.approval)
        if self._instrumentation is not None:
            call.observer = open_observer(
                self._instrumentation, self._catalog, call, call.tool_call_id
            )

    def check(self, call: Call) -> Entry:
        """Steps 0-2: the tool exists, the plan is open, not cancelled, and allowed."""
        name, ctx = call.name, call.ctx
        entry = self._entries.get(name)
        if entry is None:
            error: ToolRuntimeError = ToolNotFoundError(
                f"no tool named {name!r} is registered"
                + (_SEARCH_HINT if name == _SEARCH_TOOL else "")
                + "; known tools: "
                + (", ".join(sorted(self._catalog.names())[:20]) or "none"),
                tool_name=name,
                plan_id=ctx.plan_id,
            )
            self.emit(call, "error", error=error)
            raise error
        closed = self._settings.closed
        if closed or ctx.ended:
            error = ToolRuntimeError(
                "the runtime is closed"
                if closed
                else f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
                tool_name=name,
                plan_id=ctx.plan_id,
            )
            self.emit(call, "error", error=error)
            raise error
        if ctx.cancellation_token.is_cancelled:
            self.raise_cancelled(call, None)
        try:
            check_capabilities(entry.descriptor, ctx)
        except (ToolAccessDeniedError, ToolCheckpointRequiredError) as denial:
            self.emit(call, "denied", error=denial)
            raise
        if entry.deferred and call.answers is not None:  # a model's call of a deferred tool
            _reveal(call, name, ctx)
        return entry

    def precheck(self, name: str, ctx: ToolExecutionContext) -> None:
        """The refusals of `check` and `admit` for an open plan, made early and untraced.

        For a resume, which must refuse before it claims the call: the later
        checks then find nothing new (barring a race with the plan's end).
        """
        entry = self._catalog.entry(name)
        if ctx.cancellation_token.is_cancelled:
            raise _plan_cancelled(ctx, name)
        check_capabilities(entry.descriptor, ctx)
        self._cache.check_owner(ctx)

    def admit(self, call: Call, owner: object) -> Flight:
        """Count the call among its plan's calls in flight; refused once the plan ends."""
        try:
            flight = self._cache.admit(call.ctx, call.record, owner)
        except ToolRuntimeError as error:
            error._set_context(call.name, call.ctx.plan_id)
            self.emit(call, "error", error=error)
            raise
        call.flight = flight
        return flight

    def validate_input(self, call: Call, entry: Entry, params: Any) -> Any:
        """Step 4: return the normalised input, or the `Validation` that refused it.

        The caller answers a refusal with `invalid` (one type check, on its side).
        """
        data = check_input(call.record, entry.input, params, self._settings.redaction)
        if call.observer is not None and type(data) is not Validation:
            call.arguments = data
        return data

    def learn_secrets(self, call: Call, params: Mapping[str, Any]) -> None:
        """Let the call's messages hide the secrets of ``params`` before (or without) validation.

        A resumed denial never validates its recorded arguments, and a resumed
        approval may fail before it does; either reason may quote them.
        """
        entry = self._entries.get(call.name)
        if entry is not None:
            learn_secrets(call.record, params, entry.input, self._settings.redaction)

    def invalid(self, call: Call, entry: Entry, validation: Validation) -> ToolResult:
        """The result of a refused input: a failure the model may fix."""
        return self._retries.invalid(self._traces, call, entry.max_retries, validation)

    def failed(self, call: Call, outcome: Outcome, changes: list[Change]) -> ToolResult:
        """The result and trace of a call that raised or timed out."""
        if isinstance(outcome.error, ModelRetry):
            entry = self._entries.get(call.name)
            limit = entry.max_retries if entry is not None else self._settings.max_retries
            return self._retries.asked(self._traces, call, limit, outcome, changes)
        return failed_result(self._traces, call.record, outcome, changes)

    def returned(self, call: Call, entry: Entry, output: Any, changes: list[Change]) -> ToolResult:
        """Steps 6 and 7 on what the tool returned, and the trace."""
        retries = self._retries
        failing = retries.failing  # some call failed in a way the model may fix
        if failing:
            retries.returned(call)  # before the trace ends: it says which retry this was
        settings = self._settings
        result = output_result(
            self._traces,
            call.record,
            call.ctx,
            entry.input,
            entry.output,
            output,
            changes,
            settings.strict_output,
            settings.max_result_bytes,
            call.answers,
        )
        if failing and result.success:  # a failed return leaves the count, as a raise does
            retries.succeeded(call)
        return result

    def cache_hit(self, call: Call, kept: Kept) -> ToolResult:
        """The result of a call answered from the result cache, and its trace."""
        return hit_result(self._traces, call.record, kept, call.answers)

    def emit(self, call: Call, status: TraceStatus, **details: Any) -> ToolExecutionTrace | None:
        """Finish the call's trace, unless the call is an explicit activation."""
        if not call.traced:
            return None
        call.trace = self._traces.finish(call.record, status, **details)
        return call.trace

    def retraced(self, call: Call, status: TraceStatus, **details: Any) -> ToolExecutionTrace:
        """Build the trace of a call an earlier run traced (a durable plan's replay).

        The result gets it; no tracer, listener or observer hears of the call again.
        """
        call.trace = self._traces.finish(call.record, status, deliver=False, **details)
        return call.trace

    def raise_cancelled(self, call: Call, cause: BaseException | None) -> NoReturn:
        """Trace the call as cancelled and raise `ToolCancelledError` saying by whom."""
        token = call.ctx.cancellation_token
        if isinstance(cause, ToolCancelledError):
            error = cause
        elif token.is_cancelled:
            error = _plan_cancelled(call.ctx, call.name)
        elif call.flight is not None and call.flight.ended:
            error = ToolCancelledError(
                f"tool {call.name!r} was stopped: plan {call.ctx.plan_id!r} ended while it ran",
                reason=call.flight.reason,
            )
        else:  # the tool (or something it awaited) was cancelled, not the plan
            error = ToolCancelledError(f"tool {call.name!r} was cancelled while it ran")
        if error.tool_name is None:
            error._set_context(call.name, call.ctx.plan_id)
        error.trace = self.emit(call, "cancelled", error=error)
        if cause is None or cause is error:
            raise error
        raise error from cause

    def activation_failed(self, call: Call, exc: BaseException) -> None:
        """Trace a failed step 3, converting a cancellation into ToolCancelledError."""
        if isinstance(exc, ToolCancelledError | asyncio.CancelledError):
            self.raise_cancelled(call, exc)
        if isinstance(exc, ToolRuntimeError):
            exc._set_context(exc.tool_name or call.name, exc.plan_id or call.ctx.plan_id)
            self.emit(call, "error", error=exc)
        else:  # KeyboardInterrupt, SystemExit
            self.emit(call, "cancelled", error=exc)

    def timed_out(self, call: Call, entry: Entry, exc: InvokeTimeoutError) -> Outcome:
        """The outcome of a call stopped at its limit; a sync straggler stays in flight."""
        if call.scope is not None:
            call.scope.cancel(str(exc))  # a tool polling ctx.call_token stops
        straggler = exc.straggler
        if straggler is not None and call.flight is not None:
            # In flight until its thread ends: the plan's end waits for it.
            call.flight.leave(straggler)
        if call.ctx.host is not None:
            abandoned = _left_in_host(entry)
        else:
            abandoned = exc.abandoned is not None
        return Outcome(timed_out=True, abandoned=abandoned, reason=str(exc))

    def refused(
        self,
        name: str,
        ctx: ToolExecutionContext,
        tool_call_id: str | None,
        status: TraceStatus,
        **details: Any,
    ) -> ToolExecutionTrace | None:
        """Trace a call that never reached a tool (a model's unknown tool, an ended plan)."""
        call = self.start(name, ctx, tool_call_id)
        trace = self.emit(call, status, **details)
        if call.observer is not None:
            self.observed(call)
        return trace

    def observed(self, call: Call) -> None:
        """Tell the call's observer how it ended (with payloads, if it wants them)."""
        finish_observer(call, self._catalog, self._settings)


def _plan_cancelled(ctx: ToolExecutionContext, name: str) -> ToolCancelledError:
    reason = ctx.cancellation_token.reason
    return ToolCancelledError(
        f"plan {ctx.plan_id!r} was cancelled" + (f": {reason}" if reason else ""),
        reason=reason,
        tool_name=name,
        plan_id=ctx.plan_id,
    )


def _reveal(call: Call, name: str, ctx: ToolExecutionContext) -> None:
    """A model called a deferred tool by name: show it in full from now on in the plan.

    Only the call that revealed it records it in its trace, as a search records
    what it found.
    """
    if name not in ctx.revealed_tools:
        ctx.reveal_tools((name,))
        call.record.revealed = (name,)


def _left_in_host(entry: Entry) -> bool:
    """Whether a timed-out call left a sync body running in its plan's host.

    Which kind of stand-in waited does not say: from sync code it is a thread
    the timeout leaves waiting, from async code a coroutine it cancels. Either
    way the host cancels the body's token and the task of a coroutine body, so
    only a sync body, on a thread of the worker, runs on as it would here. The
    call's own ``entry`` says which tool ran: one registered anew under its name
    meanwhile may be of the other kind.
    """
    return not entry.tool_coroutine
