"""Opening a plan while another thread closes the runtime."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolcycle import NullTracer, ToolInstance, ToolRuntime, ToolRuntimeError
from toolcycle.testing import FakeTool

WAIT = 5.0


class HeldListing:
    """A stale source whose listing waits, once started, until the test lets it go."""

    stale = False

    def __init__(self) -> None:
        self.listing = threading.Event()
        self.release = threading.Event()

    def tools(self) -> list[ToolInstance]:
        if self.stale:
            self.stale = False
            self.listing.set()
            assert self.release.wait(WAIT)
        return [FakeTool(name="listed")]


class HeldOpen:
    """A durable engine whose ``open`` waits, once started, until the test lets it go."""

    def __init__(self) -> None:
        self.opening = threading.Event()
        self.release = threading.Event()

    def open(self, plan_id: str | None) -> str:
        self.opening.set()
        assert self.release.wait(WAIT)
        return plan_id or "durable-plan"

    def run(self, ctx: Any, tool_name: str, idempotent: bool, call: Any, *a: Any, **k: Any) -> Any:
        return call()

    async def arun(
        self, ctx: Any, tool_name: str, idempotent: bool, call: Any, *a: Any, **k: Any
    ) -> Any:
        return await call()


def test_a_plan_opened_while_another_thread_closes_the_runtime_is_refused() -> None:
    """A close() between the open check and the plan's registration cannot miss the plan."""
    runtime = ToolRuntime(tracer=NullTracer())
    source = HeldListing()
    runtime.register_source(source)
    source.stale = True
    outcome: list[object] = []

    def open_plan() -> None:
        try:
            outcome.append(runtime.new_context("late"))
        except ToolRuntimeError as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_plan)
    opener.start()
    assert source.listing.wait(WAIT)  # past the open check, not yet registered
    runtime.close()
    source.release.set()
    opener.join(WAIT)
    assert not opener.is_alive()
    [result] = outcome
    assert isinstance(result, ToolRuntimeError)
    assert "the runtime is closed" in str(result)
    assert runtime._plans._cache.open_plans() == ()


async def test_an_aplan_opened_while_another_thread_closes_the_runtime_is_refused() -> None:
    """The async open checks again once the plan is registered, and ends it if closed."""
    runtime = ToolRuntime(tracer=NullTracer())
    engine = HeldOpen()

    async def open_plan() -> None:
        async with runtime.aplan(durable=engine):
            pytest.fail("the plan opened in a closed runtime")

    opening = asyncio.ensure_future(asyncio.to_thread(asyncio.run, open_plan()))
    assert await asyncio.to_thread(engine.opening.wait, WAIT)
    await asyncio.to_thread(runtime.close)
    engine.release.set()
    with pytest.raises(ToolRuntimeError, match="the runtime is closed"):
        await asyncio.wait_for(opening, WAIT)
    assert runtime._plans._cache.open_plans() == ()
