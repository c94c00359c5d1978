"""`ToolRuntime`: registration, the execute pipeline, and plan ends.

``execute`` runs these steps, in this order (the design's seven, with the
capability check moved ahead of activation so that a denied call starts nothing):

1. check cancellation: a cancelled plan runs nothing and activates nothing;
2. enforce the capability flags (read-only, checkpoint required);
3. activate the tool for the plan if it is not yet (single flight);
4. normalise the input to strict JSON and validate it against the input schema;
5. run the tool, timed and traced;
6. normalise the output, measure it, and validate it against the output schema;
7. record the changes the tool made into the plan's context.

Every call that reaches ``execute`` yields exactly one trace, delivered to the
tracer and the listeners before ``execute`` returns or raises.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import uuid
import warnings
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Self, TypedDict, Unpack

from toolcycle._activation import Activator, CallTimedOut, caller_cancelled
from toolcycle._approve import (
    DENIED,
    PENDING,
    check_resume,
    decision_from,
    denial,
    no_approver,
    pending_for,
    record_of,
    request_for,
)
from toolcycle._batch import run_batch
from toolcycle._calls import parse_tool_call
from toolcycle._definitions import definition
from toolcycle._dispatch import REFUSED, refusal, resolve
from toolcycle._inflight import wait_for
from toolcycle._invoke import Invoker, InvokeTimeoutError
from toolcycle._names import FORMATS
from toolcycle._portal import Deadline
from toolcycle._results import Outcome, build_result, check_input
from toolcycle._schemas import drop_absent_nulls
from toolcycle.approvals import (
    ApprovalDecision,
    ApprovalLedger,
    ApprovalRequest,
    MemoryApprovalLedger,
    needs_approval,
)
from toolcycle.cache import ToolLifecycleCache
from toolcycle.callables import wrap
from toolcycle.cancellation import CancellationToken
from toolcycle.capabilities import check_capabilities, is_allowed
from toolcycle.context import (
    ToolExecutionContext,
    _CallScope,
    _start_collecting,
    _stop_collecting,
)
from toolcycle.errors import (
    ToolAccessDeniedError,
    ToolCancelledError,
    ToolCheckpointRequiredError,
    ToolDeactivationError,
    ToolNotFoundError,
    ToolRegistrationError,
    ToolRuntimeError,
    ToolSchemaValidationError,
    ToolSkippedWarning,
    error_text,
)
from toolcycle.models import (
    ApprovalRecord,
    BoundResource,
    Change,
    PendingApproval,
    ProviderFormat,
    ToolCall,
    ToolDescriptor,
    ToolResult,
    _detached,
    _trusted,
)
from toolcycle.protocols import ToolInstance, ToolSource
from toolcycle.redaction import RedactionPolicy
from toolcycle.tracing import (
    CallRecord,
    StructlogTracer,
    TraceListener,
    Tracer,
    TraceRecorder,
    get_logger,
    lifecycle_event,
)
from toolcycle.validation import CompiledSchema, SchemaCompiler, ValidationLimits

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping

    from toolcycle._inflight import Flight
    from toolcycle._types import Clock, JSONSchema
    from toolcycle.approvals import ApprovalRule, Approver
    from toolcycle.instrumentation import CallObserver, Instrumentation

    class _PlanOptions(TypedDict, total=False):
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

    from toolcycle.models import ProgressEvent, ToolExecutionTrace, TraceStatus

__all__ = ["ToolRuntime"]

_log = get_logger("toolcycle.runtime")


@dataclass(slots=True, frozen=True)
class _Entry:
    """A registered tool with everything that can be computed before its first call."""

    descriptor: ToolDescriptor
    instance: ToolInstance
    input: CompiledSchema
    output: CompiledSchema | None
    loop: asyncio.AbstractEventLoop | None = None
    """The tool's own event loop (its ``event_loop`` attribute), if it has one."""
    registered_timeout: float | None = None
    """The limit given to ``register`` (or ``register_source``) for this tool."""
    timeout: float | None = field(init=False)
    """The smaller of the descriptor's and the registered limit."""
    coroutine: bool = field(init=False)
    """Whether the tool's ``execute`` is an ``async def``."""

    def __post_init__(self) -> None:
        # Worked out once here rather than on every call (the dataclass is frozen).
        object.__setattr__(
            self, "timeout", _smaller(self.descriptor.timeout, self.registered_timeout)
        )
        object.__setattr__(self, "coroutine", inspect.iscoroutinefunction(self.instance.execute))


@dataclass(slots=True)
class _SourceEntry:
    """A registered source and the names its tools were registered under."""

    source: ToolSource
    names: list[str]
    skip: bool
    timeout: float | None = None


@dataclass(slots=True)
class _Call:
    """One call on its way through the pipeline."""

    name: str
    ctx: ToolExecutionContext
    record: CallRecord
    traced: bool = True
    """False for an explicit ``activate``, which is not a call and leaves no trace."""
    observer: CallObserver | None = None
    """The instrumentation's watcher of this call, when the runtime has one."""
    scope: _CallScope | None = None
    """What the running call collects (changes, progress, its own token)."""
    trace: ToolExecutionTrace | None = None
    result: ToolResult | None = None
    approved: bool = False
    """The call was approved before it started (``resume``): ask nobody again."""
    tool_call_id: str | None = None
    """The model's id of the call, when it came through ``call``."""
    arguments: Any = None
    """The validated arguments, kept only for an observer that records payloads."""
    flight: Flight | None = None
    """The call in its plan's calls in flight, once its checks have passed."""


_DEFAULT_REDACTION = RedactionPolicy()
_INF = float("inf")


