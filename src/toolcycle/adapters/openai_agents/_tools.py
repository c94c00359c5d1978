"""The tools a plan may run, as the OpenAI Agents SDK's function tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents import (
    FunctionTool,
    Tool,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
)

from toolcycle import GuardrailTripped, ToolCancelledError, ToolDescriptor, ToolRuntimeError
from toolcycle._plain import plain_schema
from toolcycle.adapters._offers import offers, waiting
from toolcycle.adapters.openai_agents._approvals import APPROVED, FORMAT, decide
from toolcycle.approvals import needs_approval
from toolcycle.errors import error_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from agents import ToolErrorFormatterArgs
    from agents.agent import AgentBase
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext

    from toolcycle import ToolExecutionContext, ToolRuntime
    from toolcycle.approvals import ApprovalRule

__all__ = ["function_tools", "tool_not_found_formatter"]


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
    ones the tool receives (its descriptions and titles cleaned of control
    characters, as in every definition). ``approval`` is the rule that decides which (see
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
    for descriptor, definition in offers(runtime, plan, FORMAT, strict=True):
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
        params_json_schema=(
            definition["parameters"] if asks is None else plain_schema(asks.input_schema)
        ),
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
        for descriptor, definition in offers(runtime, plan, FORMAT, strict=True):
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


def _needs_approval(
    descriptor: ToolDescriptor, plan: ToolExecutionContext, rule: ApprovalRule | None
) -> bool:
    """Whether the SDK asks before a call: under ``rule``, or as the runtime would."""
    if rule is not None:
        return needs_approval(descriptor, rule)
    if plan.approver is None:
        return descriptor.capability.requires_approval is True
    return needs_approval(descriptor, plan.approval)


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
                result = await decide(
                    self._runtime,
                    self._plan,
                    tool,
                    self._name,
                    ctx.tool_call_id,
                    arguments,
                    APPROVED,
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
