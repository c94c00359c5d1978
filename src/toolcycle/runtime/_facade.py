"""`ToolRuntime`, the one public entry point: it builds the parts and delegates to them."""

from __future__ import annotations

import functools
import time
import weakref
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack

from toolcycle.cache import ToolLifecycleCache
from toolcycle.execution._activation import Activator
from toolcycle.execution._invoke import Invoker
from toolcycle.execution._lifecycle import LifecycleCalls
from toolcycle.redaction import RedactionPolicy
from toolcycle.result_cache import ResultCache
from toolcycle.runtime._approvals import Approvals
from toolcycle.runtime._closing import Closer
from toolcycle.runtime._given import check_hooks, check_result_cache, check_workers
from toolcycle.runtime._guardset import Guards, guards_of
from toolcycle.runtime._limits import check_result_limit, check_seconds
from toolcycle.runtime._pipeline import CallPipeline
from toolcycle.runtime._plans import PlanRegistry
from toolcycle.runtime._recorder import TraceRecorder
from toolcycle.runtime._registry import ToolRegistry
from toolcycle.runtime._resume import Resumer
from toolcycle.runtime._retries import check_max_retries, default_policy
from toolcycle.runtime._settings import Option, Settings
from toolcycle.runtime._steps import CallSteps
from toolcycle.tracing import StructlogTracer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping

    from toolcycle._types import Clock, JSONSchema
    from toolcycle.approvals import ApprovalDecision, ApprovalLedger
    from toolcycle.context import ToolExecutionContext
    from toolcycle.errors import ToolDeactivationError
    from toolcycle.guardrails import Guardrail
    from toolcycle.instrumentation import Instrumentation
    from toolcycle.models import (
        PendingApproval,
        ProviderFormat,
        ToolDescriptor,
        ToolExecutionTrace,
        ToolResult,
        ToolSearchMode,
    )
    from toolcycle.protocols import ToolInstance, ToolSource
    from toolcycle.result_cache import CachePolicy
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._dispatcher import Dispatcher
    from toolcycle.runtime._settings import PlanOptions
    from toolcycle.runtime._stream import CallStream
    from toolcycle.tracing import TraceListener, Tracer
    from toolcycle.validation import ValidationLimits


__all__ = ["ToolRuntime"]

_DEFAULT_REDACTION = RedactionPolicy()


def _check_redaction(value: Any) -> RedactionPolicy | None:
    """``redaction`` as given, once it is a `RedactionPolicy` or None (redaction off)."""
    if value is not None and not isinstance(value, RedactionPolicy):
        raise TypeError(
            f"redaction must be a toolcycle.RedactionPolicy or None (off), got {value!r}"
        )
    return value


