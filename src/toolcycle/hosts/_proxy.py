"""The stand-ins the caller's runtime drives in place of tools that run in a host.

A stand-in looks like the tool to the pipeline: its ``activate``, ``execute`` and
``deactivate`` send the stage to the plan's worker, with the call's id and the
tools the plan has revealed, and wait. Before waiting it links the caller's call
token to the worker, so cancelling the call cancels the stage there, and passes
the worker's progress reports to the call's reporter; the changes the stage
recorded (a failed stage's too) are recorded again on the caller's context,
inside the call, so they land in the result and in the plan's record, and the
tools it revealed are revealed in the plan.

`HostedTool` is for sync callers (it blocks its thread), `AsyncHostedTool` for
async ones (it awaits, and a cancellation of the awaiting task reaches the worker).
Both drive a `Placement`, which any host can implement; ``_base``'s `HostedPlan`
is the one `ProcessHost` and `RayHost` share.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from toolcycle.hosts._tools import StageFailed, call_of

if TYPE_CHECKING:
    import concurrent.futures

    from toolcycle import ToolDescriptor, ToolExecutionContext, ToolInstance
    from toolcycle.hosts._child import Listener
    from toolcycle.hosts._tools import Call, Settled

__all__ = ["AsyncHostedTool", "HostedTool", "Placement"]


class Placement(Protocol):
    """One plan's worker in a host, as the stand-ins see it.

    Each method's ``name`` is the key the worker holds the tool under (see `HostedTool`).
    """

    def ready(self, kind: str, name: str) -> bool:
        """Whether ``send`` can go at once (no worker to start, no tool to re-activate)."""
        ...

    def prepare(self, kind: str, name: str) -> None:
        """Start or replace the worker, and re-activate ``name`` in a fresh one."""
        ...

    def send(
        self, kind: str, name: str, argument: Any, listener: Listener | None, call: Call
    ) -> tuple[int, concurrent.futures.Future[Settled]]:
        """Send one stage (after `prepare`); its number and future.

        An activation's ``argument`` is the tool itself, which the placement packs
        for the worker; an execution's is its arguments; a deactivation's is None.
        ``call`` is what the stage's context in the worker takes from the caller's.
        """
        ...

    def cancel(self, number: int, reason: str | None) -> None:
        """Cancel a stage the worker runs."""
        ...

    def settled(self, kind: str, name: str, ok: bool) -> None:
        """Note how a stage ended (which tools the worker holds)."""
        ...


class HostedTool:
    """A tool of the plan, run in its host, driven from sync code.

    ``key`` is what the worker holds the tool under: its name, or for a tool
    registered anew under that name while the plan was open, a key of its own,
    so that the worker activates the new tool beside the old one.
    """

    def __init__(
        self, name: str, tool: ToolInstance, placement: Placement, key: str | None = None
    ) -> None:
        self.name = name
        self.tool = tool
        self.placement = placement
        self.key = name if key is None else key

    def discover(self) -> ToolDescriptor:
        """The tool's own descriptor (read in the caller's process)."""
        return self.tool.discover()

    def activate(self, ctx: ToolExecutionContext) -> None:
        """Build the tool in the worker and activate it there."""
        self._run("activate", self.tool, ctx)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run the call in the worker and return its output."""
        return self._run("execute", params, ctx)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Deactivate the tool in the worker (nothing if its worker died meanwhile)."""
        self._run("deactivate", None, ctx)

    def _run(self, kind: str, argument: Any, ctx: ToolExecutionContext) -> Any:
        placement, key = self.placement, self.key
        if not placement.ready(kind, key):
            placement.prepare(kind, key)
        token = ctx.call_token
        number, future = placement.send(kind, key, argument, ctx.progress_reporter(), call_of(ctx))
        unlink = token.on_cancel(lambda: placement.cancel(number, token.reason))
        try:
            value, changes, revealed = future.result()
        except StageFailed as failed:
            placement.settled(kind, key, False)
            raise _recorded(failed, ctx) from None
        except BaseException:
            placement.settled(kind, key, False)
            raise
        finally:
            unlink()
        placement.settled(kind, key, True)
        _brought_back(changes, revealed, ctx)
        return value


class AsyncHostedTool(HostedTool):
    """A tool of the plan, run in its host, driven from async code."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        """Build the tool in the worker and activate it there."""
        await self._arun("activate", self.tool, ctx)

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run the call in the worker and return its output."""
        return await self._arun("execute", params, ctx)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        """Deactivate the tool in the worker (nothing if its worker died meanwhile)."""
        await self._arun("deactivate", None, ctx)

    async def _arun(self, kind: str, argument: Any, ctx: ToolExecutionContext) -> Any:
        placement, key = self.placement, self.key
        if not placement.ready(kind, key):  # starting a process blocks: not on the loop
            await asyncio.to_thread(placement.prepare, kind, key)
        number, future = placement.send(kind, key, argument, ctx.progress_reporter(), call_of(ctx))
        try:
            value, changes, revealed = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # The awaiting task was cancelled (the call token, a timeout, its caller):
            # so is the stage in the worker.
            placement.cancel(number, ctx.call_token.reason or "the call was cancelled")
            placement.settled(kind, key, False)
            raise
        except StageFailed as failed:
            placement.settled(kind, key, False)
            raise _recorded(failed, ctx) from None
        except BaseException:
            placement.settled(kind, key, False)
            raise
        placement.settled(kind, key, True)
        _brought_back(changes, revealed, ctx)
        return value


def _brought_back(changes: list[Any], revealed: tuple[str, ...], ctx: ToolExecutionContext) -> None:
    """Land what a stage did to its plan in ``ctx``, as it would have without a host."""
    for change in changes:
        ctx.record_change(change)
    if revealed:
        ctx.reveal_tools(revealed)


def _recorded(failed: StageFailed, ctx: ToolExecutionContext) -> BaseException:
    """The stage's own error, once what it did before failing is in ``ctx``."""
    _brought_back(failed.changes, failed.revealed, ctx)
    return failed.error
