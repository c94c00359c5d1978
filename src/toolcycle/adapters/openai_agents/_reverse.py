"""The other way: an SDK ``FunctionTool`` as a toolcycle tool."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from agents.tool_context import ToolContext
from pydantic import BaseModel

from toolcycle import ToolCapability, ToolDescriptor

if TYPE_CHECKING:
    from agents import FunctionTool

    from toolcycle import ToolExecutionContext

__all__ = ["SdkFunctionTool", "from_function_tool"]


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
