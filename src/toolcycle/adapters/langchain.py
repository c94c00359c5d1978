"""LangChain and LangGraph: toolcycle's tools as LangChain tools, and LangChain tools as ours.

`langchain_tools(runtime, plan)` gives the tools a plan may run as LangChain
`BaseTool` objects, for a chat model's ``bind_tools`` and a LangGraph ``ToolNode``.
Each call goes through ``runtime.call`` / ``runtime.acall`` with the tool call's id,
so capabilities, validation, approvals, timeouts, redaction, traces and spans hold:

- ``args_schema`` is the tool's JSON Schema as a dict. LangChain does not validate a
  dict schema; the runtime does, and a model's mistake comes back as a tool message.
- A tool call in (``{"type": "tool_call", "id", "name", "args"}``, which is how a
  ``ToolNode`` calls tools) gives a `ToolMessage` out, ``status="error"`` for a failed
  call with the runtime's actionable message. Nothing the model got wrong raises, so
  nothing depends on LangChain's ``handle_tool_error``. Plain arguments in give the
  output, or the error text of a failed call.
- A call the plan's approver defers pauses a LangGraph run with ``interrupt()``: the
  graph's client sees the approval request, and ``Command(resume=decision)`` resumes the
  call through ``runtime.resume``, which claims it in the runtime's approval ledger.

`from_langchain(tool)` makes any LangChain tool a toolcycle tool, described by its
``args_schema`` and run through its own ``invoke`` or ``ainvoke``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

try:
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables.config import var_child_runnable_config
    from langchain_core.tools import BaseTool, StructuredTool, Tool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without langchain-core
    raise ImportError(
        "toolcycle.adapters.langchain needs langchain-core, an optional extra: "
        "pip install 'toolcycle[langchain]'"
    ) from exc
from pydantic import BaseModel, PrivateAttr, ValidationError

from toolcycle import (
    ApprovalDecision,
    ToolApprovalError,
    ToolCapability,
    ToolDefinitionError,
    ToolDescriptor,
)

try:
    from langgraph.types import interrupt

    _interrupt: Callable[[Any], Any] | None = interrupt
except ImportError:  # pragma: no cover - without LangGraph a deferred call stays pending
    _interrupt = None

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from toolcycle import (
        PendingApproval,
        ToolExecutionContext,
        ToolInstance,
        ToolResult,
        ToolRuntime,
    )

__all__ = ["from_langchain", "langchain_tools"]


# -- toolcycle's tools as LangChain tools ---------------------------------------------


def langchain_tools(runtime: ToolRuntime, plan: ToolExecutionContext) -> list[BaseTool]:
    """The tools the plan of ``plan`` may run, as LangChain tools that call ``runtime``.

    The names are the ones ``tool_definitions`` offers OpenAI (a name a provider would
    refuse is mapped, and mapped back on each call); a read-only plan gets no tool that
    writes. The plan stays the caller's to end, after the run that uses the tools.

    Raises:
        ToolRuntimeError: the plan has ended or the runtime is closed.
    """
    tools: list[BaseTool] = []
    graph = _GraphSteps()
    for definition in runtime.tool_definitions(plan, format="openai"):
        function = definition["function"]
        tools.append(
            _RuntimeTool(
                runtime,
                plan,
                graph,
                name=function["name"],
                description=function["description"],
                args_schema=function["parameters"],
            )
        )
    return tools


class _RuntimeTool(BaseTool):
    """A LangChain tool whose every call is a ``runtime.call`` in one plan."""

    _runtime: ToolRuntime = PrivateAttr()
    _plan: ToolExecutionContext = PrivateAttr()
    _graph: _GraphSteps = PrivateAttr()

    def __init__(
        self,
        runtime: ToolRuntime,
        plan: ToolExecutionContext,
        graph: _GraphSteps,
        **fields: Any,
    ) -> None:
        super().__init__(**fields)
        self._runtime = runtime
        self._plan = plan
        self._graph = graph

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        # BaseTool.run and arun hand `_run` only the arguments; the call's id must reach
        # the runtime too, and the arguments go to it unparsed (JSON text included), as
        # the model sent them: the runtime reads and validates them.
        return (), {"arguments": tool_input, "tool_call_id": tool_call_id}

    def _run(self, arguments: str | dict[str, Any], tool_call_id: str | None) -> Any:
        key = _graph_key(tool_call_id)
        earlier = self._graph.replay(key)
        if earlier is not None:
            return earlier
        return self._graph.remember(key, self._call(arguments, tool_call_id, key))

    async def _arun(self, arguments: str | dict[str, Any], tool_call_id: str | None) -> Any:
        key = _graph_key(tool_call_id)
        earlier = self._graph.replay(key)
        if earlier is not None:
            return earlier
        return self._graph.remember(key, await self._acall(arguments, tool_call_id, key))

    def _call(self, arguments: Any, tool_call_id: str | None, key: _Key | None) -> Any:
        call = {"id": tool_call_id, "name": self.name, "arguments": arguments}
        result = self._runtime.call(call, self._plan)
        if result.pending is not None:
            settled = self._graph.settle(key, result.pending)
            if isinstance(settled, str):
                return self._reply(tool_call_id, error=settled)
            if settled is not None:
                try:
                    result = self._runtime.resume(*settled, self._plan)
                except ToolApprovalError as error:
                    return self._reply(tool_call_id, error=str(error))
        return self._answer(result, tool_call_id)

    async def _acall(self, arguments: Any, tool_call_id: str | None, key: _Key | None) -> Any:
        call = {"id": tool_call_id, "name": self.name, "arguments": arguments}
        result = await self._runtime.acall(call, self._plan)
        if result.pending is not None:
            settled = self._graph.settle(key, result.pending)
            if isinstance(settled, str):
                return self._reply(tool_call_id, error=settled)
            if settled is not None:
                try:
                    result = await self._runtime.aresume(*settled, self._plan)
                except ToolApprovalError as error:
                    return self._reply(tool_call_id, error=str(error))
        return self._answer(result, tool_call_id)

    def _answer(self, result: ToolResult, tool_call_id: str | None) -> Any:
        text = result.to_message("openai")["content"]
        if result.success:
            return self._reply(tool_call_id, text=text, output=result.output)
        return self._reply(tool_call_id, error=text, artifact=result.pending)

    def _reply(
        self,
        tool_call_id: str | None,
        *,
        text: str | None = None,
        output: Any = None,
        error: str | None = None,
        artifact: PendingApproval | None = None,
    ) -> Any:
        if tool_call_id is None:  # invoked with plain arguments: no message to answer
            return output if error is None else error
        return ToolMessage(
            content=text if error is None else error,
            tool_call_id=tool_call_id,
            name=self.name,
            status="success" if error is None else "error",
            artifact=artifact,
        )


class _Resume(NamedTuple):
    """A deferred call's record and the decision to resume it with."""

    pending: PendingApproval
    decision: ApprovalDecision | bool


