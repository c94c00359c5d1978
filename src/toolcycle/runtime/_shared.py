"""What the runtime's parts share: records, settings, the parts' interfaces, limits.

The parts never import one another. Where one needs another (the pipeline asks
the approvals part; the dispatcher runs calls through the pipeline; everyone
looks tools up in the registry), it receives it in its constructor, typed by one
of the protocols below, so each part can be read and tested on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypedDict, TypeVar, overload

from toolcycle.errors import ToolRuntimeError
from toolcycle.execution._portal import Deadline
from toolcycle.tracing import lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from toolcycle._scope import _CallScope
    from toolcycle.approvals import ApprovalRule, Approver
    from toolcycle.cancellation import CancellationToken
    from toolcycle.context import ToolExecutionContext
    from toolcycle.durable import DurablePlan
    from toolcycle.execution._inflight import Flight
    from toolcycle.instrumentation import CallObserver
    from toolcycle.models import (
        ApprovalRecord,
        BoundResource,
        ProgressEvent,
        ToolCall,
        ToolDescriptor,
        ToolExecutionTrace,
        ToolResult,
    )
    from toolcycle.protocols import PlanHost, ToolInstance
    from toolcycle.redaction import RedactionPolicy
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._caching import CacheBinding
    from toolcycle.runtime._guardset import Guards
    from toolcycle.runtime._record import CallRecord
    from toolcycle.validation import CompiledSchema

__all__ = [
    "ApprovalStep",
    "Call",
    "Catalog",
    "Entry",
    "Option",
    "Runner",
    "Settings",
    "deadlines",
    "here",
    "smaller",
]

_NO_LIMITS: tuple[None, None] = (None, None)
T = TypeVar("T")


if TYPE_CHECKING:  # for annotations alone: a TypedDict class costs 0.3 ms to make at import

    class PlanOptions(TypedDict, total=False):
        """The keyword arguments of `ToolRuntime.new_context`, for ``plan`` and ``aplan``."""

        read_only: bool
        requires_checkpoint: bool
        resources: Iterable[BoundResource]
        cancellation_token: CancellationToken | None
        metadata: Mapping[str, Any] | None
        on_progress: Callable[[ProgressEvent], object] | None
        timeout: float | None
        idle_timeout: float | None
        approver: Approver | None
        approval: ApprovalRule
        host: PlanHost | None
        durable: DurablePlan | None


# Plain slotted classes rather than dataclasses: these three are built at import
# and Call on every call; a dataclass's generated methods cost about 0.5 ms each
# to make at import, which ``import toolcycle`` would pay.


# The runtimes whose close() this thread (or work started from it) is running.
_closing_here: ContextVar[tuple[Settings, ...]] = ContextVar("toolcycle_closing", default=())


class Settings:
    """The runtime's options that its public attributes may change after construction."""

    __slots__ = (
        "auto_activate",
        "closed",
        "closed_down",
        "guardrails",
        "lock",
        "max_result_bytes",
        "max_retries",
        "redaction",
        "retry",
        "strict_output",
    )

    def __init__(
        self,
        strict_output: bool,
        max_result_bytes: int | None,
        redaction: RedactionPolicy | None,
        auto_activate: bool,
        max_retries: int = 1,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.strict_output = strict_output
        self.max_result_bytes = max_result_bytes
        self.redaction = redaction
        self.auto_activate = auto_activate
        # Defaults for tools registered later (see runtime._retries.resolve).
        self.max_retries = max_retries
        self.retry = retry
        self.closed = False
        self.closed_down = threading.Event()  # set once the first close() is over
        self.lock = threading.Lock()
        self.guardrails: Guards | None = None  # the runtime's own; set by the façade

    def check_open(self) -> None:
        """Raise `ToolRuntimeError` once the runtime is closed."""
        if self.closed:
            raise ToolRuntimeError("the runtime is closed")

    def close(self) -> bool:
        """Mark the runtime closed; True only for the first caller."""
        with self.lock:
            first, self.closed = not self.closed, True
        return first

    @contextlib.contextmanager
    def closing(self) -> Iterator[None]:
        """The first caller's close: work started in it is known as part of it."""
        token = _closing_here.set((*_closing_here.get(), self))
        try:
            yield
        finally:
            _closing_here.reset(token)
            self.closed_down.set()

    def wait_closed(self) -> None:
        """Wait until the first caller's close is over, unless this runs as part of it."""
        if self not in _closing_here.get() and not self.closed_down.is_set():
            lifecycle_event("runtime.awaiting_close")
            self.closed_down.wait()


class Option(Generic[T]):
    """A public attribute of the façade that reads and writes one of its `Settings`.

    ``check`` refuses a bad value (raising) and returns the one to keep; it runs
    when the attribute is set, as the constructor runs it on its argument.
    """

    def __init__(self, name: str, check: Callable[[Any], T] | None = None) -> None:
        self._name = name
        self._check = check
        self.__doc__ = f"The ``{name}`` option (see `ToolRuntime`); may be changed."

    @overload
    def __get__(self, owner: None, kind: type) -> Self: ...
    @overload
    def __get__(self, owner: object, kind: type) -> T: ...
    def __get__(self, owner: object | None, kind: type) -> T | Self:
        if owner is None:
            return self
        value: T = getattr(owner._settings, self._name)  # type: ignore[attr-defined]
        return value

    def __set__(self, owner: object, value: T) -> None:
        if self._check is not None:
            value = self._check(value)
        setattr(owner._settings, self._name, value)  # type: ignore[attr-defined]


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


def smaller(a: float | None, b: float | None) -> float | None:
    """The smaller of two optional limits; None means no limit."""
    if a is None:
        return b
    return a if b is None or a <= b else b
