"""The dispatcher of a model's tool calls: definitions out, calls in, results back.

Nothing the model got wrong raises here: an unreadable call, an unknown tool or
a refusal becomes a failed result (with its own trace) that tells the model what
to do. The caller's mistakes (a call in an ended plan) still raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from toolcycle._bounds import shown_value
from toolcycle._construct import trusted
from toolcycle._lazy_trace import INSTANCE_DICT
from toolcycle.agent._batch import run_batch
from toolcycle.agent._calls import parse_tool_call
from toolcycle.agent._dispatch import refusal, unknown_tool
from toolcycle.agent._names import FORMATS, ProviderNames
from toolcycle.agent._schemas import drop_absent_nulls
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import ToolCancelledError, ToolRuntimeError
from toolcycle.models import ToolCall, ToolResult
from toolcycle.runtime._search import SEARCH_TOOL, ToolSearch

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from toolcycle.execution._invoke import Invoker
    from toolcycle.models import ProgressEvent, ProviderFormat, ToolSearchMode, TraceStatus
    from toolcycle.runtime._interfaces import Catalog, Runner
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Entry
    from toolcycle.runtime._steps import CallSteps
    from toolcycle.validation import ValidationLimits

__all__ = ["Dispatcher"]

_Prepared = tuple[ToolCall, str, dict[str, Any]]


class Dispatcher:
    """Turns a model's tool calls, in any provider's format, into pipeline calls.

    Args:
        catalog: the registered tools.
        steps: traces the calls that never reach a tool.
        runner: runs the calls that do (the pipeline).
        invoker: its loop thread runs ``call_many``'s batch.
        settings: the runtime's shared settings (redaction; whether it is closed).
        limits: the validation limits (the depth ``drop_absent_nulls`` may walk).
    """

    def __init__(
        self,
        catalog: Catalog,
        steps: CallSteps,
        runner: Runner,
        invoker: Invoker,
        settings: Settings,
        limits: ValidationLimits,
    ) -> None:
        self._catalog = catalog
        # The registry's live mapping (changed in place, never replaced), read once.
        self._entries = catalog.entries
        self._steps = steps
        self._runner = runner
        self._invoker = invoker
        self._settings = settings
        self._limits = limits
        self._search = ToolSearch(catalog, steps)
        self._names = ProviderNames()  # an unknown name's way back, per format

    def tool_definitions(
        self,
        ctx: ToolExecutionContext,
        *,
        format: ProviderFormat,
        strict: bool,
        search: ToolSearchMode = "auto",
    ) -> list[dict[str, Any]]:
        """The definitions of the tools the plan may run (see `ToolRuntime.tool_definitions`)."""
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
        return self._search.definitions(ctx, format, strict=strict, search=search)

    def call(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> ToolResult:
        """Run a model's tool call and answer it (see `ToolRuntime.call`)."""
        prepared = self._prepare(tool_call, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        call, name, arguments = prepared
        if name == SEARCH_TOOL and name not in self._entries:
            return self._search.answer(call, ctx)
        result = self._runner.execute(
            name, arguments, ctx, timeout, idle_timeout, call.id, refuse=True, answers=call
        )
        return result if result.call is call else _answering(result, call)

    async def acall(
        self,
        tool_call: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        progress: Callable[[ProgressEvent], object] | None = None,
    ) -> ToolResult:
        """Async twin of `call`; ``progress`` hears the call's progress reports."""
        prepared = self._prepare(tool_call, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        return await self._arun(prepared, ctx, timeout, idle_timeout, progress)

    def call_many(
        self,
        tool_calls: Iterable[Any],
        ctx: ToolExecutionContext,
        max_concurrency: int | None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> list[ToolResult]:
        """Run a batch on the runtime's loop thread (see `ToolRuntime.call_many`)."""
        return self._invoker.portal.call(
            self.acall_many(tool_calls, ctx, max_concurrency, timeout, idle_timeout),
            caller="call_many",
        )

    async def acall_many(
        self,
        tool_calls: Iterable[Any],
        ctx: ToolExecutionContext,
        max_concurrency: int | None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> list[ToolResult]:
        """Run a batch concurrently, one result per call (see `ToolRuntime.acall_many`)."""
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(
                f"max_concurrency must be at least 1, got {shown_value(max_concurrency)}"
            )
        _check_batch(tool_calls)
        prepared = [self._prepare(tool_call, ctx) for tool_call in tool_calls]

        async def run(call: ToolCall, name: str, arguments: dict[str, Any]) -> ToolResult:
            return await self._arun((call, name, arguments), ctx, timeout, idle_timeout)

        def refuse(call: ToolCall, name: str, message: str) -> ToolResult:
            # A call the plan's cancellation kept from starting is still traced, once.
            trace = self._steps.refused(
                name,
                ctx,
                call.id,
                "cancelled",
                error_message=message,
                error_type=ToolCancelledError.__name__,
            )
            return refusal(call, message, ToolCancelledError.__name__, trace)

        # A durable plan's calls are replayed by the order they started: one at a time.
        durable = ctx.durable is not None
        return await run_batch(
            prepared,
            run=run,
            refuse=refuse,
            sequential=lambda name: durable or self._sequential(name),
            token=ctx.cancellation_token,
            max_concurrency=max_concurrency,
        )

    async def _arun(
        self,
        prepared: _Prepared,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        progress: Callable[[ProgressEvent], object] | None = None,
    ) -> ToolResult:
        call, name, arguments = prepared
        if name == SEARCH_TOOL and name not in self._entries:
            return await self._search.aanswer(call, ctx)
        result = await self._runner.aexecute(
            name,
            arguments,
            ctx,
            timeout,
            idle_timeout,
            call.id,
            refuse=True,
            answers=call,
            progress=progress,
        )
        return result if result.call is call else _answering(result, call)

    def _prepare(self, raw: Any, ctx: ToolExecutionContext) -> _Prepared | ToolResult:
        """The call, the tool it means and its arguments; or the refusal to answer it with.

        The call comes back with its secret arguments masked, as every result
        carries it (a batch answers calls it never ran with it too); the
        arguments to run with come back as sent.
        """
        self._settings.check_open()
        call, problem = parse_tool_call(raw)
        if isinstance(ctx, ToolExecutionContext) and ctx.ended:
            self._refuse_ended(call, ctx)
        if problem is not None:
            shown = None if call is None else self._masked(call, self._entries.get(call.name))
            return self._refused(shown, ctx, problem, "ToolCallError", "invalid_input")
        assert call is not None
        name: str | None = call.name
        entries = self._entries
        if name not in entries:
            if name == SEARCH_TOOL:  # before resolve, which tries every registered name
                # Answered when it runs: in a batch, in its turn, once the token is checked.
                return call, name, call.arguments
            catalog = self._catalog
            name = self._names.resolve(call.name, call.format, catalog.generation, catalog.names)
        if name is None:
            return self._refused(
                self._masked(call, None), ctx, unknown_tool(call.name), "ToolNotFoundError", "error"
            )
        arguments = call.arguments
        entry = entries.get(name)
        if entry is not None:  # else unregistered meanwhile: the pipeline refuses it
            descriptor = entry.descriptor
            if call.format in {"openai", "openai-responses"}:
                # Strict mode sends null for an optional property that was left out.
                depth = self._limits.max_instance_depth
                arguments = drop_absent_nulls(arguments, descriptor.input_schema, max_depth=depth)
        return self._masked(call, entry), name, arguments

    def _sequential(self, name: str) -> bool:
        """Whether the tool must run alone in a batch (the search meta-tool need not)."""
        entry = self._entries.get(name)
        return entry is not None and entry.descriptor.capability.sequential

    def _masked(self, call: ToolCall, entry: Entry | None) -> ToolCall:
        """The call as a result carries it: its secret arguments replaced.

        A call to no registered tool has no schema to tell its secrets by, so
        none of its values is kept (see `RedactionPolicy.masked_without_schema`).
        """
        redaction = self._settings.redaction
        if redaction is None or not call.arguments:
            return call
        if entry is None:
            masked = redaction.masked_without_schema(call.arguments)
        else:
            masked = redaction.masked(call.arguments, entry.descriptor.input_schema)
        return call if masked is call.arguments else call.model_copy(update={"arguments": masked})

    def _refuse_ended(self, call: ToolCall | None, ctx: ToolExecutionContext) -> NoReturn:
        """A model's call in an ended plan is the caller's mistake: trace it, and raise."""
        name, call_id = (call.name, call.id) if call is not None else ("", None)
        error = ToolRuntimeError(
            f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
            tool_name=name or None,
            plan_id=ctx.plan_id,
        )
        self._steps.refused(name, ctx, call_id, "error", error=error)
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
        trace = self._steps.refused(
            name, ctx, call_id, status, error_message=message, error_type=error_type
        )
        return refusal(call, message, error_type, trace)


def _check_batch(tool_calls: object) -> None:
    """Refuse one call passed where a batch belongs.

    Iterating one would read its keys (or a model's fields, or a text's
    characters) as calls, each answered as a mistake of the model's: a batch of
    refusals that answer nothing it asked.

    Raises:
        TypeError: ``tool_calls`` is a single call or a text.
    """
    if isinstance(tool_calls, str | bytes | Mapping) or hasattr(tool_calls, "model_dump"):
        raise TypeError(
            f"tool_calls must be a list of tool calls, got one {type(tool_calls).__name__}; "
            "pass [tool_call], or use call() for one"
        )


def _answering(result: ToolResult, call: ToolCall) -> ToolResult:
    """The result with the model's call it answers (its pending record too, if any)."""
    if result.pending is None:  # the common case: one field set, nothing to re-check
        private = result.__pydantic_private__
        return trusted(
            ToolResult,
            {**INSTANCE_DICT.__get__(result), "call": call},  # keeps a trace not yet built unbuilt
            dict(private) if private is not None else None,
        )
    update: dict[str, Any] = {"call": call}
    update["pending"] = result.pending.model_copy(update={"call": call})
    return result.model_copy(update=update)