_Key: TypeAlias = tuple[str, str, str]
"""A tool call in a LangGraph run: its thread, its task's namespace, its tool call id."""

_REPLAYS = 128
"""How many answers the tools of one plan keep for LangGraph's re-runs of a step."""


class _GraphSteps:
    """What the tools of one plan remember across LangGraph's re-runs of a step.

    A deferred call pauses the graph with ``interrupt()``; when the graph resumes,
    LangGraph runs the whole node again, and ``interrupt()`` returns the decision.
    LangGraph pairs decisions with a node's interrupts by the order they are raised,
    and the calls of one ``ToolNode`` step run concurrently, so two calls waiting at
    once could swap their decisions. So in one step (one graph task) only the first call
    that needs a decision asks for one; any other is told to call again. The record the
    graph showed is the one resumed, so the runtime's ledger claims the call a person
    saw. And in a step where a call asked, the other calls' answers are replayed when
    the node runs again rather than their tools run twice.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._askers: dict[tuple[str, str], str] = {}
        self._shown: dict[_Key, PendingApproval] = {}
        self._answers: OrderedDict[_Key, ToolMessage] = OrderedDict()

    def replay(self, key: _Key | None) -> ToolMessage | None:
        """The answer an earlier run of this call's step gave, if that step asked a person."""
        if key is None:
            return None
        with self._lock:
            earlier = self._answers.get(key) if key[:2] in self._askers else None
        return None if earlier is None else earlier.model_copy()

    def remember(self, key: _Key | None, answer: Any) -> Any:
        """Keep ``answer`` for a re-run of its step (the latest `_REPLAYS` of them); return it."""
        if key is not None and isinstance(answer, ToolMessage):
            with self._lock:
                self._answers[key] = answer
                if len(self._answers) > _REPLAYS:
                    self._answers.popitem(last=False)
        return answer

    def settle(self, key: _Key | None, pending: PendingApproval) -> _Resume | str | None:
        """The record and decision to resume with, pausing the graph first if need be.

        Returns the error text for a call that may not ask in this step, and None
        outside a graph run (or without a tool call id), where nothing can pause.
        """
        if key is None or _interrupt is None:
            return None
        with self._lock:
            if self._askers.setdefault(key[:2], key[2]) != key[2]:
                return (
                    "this call needs approval while another call of the same step waits "
                    "for one; call it again once that one is answered"
                )
            shown = self._shown.get(key)
            if shown is None or shown.fingerprint != pending.fingerprint:
                shown = self._shown[key] = pending
        answer = _interrupt(_approval_request(shown))  # pauses the graph the first time
        with self._lock:
            self._shown.pop(key, None)
        return _Resume(shown, _decision(answer))


