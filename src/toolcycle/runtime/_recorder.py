"""The trace recorder: each call's record, and its trace made only when something wants it.

A call's trace is kept as plain values (clock readings, a counter-based id, the
status) and turned into a `ToolExecutionTrace` when a listener, the kept traces
or a tracer that is not known to drop it asks, or later when someone reads the
result's ``trace``. Failing sinks are logged on ``toolcycle.tracing``.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from toolcycle._bounds import shown_value
from toolcycle._construct import trusted
from toolcycle._lazy_trace import LazyTrace
from toolcycle.errors import cut_error_text, error_text
from toolcycle.models import ToolExecutionTrace
from toolcycle.runtime._record import CallRecord, format_call_id
from toolcycle.tracing import NullTracer, StructlogTracer, get_logger, iso_utc

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle._types import Clock
    from toolcycle.models import TraceStatus
    from toolcycle.tracing import TraceListener, Tracer

__all__ = ["TraceRecorder"]

_log = get_logger("toolcycle.tracing")


def _trace_model(values: tuple[Any, ...]) -> ToolExecutionTrace:
    (
        tool_name,
        plan_id,
        prefix,
        number,
        tool_call_id,
        started,
        ended,
        duration_ms,
        size,
        original_size,
        status,
        error,
        error_type,
        output_valid,
        progress,
        abandoned,
        approval,
        more,
    ) = values
    if more is None:  # a plain call: none of the agent-loop features left a mark
        retry, attempts, cache_hit, guardrails, revealed, content, placed = _PLAIN_MORE
    else:
        retry, attempts, cache_hit, guardrails, revealed, content, placed = more
    # Every value is built by the recorder from checked parts, so the model is not
    # validated again (the dict lists every field in declaration order, as _trusted needs).
    return trusted(
        ToolExecutionTrace,
        {
            "tool_name": tool_name,
            "plan_id": plan_id,
            "call_id": format_call_id(prefix, number),
            "tool_call_id": tool_call_id,
            "started_at": iso_utc(started),
            # Clamped here, not at the call's end: a wall clock set back mid-call (or a
            # timer's rounding) never makes a negative duration or an end before the start.
            "ended_at": iso_utc(max(ended, started)),
            "duration_ms": max(0.0, duration_ms),
            "result_size_bytes": size,
            "original_size_bytes": original_size,
            "success": status == "ok",
            "status": status,
            "error": error,
            "error_type": error_type,
            "output_valid": output_valid,
            "progress_count": progress,
            "abandoned": abandoned,
            "approval": approval,
            "retry": retry,
            "attempts": attempts,
            "cache_hit": cache_hit,
            "guardrails": guardrails,
            "revealed_tools": revealed,
            "content_kinds": content[0] if content is not None else (),
            "content_bytes": content[1] if content is not None else 0,
            "host": placed[0] if placed is not None else None,
            "host_id": placed[1] if placed is not None else None,
        },
        None,
    )


# The trace values of the agent-loop features for a call that used none of them.
_PLAIN_MORE: tuple[Any, ...] = (0, (), False, (), (), None, None)


def _more(record: CallRecord, content: tuple[tuple[str, ...], int] | None) -> tuple[Any, ...]:
    """The trace values of the agent-loop features, taken when the call ends."""
    extras = record.extras
    if extras is None:
        return (*_PLAIN_MORE[:5], content, None)
    host = extras.host
    return (
        extras.retry,
        tuple(extras.attempts),
        extras.cache_hit,
        extras.guardrails,
        extras.revealed,
        content,
        None if host is None else host(),
    )


class TraceRecorder:
    """Records the trace of each call and delivers it to the tracer and the listeners.

    A call's trace is kept as plain values (wall-clock seconds, not ISO text) and
    made into a `ToolExecutionTrace` only when something wants it: a listener,
    the kept traces, a tracer that is not known to drop it, or later the reader
    of its result's ``trace``.

    Args:
        tracer: the built-in sink.
        clock: wall-clock seconds since the epoch, for timestamps.
        timer: monotonic seconds, for durations.
        keep: how many of the latest traces to keep for `recent`; 0 keeps none.
    """

    def __init__(
        self,
        tracer: Tracer,
        *,
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
        keep: int = 0,
    ) -> None:
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
            raise ValueError(
                f"keep_traces must be a whole number, 0 or more, got {shown_value(keep)}"
            )
        self._tracer = tracer
        # Tracers whose drop is known ahead: the null tracer always drops, the
        # structlog tracer (exactly that class) when its logger is off for the level.
        self._drops_all = type(tracer) is NullTracer
        self._gate = tracer if type(tracer) is StructlogTracer else None
        # A bounded ring: appending to a deque with maxlen is thread-safe and drops
        # the oldest, so memory stays flat however many calls run.
        self._recent: collections.deque[ToolExecutionTrace] | None = (
            collections.deque(maxlen=keep) if keep else None
        )
        self._clock = clock
        self._timer = timer
        self._lock = threading.Lock()
        self._listeners: tuple[TraceListener, ...] = ()
        # Call ids: a random prefix per recorder and a counter. Unique within the
        # recorder, and across recorders with overwhelming probability, at a
        # twentieth of the cost of a uuid4 per call.
        self._id_prefix = os.urandom(6).hex()
        self._ids = itertools.count(1)

    def add_listener(self, listener: TraceListener) -> Callable[[], None]:
        """Deliver every later trace to ``listener``; returns a function that removes it.

        Each remover takes back its own registration, once: a listener added twice
        hears each trace twice, and once after one of its removers ran.
        """
        with self._lock:
            self._listeners = (*self._listeners, listener)
        added = [True]  # until this registration is taken back

        def remove() -> None:
            with self._lock:
                if not added:
                    return
                added.clear()
                listeners = list(self._listeners)
                listeners.reverse()  # the latest registration of it goes first
                listeners.remove(listener)
                listeners.reverse()
                self._listeners = tuple(listeners)

        return remove

    def recent(self) -> tuple[ToolExecutionTrace, ...]:
        """The latest traces kept, oldest first; empty when none are kept."""
        return tuple(self._recent) if self._recent is not None else ()

    def start(self, tool_name: str, plan_id: str) -> CallRecord:
        """Note the start of a call."""
        return CallRecord(
            tool_name, plan_id, self._id_prefix, next(self._ids), self._clock(), self._timer()
        )

    def finish(
        self,
        record: CallRecord,
        status: TraceStatus,
        *,
        error: BaseException | None = None,
        error_message: str | None = None,
        error_type: str | None = None,
        size: int = 0,
        original_size: int | None = None,
        output_valid: bool | None = None,
        abandoned: bool = False,
        deliver: bool = True,
    ) -> ToolExecutionTrace:
        """Build the call's trace, deliver it, and return it.

        ``error`` fills ``error_message`` and ``error_type`` when they are not given.
        A sink that raises is logged and skipped; the others still receive the trace.
        Without ``deliver``, no sink receives it (see `end`).
        """
        if error is not None:
            error_message = error_message or error_text(error) or type(error).__name__
            error_type = error_type or type(error).__name__
        trace = self.end(
            record,
            status,
            error_message=error_message,
            error_type=error_type,
            size=size,
            original_size=original_size,
            output_valid=output_valid,
            abandoned=abandoned,
            deliver=deliver,
        )
        return trace.build() if isinstance(trace, LazyTrace) else trace

    def end(
        self,
        record: CallRecord,
        status: TraceStatus,
        error_message: str | None = None,
        error_type: str | None = None,
        size: int = 0,
        original_size: int | None = None,
        output_valid: bool | None = None,
        abandoned: bool = False,
        content: tuple[tuple[str, ...], int] | None = None,
        *,
        deliver: bool = True,
    ) -> ToolExecutionTrace | LazyTrace:
        """Record the end of a call; its trace, or its values when nothing wants it yet.

        The trace is delivered (and so built) when a listener, the kept traces or
        the tracer want it; otherwise a `LazyTrace` comes back, for the result to
        build on first reading. Either way the trace says the same, and its
        ``error`` is already redacted, then cut to `toolcycle.errors.MAX_ERROR_BYTES`.
        ``content`` is the kinds and the bytes of the result's content parts, for
        a result that has some. Without
        ``deliver``, nothing receives it: the call was traced by an earlier run
        (a durable plan's replay) and its result only needs the trace.
        """
        if error_message is not None:  # None on a success, which so pays nothing more
            if record.scrub is not None:
                error_message = record.scrub(error_message)
            # The one cut of the call's error, after the redaction has seen it whole:
            # the result, the message to the model, the log and the span all read this.
            error_message = cut_error_text(error_message)
        approval = record.approval
        if approval is not None and approval.reason:
            reason = approval.reason
            if record.scrub is not None:
                reason = record.scrub(reason)  # an approver may quote an argument
            reason = cut_error_text(reason)
            if reason != approval.reason:
                approval = approval.model_copy(update={"reason": reason})
        started = record.started
        ended = self._clock()
        duration = (self._timer() - record.t0) * 1000.0
        finished = LazyTrace(
            (
                record.tool_name,
                record.plan_id,
                record._prefix,
                record._number,
                record.tool_call_id,
                started,
                ended,
                duration,
                size,
                size if original_size is None else original_size,
                status,
                error_message,
                error_type,
                output_valid,
                record.progress,
                abandoned or record.abandoned,
                approval,
                # One value for what only the agent-loop features set (see `Extras`).
                None if record.extras is None and content is None else _more(record, content),
            ),
            error_message,
            _trace_model,
        )
        if not deliver or (
            self._recent is None
            and not self._listeners
            and (self._drops_all or self._drops(status))
        ):
            return finished
        trace: ToolExecutionTrace = finished.build()
        if self._recent is not None:
            self._recent.append(trace)
        for sink in (self._tracer.record, *self._listeners):
            try:
                sink(trace)
            except Exception:
                _log.exception("trace.sink_failed", tool=trace.tool_name, call_id=trace.call_id)
        return trace

    def _drops(self, status: TraceStatus) -> bool:
        """Whether the tracer is known to drop a trace of this status unseen."""
        gate = self._gate
        if gate is None:
            return False
        return gate.drops(status == "ok" or status == "pending")
