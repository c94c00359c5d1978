"""The cost of a durable plan's call against DBOS's own decorated step.

Run it on its own (it is not part of ``python -m benchmarks``, whose modules must
not need the ``dbos`` extra)::

    python -m benchmarks.bench_dbos

Each round runs four workflows of `CALLS` calls of the same two-integer ``add``,
in turns, on one SQLite system database in a temporary folder:

- ``dbos_step``: ``add`` decorated with ``@DBOS.step()``, called from the workflow:
  what a DBOS user writes by hand. The baseline.
- ``durable_idempotent``: ``runtime.execute`` of an ``@tool(idempotent=True)`` in a
  plan opened with ``durable=DBOSPlan()``: one step per call.
- ``durable``: the same for a tool that is not idempotent: a marker step and the
  call's step, two writes per call.
- ``plain``: ``runtime.execute`` in a plan that is not durable, inside the same
  workflow, to show what toolcycle's own pipeline costs.

It prints the median over `ROUNDS` rounds of each workflow's time per call, and
the median of the per-round ratios against ``dbos_step``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolcycle import NullTracer, ToolRuntime, tool
from toolcycle.hosts import DBOSPlan

if TYPE_CHECKING:
    from collections.abc import Callable

CALLS = 50
"""Calls per workflow."""

ROUNDS = 21
"""Interleaved rounds; the first is a warm-up and is dropped."""


@DBOS.step()
def add_step(a: int, b: int) -> int:
    """Add two integers, as a DBOS step."""
    return a + b


@tool(writes=False, idempotent=True)
def add_idempotent(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


runtime = ToolRuntime(tracer=NullTracer())
runtime.register(add_idempotent)
runtime.register(add)


@DBOS.workflow()
def dbos_step() -> None:
    """The baseline: DBOS's own step, CALLS times."""
    for i in range(CALLS):
        add_step(i, 1)


@DBOS.workflow()
def durable_idempotent() -> None:
    """A durable plan's calls of an idempotent tool."""
    with runtime.plan(durable=DBOSPlan()) as ctx:
        for i in range(CALLS):
            runtime.execute("add_idempotent", {"a": i, "b": 1}, ctx)


@DBOS.workflow()
def durable() -> None:
    """A durable plan's calls of a tool that is not idempotent."""
    with runtime.plan(durable=DBOSPlan()) as ctx:
        for i in range(CALLS):
            runtime.execute("add", {"a": i, "b": 1}, ctx)


@DBOS.workflow()
def plain() -> None:
    """Calls of a plan that is not durable, in a workflow all the same."""
    with runtime.plan() as ctx:
        for i in range(CALLS):
            runtime.execute("add", {"a": i, "b": 1}, ctx)


WORKFLOWS: dict[str, Callable[[], None]] = {
    "dbos_step": dbos_step,
    "durable_idempotent": durable_idempotent,
    "durable": durable,
    "plain": plain,
}


def _per_call_us(workflow: Callable[[], None]) -> float:
    with SetWorkflowID(uuid.uuid4().hex):
        start = time.perf_counter()
        workflow()
        return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    """Run the rounds and print the table."""
    folder = Path(tempfile.mkdtemp(prefix="bench-dbos-"))
    DBOS(
        config=DBOSConfig(
            name="bench-dbos",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="bench",
            log_level="WARNING",
        )
    )
    DBOS.launch()
    try:
        times: dict[str, list[float]] = {name: [] for name in WORKFLOWS}
        for index in range(ROUNDS):
            for name, workflow in WORKFLOWS.items():
                value = _per_call_us(workflow)
                if index:
                    times[name].append(value)
    finally:
        DBOS.destroy()
        runtime.close()
    base = times["dbos_step"]
    print(f"{CALLS} calls per workflow, median of {ROUNDS - 1} interleaved rounds, SQLite")
    print(f"{'workflow':<20}{'us/call':>10}{'vs dbos_step':>15}")
    for name, values in times.items():
        ratio = statistics.median(v / b for v, b in zip(values, base, strict=True))
        print(f"{name:<20}{statistics.median(values):>10.1f}{ratio:>14.2f}x")


if __name__ == "__main__":
    main()
