"""What the runtime keeps in memory: over many calls, per open plan, after a plan ends.

These are asv-style ``track_*`` functions: each returns one number (its ``unit``
attribute says of what) and the runner calls it once. Each measurement runs in a
fresh interpreter (``python -m benchmarks.bench_memory CASE``), so that memory the
other benchmarks freed, and that the allocator keeps for reuse, cannot hide growth;
the details of each are in `DETAILS` once it has run.

- ``track_memory_rss_growth``: the process's resident set size (psutil) after
  `WARMUP_CALLS` calls of the small tool of `benchmarks.asv.common` on one
  warm plan, and again after `CALLS` more; ``gc.collect()`` runs before each
  reading. Target: less than 5 MiB of growth.
- ``track_memory_plans_rss_growth``: the same soak across plans: `PLAN_ROUNDS`
  plans, each opened, given `CALLS_PER_PLAN` calls and ended, after
  `WARMUP_PLANS` such plans of warm-up. Target: less than 5 MiB of growth, and
  nothing of the plans left in the runtime (its per-plan maps are checked).
- ``track_memory_idle_plan_rss`` and ``track_memory_idle_plan_traced``: `PLANS`
  plans opened with ``runtime.new_context()``, one tool activated in each with
  ``runtime.activate``, then measured while idle, as resident set growth and as
  ``tracemalloc``'s count of bytes allocated (two separate runs, since tracing
  allocations inflates the resident set), divided by the number of plans. The
  plans are ended afterwards. Target: less than 2 KiB a plan.
- ``track_memory_ended_plan_leftovers``: one plan activates a tool that keeps
  per-plan state, makes one call and ends; the number of checks that then fail
  (0 is a pass). The context, the cache's `Activation` record and the tool's
  per-plan state are each followed by a weak reference.

All of them use the jsonschema-rs backend when it is installed and a null tracer.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import subprocess
import sys
import time
import tracemalloc
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from benchmarks.asv.common import PARAMS, AddTool, Backend
from toolcycle import NullTracer, ToolDescriptor, ToolRuntime

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle import ToolExecutionContext
    from toolcycle.cache import Activation

ROOT = Path(__file__).resolve().parent.parent
"""The repository root, where the fresh interpreters start."""

BACKEND: Backend = (
    "jsonschema-rs" if importlib.util.find_spec("jsonschema_rs") is not None else "jsonschema"
)
"""The validator backend of every measurement."""

WARMUP_CALLS = 10_000
"""Calls made before the first reading of the call benchmark."""

CALLS = 1_000_000
"""Calls made between the two readings of the call benchmark."""

PLANS = 10_000
"""Idle plans open at once in the per-plan benchmarks."""

WARMUP_PLANS = 2_000
"""Plans run before the first reading of the plans soak."""

PLAN_ROUNDS = 100_000
"""Plans run between the two readings of the plans soak."""

CALLS_PER_PLAN = 10
"""Calls made in each plan of the plans soak."""

MIB = 1024 * 1024

DETAILS: dict[str, dict[str, Any]] = {}
"""What each ``track_*`` function measured besides its headline number, by name."""


def _rss() -> int:
    gc.collect()
    rss: int = psutil.Process().memory_info().rss
    return rss


def _runtime() -> ToolRuntime:
    runtime = ToolRuntime(tracer=NullTracer(), validator=BACKEND)
    runtime.register(AddTool())
    return runtime


def rss_growth() -> dict[str, Any]:
    """Resident set growth over `CALLS` calls on one warm plan."""
    runtime = _runtime()
    ctx = runtime.new_context("bench-memory-calls")
    execute = runtime.execute
    for _ in range(WARMUP_CALLS):
        execute("add", PARAMS, ctx)
    before = _rss()
    started = time.perf_counter()
    failed = 0
    for _ in range(CALLS):
        failed += not execute("add", PARAMS, ctx).success
    seconds = time.perf_counter() - started
    after = _rss()
    runtime.close()
    return {
        "growth_mib": (after - before) / MIB,
        "rss_before_mib": before / MIB,
        "rss_after_mib": after / MIB,
        "calls": CALLS,
        "failed": failed,
        "seconds": seconds,
    }


def plans_rss_growth() -> dict[str, Any]:
    """Resident set growth over `PLAN_ROUNDS` plans of `CALLS_PER_PLAN` calls each."""
    runtime = _runtime()
    execute, new_context, end_plan = runtime.execute, runtime.new_context, runtime.end_plan

    def run(plans: int) -> int:
        failed = 0
        for _ in range(plans):
            ctx = new_context()
            for _ in range(CALLS_PER_PLAN):
                failed += not execute("add", PARAMS, ctx).success
            end_plan(ctx)
        return failed

    run(WARMUP_PLANS)
    before = _rss()
    started = time.perf_counter()
    failed = run(PLAN_ROUNDS)
    seconds = time.perf_counter() - started
    after = _rss()
    leftovers = len(runtime.cache.open_plans()) + len(runtime.cache._plans)
    runtime.close()
    return {
        "growth_mib": (after - before) / MIB,
        "rss_before_mib": before / MIB,
        "rss_after_mib": after / MIB,
        "plans": PLAN_ROUNDS,
        "calls": PLAN_ROUNDS * CALLS_PER_PLAN,
        "failed": failed,
        "leftovers": leftovers,
        "seconds": seconds,
    }


def _open_plans(runtime: ToolRuntime, count: int) -> list[ToolExecutionContext]:
    plans = []
    for _ in range(count):
        ctx = runtime.new_context()
        runtime.activate("add", ctx)
        plans.append(ctx)
    return plans


def _end_plans(runtime: ToolRuntime, plans: list[ToolExecutionContext]) -> None:
    for ctx in plans:
        runtime.end_plan(ctx)


def idle_plans_rss() -> dict[str, Any]:
    """Resident set growth per open, idle plan with one active tool."""
    runtime = _runtime()
    _end_plans(runtime, _open_plans(runtime, 100))  # first-use costs, not per plan
    before = _rss()
    plans = _open_plans(runtime, PLANS)
    after = _rss()
    _end_plans(runtime, plans)
    left = len(runtime.cache.open_plans())
    runtime.close()
    return {
        "bytes_per_plan": (after - before) / PLANS,
        "growth_mib": (after - before) / MIB,
        "plans": PLANS,
        "open_after_end": left,
    }


def idle_plans_traced() -> dict[str, Any]:
    """Bytes allocated (tracemalloc) per open, idle plan with one active tool."""
    runtime = _runtime()
    _end_plans(runtime, _open_plans(runtime, 100))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    plans = _open_plans(runtime, PLANS)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    diff = after.compare_to(before, "lineno")
    grown = sum(stat.size_diff for stat in diff)
    top = [
        {
            "where": f"{stat.traceback[0].filename}:{stat.traceback[0].lineno}",
            "bytes": stat.size_diff,
        }
        for stat in diff[:5]
    ]
    _end_plans(runtime, plans)
    runtime.close()
    return {"bytes_per_plan": grown / PLANS, "plans": PLANS, "largest": top}


class _PlanState:
    """What the stateful tool keeps for each plan between activate and deactivate."""


class StatefulTool(AddTool):
    """``add`` with per-plan state, created on activate and dropped on deactivate."""

    def __init__(self) -> None:
        self.states: dict[str, _PlanState] = {}

    def discover(self) -> ToolDescriptor:
        return super().discover().model_copy(update={"name": "stateful"})

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.states[ctx.plan_id] = _PlanState()

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.states.pop(ctx.plan_id, None)


def _activations(runtime: ToolRuntime, ctx: ToolExecutionContext) -> list[Activation]:
    """The cache's activation records of the plan (read from its internals, for the probe)."""
    plan = runtime.cache._plans.get(ctx.plan_id)
    return list(plan.order) if plan is not None else []


