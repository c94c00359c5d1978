"""toolcycle's tools as LangChain tools: every call is a ``runtime.call`` in one plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import PrivateAttr

from toolcycle import ToolApprovalError
from toolcycle.adapters._offers import offers, waiting
from toolcycle.adapters.langchain._blocks import content_blocks
from toolcycle.adapters.langchain._graph import GraphSteps, Pause, graph_key

if TYPE_CHECKING:
    from toolcycle import ToolExecutionContext, ToolResult, ToolRuntime
    from toolcycle.adapters.langchain._graph import Key

__all__ = ["langchain_tools"]


def langchain_tools(
    runtime: ToolRuntime, plan: ToolExecutionContext, *, include_deferred: bool = False
) -> list[BaseTool]:
    """The tools the plan of ``plan`` may run, as LangChain tools that call ``runtime``.

    The names are the ones ``tool_definitions`` offers OpenAI (a name a provider would
    refuse is mapped, and mapped back on each call); a read-only plan gets no tool that
    writes. The plan stays the caller's to end, after the run that uses the tools.

    The list is what the model is to be shown now: deferred tools (``defer_loading``)
    once revealed in the plan, and ``search_tools`` while any waits, which the runtime
    answers with the names of the tools it finds, as here. Bind the model to a fresh
    list at each step. ``include_deferred=True`` adds the deferred tools still
    waiting: the list for a ``ToolNode`` built once, which must run whatever a later
    search finds.

    Raises:
        ToolRuntimeError: the plan has ended or the runtime is closed.
        ImportError: a deferred tool waits and ``bm25s`` (extra ``search``) is missing.
    """
    tools: list[BaseTool] = []
    graph = GraphSteps()
    for descriptor, definition in offers(runtime, plan, "openai", strict=False):
        if not include_deferred and descriptor is not None and waiting(descriptor, plan):
            continue
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
    _graph: GraphSteps = PrivateAttr()

    def __init__(
        self,
        runtime: ToolRuntime,
        plan: ToolExecutionContext,
        graph: GraphSteps,
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
        key = graph_key(tool_call_id)
        earlier = self._graph.replay(key)
        if earlier is not None:
            return earlier
        self._graph.enter(key)
        try:
            return self._graph.remember(key, self._call(arguments, tool_call_id, key))
        finally:
            self._graph.leave(key)

    async def _arun(self, arguments: str | dict[str, Any], tool_call_id: str | None) -> Any:
        key = graph_key(tool_call_id)
        earlier = self._graph.replay(key)
        if earlier is not None:
            return earlier
        self._graph.enter(key)
        try:
            return self._graph.remember(key, await self._acall(arguments, tool_call_id, key))
        finally:
            self._graph.leave(key)

    def _call(self, arguments: Any, tool_call_id: str | None, key: Key | None) -> Any:
        call = self._tool_call(arguments, tool_call_id)
        result = self._runtime.call(call, self._plan)
        if result.pending is not None:
            settled = self._graph.settle(key, result.pending)
            if isinstance(settled, Pause):
                assert key is not None  # only a call in a graph step pauses
                self._graph.wait_others(key)
                raise settled.error
            if isinstance(settled, str):
                return self._reply(tool_call_id, error=settled)
            if settled is not None:
                try:
                    result = self._runtime.resume(*settled, self._plan)
                except ToolApprovalError as error:
                    return self._reply(tool_call_id, error=str(error))
        return self._answer(result, tool_call_id)

    async def _acall(self, arguments: Any, tool_call_id: str | None, key: Key | None) -> Any:
        call = self._tool_call(arguments, tool_call_id)
        result = await self._runtime.acall(call, self._plan)
        if result.pending is not None:
            settled = self._graph.settle(key, result.pending)
            if isinstance(settled, Pause):
                assert key is not None  # only a call in a graph step pauses
                await self._graph.await_others(key)
                raise settled.error
            if isinstance(settled, str):
                return self._reply(tool_call_id, error=settled)
            if settled is not None:
                try:
                    result = await self._runtime.aresume(*settled, self._plan)
                except ToolApprovalError as error:
                    return self._reply(tool_call_id, error=str(error))
        return self._answer(result, tool_call_id)

    def _tool_call(self, arguments: Any, tool_call_id: str | None) -> dict[str, Any]:
        # In the format the name comes from: a search then names the tools it finds as
        # LangChain holds them.
        function = {"name": self.name, "arguments": arguments}
        return {"id": tool_call_id, "type": "function", "function": function}

    def _answer(self, result: ToolResult, tool_call_id: str | None) -> Any:
        if result.success and result.content:
            # The model reads the parts as blocks; the value, which it never sees, is the
            # message's artifact, LangChain's place for what the host alone reads.
            blocks = content_blocks(result.content)
            return self._reply(
                tool_call_id, text=blocks, output=result.output, artifact=result.output
            )
        text = result.to_message("openai")["content"]
        if result.success:
            return self._reply(tool_call_id, text=text, output=result.output)
        return self._reply(tool_call_id, error=text, artifact=result.pending)

    def _reply(
        self,
        tool_call_id: str | None,
        *,
        text: Any = None,
        output: Any = None,
        error: str | None = None,
        artifact: Any = None,
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
