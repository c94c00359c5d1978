"""Threads sharing one plan: a warm call never hands the GIL to another thread."""

from __future__ import annotations

import gc
import itertools
import sys
import threading
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
)

THREADS = 8
CALLS = 100
WAIT = 10.0
LONG_SWITCH = 60.0
"""A GIL switch interval no test outlasts: a thread then gives up the GIL only by blocking."""

pytestmark = pytest.mark.skipif(
    not getattr(sys, "_is_gil_enabled", lambda: True)(),
    reason="hand-offs of the GIL exist only where there is a GIL",
)


class Add:
    """A sync tool with schemas on both sides, so that the call validates in and out."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="add",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            output_schema={"type": "object", "properties": {"sum": {"type": "integer"}}},
            capability=ToolCapability(writes=False),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return {"sum": params["a"] + params["b"]}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def _stretches(runtime: ToolRuntime, ctx: ToolExecutionContext) -> tuple[int, int]:
    """Run `CALLS` warm calls on each of `THREADS` threads; (stretches, failed calls).

    A stretch is a run of calls by one thread with no other thread's call between:
    with the long switch interval, a new stretch starts only where a call blocked.
    """
    order: list[int] = []
    failed: list[int] = []
    start = threading.Barrier(THREADS, timeout=WAIT)

    def work(me: int) -> None:
        start.wait()
        for _ in range(CALLS):
            if not runtime.execute("add", {"a": 1, "b": me}, ctx).success:
                failed.append(me)
            order.append(me)

    threads = [threading.Thread(target=work, args=(me,)) for me in range(THREADS)]
    previous = sys.getswitchinterval()
    enabled = gc.isenabled()
    gc.collect()  # no finalizer of an earlier test's objects runs (and blocks) mid-way
    gc.disable()
    sys.setswitchinterval(LONG_SWITCH)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
    finally:
        sys.setswitchinterval(previous)
        if enabled:
            gc.enable()
    assert not any(thread.is_alive() for thread in threads)
    assert len(order) == THREADS * CALLS
    return 1 + sum(a != b for a, b in itertools.pairwise(order)), len(failed)


def test_warm_executes_on_one_plan_do_not_hand_the_gil_to_each_other() -> None:
    """8 threads of warm calls on one plan run one after another: no call blocks or yields."""
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(Add())
    with runtime.plan("shared") as ctx:
        runtime.activate("add", ctx)
        stretches, failed = _stretches(runtime, ctx)
    runtime.close()
    assert failed == 0
    # One stretch a thread; a call that blocked or yielded would make hundreds. The
    # slack is for a thread outside the test that was already waiting for the GIL
    # with the usual switch interval, which may take it once.
    assert stretches <= 2 * THREADS


def test_warm_executes_of_an_auto_activated_tool_do_not_hand_the_gil_to_each_other() -> None:
    """With auto-activation and kept traces, warm calls on one plan still never block."""
    runtime = ToolRuntime(tracer=NullTracer(), auto_activate=True, keep_traces=64)
    runtime.register(Add())
    with runtime.plan("shared") as ctx:
        assert runtime.execute("add", {"a": 1, "b": 2}, ctx).success  # activates it
        stretches, failed = _stretches(runtime, ctx)
    runtime.close()
    assert failed == 0
    assert stretches <= 2 * THREADS