def ended_plan_leftovers() -> dict[str, Any]:
    """Whether anything of a plan outlives ``end_plan``; each check is True when it passes."""
    runtime = ToolRuntime(tracer=NullTracer(), validator=BACKEND)
    tool = StatefulTool()
    runtime.register(tool)
    ctx = runtime.new_context("bench-memory-ended")
    runtime.activate("stateful", ctx)
    called = runtime.execute("stateful", PARAMS, ctx).success
    context_ref = weakref.ref(ctx)
    state_ref = weakref.ref(tool.states[ctx.plan_id])
    activation_refs = [weakref.ref(found) for found in _activations(runtime, ctx)]
    gc.collect()
    # The probes must see the plan while it is open, or their verdict after it means nothing.
    probes_work = context_ref() is not None and len(activation_refs) == 1
    runtime.end_plan(ctx)
    del ctx
    gc.collect()
    checks = {
        "probes see the open plan": probes_work and called,
        "context released": context_ref() is None,
        "tool's plan state released": state_ref() is None,
        "activation record released": all(ref() is None for ref in activation_refs),
        "plan gone from the cache": not runtime.cache.open_plans(),
    }
    runtime.close()
    return {"checks": checks, "failed": sum(not passed for passed in checks.values())}


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "rss_growth": rss_growth,
    "plans_rss_growth": plans_rss_growth,
    "idle_plans_rss": idle_plans_rss,
    "idle_plans_traced": idle_plans_traced,
    "ended_plan_leftovers": ended_plan_leftovers,
}
"""The measurements, by the name ``python -m benchmarks.bench_memory`` takes."""


