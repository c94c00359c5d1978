"""`ToolcycleToolset`: a runtime's tools as a pydantic-ai toolset, one plan per agent run.

pydantic-ai asks each toolset for a copy of itself at the start of a run
(``for_run``), enters that copy, lists its tools at every step, calls them, and
exits the copy when the run ends. The copy is where a run's plan lives, so runs of
one agent that overlap, and ``async with agent:`` around them, never share a plan.

The runtime answers every call; the answer becomes what pydantic-ai expects of a
tool: the output, ``ModelRetry`` for a mistake the model can fix, ``ToolFailed``
for one it cannot, and ``ApprovalRequired`` for a call the plan's approver
deferred, which pydantic-ai turns into its ``DeferredToolRequests``.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import inspect
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final, Literal, Self

from pydantic import ValidationError
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from toolcycle import (
    ApprovalDecision,
    PendingApproval,
    ToolCall,
    ToolCancelledError,
    ToolExecutionContext,
    ToolRuntimeError,
)
from toolcycle._construct import trusted
from toolcycle.adapters._offers import Offer, offers, waiting
from toolcycle.adapters.pydantic_ai._content import tool_return
from toolcycle.approvals import fingerprint

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from toolcycle import ApprovalRequest, ToolResult, ToolRuntime

__all__ = ["PENDING_KEPT", "ToolcycleToolset"]

PENDING_KEPT: Final = 1024
"""How many deferred calls a toolset holds for their decisions, the oldest forgotten first.

