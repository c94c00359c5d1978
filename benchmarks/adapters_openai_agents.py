"""What `toolcycle.adapters.openai_agents` adds to one tool call of the OpenAI Agents SDK.

The same async function is called the SDK's own way, through ``on_invoke_tool`` of
``agents.function_tool(fn)``, and through ``on_invoke_tool`` of the ``FunctionTool``
that ``function_tools(runtime, plan)`` makes of ``toolcycle.tool(fn)``: the JSON text
of the model's arguments in, the text for the model out, a new ``ToolContext`` per call
on both sides. A third side, ``runtime.acall`` of the same call alone, is the floor
the adapter cannot go below. Rounds rotate which side goes first; the ratio of each
round is adapter time over SDK time, and the median ratio is compared with the
target: the adapter adds at most 15 % to the SDK's own per-call cost.

Run it with ``python -m benchmarks.adapters_openai_agents`` (a few seconds).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from agents import FunctionTool, function_tool
from agents.tool_context import ToolContext

from toolcycle import NullTracer, ToolRuntime, tool
from toolcycle.adapters.openai_agents import function_tools

__all__ = ["TARGET", "measure"]

TARGET = 1.15
"""The adapter's per-call time over the SDK's, at most."""
ARGUMENTS = '{"a": 2, "b": 3, "label": "x"}'


async def add(a: int, b: int, label: str = "", scale: float = 1.0) -> dict[str, Any]:
    """Add two integers."""
    return {"sum": a + b, "label": label}


async def _calls(invoke: Any, count: int) -> float:
    """Seconds for ``count`` calls of ``invoke``, each on a new ToolContext."""
    start = time.perf_counter()
    for _ in range(count):
        ctx = ToolContext(None, tool_name="add", tool_call_id="call-1", tool_arguments=ARGUMENTS)
        await invoke(ctx, ARGUMENTS)
    return time.perf_counter() - start


async def _measure(rounds: int, calls: int) -> dict[str, Any]:
    native = function_tool(add).on_invoke_tool
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool(add, writes=False))
        async with runtime.aplan() as plan:
            [adapted] = function_tools(runtime, plan)
            assert isinstance(adapted, FunctionTool)
            through = adapted.on_invoke_tool
            call = {"type": "function_call", "call_id": "c", "name": "add", "arguments": ARGUMENTS}

            async def bare(ctx: ToolContext[Any], arguments: str) -> Any:
                """runtime.acall alone: the adapter's floor."""
                return await runtime.acall(call, plan)

            ctx = ToolContext(None, tool_name="add", tool_call_id="c", tool_arguments=ARGUMENTS)
            # The SDK hands its output on as it is; the adapter, as the model's text.
            assert await native(ctx, ARGUMENTS) == json.loads(await through(ctx, ARGUMENTS))
            sides = {"sdk": native, "adapter": through, "acall": bare}
            times: dict[str, list[float]] = {name: [] for name in sides}
            for invoke in sides.values():  # warm each side
                await _calls(invoke, calls)
            order = list(sides)
            for _ in range(rounds):
                order.append(order.pop(0))  # each side takes its turn at going first
                for name in order:
                    times[name].append(await _calls(sides[name], calls) / calls)
    sdk, ours, floor = times["sdk"], times["adapter"], times["acall"]
    return {
        "sdk_us": statistics.median(sdk) * 1e6,
        "adapter_us": statistics.median(ours) * 1e6,
        "acall_us": statistics.median(floor) * 1e6,
        "ratio": statistics.median(a / s for a, s in zip(ours, sdk, strict=True)),
        "acall_ratio": statistics.median(f / s for f, s in zip(floor, sdk, strict=True)),
        "target": TARGET,
        "validator": runtime.validator,
    }


def measure(rounds: int = 21, calls: int = 500) -> dict[str, Any]:
    """Median per-call microseconds of each side, and the median round ratios to the SDK.

    ``ratio`` is the adapter's (the target's); ``acall_ratio`` is that of
    ``runtime.acall`` of the same call alone (with a new ToolContext per call too),
    what the adapter cannot go below.
    """
    return asyncio.run(_measure(rounds, calls))


if __name__ == "__main__":
    found = measure()
    verdict = "meets" if found["ratio"] <= TARGET else "misses"
    print(
        f"OpenAI Agents SDK on_invoke_tool {found['sdk_us']:.1f} us; through the adapter "
        f"{found['adapter_us']:.1f} us, ratio {found['ratio']:.2f}: {verdict} the target "
        f"'adapter adds <= 15%' (<= {TARGET}); runtime.acall alone {found['acall_us']:.1f} us, "
        f"ratio {found['acall_ratio']:.2f} ({found['validator']})"
    )
