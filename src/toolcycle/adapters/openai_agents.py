"""The OpenAI Agents SDK and toolcycle, both ways (extra ``openai-agents``).

- `function_tools` offers the tools a plan may run as the SDK's ``FunctionTool``
  objects. Each call goes through ``runtime.acall`` with the model's raw JSON
  arguments and its ``call_id``, so the plan's capabilities, validation, timeouts,
  redaction, traces and spans hold. A failed call answers the model with the
  runtime's message saying what to do instead; only a guardrail's stop
  (`GuardrailTripped`) raises, which ends the SDK's run, since a stop is for the
  host. A result with content parts answers with the SDK's structured tool outputs
  (``ToolOutputText``, ``ToolOutputImage``, ``ToolOutputFileContent``), built from
  the runtime's Responses API message.
- Deferred tools are found with the runtime's ``search_tools``, offered as one
  more function tool; each is enabled (``is_enabled``) once revealed in the plan.
  `tool_not_found_formatter` reveals one that the model calls by name before.
- `from_function_tool` is the other way: an SDK ``FunctionTool`` as a toolcycle
  `ToolInstance`, run under a plan's capabilities, validation and traces.

Approvals have one home. A tool that needs approval (by the runtime's rule for the
plan, or the rule `function_tools` is given) is offered with ``needs_approval=True``:
the SDK interrupts the run, and the host answers with ``RunState.approve`` or
`reject`. An approved call reaches
the runtime through ``runtime.aresume``, which claims it in the runtime's approval
ledger (so a run state resumed twice runs it once) and records the decision in the
call's trace; the plan's approver is not asked a second time. `reject` rejects a
call in the run state and in the runtime's ledger as one decision.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Final

try:
    from agents import (
        FunctionTool,
        RunState,
        Tool,
        ToolApprovalItem,
        ToolOutputFileContent,
        ToolOutputImage,
        ToolOutputText,
    )
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise ImportError(
        "toolcycle.adapters.openai_agents needs openai-agents, an optional extra: "
        "pip install -e '.[openai-agents]' from a clone (toolcycle[openai-agents] once published)"
    ) from exc
from pydantic import BaseModel

from toolcycle import (
    ApprovalDecision,
    GuardrailTripped,
    PendingApproval,
    ToolCall,
    ToolCancelledError,
    ToolCapability,
    ToolDescriptor,
    ToolRuntimeError,
)
from toolcycle.adapters._offers import offers, waiting
from toolcycle.approvals import fingerprint, needs_approval
from toolcycle.errors import error_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from agents import ToolErrorFormatterArgs
    from agents.agent import AgentBase
    from agents.run_context import RunContextWrapper

    from toolcycle import ToolExecutionContext, ToolResult, ToolRuntime
    from toolcycle.approvals import ApprovalRule

__all__ = [
    "SdkFunctionTool",
    "from_function_tool",
    "function_tools",
    "reject",
    "tool_not_found_formatter",
]

_APPROVALS = uuid.UUID("6f0c2b8e-4a1d-5c3e-9b7a-2d4e6f8a0c1e")
"""The namespace of the approval ids made from the SDK's call ids."""
_FORMAT: Final = "openai-responses"
_APPROVED = ApprovalDecision.approve(
    reason="approved in the OpenAI Agents SDK run (RunState.approve)"
)