A decision may come in any later run, or never (the conversation was dropped), so a
toolset that lives as long as its agent cannot wait for them all. A call it forgot is
still resumed from the record its requests' metadata carries, handed back with the
decision; without it, the call asks for approval again (it never runs unapproved)."""

# Mistakes the model can put right by calling again; every other failure is final.
_RETRY = frozenset(
    {
        "ToolCallError",
        "ToolNotFoundError",
        "ToolSchemaValidationError",
        "ToolAccessDeniedError",
        "ToolCheckpointRequiredError",
    }
)

# pydantic-ai cannot check a raw JSON Schema; the runtime does, so the arguments pass
# through unchanged (JSON text is parsed, nothing else is done to it).
_PASS_THROUGH = SchemaValidator(core_schema.any_schema())

# The format of the definitions offered and of the calls sent: pydantic-ai's tool
# names follow OpenAI's rules.
_FORMAT: Final = "openai"

_WAITING = "waiting for the decision of the agent's caller (pydantic-ai's deferred tools)"


def _defer_to_pydantic_ai(request: ApprovalRequest) -> ApprovalDecision:
    """The approver a run's plan gets when none is given: pydantic-ai's caller decides."""
    return ApprovalDecision.defer(_WAITING)


def _pending_in(metadata: Any) -> PendingApproval | None:
    """The deferred call a caller handed back in ``DeferredToolResults.metadata``, if any."""
    if not isinstance(metadata, dict) or "pending" not in metadata:
        return None
    try:
        return PendingApproval.model_validate(metadata["pending"])
    except ValidationError as error:
        raise ToolFailed(f"the deferred call handed back cannot be read: {error}") from error


def _called_while_waiting(
    messages: list[ModelMessage], found: list[Offer], plan: ToolExecutionContext
) -> list[str]:
    """The waiting deferred tools that the model's latest response called by name.

    pydantic-ai looks a call's name up in the tools ``get_tools`` listed for the step
    and answers one it does not find itself, before any toolset or hook sees the call;
    the call is found in the run's messages instead, at the next step.
    """
    response = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    if response is None or not response.tool_calls:
        return []
    names = {call.tool_name for call in response.tool_calls}
    return [
        descriptor.name
        for descriptor, offer in found
        if descriptor is not None
        and offer["function"]["name"] in names
        and waiting(descriptor, plan)
    ]


def _check_plan_options(options: dict[str, Any]) -> None:
    """Refuse an option no plan takes now, rather than when the first run opens its plan."""
    known = list(inspect.signature(ToolExecutionContext).parameters)
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(
                f"ToolcycleToolset got an unknown plan option {name!r}{hint}; besides plan, "
                f"id and search it takes the options of runtime.new_context: {', '.join(known)}"
            )


class ToolcycleToolset(AbstractToolset[Any]):
    """A runtime's tools as a pydantic-ai toolset; each agent run calls them in its own plan.

    Args:
        runtime: the runtime whose tools are offered.
        plan: an open plan for every run to use; the toolset never ends it. Without
            one, each run opens a plan with ``plan_options`` when it enters its
            toolsets and ends it when it leaves them.
        id: the toolset's id, unique among an agent's toolsets (pydantic-ai's
            durable execution needs one).
        search: which tool search finds the runtime's deferred tools. ``"toolcycle"``
            offers the runtime's own ``search_tools`` while any waits. ``"pydantic-ai"``
            offers them with ``defer_loading=True`` for pydantic-ai's own tool search
            (its ``search_tools``, or the provider's native search) and no search of
            its own; use it when the agent has deferred tools of its own, since
            pydantic-ai reserves the name ``search_tools`` for its search then.
        **plan_options: the options of each run's plan, as for `ToolRuntime.new_context`.
            Without an ``approver``, the plan's approver defers to pydantic-ai's own
            approval flow, and ``approval`` defaults to ``"flagged"``: tools marked
            ``requires_approval=True`` wait for the caller's decision, others run.

    Raises:
        ValueError: both ``plan`` and ``plan_options`` were given, or ``search`` is
            neither ``"toolcycle"`` nor ``"pydantic-ai"``.
        TypeError: a plan option is not one `ToolRuntime.new_context` takes.
    """

    def __init__(
        self,
        runtime: ToolRuntime,
        *,
        plan: ToolExecutionContext | None = None,
        id: str | None = None,
        search: Literal["toolcycle", "pydantic-ai"] = "toolcycle",
        **plan_options: Any,
    ) -> None:
        if plan is not None and plan_options:
            raise ValueError("give either an open plan or the options of new plans, not both")
        if search not in ("toolcycle", "pydantic-ai"):
            raise ValueError(f'search must be "toolcycle" or "pydantic-ai", got {search!r}')
        _check_plan_options(plan_options)
        if "approver" not in plan_options or plan_options["approver"] is None:
            plan_options["approver"] = _defer_to_pydantic_ai
            plan_options.setdefault("approval", "flagged")
        self._runtime = runtime
        self._id = id
        self._search = search
        self._options = plan_options
        self._plan = plan
        # Shared by the run copies: a call deferred in one run is decided in a later one.
        # The latest PENDING_KEPT, oldest first.
        self._pending: OrderedDict[str, PendingApproval] = OrderedDict()
        self._per_run = False
        self._entries = 0

    @property
    def id(self) -> str | None:
        """The id given at construction."""
        return self._id

    @property
    def plan(self) -> ToolExecutionContext | None:
        """The plan calls run in: the one given, or this run's own while the run is in it."""
        return self._plan

    async def for_run(self, ctx: RunContext[Any]) -> ToolcycleToolset:
        """A copy with its own plan for the run, unless every run shares a given plan."""
        if self._plan is not None:
            return self
        run = copy.copy(self)
        run._per_run, run._entries = True, 0
        return run

    async def __aenter__(self) -> Self:
        """Open the run's plan on the first entry of a run's copy (else nothing)."""
        if self._per_run:
            if self._entries == 0:
                self._plan = self._runtime.new_context(**self._options)
            self._entries += 1
        return self

    async def __aexit__(self, *args: object) -> bool | None:
        """End the run's plan on the last exit of a run's copy, after its calls stopped."""
        if self._per_run:
            self._entries -= 1
            if self._entries == 0:
                await self._runtime.aend_plan(self._open_plan())
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools the plan may run, with their JSON schemas as they are.

        Asked at every step, so a deferred tool that ``search_tools`` found in one
        step is offered from the next; ``search_tools`` is offered while any waits.
        A waiting tool the model called by name is revealed too, as the runtime
        reveals it: pydantic-ai refused that call as one of an unknown tool, since the
        tool was not listed, and the tool is offered from the next step.
        """
        plan = self._open_plan()
        if self._pending:
            await self._settle_denials(ctx, plan)
        found = offers(self._runtime, plan, _FORMAT, strict=False)
        handed = self._search == "pydantic-ai"
        if handed:
            # pydantic-ai's search reveals them: the plan is told, as for its own search.
            discovered = ctx.discovered_tool_names
            plan.reveal_tools(
                descriptor.name
                for descriptor, offer in found
                if descriptor is not None and offer["function"]["name"] in discovered
            )
        else:
            called = _called_while_waiting(ctx.messages, found, plan)
            if called:
                plan.reveal_tools(called)
                found = offers(self._runtime, plan, _FORMAT, strict=False)  # search_tools may go
        tools: dict[str, ToolsetTool[Any]] = {}
        for descriptor, offer in found:
            if handed:
                if descriptor is None:
                    continue  # pydantic-ai offers the one search_tools
            elif descriptor is not None and waiting(descriptor, plan):
                continue  # shown once a search finds it or the model calls it
            function = offer["function"]
            name = function["name"]
            tools[name] = ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=function["description"] or None,
                    parameters_json_schema=function["parameters"],
                    sequential=descriptor is not None and descriptor.capability.sequential,
                    # Kept for the whole run, as pydantic-ai wants: it tracks what is revealed.
                    defer_loading=handed and descriptor is not None and descriptor.defer_loading,
                ),
                max_retries=ctx.max_retries,
                args_validator=_PASS_THROUGH,
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run the call through the runtime and answer it as pydantic-ai expects.

        Raises:
            ModelRetry: a mistake the model can fix (malformed arguments, an unknown
                tool, arguments that break the schema, a tool the plan may not run).
            ToolFailed: a failure the model cannot fix (the tool failed or timed out,
                the call was denied, the plan was cancelled).
            ApprovalRequired: the plan's approver deferred the call.
        """
        plan = self._open_plan()
        call_id = ctx.tool_call_id
        if ctx.tool_call_approved:
            pending = self._pending.pop(call_id or "", None)
            if pending is None:
                pending = _pending_in(ctx.tool_call_metadata)
            if pending is not None:
                return await self._resume(pending, tool_args, plan)
        # In the format the tools are offered in, under the offered name: the runtime
        # maps it back, and a search answers with the names the model can call.
        call: Any
        if type(tool_args) is dict:
            # Unvalidated, as model_construct would leave it (the runtime validates the
            # arguments against the tool's schema), at a quarter of its cost.
            values = {"id": call_id, "name": name, "arguments": tool_args, "format": _FORMAT}
            call = trusted(ToolCall, values, None)
        else:  # the runtime words what is wrong with arguments that are not an object
            function = {"name": name, "arguments": tool_args}
            call = {"id": call_id, "type": "function", "function": function}
        try:
            result = await self._runtime.acall(call, plan)
        except ToolCancelledError as error:
            raise ToolFailed(str(error)) from error
        return self._answer(result, call_id)

    def _open_plan(self) -> ToolExecutionContext:
        if self._plan is None:
            raise UserError(
                "ToolcycleToolset has no plan: use it as one of an agent's toolsets (each run "
                "opens its own), or give it an open plan"
            )
        return self._plan

    def _answer(self, result: ToolResult, call_id: str | None) -> Any:
        if result.success:
            return tool_return(result) if result.content else result.output
        pending = result.pending
        if pending is not None:
            self._keep(call_id or pending.approval_id, pending)
            raise ApprovalRequired(
                metadata={
                    "approval_id": pending.approval_id,
                    "fingerprint": pending.fingerprint,
                    "reason": pending.reason,
                    "pending": pending.model_dump(mode="json"),
                }
            )
        error = result.error or "the call failed"
        if result.error_type in _RETRY:
            raise ModelRetry(error)
        raise ToolFailed(error)

    def _keep(self, key: str, pending: PendingApproval) -> None:
        """Hold a deferred call for its decision, forgetting the oldest beyond `PENDING_KEPT`."""
        self._pending[key] = pending
        self._pending.move_to_end(key)
        if len(self._pending) > PENDING_KEPT:
            self._pending.popitem(last=False)

    async def _resume(
        self, pending: PendingApproval, tool_args: Any, plan: ToolExecutionContext
    ) -> Any:
        """Run a call the caller approved, claimed in the runtime's approval ledger.

        An approval that changed the arguments (pydantic-ai's ``override_args``) does
        not match the deferred call's fingerprint, so the runtime refuses it.
        """
        seen = fingerprint(pending.tool_name, tool_args if isinstance(tool_args, dict) else {})
        decision = ApprovalDecision.approve(fingerprint=seen)
        try:
            result = await self._runtime.aresume(pending, decision, plan)
        except (ToolRuntimeError, ToolCancelledError) as error:
            raise ToolFailed(str(error)) from error
        return self._answer(result, None)

    async def _settle_denials(self, ctx: RunContext[Any], plan: ToolExecutionContext) -> None:
        """Record in the ledger the deferred calls the caller denied.

        pydantic-ai answers a denied call itself (a ``ToolReturnPart`` with outcome
        ``"denied"``) without calling the toolset; the denial is found in the run's
        messages and given to the runtime, which claims the call so it never runs.
        """
        for message in ctx.messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if (
                    isinstance(part, ToolReturnPart)
                    and part.outcome == "denied"
                    and part.tool_call_id in self._pending
                ):
                    pending = self._pending.pop(part.tool_call_id)
                    decision = ApprovalDecision.deny(str(part.content))
                    with contextlib.suppress(ToolRuntimeError, ToolCancelledError):
                        await self._runtime.aresume(pending, decision, plan)
