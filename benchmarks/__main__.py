"""Run the benchmarks and print per-call times and the ratios that matter.

Usage: ``python -m benchmarks`` from the repository root (``nox -s bench`` does this).
Numbers are medians of several timeit repeats in one process, so ratios between
them are meaningful on any machine; absolute times are not. Nothing here fails on
a number: this is a measurement, not a test.
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


def measure(fn: Callable[[], None]) -> float:
    """Median seconds per call of ``fn`` over ``REPEATS`` timeit runs."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = timer.repeat(repeat=REPEATS, number=number)
    return statistics.median(runs) / number


def main() -> int:
    """Time every benchmark, print the table and the ratios; always returns 0."""
    bench_runtime.setup()
    try:
        names = [name for name in dir(bench_runtime) if name.startswith("time_")]
        results = {name: measure(getattr(bench_runtime, name)) * 1e6 for name in names}
    finally:
        bench_runtime.teardown()
    width = max(len(name) for name in results)
    print(f"{'benchmark':<{width}}  median us/call")
    for name, micros in results.items():
        print(f"{name:<{width}}  {micros:10.2f}")
    baseline = results["time_baseline_validated_call"]
    execute = results["time_runtime_execute"]
    added = execute - baseline
    print()
    print(f"execute / (bare call + two cached jsonschema validations) = {execute / baseline:.2f}x")
    print(
        f"runtime's own overhead on that call = {added:.1f} us "
        f"(aim: <= {TARGET_ADDED_US:.0f} us added by the runtime)"
    )
    print(f"aexecute / execute = {results['time_runtime_aexecute'] / execute:.2f}x")
    direct = results["time_wrapped_function_direct"]
    wrapped = results["time_wrapped_function_execute"]
    print(f"@tool through the runtime / called directly = {wrapped / direct:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
