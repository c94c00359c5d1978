"""Instructions per warm call, counted by valgrind: is an unused feature free?

Timings on a shared machine move by several percent from run to run; the number of
instructions a call executes hardly does (with a fixed ``PYTHONHASHSEED``, by up to
about half a percent between runs of one checkout, and up to about 0.7 % between two
copies of the same code in different folders, where objects land at other addresses).
This script counts them with valgrind's callgrind tool for:

- a warm ``execute`` of a plain sync tool, ``aexecute`` and ``acall`` (an OpenAI
  tool call) of a plain async tool, with no cache, guardrail, retry policy, search
  or stream configured: on this checkout and on another one (by default the
  checkout of commit 01dfa3b, before the agent-loop features, at ``/tmp/before``:
  ``git worktree add /tmp/before 01dfa3b``);
- on this checkout, a cache hit of a read-only tool against a warm call of the same
  tool without a cache.

How: one interpreter per checkout runs under callgrind with
``--dump-before=getppid``. It builds the runtime, warms every path, then runs
each scenario ``--calls`` times, calling ``os.getppid()`` (a libc function nothing
else in the calls uses) before and after each scenario. Callgrind writes the
counts since the previous dump at each of those calls, so every second dump holds
exactly one scenario's calls, and the ``gc.collect()`` before each scenario falls
in the dump between: its instruction count divided by the number of calls
is the instructions per call, loop included (the same few in every scenario).

Usage, from the repository root::

    python benchmarks/instructions.py [--before /tmp/before/src] [--calls 2000]

It needs ``valgrind`` on the PATH, and takes a minute or two (importing the package
under valgrind is the slow part). Nothing fails on a number: it prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SRC = HERE.parent.parent / "src"
HASH_SEED = "0"
"""``PYTHONHASHSEED`` of every counted interpreter, so dict and set layouts repeat."""
WARM_CALLS = 200
"""Calls of each scenario before counting: activation, caches and lazy imports are done."""

_TOTAL = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


def _child(calls: int) -> None:
    """Run every scenario under callgrind, a getppid() marker before each and after the last."""
    from toolcycle import NullTracer, ToolRuntime, wrap

    try:
        from toolcycle import CachePolicy
    except ImportError:  # a checkout from before result caching
        CachePolicy = None  # type: ignore[misc, assignment]

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    async def aadd(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def lookup(q: str, limit: int = 10) -> dict[str, Any]:
        """Look a query up, as a read-only search tool would."""
        return {"q": q, "items": [f"{q}-{i}" for i in range(limit)], "total": limit}

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(wrap(add, name="add", writes=False))
    runtime.register(wrap(aadd, name="aadd", writes=False))
    runtime.register(wrap(lookup, name="lookup", writes=False))
    if CachePolicy is not None:
        policy = CachePolicy(ttl=3600, scope="runtime")
        runtime.register(wrap(lookup, name="cached_lookup", writes=False), cache=policy)
    ctx = runtime.new_context(read_only=True)
    loop = asyncio.new_event_loop()
    numbers = {"a": 1, "b": 2}
    query = {"q": "weather", "limit": 10}
    model_call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "aadd", "arguments": '{"a": 1, "b": 2}'},
    }
    execute, aexecute, acall = runtime.execute, runtime.aexecute, runtime.acall

    def sync_calls(name: str, params: dict[str, Any]) -> Any:
        def run(count: int) -> None:
            for _ in range(count):
                execute(name, params, ctx)

        return run

    async def aexecutes(count: int) -> None:
        for _ in range(count):
            await aexecute("aadd", numbers, ctx)

    async def acalls(count: int) -> None:
        for _ in range(count):
            await acall(model_call, ctx)

    scenarios = {
        "execute": sync_calls("add", numbers),
        "aexecute": lambda count: loop.run_until_complete(aexecutes(count)),
        "acall": lambda count: loop.run_until_complete(acalls(count)),
        "execute_lookup": sync_calls("lookup", query),
    }
    if CachePolicy is not None:
        scenarios["cache_hit"] = sync_calls("cached_lookup", query)
    for run in scenarios.values():
        run(WARM_CALLS)
    for run in scenarios.values():
        gc.collect()
        os.getppid()  # callgrind dumps here: what came before, the collection too
        run(calls)
        # A dump of this scenario alone: the next scenario's collection (a full one
        # walks every object of the heap, thousands of instructions per call) and
        # no collection at all after the last scenario made the rows unequal.
        os.getppid()
    runtime.end_plan(ctx)
    runtime.close()
    loop.close()
    print(json.dumps(list(scenarios)))


def count(src: Path, calls: int, valgrind: str) -> dict[str, float]:
    """Instructions per call of each scenario, with the package at ``src``."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            valgrind,
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-before=getppid",
            sys.executable,
            str(HERE),
            "--child",
            "--calls",
            str(calls),
        ]
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": HASH_SEED}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"valgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
        names = json.loads(done.stdout.strip().splitlines()[-1])
        # Two markers per scenario: dump 2k - 1 is what came before scenario k (its
        # collection included), dump 2k is scenario k.
        totals = [_total(Path(f"{out}.{2 * number}")) for number in range(1, len(names) + 1)]
    return {name: total / calls for name, total in zip(names, totals, strict=True)}


def _total(dump: Path) -> int:
    found = _TOTAL.search(dump.read_text())
    if found is None:
        raise RuntimeError(f"{dump} has no instruction total")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    """Count both checkouts and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--before", type=Path, default=Path("/tmp/before/src"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--valgrind", default="valgrind")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(options.calls)
        return
    after = count(SRC, options.calls, options.valgrind)
    before = count(options.before, options.calls, options.valgrind)
    print(f"instructions per warm call ({options.calls} calls, PYTHONHASHSEED={HASH_SEED})")
    print(f"{'call':<16}{'before':>12}{'this':>12}{'change':>10}")
    for name in ("execute", "aexecute", "acall", "execute_lookup"):
        change = after[name] / before[name] - 1.0
        print(f"{name:<16}{before[name]:>12,.0f}{after[name]:>12,.0f}{change:>+10.2%}")
    hit, warm = after["cache_hit"], after["execute_lookup"]
    print(f"cache hit / warm call of the same tool (this checkout): {hit:,.0f} / {warm:,.0f}")
    print(f"  = {hit / warm:.3f}")


if __name__ == "__main__":
    main()