def _in_fresh_process(case: str) -> dict[str, Any]:
    """Run one of `CASES` in a new interpreter and return what it measured."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_memory", case],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    measured: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return measured


def setup() -> None:
    """Nothing to share: every measurement starts its own interpreter."""
    DETAILS.clear()


def teardown() -> None:
    """Nothing to close."""


def track_memory_rss_growth() -> float:
    """Resident set growth over CALLS calls of the small tool on one warm plan."""
    DETAILS["track_memory_rss_growth"] = found = _in_fresh_process("rss_growth")
    return float(found["growth_mib"])


track_memory_rss_growth.unit = "MiB"  # type: ignore[attr-defined]


def track_memory_plans_rss_growth() -> float:
    """Resident set growth over PLAN_ROUNDS plans of CALLS_PER_PLAN calls each."""
    DETAILS["track_memory_plans_rss_growth"] = found = _in_fresh_process("plans_rss_growth")
    return float(found["growth_mib"])


track_memory_plans_rss_growth.unit = "MiB"  # type: ignore[attr-defined]


def track_memory_idle_plan_rss() -> float:
    """Resident set growth per idle plan with one active tool."""
    DETAILS["track_memory_idle_plan_rss"] = found = _in_fresh_process("idle_plans_rss")
    return float(found["bytes_per_plan"])


track_memory_idle_plan_rss.unit = "bytes"  # type: ignore[attr-defined]


def track_memory_idle_plan_traced() -> float:
    """Bytes allocated (tracemalloc) per idle plan with one active tool."""
    DETAILS["track_memory_idle_plan_traced"] = found = _in_fresh_process("idle_plans_traced")
    return float(found["bytes_per_plan"])


track_memory_idle_plan_traced.unit = "bytes"  # type: ignore[attr-defined]


def track_memory_ended_plan_leftovers() -> float:
    """How many of the ended-plan checks fail (0 is a pass)."""
    DETAILS["track_memory_ended_plan_leftovers"] = found = _in_fresh_process("ended_plan_leftovers")
    return float(found["failed"])


track_memory_ended_plan_leftovers.unit = "failed checks"  # type: ignore[attr-defined]


if __name__ == "__main__":
    print(json.dumps(CASES[sys.argv[1]]()))
