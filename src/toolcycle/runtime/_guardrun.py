"""One stage of a tool's guardrails: each guardrail asked in turn, its decision kept.

`GuardStep` (``_guards``) decides when a stage runs; `GuardRunner` runs one. Each
guardrail's decision is added to the call's record, so its trace lists them; the
first decision that is not ``allow`` ends the stage:

- ``reject``: the call's trace ends as ``"rejected"`` and its failed result
  carries the guardrail's message, for the model to read;
- ``stop``, or a guardrail that raises or answers something else: the trace
  ends as ``"stopped"`` and the call raises `GuardrailTripped` for the host.
  A broken guardrail stops rather than allows: a check that could not run must
  not let the call through, and the host should hear of it.

A sync guardrail runs inline in the caller's thread (from async code too: keep
it quick, or make it a coroutine); an async one from sync code runs on the
runtime's loop thread, as an async approver does.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from typing import TYPE_CHECKING, Any, NoReturn

from toolcycle._construct import tree_copy
from toolcycle.errors import GuardrailTripped, ToolCancelledError, cut_error_text, error_text
from toolcycle.execution._invoke import caller_cancelled
from toolcycle.models import GuardrailRecord, ToolResult

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from toolcycle.content import ContentPart
    from toolcycle.execution._invoke import Invoker
    from toolcycle.guardrails import GuardrailCall, GuardrailStage
    from toolcycle.models import Change
    from toolcycle.runtime._guardset import Guard
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["REJECTED", "GuardRunner"]

REJECTED = "GuardrailRejected"
"""The ``error_type`` of a result a guardrail rejected."""


class GuardRunner:
    """Runs one stage of a tool's guardrails, from sync or from async code.

    Args:
        steps: traces the calls guardrails turn away.
        invoker: runs an async guardrail from sync code.
    """

    def __init__(self, steps: CallSteps, invoker: Invoker) -> None:
        self._steps = steps
        self._invoker = invoker

    def run(
        self,
        call: Call,
        entry: Entry,
        data: dict[str, Any],
        stage: GuardrailStage,
        output: Any = None,
        content: tuple[ContentPart, ...] = (),
        changes: list[Change] | None = None,
    ) -> ToolResult | None:
        """Run ``stage``'s guardrails from sync code; None means they all allowed the call.

        ``output``, ``content`` and ``changes`` are the output stage's: what the tool
        returned, as the guardrails see it, and the changes a rejection's result lists.
        """
        assert entry.guards is not None
        guards = entry.guards.input if stage == "input" else entry.guards.output
        seen = _call_of(call, entry, data, stage, output, content)
        token = call.flight or call.ctx.cancellation_token
        for guard in guards:
            try:
                answer = self._invoker.call(
                    guard.fn, seen, call.ctx, token=token, coroutine=guard.coroutine
                )
            except (ToolCancelledError, asyncio.CancelledError) as exc:
                self._steps.raise_cancelled(call, exc)
            except Exception as exc:
                self._failed(call, guard, stage, exc)
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
                self._steps.emit(call, "cancelled", error=exc)
                raise
            verdict = self._decided(call, guard, stage, answer, changes)
            if verdict is not None:
                return verdict
        return None

    async def arun(
        self,
        call: Call,
        entry: Entry,
        data: dict[str, Any],
        stage: GuardrailStage,
        output: Any = None,
        content: tuple[ContentPart, ...] = (),
        changes: list[Change] | None = None,
    ) -> ToolResult | None:
        """Async twin of `run`."""
        assert entry.guards is not None
        guards = entry.guards.input if stage == "input" else entry.guards.output
        seen = _call_of(call, entry, data, stage, output, content)
        token = call.flight or call.ctx.cancellation_token
        for guard in guards:
            try:
                if guard.coroutine:
                    answer = await self._invoker.acall(
                        guard.fn, seen, call.ctx, token=token, coroutine=True
                    )
                else:
                    answer = guard.fn(seen, call.ctx)
                    if inspect.isawaitable(answer):  # awaited as a coroutine guard is: cancellable
                        answer = await self._invoker.acall(
                            _awaited, answer, token=token, coroutine=True
                        )
            except ToolCancelledError as exc:
                self._steps.raise_cancelled(call, exc)
            except asyncio.CancelledError as exc:
                if caller_cancelled():
                    self._steps.emit(call, "cancelled", error=exc)
                    raise
                self._steps.raise_cancelled(call, exc)
            except Exception as exc:
                self._failed(call, guard, stage, exc)
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: trace, then obey
                self._steps.emit(call, "cancelled", error=exc)
                raise
            verdict = self._decided(call, guard, stage, answer, changes)
            if verdict is not None:
                return verdict
        return None

    def _decided(
        self,
        call: Call,
        guard: Guard,
        stage: GuardrailStage,
        answer: Any,
        changes: list[Change] | None,
    ) -> ToolResult | None:
        """Record one decision; the failed result of a rejection, or raise for a stop."""
        from toolcycle.guardrails import GuardrailDecision  # loaded by the guardrail itself

        if type(answer) is not GuardrailDecision:
            self._trip(
                call,
                guard,
                stage,
                f"guardrail {guard.name!r} returned {type(answer).__name__}, not a "
                "GuardrailDecision; return allow(), reject(message) or stop(message)",
                broken=True,
            )
        outcome = answer.outcome
        message = answer.message
        if outcome == "allow":
            _note(call, guard, stage, "allow", None)
            return None
        if outcome == "reject":
            text = message or f"guardrail {guard.name!r} rejected the call of {call.name!r}"
            _note(call, guard, stage, "reject", text)
            trace = self._steps.emit(call, "rejected", error_message=text, error_type=REJECTED)
            error = trace.error if trace is not None else text  # redacted by the trace
            return ToolResult(
                success=False,
                error=error,
                error_type=REJECTED,
                trace=trace,
                changes=tuple(changes or ()),
            )
        self._trip(
            call,
            guard,
            stage,
            f"guardrail {guard.name!r} stopped the call of {call.name!r} at its {stage}"
            + (f": {message}" if message else ""),
        )

    def _failed(self, call: Call, guard: Guard, stage: GuardrailStage, exc: Exception) -> NoReturn:
        """A guardrail that raised stops the call, its exception chained."""
        self._trip(
            call,
            guard,
            stage,
            f"guardrail {guard.name!r} raised {type(exc).__name__}: {error_text(exc)}; "
            f"the call of {call.name!r} was stopped (fix the guardrail)",
            exc,
            broken=True,
        )

    def _trip(
        self,
        call: Call,
        guard: Guard,
        stage: GuardrailStage,
        message: str,
        cause: Exception | None = None,
        *,
        broken: bool = False,
    ) -> NoReturn:
        """Raise `GuardrailTripped` for the host, the call traced ``stopped``.

        A ``stop`` halts the batch it is in too; a ``broken`` guardrail (one that
        raised or gave no decision) fails its own call only.
        """
        scrub = call.record.scrub
        if scrub is not None:  # the host logs what it catches: no secret of the call in it
            message = scrub(message)
        message = cut_error_text(message)  # the error raised says what the trace says
        _note(call, guard, stage, "stop", message)
        error = GuardrailTripped(
            message,
            guardrail=guard.name,
            stage=stage,
            tool_name=call.name,
            plan_id=call.ctx.plan_id,
        )
        error._one_call = broken
        error._one_call_trace = self._steps.emit(call, "stopped", error=error)
        raise error from cause


def _call_of(
    call: Call,
    entry: Entry,
    data: dict[str, Any],
    stage: GuardrailStage,
    output: Any,
    content: tuple[ContentPart, ...] = (),
) -> GuardrailCall:
    # Loaded with the first guarded call: a program without guardrails never needs it.
    from toolcycle.guardrails import GuardrailCall

    return GuardrailCall(
        tool_name=call.name,
        arguments=types.MappingProxyType(_detached(data)),
        stage=stage,
        descriptor=entry.descriptor,
        call_id=call.record.call_id,
        tool_call_id=call.tool_call_id,
        output=output,
        content=content,
    )


def _awaited(awaitable: Awaitable[Any]) -> Awaitable[Any]:
    """The awaitable a plain guardrail returned, for `Invoker.acall` to await under the token."""
    return awaitable


def _detached(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` itself, or a deep copy when it nests a dict or a list.

    The mapping handed to guardrails is read-only at its top level only: a
    guardrail that appends to a nested list must not change what the tool receives.
    """
    for value in data.values():
        kind = type(value)
        if kind is dict or kind is list:
            copied: dict[str, Any] = tree_copy(data)
            return copied
    return data


def _note(
    call: Call, guard: Guard, stage: GuardrailStage, outcome: Any, message: str | None
) -> None:
    """Add one decision to the call's record, its message redacted like the trace's error."""
    record = call.record
    if message is not None:
        if record.scrub is not None:
            message = record.scrub(message)
        message = cut_error_text(message)  # the span shows it as an event
    record.guardrails += (
        GuardrailRecord(name=guard.name, stage=stage, outcome=outcome, message=message),
    )
