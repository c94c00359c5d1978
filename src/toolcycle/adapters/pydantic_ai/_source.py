"""`from_toolset`: a pydantic-ai toolset as a toolcycle tool source.

The toolset is listed once at registration (entered, asked for its tools, exited,
on a loop of its own so that registration works from sync and async code alike).
In each plan, the first activation of one of its tools gives the toolset's copy for
that plan (``for_run``) and enters it; the last deactivation in the plan exits it.
Calls run through that copy with the arguments the runtime has validated against
the tool's schema, converted by the toolset's own argument validator and checked
by the tool's ``args_validator`` function; a rejection, or pydantic-ai's
``ModelRetry``, asks the model to retry as toolcycle's ``ModelRetry`` does, and
pydantic-ai's ``ToolFailed`` is toolcycle's (a failure no retry policy repeats).

The copy is entered and exited by one task of its own that lives as long as the
plan holds it: the runtime activates and deactivates in tasks of their own, and a
toolset may enter an anyio cancel scope or task group that only the task that
entered it can exit.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic_ai
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_core import ValidationError, to_jsonable_python

from toolcycle import ModelRetry, ToolActivationError, ToolCapability, ToolDescriptor, ToolFailed
from toolcycle.adapters.pydantic_ai._content import from_tool_return

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

    from toolcycle import ToolExecutionContext, ToolInstance, ToolSource

__all__ = ["from_toolset"]

# The RunContext.max_retries of the listing, which no agent gives: a tool listed with it
# took the run's limit, having none of its own or of its toolset's, so the runtime's
# limit applies to it (register_source's, else the runtime's).
_NO_LIMIT = -1


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
            to write (pydantic-ai does not say), and keeps its ``sequential`` flag. A
            tool pydantic-ai runs only once approved (``requires_approval=True``) needs
            the plan's approval, unless its capability here says
            ``requires_approval=False``.

    A tool pydantic-ai hides until a tool search finds it (``defer_loading``) is a
    deferred toolcycle tool. Each plan enters the toolset when it activates the first
    of its tools, and exits it when it deactivates the last.
    """
    return _ToolsetSource(toolset, deps, dict(capabilities or {}))


