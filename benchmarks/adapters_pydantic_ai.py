"""What the pydantic-ai adapter adds to pydantic-ai's own cost of a tool call.

Both sides are measured the way an agent run calls a tool: ``ToolManager.handle_call``
of a model's ``ToolCallPart`` on a manager prepared once with ``for_run_step``.

- native: the async function in a ``FunctionToolset``; pydantic-ai validates the
  arguments with the function's pydantic validator and calls it.
- adapter: the same function registered with ``@tool`` in a runtime and offered by a
  run's copy of ``ToolcycleToolset``, entered once (one plan); pydantic-ai passes the
  arguments through, and the runtime validates input and output against the JSON
  Schemas, traces the call and answers it.

Rounds alternate the two; each round times `CALLS` calls of each. The result is the
median of the per-round ratios. Target: the adapter adds at most 15 %.

For the breakdown, each round also times ``runtime.acall`` of the same call alone
(the path the adapter's ``call_tool`` takes), so the report shows how much of the
difference is the runtime's own pipeline and how much the adapter around it.

Run: ``python -m benchmarks.adapters_pydantic_ai``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from pydantic_ai import RunContext, ToolCallPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

from toolcycle import NullTracer, ToolCall, ToolRuntime, tool
from toolcycle.adapters.pydantic_ai import ToolcycleToolset

ROUNDS = 15
CALLS = 2000
TARGET = 0.15
PARAMS = {"a": 2, "b": 3, "label": "total", "scale": 1.5}


async def add_fields_async(a: int, b: int, label: str = "", scale: float = 1.0) -> dict[str, Any]:
    """Add two integers."""
    return {"sum": a + b, "label": label}


async def _manager(toolset: AbstractToolset[Any], ctx: RunContext[Any]) -> ToolManager[Any]:
    return await ToolManager(toolset).for_run_step(ctx)


async def _time(manager: ToolManager[Any], part: ToolCallPart, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await manager.handle_call(part)
    return time.perf_counter() - start


async def _time_acall(runtime: ToolRuntime, call: ToolCall, plan: Any, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await runtime.acall(call, plan)
    return time.perf_counter() - start


async def measure(rounds: int = ROUNDS, calls: int = CALLS) -> dict[str, float]:
    """Per-call seconds of each side (medians) and the median of the per-round ratios."""
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    part = ToolCallPart("add_fields_async", dict(PARAMS), tool_call_id="call-1")
    native = await _manager(FunctionToolset([add_fields_async]), ctx)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool(writes=False)(add_fields_async))
        run = await ToolcycleToolset(runtime).for_run(ctx)
        async with run:
            adapter = await _manager(run, ctx)
            expected = await native.handle_call(part)
            got = await adapter.handle_call(part)
            if got != expected:
                raise RuntimeError(f"the adapter returned {got!r}, expected {expected!r}")
            call = ToolCall(id="call-1", name="add_fields_async", arguments=dict(PARAMS))
            native_times, adapter_times, acall_times, ratios = [], [], [], []
            for _ in range(rounds):
                n = await _time(native, part, calls)
                a = await _time(adapter, part, calls)
                c = await _time_acall(runtime, call, run.plan, calls)
                native_times.append(n / calls)
                adapter_times.append(a / calls)
                acall_times.append(c / calls)
                ratios.append(a / n)
    return {
        "native_us": statistics.median(native_times) * 1e6,
        "adapter_us": statistics.median(adapter_times) * 1e6,
        "acall_us": statistics.median(acall_times) * 1e6,
        "ratio": statistics.median(ratios),
    }


def main() -> None:
    """Print the two per-call costs, the ratio and the target."""
    result = asyncio.run(measure())
    added = result["ratio"] - 1
    verdict = "met" if added <= TARGET else "missed"
    print(  # the benchmark's output
        f"pydantic-ai handle_call, native FunctionToolset: {result['native_us']:.1f} us/call\n"
        f"pydantic-ai handle_call, ToolcycleToolset:       {result['adapter_us']:.1f} us/call\n"
        f"of which runtime.acall alone (same call):       {result['acall_us']:.1f} us/call\n"
        f"adapter adds {added:+.1%} (median of {ROUNDS} round ratios); "
        f"target: adapter adds <= {TARGET:.0%}: {verdict}"
    )


if __name__ == "__main__":
    main()