def function_tools(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    *,
    approval: ApprovalRule | None = None,
) -> list[Tool]:
    """The tools the plan may run, as the OpenAI Agents SDK's function tools.

    Every item is a ``FunctionTool``; the list is typed as the SDK's ``list[Tool]``,
    what ``Agent(tools=...)`` takes, so that it type-checks passed as it is (or
    joined with the agent's other tools).

    A tool is offered under the name, description and input schema
    ``runtime.tool_definitions(plan, format="openai-responses", strict=True)`` gives
    it, with ``strict_json_schema`` wherever that strict rewrite keeps the schema's
    meaning.

    A tool that needs approval has ``needs_approval=True`` and is offered with its
    schema as it is, not strict, so that the arguments a person approves are the
    ones the tool receives. ``approval`` is the rule that decides which (see
    `toolcycle.approvals.needs_approval`: ``"writes"``, ``"all"``, ``"flagged"`` or
    a function of the descriptor); by default, the runtime's own rule for the plan:
    the plan's ``approval`` when it has an approver, otherwise only tools flagged
    ``requires_approval=True``.

    A read-only plan does not offer tools that write. The SDK fails a run whose
    model calls a tool it was not offered, unless the run's config says
    ``tool_not_found_behavior="return_error_to_model"``.

    Deferred tools (``defer_loading=True``) are in the list too, each enabled
    (the SDK's ``is_enabled``) only once revealed in the plan, and a
    ``search_tools`` function tool, enabled while any waits, answers through the
    runtime's local search (docs/tool-search.md): a tool it finds is offered from
    the run's next turn. That needs the extra ``search``, as local search does. A
    deferred tool the model calls before it is enabled is not found, as above; see
    `tool_not_found_formatter` for a run that reveals it instead.

    The plan stays the caller's: open it before the run and end it after.

    Raises:
        ImportError: a deferred tool waits and ``bm25s`` (extra ``search``) is missing.
        ValueError: a deferred tool waits and a registered tool is named ``search_tools``.
    """
    tools: list[Tool] = []
    hidden: list[str] = []  # the deferred tools not yet revealed
    enabled: bool | _Enabled
    for descriptor, definition in offers(runtime, plan, _FORMAT, strict=True):
        if descriptor is None:  # search_tools, answered by the runtime; never asks
            enabled = _Enabled(plan, hidden, revealed=False)
            tools.append(_function_tool(runtime, plan, definition, None, enabled))
            continue
        asks = _needs_approval(descriptor, plan, approval)
        if waiting(descriptor, plan):
            hidden.append(descriptor.name)
            enabled = _Enabled(plan, [descriptor.name], revealed=True)
        else:
            enabled = True
        tool = _function_tool(runtime, plan, definition, descriptor if asks else None, enabled)
        tools.append(tool)
    return tools


def _function_tool(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    definition: dict[str, Any],
    asks: ToolDescriptor | None,
    enabled: bool | _Enabled,
) -> FunctionTool:
    """One offered tool; ``asks`` is the descriptor of a tool that needs approval."""
    name = definition["name"]
    return FunctionTool(
        name=name,
        description=definition["description"],
        params_json_schema=definition["parameters"] if asks is None else asks.input_schema,
        on_invoke_tool=_Invoke(runtime, plan, name, None if asks is None else asks.name),
        strict_json_schema=definition["strict"] if asks is None else False,
        needs_approval=asks is not None,
        is_enabled=enabled,
    )


class _Enabled:
    """The ``is_enabled`` of a tool that depends on deferred tools being revealed.

    A deferred tool is enabled once revealed (``revealed=True``); ``search_tools``
    while any deferred tool waits. The SDK asks before each turn, so a tool that a
    search finds in one turn is offered in the next.
    """

    __slots__ = ("_names", "_plan", "_revealed")

    def __init__(self, plan: ToolExecutionContext, names: list[str], *, revealed: bool) -> None:
        self._plan = plan
        self._names = names
        self._revealed = revealed

    def __call__(self, ctx: RunContextWrapper[Any], agent: AgentBase[Any]) -> bool:
        shown = self._plan.revealed_tools
        if self._revealed:
            return all(name in shown for name in self._names)
        return any(name not in shown for name in self._names)