class ToolRuntime:
    """Drives tools through discover, activate, execute and deactivate, plan by plan.

    Args:
        strict_output: fail a call whose output misses its schema (else logged, traced).
        auto_activate: activate on a tool's first call in a plan (else `activate` first).
        max_result_bytes: the largest output a result carries, as JSON (1 MiB; None: any).
        schema_documents: schemas ``$ref`` may name, by URI; nothing is ever fetched.
        limits: caps on schema and value sizes; see `ValidationLimits`.
        validator: ``"jsonschema-rs"`` (extra ``fast``), ``"jsonschema"`` or ``"auto"``.
        tracer: where traces go besides listeners (a `StructlogTracer`, silent by default).
        keep_traces: how many of the latest traces `recent_traces` keeps (0: none).
        deactivate_timeout: seconds one ``deactivate`` may take (None: no limit).
        activate_timeout: seconds one ``activate`` may take (None, the default: no limit).
        abandon_timeout: seconds a plan's end waits for sync calls left at their timeout.
        drain_timeout: seconds a plan's end waits for its cancelled calls in flight (5).
        redaction: which argument values are secret (see `RedactionPolicy`); None: off.
        instrumentation: told of every call and (de)activation (see `toolcycle.otel`).
        approval_ledger: where ``resume`` claims deferred calls (a `FileApprovalLedger`
            across processes; in memory by default).
        max_retries: model-fixable failures in a row a tool allows per plan (1; see
            `ModelRetry`), for tools that give none.
        retry: the `RetryPolicy` of idempotent tools that give none (None: no retries).
        result_cache: where cached tools' results are kept, and its bounds (a
            default `ResultCache` if None).
        max_workers: size of the thread pool that runs sync tools for ``aexecute``.
        input_guardrails: guardrails for the arguments of every call (see
            `toolcycle.guardrails`); they run before a source's and a tool's own.
        output_guardrails: guardrails for the output of every call.
        guardrails_after_approval: run input guardrails after the approval step
            (by default they run after input validation, before approval).
        clock: wall-clock seconds since the epoch, for trace timestamps.
        timer: monotonic seconds, for trace durations.

    Each option is explained in full on the docs page of its concept. The work is
    done by the parts this façade builds (see the architecture page).
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
        max_retries: int = 1,
        retry: RetryPolicy | None = None,
        result_cache: ResultCache | None = None,
        max_workers: int = 8,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        guardrails_after_approval: bool = False,
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
    ) -> None:
        # The objects given are checked before any part is built.
        check_hooks("tracer", tracer)
        check_hooks("instrumentation", instrumentation)
        check_hooks("approval_ledger", approval_ledger)
        check_result_cache(result_cache)
        check_workers(max_workers)
        self._settings = settings = Settings(
            strict_output,
            check_result_limit(max_result_bytes),
            _check_redaction(redaction),
            auto_activate,
            check_max_retries(max_retries, "max_retries"),
            default_policy(retry),
        )
        settings.guardrails = Guards(
            guards_of(input_guardrails, "input_guardrails"),
            guards_of(output_guardrails, "output_guardrails"),
            guardrails_after_approval,
        )
        # The validation engine's modules load with the first runtime, not the package.
        from toolcycle.validation._compiler import SchemaCompiler

        compiler = SchemaCompiler(schema_documents, limits=limits, backend=validator)
        tracer = tracer if tracer is not None else StructlogTracer()
        self._traces = TraceRecorder(tracer, clock=clock, timer=timer, keep=keep_traces)
        self._cache = cache = ToolLifecycleCache()
        self._invoker = invoker = Invoker(max_workers=max_workers, twins=_ASYNC_TWINS)
        # A runtime dropped unclosed still stops its threads, without waiting on them.
        self._release = weakref.finalize(self, invoker.close, 0.0)
        self._release.atexit = False
        deactivate_timeout = check_seconds("deactivate_timeout", deactivate_timeout)
        calls = LifecycleCalls(invoker, deactivate_timeout, instrumentation)
        self._activator = Activator(
            cache, calls, check_seconds("activate_timeout", activate_timeout)
        )
        self._results = results = result_cache if result_cache is not None else ResultCache()
        self._compiler = compiler
        self._tools = ToolRegistry(compiler, settings, results, retired=cache.retire)
        self._plans = PlanRegistry(
            cache,
            calls,
            settings,
            before_plan=self._tools.refresh_stale_sources,
            plan_due=self._tools.refresh_due,
            after_plan=results.drop_plan,
            drain_timeout=drain_timeout,
            abandon_timeout=abandon_timeout,
        )
        self._closer = Closer(settings, cache, self._plans, self._tools, invoker, self._release)
        self._steps = steps = CallSteps(self._tools, settings, self._traces, cache, instrumentation)
        approvals = Approvals(steps, invoker, settings)
        self._pipeline = CallPipeline(steps, approvals, self._activator, invoker, settings)
        self._resumer = Resumer(approvals.denied, steps, self._pipeline, settings, approval_ledger)

    @functools.cached_property
    def _dispatcher(self) -> Dispatcher:
        """The agent loop's part: built, and its modules imported, on first use."""
        from toolcycle.runtime._dispatcher import Dispatcher

        return Dispatcher(
            self._tools,
            self._steps,
            self._pipeline,
            self._invoker,
            self._settings,
            self._compiler.limits,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    strict_output: Option[bool] = Option("strict_output")
    max_result_bytes: Option[int | None] = Option("max_result_bytes", check_result_limit)
    redaction: Option[RedactionPolicy | None] = Option("redaction", _check_redaction)
    auto_activate: Option[bool] = Option("auto_activate")

    @property
    def cache(self) -> ToolLifecycleCache:
        """The per-plan activation cache (read it; the runtime drives it)."""
        return self._cache

    @property
    def result_cache(self) -> ResultCache:
        """Where cached tools' results are kept (see `CachePolicy`)."""
        return self._results

    @property
    def validator(self) -> str:
        """The JSON Schema engine in use: ``"jsonschema"`` or ``"jsonschema-rs"``."""
        return self._compiler.backend

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has been called."""
        return self._settings.closed

    def close(self) -> None:
        """End every open plan, close the sources, stop the runtime's thread and pool.

        A source with a ``close()`` method (an MCP server with ``scope="runtime"``)
        is closed after the plans end; an error it raises is logged. Idempotent: a
        second caller returns once the first caller's close is over, unless it runs
        in a tool call or on the runtime's loop thread, which that close may wait on.

        In async code, ``await runtime.aclose()`` instead: this blocks the event loop
        until it is over, and async tools whose ``deactivate`` needs that loop cannot
        end their plans meanwhile.

        Raises:
            ToolRuntimeError: called on a running event loop where it would wait on
                that loop: an `aclose` is under way there, or calls are in flight there.
        """
        self._closer.close()

    async def aclose(self) -> None:
        """Async twin of `close`: the same steps, with the event loop free throughout.

        Open plans end as by `aend_plan`, on this loop; a source's ``async def
        aclose()`` is awaited, else its ``close()`` runs in a worker thread, as does
        the stop of the runtime's thread and pool. Idempotent: a second caller (of
        ``close`` or ``aclose``) returns once the first close is over; an ``aclose``
        awaits that without blocking its loop. Cancelled meanwhile, the close still
        runs to its end, and the cancellation is raised then.
        """
        await self._closer.aclose()

    # -- tools ------------------------------------------------------------------------

    def register(
        self,
        instance: ToolInstance | Callable[..., Any],
        *,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        cache: CachePolicy | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        defer_loading: bool | None = None,
    ) -> ToolDescriptor:
        """Register a tool (or a callable, through `wrap`): discover it, compile its schemas.

        ``timeout`` bounds every call of the tool, besides the descriptor's own.
        ``max_retries`` and ``retry`` override the tool's own and the runtime's
        (see the retries page); ``retry`` needs an idempotent tool.
        ``cache`` caches its results (only for a tool with ``writes=False``),
        in place of the tool's own ``cache_policy``.
        ``input_guardrails`` and ``output_guardrails`` run after the tool's own
        (see `toolcycle.guardrails`).
        ``defer_loading`` overrides the descriptor's (None keeps it); see docs/tool-search.md.

        Raises:
            TypeError: not a `ToolInstance` and not callable, or a tool class rather than
                an instance of it.
            ToolDefinitionError, ToolRegistrationError, ToolSchemaValidationError:
                the tool cannot be described, or its name is taken, or a schema is unusable,
                or it is cached and writes, or it has a retry policy and is not idempotent.
            ValueError: ``timeout`` is not positive, or ``max_retries`` is negative.
            TypeError: a guardrail is not callable.
        """
        return self._tools.register(
            instance,
            timeout=timeout,
            max_retries=max_retries,
            retry=retry,
            cache=cache,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            defer_loading=defer_loading,
        )

    def register_source(
        self,
        source: ToolSource,
        *,
        skip_invalid_schemas: bool | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        cache: CachePolicy | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        defer_loading: bool | None = None,
    ) -> list[ToolDescriptor]:
        """Register every tool of a source, all or nothing, and keep the source.

        A source whose ``stale`` attribute turns true is registered afresh before the
        next plan; ``close()`` closes it. ``skip_invalid_schemas`` skips unusable
        schemas with a `ToolSkippedWarning` (None: the source's own attribute).
        ``max_retries`` and ``retry`` take the runtime's place for the source's tools
        that give none of their own; ``retry`` applies to its idempotent tools only.
        ``cache`` caches the results of the source's tools that do not write (and
        have no policy of their own); its tools that write stay uncached.
        ``input_guardrails`` and ``output_guardrails`` guard every tool of the source
        (one set for a whole MCP server), after the runtime's and before each tool's.
        ``defer_loading`` sets every tool's (None: deferred if the source's own
        ``defer_loading`` is true, else each tool's). Raises as `register`, after
        unregistering what it registered.
        """
        return self._tools.register_source(
            source,
            skip_invalid_schemas=skip_invalid_schemas,
            timeout=timeout,
            cache=cache,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            defer_loading=defer_loading,
            max_retries=max_retries,
            retry=retry,
        )

    def unregister(self, name: str) -> ToolDescriptor:
        """Remove a tool; plans that activated it still deactivate it when they end.

        Raises:
            ToolNotFoundError: no tool has that name.
        """
        return self._tools.unregister(name)

    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        """The descriptors of every registered tool, in order of registration."""
        return self._tools.descriptors()

    def descriptor(self, name: str) -> ToolDescriptor:
        """The descriptor of one tool; raises `ToolNotFoundError` if there is none."""
        return self._tools.entry(name).descriptor

    def recent_traces(self) -> tuple[ToolExecutionTrace, ...]:
        """The latest traces, oldest first, up to ``keep_traces`` of them (none by default)."""
        return self._traces.recent()

    def add_trace_listener(self, listener: TraceListener) -> Callable[[], None]:
        """Call ``listener`` with every trace (one that raises is logged); returns its remover."""
        return self._traces.add_listener(listener)

    # -- plans ------------------------------------------------------------------------

    def new_context(
        self, plan_id: str | None = None, **options: Unpack[PlanOptions]
    ) -> ToolExecutionContext:
        """Create a context for a new plan (see `ToolExecutionContext` for the options).

        Sources whose tool list changed are registered afresh first.

        Raises:
            ToolRuntimeError: the runtime is closed, or ``plan_id`` names an open plan.
        """
        return self._plans.new_context(plan_id, **options)

    @contextmanager
    def plan(
        self, plan_id: str | None = None, **options: Unpack[PlanOptions]
    ) -> Iterator[ToolExecutionContext]:
        """A plan scope: yields a new context (as `new_context`) and ends the plan on exit."""
        ctx = self._plans.new_context(plan_id, **options)
        try:
            yield ctx
        finally:
            self._plans.end_plan(ctx)

    @asynccontextmanager
    async def aplan(
        self, plan_id: str | None = None, **options: Unpack[PlanOptions]
    ) -> AsyncIterator[ToolExecutionContext]:
        """Async plan scope: ends the plan with ``aend_plan`` on exit, also on cancellation.

        Stale sources are listed in a worker thread, so a slow server does not hold
        up the event loop.
        """
        ctx = await self._plans.anew_context(plan_id, **options)
        try:
            yield ctx
        finally:
            await self._plans.aend_plan(ctx)

    def end_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """End the plan: stop its calls in flight, then deactivate its tools, newest first.

        Calls in flight are cancelled and waited for (``drain_timeout``); each tool
        activated is then deactivated once. Never raises: a failing ``deactivate``
        is logged and returned. Ending an ended plan does nothing and returns [];
        while another thread or task is still ending it, that is once its end is
        over (an end made from within that end, or by a call it waits for,
        returns at once).
        """
        return self._plans.end_plan(ctx)

    async def aend_plan(self, ctx: ToolExecutionContext) -> list[ToolDeactivationError]:
        """Async twin of `end_plan`.

        Cancelled while it waits for the plan's calls, it goes on waiting (within the
        same limits), ends the plan, and then raises the cancellation.
        """
        return await self._plans.aend_plan(ctx)

    # -- calls ------------------------------------------------------------------------

    def execute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Run one call the host chose, through the pipeline, and return its result.

        The entry point of a plan executor. The call's own failures (a rejected
        input, a tool that raises, bad output, a timeout) come back as a failed
        `ToolResult`; the host's mistakes raise (see docs/errors.md, "Raised or
        returned"). ``timeout`` stops the call (status ``timed_out``), as
        ``idle_timeout`` does after that long without progress.

        Raises:
            ToolNotFoundError: no tool has that name.
            ToolRuntimeError: the plan has ended or the runtime is closed.
            ToolCancelledError: the plan is cancelled or ends during the call.
            ToolAccessDeniedError, ToolCheckpointRequiredError: the plan may not run it.
            ToolActivationError: the tool's ``activate`` failed.
            ValueError: a limit is not a positive number.
        """
        return self._pipeline.execute(name, params, ctx, timeout, idle_timeout)

    async def aexecute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `execute` (raises and returns as it); sync tools run on the thread pool."""
        return await self._pipeline.aexecute(name, params, ctx, timeout, idle_timeout)

    def astream(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        max_buffered: int = 100,
    ) -> CallStream:
        """`aexecute` as an async stream: each `ProgressEvent` as reported, then the result.

        Leaving the loop early cancels the call; at most ``max_buffered`` events
        wait for a slow consumer, the oldest dropped first. See docs/concepts/progress.md.
        Raises as `aexecute`, from the iteration; a bad ``max_buffered`` raises at once.
        """
        from toolcycle.runtime._stream import CallStream  # loaded by the first stream

        run = self._pipeline.aexecute
        return CallStream(
            lambda listen: run(name, params, ctx, timeout, idle_timeout, progress=listen),
            max_buffered,
        )

    def activate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Activate a tool ahead of its first call, after `execute`'s checks; raises as it."""
        self._pipeline.activate(name, ctx)

    async def aactivate(self, name: str, ctx: ToolExecutionContext) -> None:
        """Async twin of `activate`."""
        await self._pipeline.aactivate(name, ctx)

    # -- the agent loop ---------------------------------------------------------------

    def tool_definitions(
        self,
        ctx: ToolExecutionContext,
        *,
        format: ProviderFormat = "openai",
        strict: bool = False,
        search: ToolSearchMode = "auto",
    ) -> list[dict[str, Any]]:
        """The definitions, for a model, of the tools the plan of ``ctx`` may run.

        ``format`` is ``"openai"``, ``"openai-responses"``, ``"anthropic"``,
        ``"gemini"`` or ``"mcp"``; ``strict`` offers OpenAI's strict mode.
        ``search`` says how deferred tools not yet revealed are offered (see
        `ToolSearchMode` and docs/tool-search.md).

        Raises:
            ValueError: an unknown ``format``, or a ``search`` the format does not have.
            ImportError: local search is needed and ``bm25s`` (extra ``search``) is missing.
        """
        return self._dispatcher.tool_definitions(ctx, format=format, strict=strict, search=search)

    def call(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Run a model's tool call, in any provider's format, and answer it.

        The entry point of an agent loop. Nothing the model got wrong raises (an
        unknown tool, a tool the plan may not run, arguments that do not fit, a
        failed activation): it gets a failed result saying what to do.
        ``result.to_message()`` builds the provider's tool-result message.

        Raises:
            ToolCancelledError: the plan is cancelled or ends during the call.
            ToolRuntimeError: the plan has ended or the runtime is closed.
            ValueError: a limit is not a positive number.
        """
        return self._dispatcher.call(tool_call, ctx, timeout, idle_timeout)

    async def acall(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `call`: raises only as it does, and answers everything else."""
        return await self._dispatcher.acall(tool_call, ctx, timeout, idle_timeout)

    def astream_call(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        max_buffered: int = 100,
    ) -> CallStream:
        """`acall` as an async stream: each `ProgressEvent`, then what `acall` returns.

        As `astream` for a model's tool call; raises only as `acall` does.
        """
        from toolcycle.runtime._stream import CallStream

        run = self._dispatcher.acall
        return CallStream(
            lambda listen: run(tool_call, ctx, timeout, idle_timeout, listen), max_buffered
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
        """`acall_many` run on the runtime's loop thread (from which it may not be called).

        Every call gets a result, failed ones included; it raises only as `acall_many`.
        """
        return self._dispatcher.call_many(tool_calls, ctx, max_concurrency, timeout, idle_timeout)

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

        Each call is answered as by `acall`; a ``sequential`` tool runs alone (in a
        durable plan every call does, in the batch's order), and once the plan is
        cancelled nothing new starts: each call the cancellation stopped or kept from
        starting gets a failed result (``error_type`` ``"ToolCancelledError"``) rather
        than an exception.

        Raises:
            ToolRuntimeError: the plan has ended or the runtime is closed.
            ValueError: a limit or ``max_concurrency`` is not a positive number.
            TypeError: ``tool_calls`` is one call (a dict, an SDK object) or a text.
        """
        return await self._dispatcher.acall_many(
            tool_calls, ctx, max_concurrency, timeout, idle_timeout
        )

    # -- approvals --------------------------------------------------------------------

    def resume(
        self,
        pending: PendingApproval | str | dict[str, Any],
        decision: ApprovalDecision | bool,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Finish a deferred call with the decision it waited for, at most once.

        The call is claimed in the approval ledger first; an approval runs the
        recorded arguments as `execute` would (raising and returning as it does), a
        denial returns a failed result.

        Raises:
            ToolApprovalError: the record was changed, cannot be read or was
                already resumed, or the decision defers or belongs to another call.
            ToolRuntimeError: (and its subclasses) refused before the claim.
            ToolCancelledError: the plan was cancelled; refused before the claim.
            ValueError: a limit that is not positive seconds; refused before the claim.
        """
        return self._resumer.resume(pending, decision, ctx, timeout, idle_timeout)

    async def aresume(
        self,
        pending: PendingApproval | str | dict[str, Any],
        decision: ApprovalDecision | bool,
        ctx: ToolExecutionContext,
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> ToolResult:
        """Async twin of `resume`; raises and returns as it does."""
        return await self._resumer.aresume(pending, decision, ctx, timeout, idle_timeout)


# The sync methods that can be refused on a loop's own thread (a blocking wait on
# the loop it runs on), each with its async twin for the error's advice.
_ASYNC_TWINS = {
    ToolRuntime.execute.__code__: "await runtime.aexecute(...)",
    ToolRuntime.activate.__code__: "await runtime.aactivate(...)",
    ToolRuntime.end_plan.__code__: "await runtime.aend_plan(...)",
    ToolRuntime.plan.__wrapped__.__code__: "async with runtime.aplan()",  # type: ignore[attr-defined]
    ToolRuntime.call.__code__: "await runtime.acall(...)",
    ToolRuntime.resume.__code__: "await runtime.aresume(...)",
    ToolRuntime.close.__code__: "await runtime.aclose()",
}
