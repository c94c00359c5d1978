"""The stand-ins the caller's runtime drives in place of tools that run in a host.

A stand-in looks like the tool to the pipeline: its ``activate``, ``execute`` and
``deactivate`` send the stage to the plan's worker and wait. Before waiting it
links the caller's call token to the worker, so cancelling the call cancels the
stage there, and passes the worker's progress reports to the call's reporter; the
changes the stage recorded are recorded again on the caller's context, inside
the call, so they land in the result and in the plan's record.

`HostedTool` is for sync callers (it blocks its thread), `AsyncHostedTool` for
async ones (it awaits, and a cancellation of the awaiting task reaches the worker).
Both drive a `Placement`, which any host can implement.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import concurrent.futures

    from toolcycle import ToolDescriptor, ToolExecutionContext, ToolInstance
    from toolcycle.hosts._child import Listener

__all__ = ["AsyncHostedTool", "HostedTool", "Placement"]


class Placement(Protocol):
    """One plan's worker in a host, as the stand-ins see it."""

    def ready(self, kind: str, name: str) -> bool:
        """Whether ``send`` can go at once (no worker to start, no tool to re-activate)."""
        ...

    def prepare(self, kind: str, name: str) -> None:
        """Start or replace the worker, and re-activate ``name`` in a fresh one."""
        ...

    def send(
        self, kind: str, name: str, argument: Any, listener: Listener | None
    ) -> tuple[int, concurrent.futures.Future[tuple[Any, list[Any]]]]:
        """Send one stage (after `prepare`); its number and future."""
        ...

    def cancel(self, number: int, reason: str | None) -> None:
        """Cancel a stage the worker runs."""
        ...

    def settled(self, kind: str, name: str, ok: bool) -> None:
        """Note how a stage ended (which tools the worker holds)."""
        ...


class HostedTool:
    """A tool of the plan, run in its host, driven from sync code."""

    def __init__(self, name: str, tool: ToolInstance, placement: Placement) -> None:
        self.name = name
        self.tool = tool
        self.placement = placement

    def discover(self) -> ToolDescriptor:
        """The tool's own descriptor (read in the caller's process)."""
        return self.tool.discover()

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Build the tool in the worker and activate it there."""
        self._run("activate", None, ctx)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run the call in the worker and return its output."""
        return self._run("execute", params, ctx)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Deactivate the tool in the worker (nothing if its worker died meanwhile)."""
        self._run("deactivate", None, ctx)

    def _run(self, kind: str, argument: Any, ctx: ToolExecutionContext) -> Any:
        placement = self.placement
        if not placement.ready(kind, self.name):
            placement.prepare(kind, self.name)
        token = ctx.call_token
        number, future = placement.send(kind, self.name, argument, ctx.progress_reporter())
        unlink = token.on_cancel(lambda: placement.cancel(number, token.reason))
        try:
            value, changes = future.result()
        except BaseException:
            placement.settled(kind, self.name, False)
            raise
        finally:
            unlink()
        placement.settled(kind, self.name, True)
        for change in changes:
            ctx.record_change(change)
        return value


class AsyncHostedTool(HostedTool):
    """A tool of the plan, run in its host, driven from async code."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        """Build the tool in the worker and activate it there."""
        await self._arun("activate", None, ctx)

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run the call in the worker and return its output."""
        return await self._arun("execute", params, ctx)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        """Deactivate the tool in the worker (nothing if its worker died meanwhile)."""
        await self._arun("deactivate", None, ctx)

    async def _arun(self, kind: str, argument: Any, ctx: ToolExecutionContext) -> Any:
        placement = self.placement
        if not placement.ready(kind, self.name):  # starting a process blocks: not on the loop
            await asyncio.to_thread(placement.prepare, kind, self.name)
        number, future = placement.send(kind, self.name, argument, ctx.progress_reporter())
        try:
            value, changes = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # The awaiting task was cancelled (the call token, a timeout, its caller):
            # so is the stage in the worker.
            placement.cancel(number, ctx.call_token.reason or "the call was cancelled")
            placement.settled(kind, self.name, False)
            raise
        except BaseException:
            placement.settled(kind, self.name, False)
            raise
        placement.settled(kind, self.name, True)
        for change in changes:
            ctx.record_change(change)
        return value