@dataclass
class _InPlan:
    """The toolset's copy for one plan, the task that holds it entered, and its active tools."""

    active: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    holder: asyncio.Task[None] | None = None
    toolset: AbstractToolset[Any] | None = None
    tools: dict[str, ToolsetTool[Any]] = field(default_factory=dict)
    error: BaseException | None = None
    # Each tool's retries in a row in this plan, for its RunContext.retry.
    retries: dict[str, int] = field(default_factory=dict)


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

    def context(self, max_retries: int = 0) -> RunContext[Any]:
        """The run context the toolset's methods receive outside an agent run."""
        return RunContext(
            deps=self._deps, model=TestModel(), usage=RunUsage(), max_retries=max_retries
        )

    def tools(self) -> list[ToolInstance]:
        """Enter the toolset, list its tools and exit it, on a loop of its own."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="toolcycle-list") as pool:
            listed = pool.submit(asyncio.run, self._list()).result()
        return [
            _ToolsetTool(self, self._descriptor(tool), _limit(tool.max_retries))
            for tool in listed.values()
        ]

    async def _list(self) -> dict[str, ToolsetTool[Any]]:
        ctx = self.context(_NO_LIMIT)
        toolset = await self._toolset.for_run(ctx)
        async with toolset:
            return await toolset.get_tools(ctx)

    def _descriptor(self, tool: ToolsetTool[Any]) -> ToolDescriptor:
        definition = tool.tool_def
        capability = self._capabilities.get(
            definition.name, ToolCapability(sequential=definition.sequential)
        )
        if definition.kind == "unapproved" and capability.requires_approval is None:
            # pydantic-ai asks its caller before such a call runs; calling the toolset
            # directly skips that, so the plan's approver must be asked instead.
            capability = capability.model_copy(update={"requires_approval": True})
        return ToolDescriptor(
            name=definition.name,
            description=definition.description or "",
            input_schema=definition.parameters_json_schema,
            output_schema=definition.return_schema,
            capability=capability,
            source_name=self._toolset.label,
            timeout=definition.timeout,
            defer_loading=definition.defer_loading,
        )

    async def enter(self, plan_id: str) -> _InPlan:
        """Count one more active tool in the plan; the first starts the task that enters it."""
        with self._lock:
            entry = self._plans.get(plan_id)
            first = entry is None
            if entry is None:
                entry = self._plans[plan_id] = _InPlan()
                entry.holder = asyncio.create_task(self._hold(entry))
                entry.holder.add_done_callback(_retrieve)
            entry.active += 1
        try:
            await entry.ready.wait()
        except asyncio.CancelledError:
            if first and not entry.ready.is_set():
                assert entry.holder is not None
                entry.holder.cancel()
            await self.leave(plan_id)
            raise
        if entry.toolset is not None:
            return entry
        await self.leave(plan_id)
        if first and entry.error is not None:
            raise entry.error
        why = entry.error if entry.error is not None else "its entry was cancelled"
        raise ToolActivationError(f"the toolset could not be entered: {why}")

    async def _hold(self, entry: _InPlan) -> None:
        """Enter the plan's copy and list its tools; exit it once the plan releases it.

        Entering and exiting in this one task is what lets a toolset hold a cancel
        scope or task group across the plan (the activating task ends at once).
        A failure to enter is kept in the entry for the activations to raise.
        """
        try:
            ctx = self.context()
            toolset = await self._toolset.for_run(ctx)
            async with toolset:
                entry.tools = await toolset.get_tools(ctx)
                entry.toolset = toolset
                entry.ready.set()
                await entry.release.wait()
        except Exception as error:
            if entry.ready.is_set():
                raise  # exiting failed: the deactivation that released it raises this
            entry.error = error
        finally:
            entry.toolset = None
            entry.ready.set()

    async def leave(self, plan_id: str) -> None:
        """Count one less active tool in the plan; the last releases its copy and waits for the exit."""
        with self._lock:
            entry = self._plans[plan_id]
            entry.active -= 1
            if entry.active:
                return
            del self._plans[plan_id]
        holder = entry.holder
        assert holder is not None
        loop = holder.get_loop()
        if loop is not asyncio.get_running_loop():
            # Ended from another loop (a sync end_plan, or closing the runtime): the exit
            # is the holder's to do on its own loop, as soon as that loop runs again; waiting
            # here could wait for a loop that is blocked on this very call.
            if not loop.is_closed():
                loop.call_soon_threadsafe(entry.release.set)
            return
        entry.release.set()
        # Waited for, not awaited: a deactivation cancelled meanwhile must not cancel the
        # exit, which goes on in the holder.
        await asyncio.wait({holder})
        error = None if holder.cancelled() else holder.exception()
        if error is not None:
            raise error

    def entered(self, plan_id: str) -> _InPlan:
        """The plan's entry (its tool was activated in it)."""
        return self._plans[plan_id]


