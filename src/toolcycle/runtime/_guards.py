"""The guardrail step: input guardrails around the approval step, output ones after the run.

The pipeline calls in here only for a tool whose `Entry` has guardrails (see
``_guardset``). `GuardStep` decides when each stage runs: input guardrails before
the approval step or after it, as configured, and output guardrails on what the
tool returned (or on a cache hit) once it passed output validation. Running a
stage, with what its guardrails decide, is `GuardRunner`'s (``_guardrun``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.content import PART_TYPES
from toolcycle.errors import ToolOutputError
from toolcycle.models import ToolResult
from toolcycle.runtime._guardrun import GuardRunner
from toolcycle.runtime._rich import RICH_TYPES, read_rich

if TYPE_CHECKING:
    from toolcycle.content import ContentPart
    from toolcycle.execution._invoke import Invoker
    from toolcycle.models import Change
    from toolcycle.runtime._caching import Kept
    from toolcycle.runtime._interfaces import ApprovalStep
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call, Entry
    from toolcycle.runtime._steps import CallSteps

__all__ = ["GuardStep"]

# Outputs that are certainly not a ToolResult (as in ``_results``).
_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


class GuardStep:
    """Runs a tool's guardrails, and its approval step among them.

    Args:
        steps: traces the calls guardrails turn away.
        approvals: the approval step, which input guardrails run before (or after).
        invoker: runs an async guardrail from sync code.
        settings: the runtime's shared settings (``strict_output``).
    """

    def __init__(
        self, steps: CallSteps, approvals: ApprovalStep, invoker: Invoker, settings: Settings
    ) -> None:
        self._steps = steps
        self._approvals = approvals
        self._settings = settings
        runner = GuardRunner(steps, invoker)
        # Bound once: a guarded call looks its stage up as it would a method of ours.
        self._stage = runner.run
        self._astage = runner.arun

    # -- input: guardrails and approval, in the configured order -------------------------

    def screen(
        self, call: Call, entry: Entry, data: dict[str, Any], asks: bool | None
    ) -> ToolResult | None:
        """Input guardrails and the approval step from sync code; None means run the call.

        ``asks`` is the approval rule's answer for the call, once the pipeline has
        asked it; None asks it here, after the early guardrails (so a call they turn
        away never asks). The rule is asked at most once per call either way.
        """
        guards = entry.guards
        early = guards is not None and guards.input and not guards.after_approval
        if early and (verdict := self._stage(call, entry, data, "input")) is not None:
            return verdict
        if asks is None:
            asks = self._approvals.needed(call, entry)
        if asks:
            verdict = self._approvals.ask(call, entry, data)
            if verdict is not None:
                return verdict
        if guards is not None and guards.input and guards.after_approval:
            return self._stage(call, entry, data, "input")
        return None

    async def ascreen(
        self, call: Call, entry: Entry, data: dict[str, Any], asks: bool | None
    ) -> ToolResult | None:
        """Async twin of `screen`."""
        guards = entry.guards
        early = guards is not None and guards.input and not guards.after_approval
        if early and (verdict := await self._astage(call, entry, data, "input")) is not None:
            return verdict
        if asks is None:
            asks = self._approvals.needed(call, entry)
        if asks:
            verdict = await self._approvals.aask(call, entry, data)
            if verdict is not None:
                return verdict
        if guards is not None and guards.input and guards.after_approval:
            return await self._astage(call, entry, data, "input")
        return None

    # -- output: after output validation, before the result is made ----------------------

    def returned(
        self, call: Call, entry: Entry, data: dict[str, Any], output: Any, changes: list[Change]
    ) -> ToolResult:
        """Output guardrails from sync code, then the result of what the tool returned."""
        seen = self._seen(entry, output)
        if seen is not None:
            output = _changes_recorded(call, output)
            verdict = self._stage(call, entry, data, "output", *seen, changes)
            if verdict is not None:
                return verdict
        return self._steps.returned(call, entry, output, changes)

    async def areturned(
        self, call: Call, entry: Entry, data: dict[str, Any], output: Any, changes: list[Change]
    ) -> ToolResult:
        """Async twin of `returned`."""
        seen = self._seen(entry, output)
        if seen is not None:
            output = _changes_recorded(call, output)
            verdict = await self._astage(call, entry, data, "output", *seen, changes)
            if verdict is not None:
                return verdict
        return self._steps.returned(call, entry, output, changes)

    def hit(self, call: Call, entry: Entry, data: dict[str, Any], kept: Kept) -> ToolResult:
        """A cache hit's result, after its output guardrails: a hit skips only the body."""
        if entry.guards is not None and entry.guards.output:
            call.record.cache_hit = True  # a rejection or a stop of it ran no tool either
            verdict = self._stage(
                call, entry, data, "output", kept.fresh_output(), kept.content, []
            )
            if verdict is not None:
                return verdict
        return self._steps.cache_hit(call, kept)

    async def ahit(self, call: Call, entry: Entry, data: dict[str, Any], kept: Kept) -> ToolResult:
        """Async twin of `hit`."""
        if entry.guards is not None and entry.guards.output:
            call.record.cache_hit = True  # see `hit`
            verdict = await self._astage(
                call, entry, data, "output", kept.fresh_output(), kept.content, []
            )
            if verdict is not None:
                return verdict
        return self._steps.cache_hit(call, kept)

    def _seen(self, entry: Entry, output: Any) -> tuple[Any, tuple[ContentPart, ...]] | None:
        """The output and content parts as output guardrails see them.

        The output is JSON data that passed validation; the parts are those the model
        will be shown (a rich return's). None when there is nothing for them to check: a tool that reported its
        own failure, output that is not JSON or (with ``strict_output``) misses its
        schema. The result step fails such a call anyway, as it would unguarded.
        """
        assert entry.guards is not None
        if not entry.guards.output:
            return None
        content: tuple[ContentPart, ...] = ()
        kind = type(output)
        if kind in RICH_TYPES or (kind is list and output and type(output[0]) in PART_TYPES):
            try:
                rich = read_rich(output, entry.descriptor.name, "")
            except ToolOutputError:
                return None  # the result step fails the call, naming what is wrong
            output, content = rich.value, rich.parts
        elif kind not in _PLAIN and isinstance(output, ToolResult):
            if not output.success:
                return None
            output, content = output.output, output.content
        try:
            value = entry.input.normalize(output)
        except Exception:
            return None
        schema = entry.output
        if (
            schema is not None
            and self._settings.strict_output
            and not schema.check_normalized(value).valid
        ):
            return None
        return value, content


def _changes_recorded(call: Call, output: Any) -> Any:
    """``output``, with the changes a returned `ToolResult` lists recorded now.

    The result step records them, but the output guardrails run first, and a
    rejection or a stop must not lose changes the tool made: they land in the
    plan (and the call's changes) here, and the result step gets none to record again.
    """
    if type(output) in _PLAIN or not isinstance(output, ToolResult) or not output.changes:
        return output
    for change in output.changes:
        call.ctx.record_change(change)
    return output.model_copy(update={"changes": ()})
