"""Run the benchmarks and print per-call times and the ratios that matter.

Usage: ``python -m benchmarks`` from the repository root (``nox -s bench`` does this).
Each benchmark is timed with several timeit repeats in one process. The table shows
the best and the median repeat; the ratios use the best, which is the least
disturbed by other work on the machine. Ratios taken in one run are meaningful on
any machine; absolute times are not. Nothing here fails on a number: this is a
measurement, not a test.
"""

from __future__ import annotations

import statistics
import sys
import timeit
from typing import TYPE_CHECKING

from benchmarks import bench_runtime

if TYPE_CHECKING:
    from collections.abc import Callable

REPEATS = 7
TARGET_ADDED_US = 20.0


def measure(fn: Callable[[], None]) -> tuple[float, float]:
    """Best and median seconds per call of ``fn`` over ``REPEATS`` timeit runs.

    A benchmark that makes several calls per run says how many in its ``calls``
    attribute.
    """
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = timer.repeat(repeat=REPEATS, number=number)
    calls = number * getattr(fn, "calls", 1)
    return min(runs) / calls, statistics.median(runs) / calls


def main() -> int:
    """Time every benchmark, print the table and the ratios; always returns 0."""
    bench_runtime.setup()
    try:
        names = [name for name in dir(bench_runtime) if name.startswith("time_")]
        timings = {name: measure(getattr(bench_runtime, name)) for name in names}
    finally:
        bench_runtime.teardown()
    results = {name: best * 1e6 for name, (best, _) in timings.items()}
    width = max(len(name) for name in results)
    print(f"{'benchmark':<{width}}  {'best us':>10}  {'median us':>10}")
    for name, (best, median) in timings.items():
        print(f"{name:<{width}}  {best * 1e6:10.2f}  {median * 1e6:10.2f}")
    baseline = results["time_baseline_validated_call"]
    execute = results["time_runtime_execute"]
    added = execute - baseline
    print()
    print(f"execute / (bare call + two cached jsonschema validations) = {execute / baseline:.2f}x")
    print(
        f"runtime's own overhead on that call = {added:.1f} us "
        f"(aim: <= {TARGET_ADDED_US:.0f} us added by the runtime)"
    )
    print(
        f"tracing: listener / null tracer = "
        f"{results['time_runtime_execute_with_listener'] / execute:.2f}x, "
        f"default structlog tracer / null tracer = "
        f"{results['time_runtime_execute_default_tracer'] / execute:.2f}x"
    )
    print(
        f"aexecute / execute = {results['time_runtime_aexecute'] / execute:.2f}x (async tool), "
        f"{results['time_runtime_aexecute_sync_tool'] / execute:.2f}x (sync tool on the pool)"
    )
    direct = results["time_wrapped_function_direct"]
    wrapped = results["time_wrapped_function_execute"]
    print(f"@tool through the runtime / called directly = {wrapped / direct:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