class ToolRuntime:
    """Drives tools through discover, activate, execute and deactivate, plan by plan.

    Args:
        strict_output: fail a call whose output does not match its output schema
            (by default the mismatch is logged and recorded in the trace only).
        max_result_bytes: the largest output, as compact UTF-8 JSON, a result
            carries (1 MiB by default; None for no limit). A larger output is
            replaced by the start of its JSON text and a marker, the result is
            flagged ``truncated``, and the trace records both sizes. Output
            validation sees the whole output, before the cut.
        auto_activate: activate a tool on its first call in a plan. When False,
            a call of a tool not yet activated with ``activate`` raises
            `ToolNotActivatedError`.
        schema_documents: schemas that ``$ref`` may point to, by URI; nothing is
            ever retrieved over the network or from disk.
        limits: caps on schema and value sizes; see `ValidationLimits`.
        validator: the JSON Schema engine: ``"jsonschema-rs"`` (extra
            ``toolcycle[fast]``, many times faster), ``"jsonschema"`` (pure Python,
            always installed) or ``"auto"``, the default, which is the first when
            it is installed. Both accept the same schemas and report problems the
            same way; `ToolRuntime.validator` says which one is in use.
        tracer: where traces go besides the listeners; a `StructlogTracer` (silent
            until the host configures logging) by default.
        keep_traces: how many of the latest traces `recent_traces` returns, kept
            in a bounded ring buffer (the oldest drop out). 0, the default,
            keeps none: the runtime then holds nothing of a call once it returns.
        deactivate_timeout: seconds one ``deactivate`` may take at plan end before
            it is abandoned and reported; None waits for ever. A sync
            ``deactivate`` with a timeout runs on a helper thread.
        activate_timeout: seconds one ``activate`` may take; past it the call
            raises `ToolActivationError` (an async ``activate`` is cancelled, a
            sync one is left to finish on its helper thread and deactivated
            if it succeeds late). None, the default, waits for ever.
        redaction: which argument values are secret (see `RedactionPolicy`):
            they never appear in results' errors, validation messages, traces
            or the logs the tracer writes; the tool still receives them. None
            turns redaction off.
        abandon_timeout: seconds, in total, that ending a plan waits for sync
            calls it abandoned at their timeout to finish before deactivating
            the plan's tools; None waits for ever. Those still running then are
            logged as ``tool.abandoned_still_running``.
        drain_timeout: seconds, in total, that ending a plan waits for its calls
            still in flight (after cancelling their call tokens, and the async
            ones' tasks) before deactivating the plan's tools; 5 by default,
            None waits for ever, 0 does not wait. Calls still running then are
            left to finish on their own, logged as ``plan.calls_abandoned``,
            and their traces say ``abandoned``.
        instrumentation: told of every call, activation and deactivation, for
            an observability backend (see `toolcycle.otel.OpenTelemetry`);
            None, the default, costs nothing.
        approval_ledger: where ``resume`` claims each deferred call before it
            runs it, so that none runs twice; in memory by default. Share a
            `FileApprovalLedger` between processes that resume the same calls.
        max_workers: size of the thread pool that runs sync tools for ``aexecute``.
        clock: wall-clock seconds since the epoch, for trace timestamps.
        timer: monotonic seconds, for trace durations.
    """

    def __init__(
        self,
        *,
        strict_output: bool = False,
        auto_activate: bool = True,
        max_result_bytes: int | None = 1_048_576,
        schema_documents: Mapping[str, JSONSchema] | None = None,
        limits: ValidationLimits | None = None,
        validator: Literal["auto", "jsonschema", "jsonschema-rs"] = "auto",
        tracer: Tracer | None = None,
        keep_traces: int = 0,
        deactivate_timeout: float | None = 30.0,
        activate_timeout: float | None = None,
        abandon_timeout: float | None = 5.0,
        drain_timeout: float | None = 5.0,
        redaction: RedactionPolicy | None = _DEFAULT_REDACTION,
        instrumentation: Instrumentation | None = None,
        approval_ledger: ApprovalLedger | None = None,
        max_workers: int = 8,
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
    ) -> None:
        self.strict_output = strict_output
        self.max_result_bytes = max_result_bytes
        self.redaction = redaction
        self.auto_activate = auto_activate
        self._compiler = SchemaCompiler(schema_documents, limits=limits, backend=validator)
        self._traces = TraceRecorder(
            tracer if tracer is not None else StructlogTracer(),
            clock=clock,
            timer=timer,
            keep=keep_traces,
        )
        self._deactivate_timeout = deactivate_timeout
        self._lock = threading.RLock()
        self._tools: dict[str, _Entry] = {}
        self._cache = ToolLifecycleCache()
        self._invoker = Invoker(max_workers=max_workers)
        self._instrumentation = instrumentation
        self._ledger = approval_ledger if approval_ledger is not None else MemoryApprovalLedger()
        self._activator = Activator(
            self._cache, self._invoker, deactivate_timeout, activate_timeout, instrumentation
        )
        self._sources: list[_SourceEntry] = []
        self._closed = False
        self._abandon_timeout = abandon_timeout
        if drain_timeout is not None and not drain_timeout >= 0:
            raise ValueError(
                f"drain_timeout must be seconds (0 or more) or None, got {drain_timeout!r}"
            )
        self._drain_timeout = drain_timeout

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def cache(self) -> ToolLifecycleCache:
        """The per-plan activation cache (read it; the runtime drives it)."""
        return self._cache

    @property
    def validator(self) -> str:
        """The JSON Schema engine in use: ``"jsonschema"`` or ``"jsonschema-rs"``."""
        return self._compiler.backend

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has been called."""
        return self._closed

    # -- registration -------------------------------------------------------------

    def register(
        self, instance: ToolInstance | Callable[..., Any], *, timeout: float | None = None
    ) -> ToolDescriptor:
        """Register a tool: discover it once and compile both of its schemas.

        A plain callable is wrapped with `toolcycle.wrap` first (with its safe
        capability defaults); decorate it with ``@tool`` to set options.
        ``timeout`` bounds every call of the tool, besides its descriptor's own
        ``timeout`` (the smaller applies).

        Returns:
            The descriptor the tool will be known by.

        Raises:
            TypeError: ``instance`` is neither a `ToolInstance` nor callable.
            ToolDefinitionError: a callable cannot be described as a tool.
            ToolRegistrationError: ``discover()`` raised or did not return a
                `ToolDescriptor`, the name is already registered, or the tool's
                ``event_loop`` attribute is not an event loop.
            ToolSchemaValidationError: a schema is not a usable 2020-12 schema.
            ValueError: ``timeout`` is not positive.
        """
        self._check_open()
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
        if not isinstance(instance, ToolInstance) and callable(instance):
            instance = wrap(instance)
        if not isinstance(instance, ToolInstance):
            raise TypeError(
                f"{instance!r} is not a tool: it needs discover, activate, execute and "
                "deactivate methods (see toolcycle.ToolInstance)"
            )
        try:
            descriptor = instance.discover()
        except Exception as exc:
            raise ToolRegistrationError(
                f"discover() of {type(instance).__name__} raised {type(exc).__name__}: "
                f"{error_text(exc)}"
            ) from exc
        if not isinstance(descriptor, ToolDescriptor):
            raise ToolRegistrationError(
                f"discover() of {type(instance).__name__} returned {type(descriptor).__name__}; "
                "it must return a toolcycle.ToolDescriptor"
            )
        name = descriptor.name
        loop = getattr(instance, "event_loop", None)
        if loop is not None and not isinstance(loop, asyncio.AbstractEventLoop):
            raise ToolRegistrationError(
                f"the event_loop attribute of tool {name!r} is a {type(loop).__name__}, "
                "not an asyncio event loop",
                tool_name=name,
            )
        compiled_input = self._compiler.compile(
            descriptor.input_schema, kind="input", tool_name=name
        )
        compiled_output = (
            None
            if descriptor.output_schema is None
            else self._compiler.compile(descriptor.output_schema, kind="output", tool_name=name)
        )
        descriptor = _detached(descriptor)  # later edits by the tool change nothing
        with self._lock:
            if name in self._tools:
                raise ToolRegistrationError(
                    f"a tool named {name!r} is already registered; unregister it first or "
                    "give the new one another name",
                    tool_name=name,
                )
            self._tools[name] = _Entry(
                descriptor, instance, compiled_input, compiled_output, loop, timeout
            )
        return descriptor

    def register_source(
        self,
        source: ToolSource,
        *,
        skip_invalid_schemas: bool | None = None,
        timeout: float | None = None,
    ) -> list[ToolDescriptor]:
        """Register every tool of a source, all or nothing, and keep the source.

        The runtime keeps the source for two optional duties a source may have:
        when its ``stale`` attribute is true (an MCP server announced a changed
        tool list), the next ``new_context``, ``plan`` or ``aplan`` registers its
        tools afresh; and ``close()`` calls its ``close()`` method, if it has one.

        Args:
            source: yields the tools.
            skip_invalid_schemas: instead of failing, skip each tool whose schema
                is unusable (invalid, unknown dialect, unresolvable reference,
                unsafe pattern) with a `ToolSkippedWarning` naming the tool and
                the problem, and register the rest. None (the default) uses the
                source's own ``skip_invalid_schemas`` attribute, False if it has
                none; sources of schemas nobody vouches for, such as MCP servers,
                set it.
            timeout: bounds every call of the source's tools, as the
                ``timeout`` of `register` (kept when the source is registered
                afresh).

        Returns:
            The descriptors registered, in the source's order.

        Raises:
            ToolRegistrationError: as `register`; tools of the source registered
                before the failure are unregistered again (likewise for the other
                errors `register` raises, and for what ``source.tools()`` raises).
        """
        self._check_open()
        skip = (
            bool(getattr(source, "skip_invalid_schemas", False))
            if skip_invalid_schemas is None
            else skip_invalid_schemas
        )
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
        registered = self._register_all(source, skip, _warn_skipped, timeout)
        with self._lock:
            names = [d.name for d in registered]
            self._sources.append(_SourceEntry(source, names, skip, timeout))
        return registered

    def _register_all(
        self,
        source: ToolSource,
        skip: bool,
        on_skip: Callable[[str], None],
        timeout: float | None = None,
    ) -> list[ToolDescriptor]:
        registered: list[ToolDescriptor] = []
        try:
            for instance in source.tools():
                try:
                    registered.append(self.register(instance, timeout=timeout))
                except ToolSchemaValidationError as error:
                    if not skip:
                        raise
                    on_skip(f"tool {error.tool_name!r} was skipped: {error}")
        except BaseException:
            for descriptor in registered:
                self.unregister(descriptor.name)
            raise
        return registered

    def _refresh_stale_sources(self) -> None:
        """Register afresh the tools of every source that says its list changed."""
        with self._lock:
            stale = [entry for entry in self._sources if getattr(entry.source, "stale", False)]
            for entry in stale:
                for name in entry.names:
                    self._tools.pop(name, None)
                try:
                    registered = self._register_all(
                        entry.source, entry.skip, _log_skipped, entry.timeout
                    )
                except Exception as exc:
                    # The old tools stay unknown rather than wrong; the source is
                    # asked again before the next plan.
                    entry.names = []
                    _log.warning("source.refresh_failed", source=repr(entry.source), error=str(exc))
                    continue
                entry.names = [d.name for d in registered]

    def unregister(self, name: str) -> ToolDescriptor:
        """Remove a tool; plans that activated it still deactivate it when they end.

        Raises:
            ToolNotFoundError: no tool has that name.
        """
        with self._lock:
            entry = self._tools.pop(name, None)
        if entry is None:
            raise ToolNotFoundError(f"no tool named {name!r} is registered", tool_name=name)
        return entry.descriptor

    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        """The descriptors of every registered tool, in order of registration."""
        with self._lock:
            return tuple(entry.descriptor for entry in self._tools.values())

    def descriptor(self, name: str) -> ToolDescriptor:
        """The descriptor of one tool.

        Raises:
            ToolNotFoundError: no tool has that name.
        """
        return self._entry(name).descriptor

    def recent_traces(self) -> tuple[ToolExecutionTrace, ...]:
        """The latest traces, oldest first, up to ``keep_traces`` of them (none by default)."""
        return self._traces.recent()

    def add_trace_listener(self, listener: TraceListener) -> Callable[[], None]:
        """Call ``listener`` with every trace; returns a function that removes it.

        A listener that raises is logged and never breaks a call.
        """
        return self._traces.add_listener(listener)

    # -- plans ----------------------------------------------------------------------

    def new_context(
        self,
        plan_id: str | None = None,
        *,
        read_only: bool = False,
        requires_checkpoint: bool = False,
        resources: Iterable[BoundResource] = (),
        cancellation_token: CancellationToken | None = None,
        metadata: Mapping[str, Any] | None = None,
        on_progress: Callable[[ProgressEvent], object] | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        approver: Approver | None = None,
        approval: ApprovalRule = "writes",
    ) -> ToolExecutionContext:
        """Create a context for a new plan, tracked so that ``close()`` ends it.

        ``on_progress`` receives a `ProgressEvent` for every progress report of
        the plan's calls, ``timeout`` bounds each of them and ``idle_timeout``
        bounds the quiet between their progress reports; ``approver`` is asked
        before the calls ``approval`` selects (see `ToolExecutionContext`).

        Sources whose tool list changed since they were registered (see
        `register_source`) are registered afresh first, so the new plan sees
        their current tools.

        Raises:
            ToolRuntimeError: the runtime is closed, or a plan with this
                ``plan_id`` is still open (its activations would be shared).
        """
        self._check_open()
        if self._sources:
            self._refresh_stale_sources()
        ctx = ToolExecutionContext(
            plan_id or f"plan-{uuid.uuid4().hex[:12]}",
            read_only=read_only,
            requires_checkpoint=requires_checkpoint,
            resources=tuple(resources),
            cancellation_token=cancellation_token or CancellationToken(),
            metadata=dict(metadata or {}),
            on_progress=on_progress,
            timeout=timeout,
            idle_timeout=idle_timeout,
            approver=approver,
            approval=approval,
        )
        self._cache.track(ctx)
        lifecycle_event(
            "plan.started",
            plan_id=ctx.plan_id,
            read_only=ctx.read_only,
            requires_checkpoint=ctx.requires_checkpoint,
        )
        return ctx

    @contextmanager
    def plan(
        self, plan_id: str | None = None, **options: Unpack[_PlanOptions]
    ) -> Iterator[ToolExecutionContext]:
        """A plan scope: yields a new context and ends the plan on exit, however it exits.

        Takes the same arguments as `new_context`.
        """
        ctx = self.new_context(plan_id, **options)
        try:
            yield ctx
        finally:
            self.end_plan(ctx)

    @asynccontextmanager
    async def aplan(
        self, plan_id: str | None = None, **options: Unpack[_PlanOptions]
    ) -> AsyncIterator[ToolExecutionContext]:
        """Async plan scope: ends the plan with ``aend_plan`` on exit, also on cancellation.

        Takes the same arguments as `new_context`.
        """
        ctx = self.new_context(plan_id, **options)
        try:
            yield ctx
        finally:
            await self.aend_plan(ctx)

    def end_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """End the plan: stop its calls in flight, then deactivate its tools, newest first.

        From the moment it is called, new calls of the plan are refused with
        `ToolRuntimeError`. Calls still in flight have their call token
        cancelled (a coroutine stage is cancelled too) and are waited for, up to
        ``drain_timeout`` seconds in total; those still running then are left
        to finish on their own, and their traces say ``abandoned``. Sync calls
        left running at their own timeout are waited for up to
        ``abandon_timeout``. Then every tool activated in the plan is
        deactivated exactly once, the most recently activated first.

        Never raises for a failing or hanging ``deactivate``: each is logged and
        returned. Ending an ended plan (or one that is being ended) does nothing.
        """
        flights = self._cache.close(ctx)
        if flights is None:
            return []
        if flights:
            self._drain(ctx, flights)
        return self._end(ctx)

    def _end(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        errors = self._cache.end_plan(ctx, self._activator.teardown)
        _log_deactivation_errors(errors)
        lifecycle_event("plan.ended", plan_id=ctx.plan_id, errors=len(errors))
        return errors

    async def aend_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """Async twin of `end_plan`: async ``deactivate`` methods are awaited here.

        The wait for calls in flight runs on a worker thread, so the event loop
        keeps running them meanwhile. Cancelled while it waits, it still ends the
        plan (shielded), then lets the cancellation go on.
        """
        flights = self._cache.close(ctx)
        if flights is None:
            return []
        if flights:
            here = _here()
            try:
                await asyncio.to_thread(self._drain, ctx, flights, here)
            except asyncio.CancelledError:
                await asyncio.shield(self._aend_plan(ctx))
                raise
        return await self._aend_plan(ctx)

    async def _aend_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        errors = await self._cache.aend_plan(ctx, self._activator.ateardown)
        _log_deactivation_errors(errors)
        lifecycle_event("plan.ended", plan_id=ctx.plan_id, errors=len(errors))
        return errors

    def _drain(
        self, ctx: ToolExecutionContext, flights: tuple[Flight, ...], here: object = None
    ) -> None:
        """Stop the plan's calls in flight and wait for them, within the limits.

        A call made from the thread or task that ends the plan (a tool ending its
        own plan) is not waited for: it could only finish once this returns.
        """
        here = here if here is not None else _here()
        waiting = [f for f in flights if f.owner != here or f.left is not None]
        reason = f"plan {ctx.plan_id!r} ended while the call ran"
        lifecycle_event("plan.draining", plan_id=ctx.plan_id, calls=len(waiting))
        for flight in waiting:
            flight.cancel(reason)
        running = wait_for(waiting, self._drain_timeout, live=True)
        for flight in running:
            flight.record.abandoned = True
        if running:
            _log.warning(
                "plan.calls_abandoned",
                plan_id=ctx.plan_id,
                count=len(running),
                tools=sorted({flight.record.tool_name for flight in running}),
            )
        # Sync calls given up on at their own timeout whose threads run on.
        left = [flight for flight in waiting if flight.left is not None]
        stuck = wait_for(left, self._abandon_timeout, live=False) if left else []
        if stuck:
            _log.warning("tool.abandoned_still_running", plan_id=ctx.plan_id, count=len(stuck))

    def close(self) -> None:
        """End every open plan, close the sources, stop the runtime's thread and pool.

        A registered source with a ``close()`` method (an MCP server with
        ``scope="runtime"``) is closed after the plans end; an error it raises
        is logged. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sources, self._sources = self._sources, []
        for ctx in self._cache.open_plans():
            self.end_plan(ctx)
        for entry in sources:
            close = getattr(entry.source, "close", None)
            if callable(close):
                try:
                    close()
                except Exception as exc:
                    _log.warning("source.close_failed", source=repr(entry.source), error=str(exc))
        self._invoker.close()

    # -- execute ----------------------------------------------------------------------

    def execute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Run one call through the pipeline and return its result.

        Failures of the call (invalid input, a tool that raises, bad output) come
        back as a failed `ToolResult`; misuse and denials raise.

        Args:
            name: the registered tool.
            params: the arguments; never mutated.
            ctx: the plan's context.
            timeout: seconds before the call is abandoned with status
                ``timed_out``. An async tool is cancelled then; a sync tool runs
                on a daemon thread and is left to finish on its own (Python
                cannot stop a thread).
            idle_timeout: seconds the call may go without a progress report
                before it is stopped the same way; each report restarts the
                count, and ``timeout`` still caps the whole call.

        ``timeout`` also covers the tool's first activation in the plan, when
        this call triggers it (or waits for another call's).

        Raises:
            ToolNotFoundError: no tool has that name.
            ToolRuntimeError: the plan has ended (or is ending) or the runtime is
                closed.
            ToolCancelledError: the plan is cancelled, before or during the call,
                or ends during it (see `end_plan`).
            ToolAccessDeniedError, ToolCheckpointRequiredError: the plan may not
                run this tool.
            ToolActivationError: the tool's ``activate`` failed.
            ValueError: ``timeout`` or ``idle_timeout`` is not a positive number.
        """
        return self._execute(name, params, ctx, timeout, idle_timeout)

    async def aexecute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `execute`.

        Async tools are awaited on the caller's loop and cancelled the moment the
        plan's token is; sync tools run on the runtime's thread pool, so they never
        block the loop. Cancelling the awaiting task cancels the call and is
        re-raised as ``asyncio.CancelledError``.
        """
        return await self._aexecute(name, params, ctx, timeout, idle_timeout)

    def _execute(
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
    ) -> ToolResult:
        """Run one call; with ``refuse``, a refusal (`REFUSED`) becomes a failed result.

        That result carries the refusal's trace: ``call`` answers the model with it.
        """
        if timeout is not None or idle_timeout is not None:
            _check_limits(timeout, idle_timeout)
        call = self._start(name, ctx, tool_call_id, approval=approval)
        if call.observer is None and not refuse:
            return self._pipeline(call, params, timeout, idle_timeout)
        try:
            result = self._pipeline(call, params, timeout, idle_timeout)
            call.trace, call.result = result.trace, result
            return result
        except REFUSED as exc:
            if not refuse:
                raise
            return refusal(None, str(exc), type(exc).__name__, call.trace)
        finally:
            if call.observer is not None:
                self._observed(call)

    async def _aexecute(
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
    ) -> ToolResult:
        if timeout is not None or idle_timeout is not None:
            _check_limits(timeout, idle_timeout)
        call = self._start(name, ctx, tool_call_id, approval=approval)
        if call.observer is None and not refuse:
            return await self._apipeline(call, params, timeout, idle_timeout)
        try:
            result = await self._apipeline(call, params, timeout, idle_timeout)
            call.trace, call.result = result.trace, result
            return result
        except REFUSED as exc:
            if not refuse:
                raise
            return refusal(None, str(exc), type(exc).__name__, call.trace)
        finally:
            if call.observer is not None:
                self._observed(call)

    def _pipeline(
        self, call: _Call, params: Any, timeout: float | None, idle_timeout: float | None
    ) -> ToolResult:
        entry = self._check(call)
        flight = call.flight = self._admit(call, threading.get_ident())
        try:
            if self._approval_needed(call, entry):
                # Validate and ask first, so that a denied or deferred call starts nothing.
                data = self._validate_input(call, entry, params)
                if isinstance(data, ToolResult):
                    return data
                verdict = self._approve(call, entry, data)
                if verdict is not None:
                    return verdict
                # The call's time starts once it may run, not while a person decides.
                before, limit = _deadline(call, entry, timeout, idle_timeout)
                late = self._ensure_active(call, entry, before)
            else:
                before, limit = _deadline(call, entry, timeout, idle_timeout)
                late = self._ensure_active(call, entry, before)
                data = None if late is not None else self._validate_input(call, entry, params)
                if isinstance(data, ToolResult):
                    return data
            if late is not None:
                return self._finish(call, entry, late, [])
            call.scope, collecting = _start_collecting(call.ctx, call.record)
            flight.attach(call.scope)
            try:
                outcome = self._run_sync(call, entry, data, limit)
                return self._finish(call, entry, outcome, call.scope.changes)
            finally:
                _stop_collecting(call.scope, collecting)
        finally:
            flight.group.release(flight)

    async def _apipeline(
        self, call: _Call, params: Any, timeout: float | None, idle_timeout: float | None
    ) -> ToolResult:
        entry = self._check(call)
        flight = call.flight = self._admit(call, asyncio.current_task())
        try:
            if self._approval_needed(call, entry):
                data = self._validate_input(call, entry, params)
                if isinstance(data, ToolResult):
                    return data
                verdict = await self._aapprove(call, entry, data)
                if verdict is not None:
                    return verdict
                before, limit = _deadline(call, entry, timeout, idle_timeout)
                late = await self._aensure_active(call, entry, before)
            else:
                before, limit = _deadline(call, entry, timeout, idle_timeout)
                late = await self._aensure_active(call, entry, before)
                data = None if late is not None else self._validate_input(call, entry, params)
                if isinstance(data, ToolResult):
                    return data
            if late is not None:
                return self._finish(call, entry, late, [])
            call.scope, collecting = _start_collecting(call.ctx, call.record)
            flight.attach(call.scope)
            try:
                outcome = await self._run_async(call, entry, data, limit)
                return self._finish(call, entry, outcome, call.scope.changes)
            finally:
                _stop_collecting(call.scope, collecting)
        finally:
            flight.group.release(flight)

    def _admit(self, call: _Call, owner: object) -> Flight:
        """Count the call among its plan's calls in flight; refused once the plan ends."""
        try:
            return self._cache.admit(call.ctx, call.record, owner)
        except ToolRuntimeError as error:
            error._set_context(call.name, call.ctx.plan_id)
            self._emit(call, "error", error=error)
            raise

    # -- the agent loop: definitions for a model, and its tool calls -----------------------

    def tool_definitions(
        self,
        ctx: ToolExecutionContext,
        *,
        format: ProviderFormat = "openai",
        strict: bool = False,
    ) -> list[dict[str, Any]]:
        """The definitions of the tools the plan of ``ctx`` may run, for a model.

        A tool the plan would refuse (one that writes, in a read-only plan; one
        that is not checkpointable, in a checkpoint plan) is not offered. Names a
        provider would not accept are mapped to ones it does, reversibly:
        `call` maps them back.

        Args:
            ctx: the plan's context.
            format: ``"openai"``, ``"openai-responses"``, ``"anthropic"``,
                ``"gemini"`` or ``"mcp"``.
            strict: for the OpenAI formats, offer strict mode with each schema
                rewritten to what it accepts, where that keeps its meaning.

        Raises:
            ValueError: ``format`` is not one of the five.
        """
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
        return [
            definition(descriptor, format, strict=strict)
            for descriptor in self.descriptors()
            if is_allowed(descriptor, ctx)
        ]

    def call(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Run a model's tool call, in any provider's format, and answer it.

        Nothing the model got wrong raises: an unreadable call, an unknown tool,
        malformed JSON, invalid arguments, a tool the plan may not run or that
        fails to activate each give a failed result whose error says what to do.
        The result carries the call (`ToolResult.call`), so
        ``result.to_message()`` builds the provider's tool-result message.

        Args:
            tool_call: the call as it arrived (see the agent-loop page for the
                shapes), or a `ToolCall`.
            ctx: the plan's context.
            timeout: as for `execute`.
            idle_timeout: as for `execute`.

        A call in an ended plan is the caller's mistake, not the model's: it
        raises, whatever tool the call names.

        Raises:
            ToolCancelledError: the plan is cancelled, before or during the call,
                or ends during it.
            ToolRuntimeError: the plan has ended or the runtime is closed.
        """
        prepared = self._prepare_call(tool_call, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        call, name, arguments = prepared
        result = self._execute(name, arguments, ctx, timeout, idle_timeout, call.id, refuse=True)
        return _answering(result, call)

    async def acall(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `call`."""
        prepared = self._prepare_call(tool_call, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        return await self._acall_prepared(
            *prepared, ctx=ctx, timeout=timeout, idle_timeout=idle_timeout
        )

    def call_many(
        self,
        tool_calls: Iterable[Any],
        ctx: ToolExecutionContext,
        *,
        max_concurrency: int | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> list[ToolResult]:
        """Run a model's batch of tool calls concurrently; one result per call, in order.

        Runs `acall_many` on the runtime's loop thread: async tools as tasks,
        sync tools on the runtime's thread pool.

        Raises:
            ToolRuntimeError: called from the runtime's own loop thread, or the
                plan has ended (before the batch or during it) or the runtime is
                closed.
        """
        return self._invoker.portal.call(
            self.acall_many(
                tool_calls,
                ctx,
                max_concurrency=max_concurrency,
                timeout=timeout,
                idle_timeout=idle_timeout,
            )
        )

    async def acall_many(
        self,
        tool_calls: Iterable[Any],
        ctx: ToolExecutionContext,
        *,
        max_concurrency: int | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> list[ToolResult]:
        """Run a model's batch of tool calls concurrently; one result per call, in order.

        Each call is answered as by `acall`, and no call's failure loses another
        call's result. A tool whose capability says ``sequential=True`` runs
        alone: the calls before it finish first and the calls after it start
        once it is done, so sequential calls keep the model's order. The plan's
        token is checked just before each call starts; once it is cancelled,
        nothing new starts, and each call that did not finish gets a failed
        result with ``error_type="ToolCancelledError"`` (check
        ``ctx.cancellation_token.is_cancelled`` after the batch).

        Args:
            tool_calls: the calls as they arrived, in the model's order.
            ctx: the plan's context.
            max_concurrency: the most calls running at once; None for no limit
                (sync tools are bounded by the runtime's pool anyway).
            timeout: for each call, as for `execute`.
            idle_timeout: for each call, as for `execute`.

        Raises:
            ValueError: ``max_concurrency`` is below 1.
            ToolRuntimeError: the plan has ended (before the batch or during it)
                or the runtime is closed.
        """
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        prepared = [self._prepare_call(tool_call, ctx) for tool_call in tool_calls]

        async def run(call: ToolCall, name: str, arguments: dict[str, Any]) -> ToolResult:
            return await self._acall_prepared(
                call, name, arguments, ctx=ctx, timeout=timeout, idle_timeout=idle_timeout
            )

        return await run_batch(
            prepared,
            run=run,
            sequential=lambda name: self._entry(name).descriptor.capability.sequential,
            token=ctx.cancellation_token,
            max_concurrency=max_concurrency,
        )

    async def _acall_prepared(
        self,
        call: ToolCall,
        name: str,
        arguments: dict[str, Any],
        *,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        result = await self._aexecute(
            name, arguments, ctx, timeout, idle_timeout, call.id, refuse=True
        )
        return _answering(result, call)

    def _masked(self, call: ToolCall, name: str) -> ToolCall:
        """The call as a result carries it: its secret arguments replaced.

        A call to no registered tool has no schema to tell its secrets by, so
        none of its values is kept (see `RedactionPolicy.masked_without_schema`).
        """
        if self.redaction is None or not call.arguments:
            return call
        entry = self._tools.get(name)
        if entry is None:
            masked = self.redaction.masked_without_schema(call.arguments)
        else:
            masked = self.redaction.masked(call.arguments, entry.descriptor.input_schema)
        return call if masked is call.arguments else call.model_copy(update={"arguments": masked})

    def _prepare_call(
        self, raw: Any, ctx: ToolExecutionContext
    ) -> tuple[ToolCall, str, dict[str, Any]] | ToolResult:
        """The call, the tool it means and its arguments; or the refusal to answer it with.

        The call comes back with its secret arguments masked, as every result
        carries it (a batch answers calls it never ran with it too); the
        arguments to run with come back as sent.
        """
        self._check_open()
        call, problem = parse_tool_call(raw)
        if isinstance(ctx, ToolExecutionContext) and ctx.ended:
            self._refuse_ended(call, ctx)
        if problem is not None:
            shown = None if call is None else self._masked(call, call.name)
            return self._refused(shown, ctx, problem, "ToolCallError", "invalid_input")
        assert call is not None
        name: str | None = call.name
        if name not in self._tools:  # a dict lookup needs no lock; listing the names does
            with self._lock:
                names = list(self._tools)
            name = resolve(call.name, call.format, names)
        if name is None:
            message = f"there is no tool named {call.name!r}; call one of the tools you were given"
            return self._refused(
                self._masked(call, call.name), ctx, message, "ToolNotFoundError", "error"
            )
        arguments = call.arguments
        if call.format in {"openai", "openai-responses"}:
            # Strict mode sends null for an optional property that was left out.
            schema = self._entry(name).descriptor.input_schema
            depth = self._compiler.limits.max_instance_depth
            arguments = drop_absent_nulls(arguments, schema, max_depth=depth)
        return self._masked(call, name), name, arguments

    def _refuse_ended(self, call: ToolCall | None, ctx: ToolExecutionContext) -> NoReturn:
        """A model's call in an ended plan is the caller's mistake: trace it, and raise."""
        name, call_id = (call.name, call.id) if call is not None else ("", None)
        record = self._start(name, ctx, call_id)
        error = ToolRuntimeError(
            f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
            tool_name=name or None,
            plan_id=ctx.plan_id,
        )
        self._emit(record, "error", error=error)
        if record.observer is not None:
            self._observed(record)
        raise error

    def _refused(
        self,
        call: ToolCall | None,
        ctx: ToolExecutionContext,
        message: str,
        error_type: str,
        status: TraceStatus,
    ) -> ToolResult:
        """Answer a model's call that never reached a tool, with a trace of its own.

        A model that names no tool or an unknown one is worth seeing in the
        traces (and spans) like any other failed call; the trace names the tool
        as the model wrote it ("" when it named none).
        """
        name, call_id = (call.name, call.id) if call is not None else ("", None)
        record = self._start(name, ctx, call_id)
        trace = self._emit(record, status, error_message=message, error_type=error_type)
        if record.observer is not None:
            self._observed(record)
        return refusal(call, message, error_type, trace)

    def activate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Activate a tool for the plan now, ahead of its first call; no-op if it is active.

        The same checks as ``execute`` run first (cancellation, capabilities), so
        a plan cannot activate a tool it may not run. No trace is recorded: an
        activation is not a call.

        Raises:
            ToolNotFoundError: no tool has that name.
            ToolRuntimeError: the plan has ended or the runtime is closed.
            ToolCancelledError: the plan is cancelled.
            ToolAccessDeniedError: the plan is read-only and the tool writes.
            ToolCheckpointRequiredError: the plan requires checkpoints and the tool
                is not checkpointable.
            ToolActivationError: the tool's ``activate`` failed.
        """
        call = self._start(name, ctx, traced=False)
        self._ensure_active(call, self._check(call), explicit=True)

    async def aactivate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Async twin of `activate`."""
        call = self._start(name, ctx, traced=False)
        await self._aensure_active(call, self._check(call), explicit=True)

    # -- pipeline steps (shared by execute and aexecute) --------------------------------

    def _ensure_active(
        self,
        call: _Call,
        entry: _Entry,
        deadline: Deadline | None = None,
        *,
        explicit: bool = False,
    ) -> Outcome | None:
        """Step 3 from sync code; a failure is traced, then raised.

        Returns:
            A timed-out outcome when the call's own limit passed while the tool
            was activating; None when the tool is active.
        """
        try:
            self._activator.ensure(
                call.ctx,
                call.name,
                entry.instance,
                on_demand=explicit or self.auto_activate,
                token=call.flight,
                deadline=deadline,
            )
        except CallTimedOut as exc:
            return Outcome(timed_out=True, reason=str(exc))
        except BaseException as exc:
            self._activation_failed(call, exc)
            raise
        if deadline is not None:
            call.record.active_at = time.monotonic()  # an idle limit counts from the run
        return None

    async def _aensure_active(
        self,
        call: _Call,
        entry: _Entry,
        deadline: Deadline | None = None,
        *,
        explicit: bool = False,
    ) -> Outcome | None:
        """Step 3 from async code; a failure is traced, then raised (see `_ensure_active`)."""
        try:
            await self._activator.aensure(
                call.ctx,
                call.name,
                entry.instance,
                on_demand=explicit or self.auto_activate,
                token=call.flight,
                deadline=deadline,
            )
        except CallTimedOut as exc:
            return Outcome(timed_out=True, reason=str(exc))
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._emit(call, "cancelled", error=exc)
                raise
            self._raise_cancelled(call, exc)
        except BaseException as exc:
            self._activation_failed(call, exc)
            raise
        if deadline is not None:
            call.record.active_at = time.monotonic()
        return None

    def _activation_failed(self, call: _Call, exc: BaseException) -> None:
        """Trace a failed step 3, converting a cancellation into ToolCancelledError."""
        if isinstance(exc, ToolCancelledError | asyncio.CancelledError):
            self._raise_cancelled(call, exc)
        if isinstance(exc, ToolRuntimeError):
            exc._set_context(exc.tool_name or call.name, exc.plan_id or call.ctx.plan_id)
            self._emit(call, "error", error=exc)
        else:  # KeyboardInterrupt, SystemExit
            self._emit(call, "cancelled", error=exc)

    def _emit(self, call: _Call, status: TraceStatus, **details: Any) -> ToolExecutionTrace | None:
        """Finish the call's trace, unless the call is an explicit activation."""
        if not call.traced:
            return None
        call.trace = self._traces.finish(call.record, status, **details)
        return call.trace

    def _start(
        self,
        name: str,
        ctx: ToolExecutionContext,
        tool_call_id: str | None = None,
        *,
        traced: bool = True,
        approval: ApprovalRecord | None = None,
    ) -> _Call:
        """Open the call's record (and its observer, if the runtime is instrumented).

        ``approval`` is the decision of a resumed call, made before it started.
        """
        if not isinstance(ctx, ToolExecutionContext):
            raise TypeError(f"ctx must be a ToolExecutionContext, got {type(ctx).__name__}")
        call = _Call(name, ctx, self._traces.start(name, ctx.plan_id), traced)
        call.tool_call_id = tool_call_id
        if approval is not None:
            call.record.approval = approval
            call.approved = True
        if traced:
            lifecycle_event(
                "tool.call_started", tool=name, plan_id=ctx.plan_id, call_id=call.record.call_id
            )
            if self._instrumentation is not None:
                call.observer = self._observe(call, tool_call_id)
        return call

    def _check(self, call: _Call) -> _Entry:
        """Steps 0-2: the tool exists, the plan is open, not cancelled, and allowed."""
        name, ctx = call.name, call.ctx
        entry = self._tools.get(name)
        if entry is None:
            error: ToolRuntimeError = ToolNotFoundError(
                f"no tool named {name!r} is registered; known tools: "
                + (", ".join(sorted(self._tools)[:20]) or "none"),
                tool_name=name,
                plan_id=ctx.plan_id,
            )
            self._emit(call, "error", error=error)
            raise error
        if self._closed or ctx.ended:
            error = ToolRuntimeError(
                "the runtime is closed"
                if self._closed
                else f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
                tool_name=name,
                plan_id=ctx.plan_id,
            )
            self._emit(call, "error", error=error)
            raise error
        token = ctx.cancellation_token
        if token.is_cancelled:
            self._raise_cancelled(call, None)
        try:
            check_capabilities(entry.descriptor, ctx)
        except (ToolAccessDeniedError, ToolCheckpointRequiredError) as denial:
            self._emit(call, "denied", error=denial)
            raise
        return entry

    def _raise_cancelled(self, call: _Call, cause: BaseException | None) -> NoReturn:
        token = call.ctx.cancellation_token
        if isinstance(cause, ToolCancelledError):
            error = cause
        elif token.is_cancelled:
            reason = token.reason
            error = ToolCancelledError(
                f"plan {call.ctx.plan_id!r} was cancelled" + (f": {reason}" if reason else ""),
                reason=reason,
            )
        elif call.flight is not None and call.flight.ended:
            error = ToolCancelledError(
                f"tool {call.name!r} was stopped: plan {call.ctx.plan_id!r} ended while it ran",
                reason=call.flight.reason,
            )
        else:  # the tool (or something it awaited) was cancelled, not the plan
            error = ToolCancelledError(f"tool {call.name!r} was cancelled while it ran")
        if error.tool_name is None:
            error._set_context(call.name, call.ctx.plan_id)
        self._emit(call, "cancelled", error=error)
        if cause is None or cause is error:
            raise error
        raise error from cause

    def _validate_input(self, call: _Call, entry: _Entry, params: Any) -> Any:
        """Step 4: return the normalised input, or a failed result explaining why not."""
        data = check_input(self._traces, call.record, entry.input, params, self.redaction)
        if call.observer is not None and not isinstance(data, ToolResult):
            call.arguments = data
        return data

    def _finish(
        self, call: _Call, entry: _Entry, outcome: Outcome, changes: list[Change]
    ) -> ToolResult:
        """Steps 6 and 7, and the trace."""
        return build_result(
            self._traces,
            call.record,
            call.ctx,
            entry.input,
            entry.output,
            outcome,
            changes,
            strict_output=self.strict_output,
            max_result_bytes=self.max_result_bytes,
        )

    # -- running the tool ---------------------------------------------------------------

    def _run_sync(
        self, call: _Call, entry: _Entry, data: dict[str, Any], timeout: float | Deadline | None
    ) -> Outcome:
        ctx = call.ctx
        try:
            output = self._invoker.call(
                entry.instance.execute,
                data,
                ctx,
                token=call.flight or ctx.cancellation_token,
                timeout=timeout,
                loop=entry.loop,
                coroutine=entry.coroutine,
            )
        except InvokeTimeoutError as exc:
            return self._timed_out(call, exc)
        except (ToolCancelledError, asyncio.CancelledError) as exc:
            self._raise_cancelled(call, exc)
        except Exception as exc:
            return Outcome(error=exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
            self._emit(call, "cancelled", error=exc)
            raise
        return Outcome(output)

    async def _run_async(
        self, call: _Call, entry: _Entry, data: dict[str, Any], timeout: float | Deadline | None
    ) -> Outcome:
        ctx = call.ctx
        try:
            output = await self._invoker.acall(
                entry.instance.execute,
                data,
                ctx,
                token=call.flight or ctx.cancellation_token,
                timeout=timeout,
                coroutine=entry.coroutine,
            )
        except InvokeTimeoutError as exc:
            return self._timed_out(call, exc)
        except ToolCancelledError as exc:
            self._raise_cancelled(call, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._emit(call, "cancelled", error=exc)
                raise
            self._raise_cancelled(call, exc)
        except Exception as exc:
            return Outcome(error=exc)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
            self._emit(call, "cancelled", error=exc)
            raise
        return Outcome(output)

    def _timed_out(self, call: _Call, exc: InvokeTimeoutError) -> Outcome:
        if call.scope is not None:
            call.scope.cancel(str(exc))  # a tool polling ctx.call_token stops
        straggler = exc.straggler
        if straggler is not None and call.flight is not None:
            # In flight until its thread ends: the plan's end waits for it.
            call.flight.leave(straggler.finished, straggler.when_done)
        return Outcome(timed_out=True, abandoned=exc.abandoned is not None, reason=str(exc))

    # -- approvals ------------------------------------------------------------------------

    def resume(
        self,
        pending: PendingApproval | str | dict[str, Any],
        decision: ApprovalDecision | bool,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Finish a deferred call with the decision it waited for.

        ``pending`` is a result's `PendingApproval` (or its JSON text or dict,
        as stored). An approval runs the call's exact recorded arguments in
        ``ctx`` (its checks, validation and activation as for `execute`, but
        no approver is asked); a denial returns a failed result. Either way the
        call is first claimed in the runtime's approval ledger, so it runs at
        most once, even if ``resume`` is called again or in another process
        sharing a `FileApprovalLedger`.

        Checked before the claim, so that the call stays resumable: the tool
        exists, the plan is open, and the plan may run the tool (a write
        resumed in a read-only plan raises `ToolAccessDeniedError` and can
        still be resumed in a plan that may write).

        Raises:
            ToolApprovalError: the pending record was changed, the decision
                defers or is bound to another call, or the call was resumed
                before.
            TypeError: ``pending``, ``decision`` or ``ctx`` is of the wrong kind.
            ToolNotFoundError: no such tool; refused before the claim.
            ToolAccessDeniedError: refused before the claim (see above).
            ToolCheckpointRequiredError: refused before the claim.
            ToolRuntimeError: the plan or the runtime is closed; refused before the claim.
            ToolCancelledError, ToolActivationError: as for `execute`.
        """
        record, chosen, approval = self._claim_resume(pending, decision, ctx)
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx)
        else:
            call_id = record.call.id if record.call is not None else None
            args = (record.tool_name, record.arguments, ctx, timeout, idle_timeout, call_id)
            result = self._execute(*args, approval)
        return result if record.call is None else result.model_copy(update={"call": record.call})

    async def aresume(
        self,
        pending: PendingApproval | str | dict[str, Any],
        decision: ApprovalDecision | bool,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `resume`."""
        record, chosen, approval = self._claim_resume(pending, decision, ctx)
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx)
        else:
            call_id = record.call.id if record.call is not None else None
            args = (record.tool_name, record.arguments, ctx, timeout, idle_timeout, call_id)
            result = await self._aexecute(*args, approval)
        return result if record.call is None else result.model_copy(update={"call": record.call})

    def _claim_resume(
        self, pending: Any, decision: Any, ctx: ToolExecutionContext
    ) -> tuple[PendingApproval, ApprovalDecision, ApprovalRecord]:
        self._check_open()

        def precheck(record: PendingApproval) -> None:
            # Refusals that do not spend the approval: the call stays resumable.
            if not isinstance(ctx, ToolExecutionContext):
                raise TypeError(f"ctx must be a ToolExecutionContext, got {type(ctx).__name__}")
            if ctx.ended:
                raise ToolRuntimeError(
                    f"plan {ctx.plan_id!r} has ended; resume the call in an open plan",
                    tool_name=record.tool_name,
                    plan_id=ctx.plan_id,
                )
            check_capabilities(self._entry(record.tool_name).descriptor, ctx)

        record, chosen = check_resume(pending, decision, self._ledger, precheck)
        approval = record_of(
            chosen, record.fingerprint, approval_id=record.approval_id, resumed=True
        )
        return record, chosen, approval

    def _resumed_denial(
        self,
        record: PendingApproval,
        decision: ApprovalDecision,
        approval: ApprovalRecord,
        ctx: ToolExecutionContext,
    ) -> ToolResult:
        tool_call_id = record.call.id if record.call is not None else None
        call = self._start(record.tool_name, ctx, tool_call_id, approval=approval)
        try:
            return self._denied(call, decision)
        finally:
            if call.observer is not None:
                self._observed(call)

    def _approval_needed(self, call: _Call, entry: _Entry) -> bool:
        if call.approved:
            return False
        if call.ctx.approver is None:
            return entry.descriptor.capability.requires_approval is True
        return needs_approval(entry.descriptor, call.ctx.approval)

    def _approve(self, call: _Call, entry: _Entry, data: dict[str, Any]) -> ToolResult | None:
        """Ask the plan's approver from sync code; None means run the call."""
        request = self._request(call, entry, data)
        approver = call.ctx.approver
        if approver is None:
            return self._decided(call, request, no_approver(request))
        try:
            answer = self._invoker.call(
                approver, request, token=call.flight or call.ctx.cancellation_token
            )
        except (ToolCancelledError, asyncio.CancelledError) as exc:
            self._raise_cancelled(call, exc)
        except Exception as exc:
            return self._decided(call, request, _approver_failed(exc, call))
        return self._decided(call, request, decision_from(answer, request))

    async def _aapprove(
        self, call: _Call, entry: _Entry, data: dict[str, Any]
    ) -> ToolResult | None:
        """Ask the plan's approver from async code (a sync one runs on the pool)."""
        request = self._request(call, entry, data)
        approver = call.ctx.approver
        if approver is None:
            return self._decided(call, request, no_approver(request))
        try:
            answer = await self._invoker.acall(
                approver, request, token=call.flight or call.ctx.cancellation_token
            )
        except ToolCancelledError as exc:
            self._raise_cancelled(call, exc)
        except asyncio.CancelledError as exc:
            if caller_cancelled():
                self._emit(call, "cancelled", error=exc)
                raise
            self._raise_cancelled(call, exc)
        except Exception as exc:
            return self._decided(call, request, _approver_failed(exc, call))
        return self._decided(call, request, decision_from(answer, request))

    def _request(self, call: _Call, entry: _Entry, data: dict[str, Any]) -> ApprovalRequest:
        return request_for(
            entry.descriptor,
            data,
            call.ctx,
            call.record.call_id,
            call.tool_call_id,
            self.redaction,
        )

    def _decided(
        self, call: _Call, request: ApprovalRequest, decision: ApprovalDecision
    ) -> ToolResult | None:
        """Record the decision; the result to return for a denial or a deferral."""
        lifecycle_event(
            "tool.approval",
            tool=call.name,
            plan_id=call.ctx.plan_id,
            call_id=call.record.call_id,
            outcome=decision.outcome,
        )
        if decision.outcome == "approve":
            call.record.approval = record_of(decision, request.fingerprint)
            return None
        if decision.outcome == "deny":
            call.record.approval = record_of(decision, request.fingerprint)
            return self._denied(call, decision)
        pending = pending_for(request, decision)
        call.record.approval = record_of(
            decision, request.fingerprint, approval_id=pending.approval_id
        )
        message = (
            f"the call of {call.name!r} is waiting for approval"
            + (f" ({decision.reason})" if decision.reason else "")
            + "; it has not run yet"
        )
        trace = self._emit(call, "pending", error_message=message, error_type=PENDING)
        error = trace.error if trace is not None else message  # redacted by the trace
        return ToolResult(
            success=False, error=error, error_type=PENDING, trace=trace, pending=pending
        )

    def _denied(self, call: _Call, decision: ApprovalDecision) -> ToolResult:
        message = denial(call.name, decision)
        trace = self._emit(call, "denied", error_message=message, error_type=DENIED)
        error = trace.error if trace is not None else message  # redacted by the trace
        return ToolResult(success=False, error=error, error_type=DENIED, trace=trace)

    # -- instrumentation ----------------------------------------------------------------

    def _observe(self, call: _Call, tool_call_id: str | None) -> CallObserver | None:
        assert self._instrumentation is not None
        entry = self._tools.get(call.name)
        try:
            return self._instrumentation.call_started(
                tool_name=call.name,
                descriptor=entry.descriptor if entry is not None else None,
                ctx=call.ctx,
                call_id=call.record.call_id,
                tool_call_id=tool_call_id,
            )
        except Exception as exc:
            _log.warning("instrumentation.failed", hook="call_started", error=repr(exc))
            return None

    def _observed(self, call: _Call) -> None:
        """Tell the call's observer how it ended (with payloads, if it wants them)."""
        observer = call.observer
        assert observer is not None
        try:
            arguments = output = None
            if observer.record_payloads:
                arguments = call.arguments
                result = call.result
                output = result.output if result is not None and result.success else None
                entry = self._tools.get(call.name)
                if self.redaction is not None and entry is not None:
                    # Payloads leave the process: the same policy as every export.
                    descriptor = entry.descriptor
                    if arguments is not None:
                        arguments = self.redaction.masked(arguments, descriptor.input_schema)
                    output = self.redaction.masked(output, descriptor.output_schema)
                elif self.redaction is not None:  # unregistered meanwhile: no schema to go by
                    arguments = output = None
            observer.finish(call.trace, arguments=arguments, output=output)
        except Exception as exc:
            _log.warning("instrumentation.failed", hook="finish", error=repr(exc))

    # -- small helpers ----------------------------------------------------------------------

    def _entry(self, name: str) -> _Entry:
        entry = self._tools.get(name)
        if entry is None:
            raise ToolNotFoundError(f"no tool named {name!r} is registered", tool_name=name)
        return entry

    def _check_open(self) -> None:
        if self._closed:
            raise ToolRuntimeError("the runtime is closed")


def _answering(result: ToolResult, call: ToolCall) -> ToolResult:
    """The result with the model's call it answers (its pending record too, if any)."""
    if result.pending is None:  # the common case: one field set, nothing to re-check
        private = result.__pydantic_private__
        return _trusted(
            ToolResult,
            {**result.__dict__, "call": call},
            dict(private) if private is not None else None,
        )
    update: dict[str, Any] = {"call": call}
    update["pending"] = result.pending.model_copy(update={"call": call})
    return result.model_copy(update=update)


def _approver_failed(exc: Exception, call: _Call) -> ApprovalDecision:
    error = f"{type(exc).__name__}: {error_text(exc)}"
    scrub = call.record.scrub  # the approver may have quoted an argument
    _log.warning(
        "tool.approver_failed",
        tool=call.name,
        plan_id=call.ctx.plan_id,
        error=scrub(error) if scrub is not None else error,
    )
    return ApprovalDecision.deny(f"the approver failed ({error}); the call was not run")


def _warn_skipped(message: str) -> None:
    # stacklevel 4: register_source's caller, through _register_all and this function.
    warnings.warn(ToolSkippedWarning(message), stacklevel=4)


def _log_skipped(message: str) -> None:
    _log.warning("source.tool_skipped", detail=message)


def _deadline(
    call: _Call, entry: _Entry, timeout: float | None, idle_timeout: float | None
) -> tuple[Deadline | None, Deadline | None]:
    """The call's limits, started now: for its activation, and for its run.

    The activation gets the smallest total limit; the run gets that total (which
    so counts the activation's time too), and the smallest idle limit if any.
    """
    total = _limit(timeout, call.ctx, entry)
    idle = _smaller(idle_timeout, call.ctx.idle_timeout)
    if total is None and idle is None:
        return None, None
    activation = Deadline(total) if total is not None else None
    if idle is None:
        return activation, Deadline(total)
    record = call.record
    return activation, Deadline(total, idle, lambda: record.active_at)


def _here() -> object:
    """The task running this code, or else its thread: what a call in flight belongs to."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        task = None
    return task if task is not None else threading.get_ident()


def _check_limits(timeout: float | None, idle_timeout: float | None) -> None:
    """Refuse a call's limits before anything starts; NaN, inf, 0 and "5" are not seconds.

    (No limit is None; an infinite deadline would overflow the clock's arithmetic.)
    """
    for name, value in (("timeout", timeout), ("idle_timeout", idle_timeout)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < _INF:
            raise ValueError(f"{name} must be positive seconds or None, got {value!r}")


def _limit(timeout: float | None, ctx: ToolExecutionContext, entry: _Entry) -> float | None:
    """The smallest of the call's, the plan's, the tool's and its source's limits."""
    return _smaller(_smaller(timeout, ctx.timeout), entry.timeout)


def _smaller(a: float | None, b: float | None) -> float | None:
    """The smaller of two optional limits; None means no limit."""
    if a is None:
        return b
    return a if b is None or a <= b else b


def _log_deactivation_errors(errors: list[ToolDeactivationError]) -> None:
    for error in errors:
        _log.warning(
            "tool.deactivate_failed",
            tool=error.tool_name,
            plan_id=error.plan_id,
            error=str(error),
        )