def tool_not_found_formatter(
    runtime: ToolRuntime, plan: ToolExecutionContext
) -> Callable[[ToolErrorFormatterArgs[Any]], str | None]:
    """A ``RunConfig.tool_error_formatter`` that reveals a deferred tool called by name.

    The SDK looks a call's name up among the tools enabled for the turn only, so a
    model that calls a deferred tool before a search found it (it may know the tool)
    never reaches the runtime, and nothing can run the call: the formatter gets
    neither the arguments nor a way to answer with an output. With
    ``tool_not_found_behavior="return_error_to_model"``, this formatter does what it
    can of what the runtime does with such a call: it reveals the tool in the plan,
    so that it is enabled from the next turn, and tells the model to call it again.
    Any other name, and every other kind of error, keeps the SDK's own message.
    """

    def answer(error: ToolErrorFormatterArgs[Any]) -> str | None:
        if error.kind != "tool_not_found":
            return None
        for descriptor, definition in offers(runtime, plan, _FORMAT, strict=True):
            if (
                descriptor is not None
                and descriptor.defer_loading
                and definition["name"] == error.tool_name
            ):
                plan.reveal_tools([descriptor.name])
                return (
                    f"tool {error.tool_name!r} was not loaded yet; it is loaded now and "
                    "offered from your next turn: call it again"
                )
        return None

    return answer


async def reject(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    state: RunState[Any, Any],
    item: ToolApprovalItem,
    reason: str,
) -> ToolResult:
    """Reject an interrupted call in the run state and in the runtime, as one decision.

    The runtime claims the call in its approval ledger and traces the denial; the
    run state then rejects the item with the runtime's message, which the model
    reads when the run resumes. Once claimed, the same call approved in another
    copy of the run state is refused. ``state.reject`` alone also works, but the
    runtime then never hears of the call.

    Raises:
        ValueError: the item is not a call of one of the plan's tools.
        ToolApprovalError: the call was decided before (approved and run, say).
    """
    offered = offers(runtime, plan, _FORMAT, strict=True)
    names = {definition["name"]: d.name for d, definition in offered if d is not None}
    name = names.get(item.tool_name or "")
    if name is None:
        raise ValueError(f"{item.tool_name!r} is not a toolcycle tool of plan {plan.plan_id!r}")
    decision = ApprovalDecision.deny(reason)
    result = await _decide(
        runtime, plan, name, item.tool_name or "", item.call_id or "", item.arguments, decision
    )
    state.reject(item, rejection_message=result.error)
    return result


def _needs_approval(
    descriptor: ToolDescriptor, plan: ToolExecutionContext, rule: ApprovalRule | None
) -> bool:
    """Whether the SDK asks before a call: under ``rule``, or as the runtime would."""
    if rule is not None:
        return needs_approval(descriptor, rule)
    if plan.approver is None:
        return descriptor.capability.requires_approval is True
    return needs_approval(descriptor, plan.approval)


async def _decide(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    name: str,
    offered_as: str,
    call_id: str,
    arguments: str | None,
    decision: ApprovalDecision,
) -> ToolResult:
    """Apply a decision of the SDK's run to one call, claimed in the runtime's ledger.

    Arguments that are not a JSON object cannot be fingerprinted: the runtime
    answers them as any call of the plan (a failed result), and nothing runs.
    """
    try:
        data = json.loads(arguments or "")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        call = {"type": "function_call", "call_id": call_id, "name": offered_as}
        return await runtime.acall({**call, "arguments": arguments}, plan)
    mark = fingerprint(name, data)
    pending = PendingApproval(
        approval_id=uuid.uuid5(_APPROVALS, f"{call_id}\n{mark}").hex,
        tool_name=name,
        arguments=data,
        fingerprint=mark,
        plan_id=plan.plan_id,
        call_id=call_id,
        call=ToolCall(id=call_id, name=offered_as, arguments=data, format="openai-responses"),
    )
    bound = decision.model_copy(update={"fingerprint": mark})
    return await runtime.aresume(pending, bound, plan)


