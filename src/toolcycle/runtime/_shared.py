"""The records the runtime's parts share, and the limits of a call.

`Entry` is a registered tool with all that its calls need worked out once;
`Call` is one call on its way through the pipeline. Beside them: a call's
deadlines, what a call in flight belongs to, and the smaller of two optional
limits. The parts' settings live in `runtime._settings`, and the interfaces
through which they see one another in `runtime._interfaces`.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import TYPE_CHECKING, Any

from toolcycle.execution._portal import Deadline
from toolcycle.tracing import lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle._scope import _CallScope
    from toolcycle.context import ToolExecutionContext
    from toolcycle.execution._inflight import Flight
    from toolcycle.instrumentation import CallObserver
    from toolcycle.models import ToolCall, ToolDescriptor, ToolExecutionTrace, ToolResult
    from toolcycle.protocols import ToolInstance
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._caching import CacheBinding
    from toolcycle.runtime._guardset import Guards
    from toolcycle.runtime._record import CallRecord
    from toolcycle.validation import CompiledSchema

__all__ = ["Call", "Entry", "deadlines", "despite_cancellation", "here", "smaller"]

_NO_LIMITS: tuple[None, None] = (None, None)


# Plain slotted classes rather than dataclasses: both are made at import, and a Call
# on every call; a dataclass's generated methods cost about 0.5 ms each to make at
# import, which ``import toolcycle`` would pay.


class Entry:
    """A registered tool with everything that can be computed before its first call.

    Attributes:
        descriptor: the tool's descriptor, detached from the tool.
        instance: the tool.
        input: its compiled input schema.
        output: its compiled output schema, if it has one.
        loop: the tool's own event loop (its ``event_loop`` attribute), if it has one.
        loop_for: its ``event_loop_for`` method, when the loop depends on the plan.
        timeout: the smaller of the descriptor's limit and the one given to ``register``.
        coroutine: whether the tool's ``execute`` is an ``async def``.
        tool_coroutine: the same of the registered tool itself, which a copy
            holding a host's stand-in (whose stages are the caller's kind) keeps.
        cache: where its results are cached, when it has a `CachePolicy`.
        guards: the tool's guardrails (the runtime's, its source's, its own); None if none.
        max_retries: how many model-fixable failures in a row a plan allows it.
        retry: its policy for transient faults (idempotent tools only), or None.
        plain: neither guardrails nor a result cache: the pipeline's short path
            (a tool that needs approval leaves it too, decided per call).
        deferred: the descriptor's ``defer_loading``, read here once.
    """

    __slots__ = (
        "cache",
        "coroutine",
        "deferred",
        "descriptor",
        "guards",
        "input",
        "instance",
        "loop",
        "loop_for",
        "max_retries",
        "output",
        "plain",
        "retry",
        "timeout",
        "tool_coroutine",
    )

    def __init__(
        self,
        descriptor: ToolDescriptor,
        instance: ToolInstance,
        input: CompiledSchema,
        output: CompiledSchema | None,
        loop: asyncio.AbstractEventLoop | None = None,
        registered_timeout: float | None = None,
        cache: CacheBinding | None = None,
        guards: Guards | None = None,
        *,
        max_retries: int = 1,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.descriptor = descriptor
        self.cache = cache
        self.guards = guards
        self.max_retries = max_retries
        self.retry = retry
        # One check on every call instead of one per feature (see runtime._pipeline).
        self.plain = cache is None and guards is None
        self.deferred = descriptor.defer_loading
        self.instance = instance
        self.input = input
        self.output = output
        self.loop = loop
        pick = getattr(instance, "event_loop_for", None)
        self.loop_for: Callable[[Any], asyncio.AbstractEventLoop | None] | None = (
            pick if callable(pick) else None
        )
        # Worked out once here rather than on every call.
        self.timeout = smaller(descriptor.timeout, registered_timeout)
        self.coroutine = self.tool_coroutine = inspect.iscoroutinefunction(instance.execute)

    def call_loop(self, ctx: Any) -> asyncio.AbstractEventLoop | None:
        """The loop a sync call in plan ``ctx`` runs the tool's coroutine on, if its own."""
        pick = self.loop_for
        return self.loop if pick is None else pick(ctx) or self.loop


