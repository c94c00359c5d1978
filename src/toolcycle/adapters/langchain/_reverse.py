"""LangChain tools as toolcycle tools, run through their own ``invoke`` or ``ainvoke``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, Tool
from pydantic import BaseModel

from toolcycle import ToolCapability, ToolDefinitionError, ToolDescriptor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcycle import ToolExecutionContext, ToolInstance

__all__ = ["from_langchain"]


def from_langchain(
    tool: BaseTool,
    *,
    name: str | None = None,
    writes: bool = True,
    checkpointable: bool = False,
    sequential: bool = False,
    requires_approval: bool | None = None,
    tags: Iterable[str] = (),
) -> ToolInstance:
    """A LangChain tool as a toolcycle tool, run through its own ``invoke`` or ``ainvoke``.

    The input schema is the tool's ``args_schema`` (a pydantic model's JSON Schema,
    without LangChain's injected arguments, or a JSON Schema dict as it is); a ``Tool``
    without one takes one string, ``__arg1``, as LangChain shows it. A tool with
    a coroutine of its own (``StructuredTool`` / ``Tool`` with ``coroutine``, or a
    ``BaseTool`` that defines ``_arun``) stays async; any other stays sync. Nothing
    about a LangChain tool says whether it writes, so the capability defaults are the
    core's safe ones, as for `toolcycle.wrap`: it writes and cannot be rolled back
    unless you say otherwise. An exception the tool raises (``ToolException``
    included) is a failed result, with the tool's own message, whatever the tool's
    ``handle_tool_error`` says: that setting would turn the exception into a string
    output and the failed call into a successful one. Likewise, arguments its
    ``args_schema`` rejects (a validator JSON Schema cannot express) are a failed
    result whatever ``handle_validation_error`` says. A tool with an
    ``InjectedToolCallId`` argument is invoked with a tool call whose id is the
    runtime's call id (the trace's ``call_id``), and its output is the content of
    the `ToolMessage` it answers with.

    Raises:
        ToolDefinitionError: the tool's schema is neither a pydantic model nor a dict.
    """
    descriptor = ToolDescriptor(
        name=name or tool.name,
        description=tool.description,
        input_schema=_input_schema(tool),
        capability=ToolCapability(
            writes=writes,
            checkpointable=checkpointable,
            sequential=sequential,
            requires_approval=requires_approval,
        ),
        source="wrapped",
        source_name="langchain",
        tags=frozenset(tool.tags or ()) | frozenset(tags),
    )
    if _is_async(tool):
        return _AsyncLangChainTool(_raising(tool), descriptor)
    return _LangChainTool(_raising(tool), descriptor)


def _raising(tool: BaseTool) -> BaseTool:
    """``tool`` as it runs here: its errors raised, not turned into its output.

    LangChain catches the ``ToolException`` of a tool with ``handle_tool_error``, and
    the rejection of its ``args_schema`` for one with ``handle_validation_error``, and
    returns the message (or the handler's) as the tool's output, so the runtime would
    trace a failed call as ``ok``. A shallow copy that lets them through leaves the
    caller's tool as it was; the copy shares its function, coroutine and callbacks.
    """
    if not (tool.handle_tool_error or tool.handle_validation_error):
        return tool
    return tool.model_copy(update={"handle_tool_error": False, "handle_validation_error": False})


# A `Tool` without an args_schema takes one string. Its signature says nothing useful
# (``*args, config, **kwargs``), so it gets the one-argument schema LangChain itself
# shows models for such a tool; ``Tool`` passes the one value on as the string.
_ONE_STRING: dict[str, Any] = {
    "type": "object",
    "properties": {"__arg1": {"type": "string"}},
    "required": ["__arg1"],
}


def _input_schema(tool: BaseTool) -> dict[str, Any]:
    if isinstance(tool, Tool) and tool.args_schema is None:
        return dict(_ONE_STRING)
    if isinstance(tool.args_schema, dict):
        return dict(tool.args_schema)
    schema = tool.tool_call_schema  # the model without the arguments LangChain injects
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    raise ToolDefinitionError(
        f"the args_schema of LangChain tool {tool.name!r} is a {schema!r}; "
        "give it a pydantic (v2) model or a JSON Schema dict",
        tool_name=tool.name,
    )


def _takes_call_id(tool: BaseTool) -> bool:
    """Whether one of the tool's arguments is LangChain's ``InjectedToolCallId``."""
    schema = tool.args_schema
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        return False
    return any(
        mark is InjectedToolCallId or isinstance(mark, InjectedToolCallId)
        for field in schema.model_fields.values()
        for mark in field.metadata
    )


def _call_input(
    tool: BaseTool, params: dict[str, Any], ctx: ToolExecutionContext, with_id: bool
) -> dict[str, Any]:
    """What to invoke the tool with: its arguments, or a tool call that gives it an id.

    LangChain refuses to run a tool taking ``InjectedToolCallId`` from bare arguments.
    """
    if not with_id:
        return params
    return {"type": "tool_call", "id": ctx.call_id, "name": tool.name, "args": params}


def _output(tool: BaseTool, answer: Any, with_id: bool) -> Any:
    """The tool's output: as it returned it, or the content of its `ToolMessage`."""
    if not with_id:
        return answer
    if isinstance(answer, ToolMessage):
        return answer.content
    raise TypeError(
        f"LangChain tool {tool.name!r} answered a tool call with a {type(answer).__name__}, "
        "not a ToolMessage; a LangGraph Command only has a meaning inside a ToolNode, so "
        "run such a tool there, or have it return its result"
    )


def _is_async(tool: BaseTool) -> bool:
    if isinstance(tool, StructuredTool | Tool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


class _LangChainTool:
    """A sync LangChain tool: ``execute`` is its ``invoke``."""

    __slots__ = ("_descriptor", "_with_id", "tool")

    def __init__(self, tool: BaseTool, descriptor: ToolDescriptor) -> None:
        self.tool = tool
        self._descriptor = descriptor
        self._with_id = _takes_call_id(tool)

    def discover(self) -> ToolDescriptor:
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        answer = self.tool.invoke(_call_input(self.tool, params, ctx, self._with_id))
        return _output(self.tool, answer, self._with_id)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class _AsyncLangChainTool:
    """An async LangChain tool: ``execute`` awaits its ``ainvoke``."""

    __slots__ = ("_descriptor", "_with_id", "tool")

    def __init__(self, tool: BaseTool, descriptor: ToolDescriptor) -> None:
        self.tool = tool
        self._descriptor = descriptor
        self._with_id = _takes_call_id(tool)

    def discover(self) -> ToolDescriptor:
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        answer = await self.tool.ainvoke(_call_input(self.tool, params, ctx, self._with_id))
        return _output(self.tool, answer, self._with_id)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None
