"""Per-call overhead of the plan hosts against the plainest way to run there.

Run it with ``python -m benchmarks.bench_hosts`` from the repository root (add
``ray`` to measure `RayHost` too, with ``toolcycle[ray]`` installed). Both
sides call the same function, warm, in one worker process:

- ``ProcessHost``: ``runtime.execute`` of a ``@tool`` in a plan with
  ``host=ProcessHost()``: the whole pipeline (checks, validation, trace) in the
  caller's process, and the body in the plan's worker.
- ``ProcessPoolExecutor``: ``pool.submit(fn, x).result()`` on a one-worker pool.
- ``ProcessHost, async``: ``await runtime.aexecute`` of the same call.

With ``ray``, on a local Ray cluster this script starts:

- ``RayHost``: ``runtime.execute`` of the same ``@tool`` in a plan with
  ``host=RayHost()`` (and ``await runtime.aexecute``).
- a plain Ray actor: ``ray.get(actor.double.remote(x))`` on an async actor, the
  kind `RayHost` uses, and on a sync one, for reference.

With ``plans`` (``python -m benchmarks.bench_hosts plans [--plans N]``): many short
plans on a `RayHost` pool of `POOL` actors on a local cluster of `POOL` CPUs: `PLANS`
plans (``--plans`` for a quicker run) of `PLAN_CALLS` calls each, `IN_FLIGHT` plans
at a time from one event loop, each plan activating its tool in its actor and
deactivating it at its end. It prints the throughput (calls per second, over the
wall time of the whole run) and the latency of one call (median, p99, and p99 of the
warm calls, which leaves out each plan's first call, the one that activates).

Rounds are interleaved (one round of each in turn, `ROUNDS` times), so a slow spell
of the machine falls on every side alike; the figures are the medians of the
rounds. The target is a ratio of at most `TARGET` for the sync path. Nothing fails
on a number: this is a measurement, not a test.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import multiprocessing
import statistics
import time
from typing import TYPE_CHECKING

from toolcycle import NullTracer, ToolRuntime, tool
from toolcycle.hosts import ProcessHost

if TYPE_CHECKING:
    from collections.abc import Callable

ROUNDS = 21
"""Interleaved rounds of each side."""

CALLS = 300
"""Calls per round."""

TARGET = 1.2
"""A host's sync call against the plain call of its engine: at most this."""

RAY_CALLS = 100
"""Calls per round on Ray (each takes about a millisecond)."""


POOL = 4
"""Ray workers (pool actors, and the cluster's CPUs) of the many-plans run."""

PLANS = 1000
"""Plans of the many-plans run (``--plans`` overrides it)."""

PLAN_CALLS = 10
"""Calls per plan in the many-plans run."""

IN_FLIGHT = 16
"""Plans running at once in the many-plans run."""


def double(x: int) -> int:
    """The function both sides run."""
    return 2 * x


@tool(writes=False)
def doubled(x: int) -> int:
    """Double a number (the tool around the same function)."""
    return double(x)


def _round(call: Callable[[], object]) -> float:
    """Microseconds per call over one round."""
    start = time.perf_counter()
    for _ in range(CALLS):
        call()
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    """Measure and print the medians and the ratios."""
    # By module name, so that the worker imports the tool rather than __main__'s copy.
    here = importlib.import_module("benchmarks.bench_hosts")

    context = multiprocessing.get_context("forkserver")
    loop = asyncio.new_event_loop()
    with (
        ToolRuntime(tracer=NullTracer()) as runtime,
        concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool,
    ):
        runtime.register(here.doubled)
        host = ProcessHost()
        with runtime.plan(host=host, read_only=True) as ctx:
            runtime.execute("doubled", {"x": 1}, ctx)  # start the worker, activate
            pool.submit(here.double, 1).result()  # start the pool's worker

            def hosted() -> object:
                return runtime.execute("doubled", {"x": 1}, ctx)

            def pooled() -> object:
                return pool.submit(here.double, 1).result()

            async def async_round() -> float:
                start = time.perf_counter()
                for _ in range(CALLS):
                    await runtime.aexecute("doubled", {"x": 1}, ctx)
                return (time.perf_counter() - start) / CALLS * 1e6

            rounds: dict[str, list[float]] = {"host": [], "pool": [], "async": []}
            for _ in range(ROUNDS):
                rounds["host"].append(_round(hosted))
                rounds["pool"].append(_round(pooled))
                rounds["async"].append(loop.run_until_complete(async_round()))
    loop.close()
    medians = {name: statistics.median(values) for name, values in rounds.items()}
    ratios = [h / p for h, p in zip(rounds["host"], rounds["pool"], strict=True)]
    print(f"ProcessHost execute        {medians['host']:8.1f} us/call")
    print(f"ProcessHost aexecute       {medians['async']:8.1f} us/call")
    print(f"ProcessPoolExecutor.submit {medians['pool']:8.1f} us/call")
    ratio = statistics.median(ratios)
    print(f"ratio (median of rounds)   {ratio:8.2f}x  (target <= {TARGET}x)")


class _Doubler:
    """The plain Ray actor: the same function as an actor method."""

    async def double(self, x: int) -> int:
        return double(x)


class _SyncDoubler:
    """The same, as a sync actor."""

    def double(self, x: int) -> int:
        return double(x)