class _ToolsetTool:
    """One tool of a pydantic-ai toolset, as a toolcycle tool.

    Its ``max_retries`` is pydantic-ai's for the tool (the tool's, else its
    toolset's), the tool's own retry limit in the runtime; None leaves the limit
    to the runtime.
    """

    def __init__(
        self, source: _ToolsetSource, descriptor: ToolDescriptor, max_retries: int | None
    ) -> None:
        self._source = source
        self._descriptor = descriptor
        self.max_retries = max_retries

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
        if self.max_retries is not None:
            run_ctx.max_retries = self.max_retries
        # The retries the tool itself asked for (a call the runtime refused against the
        # schema never reaches it, so it is not counted here); reset once it returns.
        run_ctx.retry = entry.retries.get(name, 0)
        try:
            arguments = await _arguments(tool, params, run_ctx)
            output = await entry.toolset.call_tool(name, arguments, run_ctx, tool)
        except (pydantic_ai.ModelRetry, ModelRetry) as error:
            entry.retries[name] = run_ctx.retry + 1
            if isinstance(error, ModelRetry):
                raise
            # What pydantic-ai would send the model as a retry prompt: toolcycle's own signal.
            raise ModelRetry(error.message) from error
        except pydantic_ai.ToolFailed as error:
            # A failure on purpose: never retried by a RetryPolicy, as in pydantic-ai.
            raise ToolFailed(error.message) from error
        except (pydantic_ai.ApprovalRequired, pydantic_ai.CallDeferred) as error:
            raise ToolFailed(_unsupported(name, error)) from error
        entry.retries.pop(name, None)
        if isinstance(output, ToolReturn):
            return from_tool_return(output)
        return to_jsonable_python(output)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        await self._source.leave(ctx.plan_id)


async def _arguments(
    tool: ToolsetTool[Any], params: dict[str, Any], run_ctx: RunContext[Any]
) -> dict[str, Any]:
    """The call's arguments as the tool takes them, checked as pydantic-ai checks them.

    The tool's argument validator converts them (a rule JSON Schema cannot express
    may reject them there), then its ``args_validator`` function, if it has one,
    looks at them. A rejection by either is a mistake the model can fix, as in an
    agent run: pydantic-ai retries on a ``ValidationError`` from the function (one
    that validates with pydantic) as on its ``ModelRetry``.

    Raises:
        ModelRetry: toolcycle's, for arguments the argument validator or a
            ``ValidationError`` of the function rejects; pydantic-ai's, as the
            ``args_validator`` function raised it.
    """
    try:
        arguments: dict[str, Any] = tool.args_validator.validate_python(params)
        if tool.args_validator_func is not None:
            checked = tool.args_validator_func(run_ctx, **arguments)
            if inspect.isawaitable(checked):
                await checked
    except ValidationError as error:
        raise ModelRetry(_rejection(error)) from error
    return arguments


def _unsupported(name: str, error: BaseException) -> str:
    """Why pydantic-ai's ``ApprovalRequired`` or ``CallDeferred`` cannot work here, and what to do.

    A toolcycle plan asks for approval before a call runs, never while it runs, and
    a call the runtime runs returns its result: neither can be handed to a caller
    from inside the call.
    """
    if isinstance(error, pydantic_ai.ApprovalRequired):
        return (
            f"tool {name!r} asked for approval while running (pydantic-ai's ApprovalRequired), "
            "which from_toolset does not support: a toolcycle plan asks before a call runs. "
            f"Give the tool requires_approval=True (in pydantic-ai, or from_toolset(capabilities="
            f"{{{name!r}: ToolCapability(requires_approval=True)}})) so the plan's approver is "
            "asked first, and do not raise ApprovalRequired in it (its RunContext never says "
            "tool_call_approved here)"
        )
    return (
        f"tool {name!r} deferred its call (pydantic-ai's CallDeferred), which from_toolset does "
        "not support: the runtime runs a call and returns its result. Return the result from "
        "the tool, or give it requires_approval=True so the plan's approver can defer the call "
        "before it runs"
    )


def _limit(listed: int) -> int | None:
    """The retry limit a tool was listed with, None if it took the listing's (it has none)."""
    return None if listed == _NO_LIMIT else listed


def _rejection(error: ValidationError) -> str:
    """What the argument validator rejected, one line per problem, without pydantic's links."""
    lines = (
        f"{'.'.join(str(part) for part in problem['loc']) or '/'}: {problem['msg']}"
        for problem in error.errors(include_url=False)
    )
    return "the arguments were rejected:\n" + "\n".join(lines)


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark a holder's outcome as seen (a deactivation that gave up waiting does not see it)."""
    if not task.cancelled():
        task.exception()
