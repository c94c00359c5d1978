"""Tools for the Ray host tests that tell the test when they have started.

A Ray-hosted tool's progress reaches the caller while it runs only when someone
follows it (``on_progress``, a stream, an idle limit), so these tools signal
through a named `Signal` actor instead: the test waits on it (bounded) and only
then cancels or kills.
"""

from __future__ import annotations

import asyncio
import threading

import ray
from hosts_toolbox import WAIT, Recorder, note

from toolcycle import ToolExecutionContext, tool


@ray.remote
class Signal:
    """An event the tools set from their actor and the test waits for."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def send(self) -> None:
        """Set the event."""
        self.event.set()

    async def wait(self) -> bool:
        """Wait for the event, no longer than WAIT seconds."""
        await asyncio.wait_for(self.event.wait(), WAIT)
        return True


@tool
def signal_then_wait(ctx: ToolExecutionContext) -> str:
    """Signal that it started, then wait for its call token; note the cancellation."""
    token = ctx.call_token
    cancelled = threading.Event()
    token.on_cancel(cancelled.set)
    ray.get(ray.get_actor(ctx.metadata["signal"]).send.remote(), timeout=WAIT)
    cancelled.wait(WAIT)
    note(ctx, "cancelled" if token.is_cancelled else "not-cancelled")
    token.check()
    return "finished"


@tool
def signal_then_ignore(ctx: ToolExecutionContext) -> str:
    """Signal that it started, then run on for WAIT seconds whatever its token says."""
    ray.get(ray.get_actor(ctx.metadata["signal"]).send.remote(), timeout=WAIT)
    threading.Event().wait(WAIT)
    return "finished"


@tool
async def signal_then_await(ctx: ToolExecutionContext) -> str:
    """Signal that it started, then wait until its task is cancelled."""
    await ray.get_actor(ctx.metadata["signal"]).send.remote()
    try:
        await asyncio.sleep(WAIT)  # a bounded wait that cancellation cuts short
    except asyncio.CancelledError:
        note(ctx, "cancelled")
        raise
    return "finished"


@tool
def report_then_wait(ctx: ToolExecutionContext) -> str:
    """Report progress, then wait (bounded) for the signal the caller sends on hearing it."""
    ctx.report_progress(1, message="waiting")
    ray.get(ray.get_actor(ctx.metadata["signal"]).wait.remote(), timeout=WAIT)
    return "heard"


@tool
async def areport_then_wait(ctx: ToolExecutionContext) -> str:
    """`report_then_wait` with a coroutine body."""
    ctx.report_progress(1, message="waiting")
    await asyncio.wait_for(ray.get_actor(ctx.metadata["signal"]).wait.remote(), WAIT)
    return "heard"


class FailsToActivate(Recorder):
    """A tool whose activation fails."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        raise RuntimeError("cannot start")
