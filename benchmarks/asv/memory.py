"""What the runtime keeps allocated: per idle plan, and after many calls.

Both count bytes with ``tracemalloc`` in the benchmark's own process (asv starts one
for each benchmark), so they move by a few bytes at most between runs: a plan that
holds more, or calls that leave something behind, show as a step. The targets on
memory (growth of the resident set over a million calls, the bytes of an idle plan,
nothing left by an ended plan) stay with ``python -m benchmarks --only memory``,
which measures each in a fresh interpreter.
"""

from __future__ import annotations

import gc
import tracemalloc

from toolcycle import NullTracer, ToolRuntime

from .common import PARAMS, AddTool

PLANS = 2_000
"""Idle plans open at once."""

CALLS = 20_000
"""Calls made between the two readings of the calls benchmark."""


def _runtime() -> ToolRuntime:
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(AddTool())
    return runtime


def track_idle_plan_bytes() -> float:
    """Bytes allocated per open plan with one tool activated in it."""
    runtime = _runtime()
    try:
        for ctx in [runtime.new_context() for _ in range(100)]:  # warm every path once
            runtime.activate("add", ctx)
            runtime.end_plan(ctx)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        plans = []
        for _ in range(PLANS):
            ctx = runtime.new_context()
            runtime.activate("add", ctx)
            plans.append(ctx)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        for ctx in plans:
            runtime.end_plan(ctx)
        return round(grown / PLANS, 1)
    finally:
        runtime.close()


track_idle_plan_bytes.unit = "bytes"  # type: ignore[attr-defined]


def track_retained_bytes_per_call() -> float:
    """Bytes still allocated after warm calls on one plan, per call (0 unless calls leak)."""
    runtime = _runtime()
    try:
        ctx = runtime.new_context()
        for _ in range(1_000):
            runtime.execute("add", PARAMS, ctx)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(CALLS):
            runtime.execute("add", PARAMS, ctx)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return round(max(grown, 0) / CALLS)
    finally:
        runtime.close()


track_retained_bytes_per_call.unit = "bytes"  # type: ignore[attr-defined]