class _Invoke:
    """A function tool's ``on_invoke_tool``: one SDK call through the runtime."""

    __slots__ = ("_approved_tool", "_name", "_plan", "_runtime")

    def __init__(
        self,
        runtime: ToolRuntime,
        plan: ToolExecutionContext,
        name: str,
        approved_tool: str | None,
    ) -> None:
        self._runtime = runtime
        self._plan = plan
        self._name = name
        self._approved_tool = approved_tool  # the runtime's name, for a tool the SDK approves

    async def __call__(
        self, ctx: ToolContext[Any], arguments: str
    ) -> str | list[ToolOutputText | ToolOutputImage | ToolOutputFileContent]:
        try:
            tool = self._approved_tool
            if tool is not None and ctx.is_tool_approved(ctx.tool_name, ctx.tool_call_id):
                result = await _decide(
                    self._runtime,
                    self._plan,
                    tool,
                    self._name,
                    ctx.tool_call_id,
                    arguments,
                    _APPROVED,
                )
            else:
                call = {
                    "type": "function_call",
                    "call_id": ctx.tool_call_id,
                    "name": self._name,
                    "arguments": arguments,
                }
                result = await self._runtime.acall(call, self._plan)
        except GuardrailTripped:
            raise  # a stop is for the host: the SDK ends the run with it
        except (ToolRuntimeError, ToolCancelledError) as exc:
            return error_text(exc)
        output = result.to_message("openai-responses")["output"]
        if isinstance(output, str):
            return output
        return [_structured(item) for item in output]


def _structured(item: dict[str, Any]) -> ToolOutputText | ToolOutputImage | ToolOutputFileContent:
    """One item of a Responses tool output as the SDK's structured tool output."""
    if item["type"] == "input_image":
        return ToolOutputImage(image_url=item["image_url"])
    if item["type"] == "input_file":
        return ToolOutputFileContent(file_data=item["file_data"], filename=item["filename"])
    return ToolOutputText(text=item["text"])


def from_function_tool(
    tool: FunctionTool,
    *,
    writes: bool = True,
    checkpointable: bool = False,
    requires_approval: bool | None = None,
) -> SdkFunctionTool:
    """An OpenAI Agents SDK function tool as a toolcycle tool.

    The descriptor takes the tool's name, description and ``params_json_schema``
    (which the runtime validates every call against). A function tool says nothing
    about its effects, so it is taken to write unless ``writes=False`` says
    otherwise: a read-only plan refuses it until its author says it only reads.
    ``requires_approval`` defaults to True for a tool whose ``needs_approval`` is
    True or a policy function (which cannot be asked outside an SDK run), and to
    None (the plan's rule) otherwise.
    """
    if requires_approval is None and tool.needs_approval is not False:
        requires_approval = True
    capability = ToolCapability(
        writes=writes, checkpointable=checkpointable, requires_approval=requires_approval
    )
    return SdkFunctionTool(tool, capability)


class SdkFunctionTool:
    """An SDK ``FunctionTool`` run by toolcycle: made by `from_function_tool`.

    Each call invokes the tool's ``on_invoke_tool`` with the validated arguments as
    JSON text and a `ToolContext` whose ``context`` is the plan's
    `ToolExecutionContext`. The SDK's own handling stays: a tool made with the
    default ``failure_error_function`` returns its error as text, which is then
    the call's output; make it with ``failure_error_function=None`` for its
    exceptions to fail the call. Structured outputs (``ToolOutputText`` and the
    like) become their JSON data; anything else that is not JSON data, its text.
    """

    __slots__ = ("_capability", "tool")

    def __init__(self, tool: FunctionTool, capability: ToolCapability) -> None:
        self.tool = tool
        self._capability = capability

    def discover(self) -> ToolDescriptor:
        """Describe the SDK tool."""
        return ToolDescriptor(
            name=self.tool.name,
            description=self.tool.description,
            input_schema=self.tool.params_json_schema,
            capability=self._capability,
            source="wrapped",
            source_name="openai-agents",
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to prepare: an SDK function tool has no lifecycle."""

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Invoke the SDK tool with ``params`` as JSON text."""
        arguments = json.dumps(params, ensure_ascii=False, separators=(",", ":"))
        tool_ctx = ToolContext(
            ctx,
            tool_name=self.tool.name,
            tool_call_id=f"toolcycle-{uuid.uuid4().hex}",
            tool_arguments=arguments,
        )
        return _json_data(await self.tool.on_invoke_tool(tool_ctx, arguments))

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to release."""


def _json_data(output: Any) -> Any:
    """An SDK tool's output as JSON data: models dumped, anything unknown as text."""
    if output is None or isinstance(output, str | int | float | bool | dict):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json", exclude_none=True)
    if isinstance(output, list):
        return [_json_data(item) for item in output]
    return str(output)
