"""Per-call overhead of a `ProcessHost` against the plainest way to run in a process.

Run it with ``python -m benchmarks.bench_hosts`` from the repository root. Both
sides call the same function, warm, in one worker process:

- ``ProcessHost``: ``runtime.execute`` of a ``@tool`` in a plan with
  ``host=ProcessHost()``: the whole pipeline (checks, validation, trace) in the
  caller's process, and the body in the plan's worker.
- ``ProcessPoolExecutor``: ``pool.submit(fn, x).result()`` on a one-worker pool.
- ``ProcessHost, async``: ``await runtime.aexecute`` of the same call.

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
"""ProcessHost's sync call against ProcessPoolExecutor.submit: at most this."""


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


if __name__ == "__main__":
    main()
