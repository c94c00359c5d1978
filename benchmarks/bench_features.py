"""The agent-loop features' costs: a cache hit against a call, and a call with none configured.

Two measurements, each as medians of many interleaved rounds in one process (each round
times every variant once, in a rotating order, so that a slow spell of the machine falls
on all of them alike):

- **cache hit / warm call**: the same read-only tool, registered twice, once with a
  `CachePolicy` (every timed call a hit) and once without (every call a warm run of its
  body). Target: the hit is cheaper, a ratio under 1.
- **warm call, nothing configured**: ``execute`` and ``aexecute`` of a plain tool with no
  cache, guardrail or retry policy, and the same call timed as a second, interleaved
  series. The A/A ratio shows the noise floor of the machine; a feature that is free when
  unused keeps the plain call where it is, which later features measure against this row.

Run it with ``python -m benchmarks --only features``, or alone with ``python -m
benchmarks.bench_features``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import TYPE_CHECKING, Any

from toolcycle import CachePolicy, NullTracer, ToolRuntime, wrap

if TYPE_CHECKING:
    from collections.abc import Callable

ROUNDS = 61
"""Interleaved rounds; each number printed is the median over them."""
CALLS = 400
"""Calls per variant per round."""
HIT_TARGET = 1.0
"""A cache hit against a warm call of the same tool: under this."""


def setup() -> None:
    """Nothing to prepare: `measure` builds its own runtime."""


def teardown() -> None:
    """Nothing to release."""


def _lookup(q: str, limit: int = 10) -> dict[str, Any]:
    """Look ``q`` up and return a small record, as a read-only search tool would."""
    return {"q": q, "items": [f"{q}-{i}" for i in range(limit)], "total": limit}


async def _alookup(q: str, limit: int = 10) -> dict[str, Any]:
    """The async twin of `_lookup`, for ``aexecute`` (a sync tool would take the pool)."""
    return {"q": q, "items": [f"{q}-{i}" for i in range(limit)], "total": limit}


def _per_call(batch: Callable[[], object]) -> float:
    """Seconds per call of ``batch``, which makes `CALLS` calls."""
    start = time.perf_counter()
    batch()
    return (time.perf_counter() - start) / CALLS


def _rounds(variants: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Seconds per call of each variant, round by round, the order rotating each round."""
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm every path once before timing
        _per_call(variants[name])
    for round_ in range(ROUNDS):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(_per_call(variants[name]))
    return times


def _ratio(times: dict[str, list[float]], top: str, bottom: str) -> float:
    """The median of the round-by-round ratios ``top / bottom``."""
    return statistics.median(a / b for a, b in zip(times[top], times[bottom], strict=True))


def measure() -> dict[str, float]:
    """Microseconds per call of each variant (medians) and the two ratios."""
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(wrap(_lookup, name="lookup", writes=False))
    runtime.register(wrap(_alookup, name="alookup", writes=False))
    runtime.register(
        wrap(_lookup, name="cached_lookup", writes=False),
        cache=CachePolicy(ttl=3600, scope="runtime"),
    )
    loop = asyncio.new_event_loop()
    try:
        ctx = runtime.new_context(read_only=True)
        params = {"q": "weather", "limit": 10}
        execute = runtime.execute
        aexecute = runtime.aexecute

        def batch(name: str) -> Callable[[], object]:
            def run() -> None:
                for _ in range(CALLS):
                    execute(name, params, ctx)

            return run

        async def abatch() -> None:
            for _ in range(CALLS):
                await aexecute("alookup", params, ctx)

        def awarm() -> None:
            loop.run_until_complete(abatch())  # the loop entered once per CALLS calls

        first = execute("cached_lookup", params, ctx)  # the one miss, kept for the rest
        assert first.trace is not None and not first.trace.cache_hit
        times = _rounds(
            {
                "hit": batch("cached_lookup"),
                "warm": batch("lookup"),
                "warm_again": batch("lookup"),
                "awarm": awarm,
            }
        )
        runtime.end_plan(ctx)
    finally:
        runtime.close()
        loop.close()
    medians = {name: statistics.median(each) * 1e6 for name, each in times.items()}
    return {
        "hit_us": medians["hit"],
        "warm_us": medians["warm"],
        "warm_again_us": medians["warm_again"],
        "awarm_us": medians["awarm"],
        "hit_ratio": _ratio(times, "hit", "warm"),
        "aa_ratio": _ratio(times, "warm_again", "warm"),
    }


def report(found: dict[str, float]) -> list[str]:
    """The lines ``python -m benchmarks`` prints for these numbers."""
    met = "met" if found["hit_ratio"] < HIT_TARGET else "not met"
    hit = (
        f"cache hit / warm call of the same tool: {found['hit_us']:.2f} / "
        f"{found['warm_us']:.2f} us = {found['hit_ratio']:.2f}x "
        f"(target < {HIT_TARGET:.2f}x: {met})"
    )
    plain = (
        f"warm execute, nothing configured: {found['warm_us']:.2f} us; the same again, "
        f"interleaved: {found['warm_again_us']:.2f} us (A/A {found['aa_ratio']:.2f}x)"
    )
    return [
        f"features, median of {ROUNDS} interleaved rounds of {CALLS} calls (us per call):",
        hit,
        plain,
        f"warm aexecute of an async tool, nothing configured: {found['awarm_us']:.2f} us",
    ]


if __name__ == "__main__":
    for line in report(measure()):
        print(line)