def _graph_key(tool_call_id: str | None) -> _Key | None:
    """The key of this tool call in the LangGraph run it is part of; None outside one."""
    config = var_child_runnable_config.get()
    if tool_call_id is None or not config:
        return None
    configurable = config.get("configurable") or {}
    namespace = configurable.get("checkpoint_ns")
    if not namespace:  # a graph's task always has one; a plain invoke has none
        return None
    return str(configurable.get("thread_id")), str(namespace), tool_call_id


def _approval_request(pending: PendingApproval) -> dict[str, Any]:
    """What the paused graph shows its client: plain JSON, secrets masked."""
    call = pending.call
    return {
        "type": "toolcycle_approval",
        "tool_name": pending.tool_name,
        "arguments": call.arguments if call is not None else {},
        "fingerprint": pending.fingerprint,
        "reason": pending.reason,
        "plan_id": pending.plan_id,
        "tool_call_id": call.id if call is not None else None,
    }


def _decision(answer: object) -> ApprovalDecision | bool:
    """A resume value as a decision; anything else denies the call (fail closed)."""
    if isinstance(answer, ApprovalDecision | bool):
        return answer
    if isinstance(answer, dict):
        try:
            return ApprovalDecision.model_validate(answer)
        except ValidationError:
            pass
    return ApprovalDecision.deny(
        f"the run was resumed with {type(answer).__name__}, not an approval decision "
        "(a bool, an ApprovalDecision or its dict); the call is denied"
    )


# -- LangChain tools as toolcycle tools -----------------------------------------------


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
    without LangChain's injected arguments, or a JSON Schema dict as it is). A tool with
    a coroutine of its own (``StructuredTool`` / ``Tool`` with ``coroutine``, or a
    ``BaseTool`` that defines ``_arun``) stays async; any other stays sync. Nothing
    about a LangChain tool says whether it writes, so the capability defaults are the
    core's safe ones, as for `toolcycle.wrap`: it writes and cannot be rolled back
    unless you say otherwise. An exception the tool raises (``ToolException``
    included) is a failed result.

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
        return _AsyncLangChainTool(tool, descriptor)
    return _LangChainTool(tool, descriptor)


def _input_schema(tool: BaseTool) -> dict[str, Any]:
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


def _is_async(tool: BaseTool) -> bool:
    if isinstance(tool, StructuredTool | Tool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


class _LangChainTool:
    """A sync LangChain tool: ``execute`` is its ``invoke``."""

    __slots__ = ("_descriptor", "tool")

    def __init__(self, tool: BaseTool, descriptor: ToolDescriptor) -> None:
        self.tool = tool
        self._descriptor = descriptor

    def discover(self) -> ToolDescriptor:
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return self.tool.invoke(params)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class _AsyncLangChainTool:
    """An async LangChain tool: ``execute`` awaits its ``ainvoke``."""

    __slots__ = ("_descriptor", "tool")

    def __init__(self, tool: BaseTool, descriptor: ToolDescriptor) -> None:
        self.tool = tool
        self._descriptor = descriptor

    def discover(self) -> ToolDescriptor:
        return self._descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return await self.tool.ainvoke(params)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None
