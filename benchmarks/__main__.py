"""Run the benchmarks and print per-call times and the ratios that matter.

Usage: ``python -m benchmarks`` from the repository root (``nox -s bench`` does this).
Each benchmark is timed with several timeit repeats in one process (a benchmark
that sets asv's ``number`` and ``repeat`` attributes, such as the MCP activations
that start a process each time, runs exactly that often instead). The table shows
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

from benchmarks import bench_mcp, bench_runtime, bench_skills

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

REPEATS = 7
TARGET_ADDED_US = 20.0
MCP_CALL_TARGET = 1.10
MCP_ACTIVATION_TARGET = 1.05
SKILLS_SPEEDUP_TARGET = 5.0


def measure(fn: Callable[[], None]) -> tuple[float, float]:
    """Best and median seconds per call of ``fn`` over ``REPEATS`` timeit runs.

    A benchmark that makes several calls per run says how many in its ``calls``
    attribute; one that sets ``number`` is run that many times per repeat, for
    ``repeat`` repeats (default ``REPEATS``), without timeit's calibration.
    """
    timer = timeit.Timer(fn)
    number = getattr(fn, "number", None)
    if number is None:
        number, _ = timer.autorange()
    runs = timer.repeat(repeat=getattr(fn, "repeat", REPEATS), number=number)
    calls = number * getattr(fn, "calls", 1)
    return min(runs) / calls, statistics.median(runs) / calls


def run_module(module: ModuleType) -> dict[str, tuple[float, float]]:
    """Best and median seconds per call of each of the module's ``time_*`` functions."""
    module.setup()
    try:
        names = [name for name in dir(module) if name.startswith("time_")]
        return {name: measure(getattr(module, name)) for name in names}
    finally:
        module.teardown()


def main() -> int:
    """Time every benchmark, print the table and the ratios; always returns 0."""
    timings = run_module(bench_runtime) | run_module(bench_mcp) | run_module(bench_skills)
    results = {name: best * 1e6 for name, (best, _) in timings.items()}
    width = max(len(name) for name in results)
    print(f"{'benchmark':<{width}}  {'best us':>12}  {'median us':>12}")
    for name, (best, median) in timings.items():
        print(f"{name:<{width}}  {best * 1e6:12.2f}  {median * 1e6:12.2f}")
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
    print()
    print_mcp_ratios(results)
    print()
    print_skills_ratios(results)
    return 0


def print_mcp_ratios(results: dict[str, float]) -> None:
    """Each MCP benchmark against the SDK alone on the same kind of server, beside its target."""
    rows = [
        (f"mcp {call} ({where}) / direct send_request", f"{call}_{key}", f"direct_{key}")
        for where, key in (("in process", "inprocess"), ("stdio", "stdio"))
        for call in ("execute", "aexecute")
    ]
    width = max(len(label) for label, _, _ in rows) + 1
    for label, ours, theirs in rows:
        ratio = results[f"time_mcp_{ours}"] / results[f"time_mcp_{theirs}"]
        print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_CALL_TARGET:.2f})")
    ratio = results["time_mcp_activation_stdio"] / results["time_mcp_direct_session_open_stdio"]
    label = "mcp activation (stdio) / direct session open"
    print(f"{label:<{width}} = {ratio:.2f}x (target <= {MCP_ACTIVATION_TARGET:.2f})")


def print_skills_ratios(results: dict[str, float]) -> None:
    """Skills discovery as a speed-up over skills-ref's read_properties, beside its target."""
    rows = [
        (f"skills read_properties / register_source ({bench_skills.SKILL_COUNT:,} x {size})", key)
        for size, key in (("100 KB", "100kb"), ("1 KB", "1kb"))
    ]
    width = max(len(label) for label, _ in rows) + 1
    for label, key in rows:
        ours = results[f"time_skills_register_{key}"]
        theirs = results[f"time_skills_read_properties_{key}"]
        print(
            f"{label:<{width}} = {theirs / ours:.1f}x faster "
            f"(target >= {SKILLS_SPEEDUP_TARGET:.0f}x): "
            f"toolcycle {ours / 1e3:.0f} ms, skills-ref {theirs / 1e3:.0f} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