def _start_ray(cpus: int) -> str:
    """Start a local Ray cluster whose workers import this checkout; its scratch folder."""
    import os
    import pathlib
    import sys
    import tempfile

    import ray

    here = importlib.import_module("benchmarks.bench_hosts")
    assert here.__file__ is not None
    root = str(pathlib.Path(here.__file__).parents[1])
    paths = [root, *(path for path in sys.path if path)]
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    scratch = tempfile.mkdtemp(prefix="tc-ray-")
    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=scratch,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}},
    )
    return scratch


def ray_main() -> None:
    """Measure RayHost against a plain actor method call, on a local cluster."""
    import shutil

    import ray

    from toolcycle.hosts import RayHost

    here = importlib.import_module("benchmarks.bench_hosts")
    scratch = _start_ray(2)
    loop = asyncio.new_event_loop()
    try:
        plain = ray.remote(here._Doubler).remote()
        plain_sync = ray.remote(here._SyncDoubler).remote()
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(here.doubled)
            with runtime.plan(host=RayHost(), read_only=True) as ctx:
                runtime.execute("doubled", {"x": 1}, ctx)  # start the actor, activate
                ray.get([plain.double.remote(1), plain_sync.double.remote(1)])

                def timed(call: Callable[[], object]) -> float:
                    start = time.perf_counter()
                    for _ in range(RAY_CALLS):
                        call()
                    return (time.perf_counter() - start) / RAY_CALLS * 1e6

                async def async_round() -> float:
                    start = time.perf_counter()
                    for _ in range(RAY_CALLS):
                        await runtime.aexecute("doubled", {"x": 1}, ctx)
                    return (time.perf_counter() - start) / RAY_CALLS * 1e6

                rounds: dict[str, list[float]] = {"host": [], "async": [], "actor": [], "sync": []}
                for _ in range(ROUNDS):
                    rounds["host"].append(timed(lambda: runtime.execute("doubled", {"x": 1}, ctx)))
                    rounds["actor"].append(timed(lambda: ray.get(plain.double.remote(1))))
                    rounds["async"].append(loop.run_until_complete(async_round()))
                    rounds["sync"].append(timed(lambda: ray.get(plain_sync.double.remote(1))))
    finally:
        loop.close()
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in rounds.items()}
    print(f"RayHost execute            {medians['host']:8.1f} us/call")
    print(f"RayHost aexecute           {medians['async']:8.1f} us/call")
    print(f"async actor method call    {medians['actor']:8.1f} us/call")
    print(f"sync actor method call     {medians['sync']:8.1f} us/call")
    for label, base in (("async actor", "actor"), ("sync actor", "sync")):
        ratios = [h / b for h, b in zip(rounds["host"], rounds[base], strict=True)]
        ratio = statistics.median(ratios)
        print(f"ratio to {label:<12}      {ratio:8.2f}x  (target <= {TARGET}x)")


def plans_main(plans: int = PLANS) -> dict[str, float]:
    """Run ``plans`` plans of `PLAN_CALLS` calls on a pool of `POOL` Ray actors; the figures."""
    import shutil

    import ray

    from toolcycle.hosts import RayHost

    here = importlib.import_module("benchmarks.bench_hosts")
    scratch = _start_ray(POOL)
    host = RayHost(pool=POOL)
    latencies: list[float] = []
    warm: list[float] = []

    async def one_plan(runtime: ToolRuntime, gate: asyncio.Semaphore) -> None:
        async with gate, runtime.aplan(host=host, read_only=True) as ctx:
            for x in range(PLAN_CALLS):
                start = time.perf_counter()
                result = await runtime.aexecute("doubled", {"x": x}, ctx)
                took = time.perf_counter() - start
                assert result.success, result.error
                latencies.append(took)
                if x:
                    warm.append(took)

    async def run_all() -> float:
        with ToolRuntime(tracer=NullTracer()) as runtime:
            runtime.register(here.doubled)
            gate = asyncio.Semaphore(IN_FLIGHT)
            # Start the pool's actors first: the run measures plans, not actor starts.
            await asyncio.gather(*(one_plan(runtime, asyncio.Semaphore(1)) for _ in range(POOL)))
            latencies.clear()
            warm.clear()
            start = time.perf_counter()
            await asyncio.gather(*(one_plan(runtime, gate) for _ in range(plans)))
            return time.perf_counter() - start

    try:
        wall = asyncio.run(run_all())
    finally:
        host.close()
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    ordered = sorted(latencies)
    figures = {
        "plans": plans,
        "calls": len(latencies),
        "wall_s": wall,
        "calls_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(ordered) * 1e3,
        "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] * 1e3,
        "warm_p99_ms": sorted(warm)[int(0.99 * (len(warm) - 1))] * 1e3,
    }
    print(
        f"{plans} plans x {PLAN_CALLS} calls on a pool of {POOL} Ray actors, "
        f"{IN_FLIGHT} plans in flight"
    )
    print(f"wall time                  {wall:8.2f} s")
    print(f"throughput                 {figures['calls_per_s']:8.0f} calls/s")
    print(f"latency per call, median   {figures['p50_ms']:8.2f} ms")
    print(f"latency per call, p99      {figures['p99_ms']:8.2f} ms")
    print(f"p99 of warm calls          {figures['warm_p99_ms']:8.2f} ms  (a plan's 2nd call on)")
    return figures


if __name__ == "__main__":
    import sys

    arguments = sys.argv[1:]
    if "plans" in arguments:
        count = PLANS
        if "--plans" in arguments:
            count = int(arguments[arguments.index("--plans") + 1])
        plans_main(count)
    else:
        main()
        if "ray" in arguments:
            ray_main()
