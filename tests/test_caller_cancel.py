"""Cancelling the task that awaits a call: the tool winds down before the cancellation goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
)
from toolcycle.execution import _invoke

WAIT = 5.0


class Tidy:
    """An async tool that waits until cancelled, then takes a few loop turns to tidy up."""

    def __init__(self, release: asyncio.Event | None = None) -> None:
        self.started = asyncio.Event()
        self.release = release  # when given, tidying up waits for it
        self.tidied = False

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="tidy")

    async def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.started.set()
        try:
            await asyncio.Event().wait()
        finally:
            for _ in range(5):  # loop turns, as closing a process or a connection takes
                await asyncio.sleep(0)
            if self.release is not None:
                await self.release.wait()
            self.tidied = True


async def _cancel_midway(runtime: ToolRuntime, tool: Tidy, **options: Any) -> None:
    async with runtime.aplan() as ctx:
        task = asyncio.ensure_future(runtime.aexecute("tidy", {}, ctx, **options))
        await asyncio.wait_for(tool.started.wait(), WAIT)
        task.cancel()
        with pytest.raises((asyncio.CancelledError, ToolCancelledError)):
            await asyncio.wait_for(task, WAIT)


@pytest.mark.parametrize("options", [{"timeout": 30.0}, {}], ids=["with a timeout", "without"])
async def test_a_cancelled_caller_gets_its_cancellation_after_the_tool_has_tidied_up(
    options: dict[str, Any],
) -> None:
    """The tool's cleanup has run by the time the caller's cancellation reaches it."""
    tool = Tidy()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        await _cancel_midway(runtime, tool, **options)
        assert tool.tidied


async def test_a_tool_slow_to_tidy_up_holds_the_cancelled_caller_only_for_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the grace period, the cancellation goes on while the tool still tidies up."""
    monkeypatch.setattr(_invoke, "CANCEL_GRACE_SECONDS", 0.05)
    release = asyncio.Event()
    tool = Tidy(release)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool)
        await _cancel_midway(runtime, tool, timeout=30.0)
        assert not tool.tidied
        release.set()
        for _ in range(20):
            if tool.tidied:
                break
            await asyncio.sleep(0)
        assert tool.tidied
