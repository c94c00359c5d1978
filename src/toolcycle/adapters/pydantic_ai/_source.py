"""`from_toolset`: a pydantic-ai toolset as a toolcycle tool source.

The toolset is listed once at registration (entered, asked for its tools, exited,
on a loop of its own so that registration works from sync and async code alike).
In each plan, the first activation of one of its tools gives the toolset's copy for
that plan (``for_run``) and enters it; the last deactivation in the plan exits it.
Calls run through that copy with the arguments the runtime has validated against
the tool's schema, converted by the toolset's own argument validator.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from toolcycle import ToolActivationError, ToolCapability, ToolDescriptor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

    from toolcycle import ToolExecutionContext, ToolInstance, ToolSource

__all__ = ["from_toolset"]


def from_toolset(
    toolset: AbstractToolset[Any],
    *,
    deps: Any = None,
    capabilities: Mapping[str, ToolCapability] | None = None,
) -> ToolSource:
    """A pydantic-ai toolset as a toolcycle tool source.

    Args:
        toolset: any pydantic-ai toolset: a ``FunctionToolset``, an MCP server, a wrapper.
        deps: the ``deps`` of the ``RunContext`` its tools receive (outside an agent
            run, its ``model`` is a stand-in that answers nothing).
        capabilities: each tool's capability, by name. A tool not named here is taken
            to write (pydantic-ai does not say), and keeps its ``sequential`` flag.

    Each plan enters the toolset when it activates the first of its tools, and exits
    it when it deactivates the last.
    """
    return _ToolsetSource(toolset, deps, dict(capabilities or {}))


@dataclass
class _InPlan:
    """The toolset's copy for one plan, once entered, and how many of its tools are active."""

    active: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    toolset: AbstractToolset[Any] | None = None
    tools: dict[str, ToolsetTool[Any]] = field(default_factory=dict)
    error: BaseException | None = None


class _ToolsetSource:
    """The source `from_toolset` returns."""

    def __init__(
        self,
        toolset: AbstractToolset[Any],
        deps: Any,
        capabilities: dict[str, ToolCapability],
    ) -> None:
        self._toolset = toolset
        self._deps = deps
        self._capabilities = capabilities
        self._plans: dict[str, _InPlan] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"from_toolset({self._toolset.label})"

    def context(self) -> RunContext[Any]:
        """The run context the toolset's methods receive outside an agent run."""
        return RunContext(deps=self._deps, model=TestModel(), usage=RunUsage())

    def tools(self) -> list[ToolInstance]:
        """Enter the toolset, list its tools and exit it, on a loop of its own."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolcycle-list") as pool:
            listed = pool.submit(asyncio.run, self._list()).result()
        return [_ToolsetTool(self, self._descriptor(tool)) for tool in listed.values()]

    async def _list(self) -> dict[str, ToolsetTool[Any]]:
        ctx = self.context()
        toolset = await self._toolset.for_run(ctx)
        async with toolset:
            return await toolset.get_tools(ctx)

    def _descriptor(self, tool: ToolsetTool[Any]) -> ToolDescriptor:
        definition = tool.tool_def
        capability = self._capabilities.get(
            definition.name, ToolCapability(sequential=definition.sequential)
        )
        return ToolDescriptor(
            name=definition.name,
            description=definition.description or "",
            input_schema=definition.parameters_json_schema,
            output_schema=definition.return_schema,
            capability=capability,
            source_name=self._toolset.label,
            timeout=definition.timeout,
        )

    async def enter(self, plan_id: str) -> _InPlan:
        """Count one more active tool in the plan; the first enters the plan's copy."""
        with self._lock:
            entry = self._plans.get(plan_id)
            first = entry is None
            if entry is None:
                entry = self._plans[plan_id] = _InPlan()
            entry.active += 1
        if not first:
            await entry.ready.wait()
            if entry.error is not None:
                await self.leave(plan_id)
                raise ToolActivationError(f"the toolset could not be entered: {entry.error}")
            return entry
        try:
            ctx = self.context()
            toolset = await self._toolset.for_run(ctx)
            await toolset.__aenter__()
            try:
                entry.tools = await toolset.get_tools(ctx)
            except BaseException:
                await toolset.__aexit__(None, None, None)
                raise
            entry.toolset = toolset
        except BaseException as error:
            entry.error = error
            entry.ready.set()
            await self.leave(plan_id)
            raise
        entry.ready.set()
        return entry

    async def leave(self, plan_id: str) -> None:
        """Count one less active tool in the plan; the last exits the plan's copy."""
        with self._lock:
            entry = self._plans[plan_id]
            entry.active -= 1
            if entry.active:
                return
            del self._plans[plan_id]
        if entry.toolset is not None:
            await entry.toolset.__aexit__(None, None, None)

    def entered(self, plan_id: str) -> _InPlan:
        """The plan's entry (its tool was activated in it)."""
        return self._plans[plan_id]


class _ToolsetTool:
    """One tool of a pydantic-ai toolset, as a toolcycle tool."""

    def __init__(self, source: _ToolsetSource, descriptor: ToolDescriptor) -> None:
        self._source = source
        self._descriptor = descriptor

    def __repr__(self) -> str:
        return f"<{self._descriptor.name} of {self._source!r}>"

    def discover(self) -> ToolDescriptor:
        return self._descriptor

    async def activate(self, ctx: ToolExecutionContext) -> None:
        await self._source.enter(ctx.plan_id)

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        entry = self._source.entered(ctx.plan_id)
        name = self._descriptor.name
        tool = entry.tools.get(name)
        if tool is None or entry.toolset is None:
            raise ToolActivationError(f"the toolset no longer offers {name!r}")
        run_ctx = self._source.context()
        run_ctx.tool_name = name
        arguments = tool.args_validator.validate_python(params)
        output = await entry.toolset.call_tool(name, arguments, run_ctx, tool)
        if isinstance(output, ToolReturn):
            output = output.return_value
        return to_jsonable_python(output)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        await self._source.leave(ctx.plan_id)
