"""Tools for the Ray host tests that tell the test when they have started.

A Ray-hosted tool's progress reaches the caller with its outcome, not while it
runs, so these tools signal through a named `Signal` actor instead: the test
waits on it (bounded) and only then cancels or kills.
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
async def signal_then_await(ctx: ToolExecutionContext) -> str:
    """Signal that it started, then wait until its task is cancelled."""
    await ray.get_actor(ctx.metadata["signal"]).send.remote()
    try:
        await asyncio.sleep(WAIT)  # a bounded wait that cancellation cuts short
    except asyncio.CancelledError:
        note(ctx, "cancelled")
        raise
    return "finished"


class FailsToActivate(Recorder):
    """A tool whose activation fails."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        raise RuntimeError("cannot start")