class Call:
    """One call on its way through the pipeline.

    Attributes:
        name: the tool's name, as the call gave it.
        ctx: the plan's context.
        record: the call's trace record.
        traced: False for an explicit ``activate``, which is not a call and leaves no trace.
        observer: the instrumentation's watcher of this call, when the runtime has one.
        scope: what the running call collects (changes, progress, its own token).
        trace: the call's trace, once finished (kept for an observer).
        result: the call's result (kept for an observer).
        approved: the call was approved before it started (``resume``): ask nobody again.
        tool_call_id: the model's id of the call, when it came through ``call``.
        arguments: the validated arguments, kept only for an observer that records payloads.
        flight: the call in its plan's calls in flight, once its checks have passed.
        answers: the model's call this one answers, for its result to carry.
        refuse: a refusal (`REFUSED`) becomes the call's failed result instead of
            raising (a model's call, answered either way).
    """

    __slots__ = (
        "answers",
        "approved",
        "arguments",
        "ctx",
        "flight",
        "name",
        "observer",
        "record",
        "refuse",
        "result",
        "scope",
        "tool_call_id",
        "trace",
        "traced",
    )

    def __init__(
        self, name: str, ctx: ToolExecutionContext, record: CallRecord, traced: bool = True
    ) -> None:
        self.name = name
        self.ctx = ctx
        self.record = record
        self.traced = traced
        self.observer: CallObserver | None = None
        self.scope: _CallScope | None = None
        self.trace: ToolExecutionTrace | None = None
        self.result: ToolResult | None = None
        self.approved = False
        self.tool_call_id: str | None = None
        self.arguments: Any = None
        self.flight: Flight | None = None
        self.answers: ToolCall | None = None
        self.refuse = False


def deadlines(
    call: Call, entry: Entry, timeout: float | None, idle_timeout: float | None
) -> tuple[Deadline | None, Deadline | None]:
    """The call's limits, started now: for its activation, and for its run.

    The activation gets the smallest total limit: the call's, the plan's, the
    tool's or its source's. The run gets that total (which so counts the
    activation's time too), and the smallest idle limit if any.
    """
    ctx = call.ctx
    if (
        timeout is None
        and idle_timeout is None
        and ctx.timeout is None
        and ctx.idle_timeout is None
        and entry.timeout is None
    ):
        return _NO_LIMITS  # the common case, without the calls below
    # Some limit is set, so the total or the idle limit below is too.
    total = smaller(smaller(timeout, ctx.timeout), entry.timeout)
    idle = smaller(idle_timeout, ctx.idle_timeout)
    activation = Deadline(total) if total is not None else None
    if idle is None:
        return activation, Deadline(total)
    record = call.record
    record.idle_limited = True  # a host then sends its progress back as it comes
    return activation, Deadline(total, idle, lambda: record.active_at)


def here() -> object:
    """The task running this code, or else its thread: what a call in flight belongs to."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        task = None
    return task if task is not None else threading.get_ident()


async def despite_cancellation(
    task: asyncio.Future[Any], event: str, **fields: Any
) -> asyncio.CancelledError | None:
    """Wait for ``task`` to end, however often the awaiting task is cancelled meanwhile.

    Work that must not stop halfway (a plan's end, the runtime's close) runs as
    ``task``; each cancellation of the waiter is logged as ``event`` with ``fields``.

    Returns:
        The first cancellation, for the caller to raise once it is done; None if none came.
    """
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            lifecycle_event(event, **fields)
            cancelled = cancelled or exc
    task.result()  # raises if the work itself was cancelled (its loop is shutting down)
    return cancelled


def smaller(a: float | None, b: float | None) -> float | None:
    """The smaller of two optional limits; None means no limit."""
    if a is None:
        return b
    return a if b is None or a <= b else b
