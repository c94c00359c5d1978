"""What `toolcycle.adapters.langchain` adds to LangChain's own cost of one tool call.

Both contestants run the same async function (four input fields, a dict out) for a
model's tool call, ``{"type": "tool_call", "id", "name", "args"}``, and answer it
with a `ToolMessage`, the way a LangGraph ``ToolNode`` calls a tool:

- native: ``StructuredTool.from_function(coroutine=...)``, then ``await tool.ainvoke(call)``
  (LangChain validates the arguments with the pydantic model it derives from the
  function; the output is not validated);
- adapter: the function registered as an ``@tool`` in a `ToolRuntime` (null tracer,
  one plan kept open so the tool stays active), offered by ``langchain_tools``, then
  ``await tool.ainvoke(call)``: LangChain's callbacks and config, then
  ``runtime.acall`` (JSON Schema validation of input and output, a trace).

The two take turns, `BATCH` calls each per turn, for `ROUNDS` rounds; the result is
the median of the per-round ratios adapter / native, against the target that the
adapter adds at most 15 %. Run it with ``python -m benchmarks.adapters_langchain``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from langchain_core.tools import StructuredTool

from toolcycle import NullTracer, ToolRuntime, tool
from toolcycle.adapters.langchain import langchain_tools

__all__ = ["TARGET", "main", "measure"]

ROUNDS = 15
BATCH = 400
TARGET = 1.15
"""The adapter's per-call time may be at most this multiple of LangChain's own."""


async def add_fields(a: int, b: int, label: str, scale: float = 1.0) -> dict[str, Any]:
    """Add two numbers and label the sum."""
    return {"sum": (a + b) * scale, "label": label}


CALL = {
    "type": "tool_call",
    "id": "call_1",
    "name": "add_fields",
    "args": {"a": 1, "b": 2, "label": "x", "scale": 2.0},
}


async def _turn(target: Any, batch: int) -> float:
    """Seconds per call of ``batch`` awaited calls of ``target.ainvoke(CALL)``."""
    started = time.perf_counter()
    for _ in range(batch):
        await target.ainvoke(CALL)
    return (time.perf_counter() - started) / batch


async def _measure(rounds: int, batch: int) -> dict[str, float]:
    native = StructuredTool.from_function(coroutine=add_fields, name="add_fields")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(tool(writes=False)(add_fields))
        async with runtime.aplan() as ctx:
            [adapted] = langchain_tools(runtime, ctx)
            answers = [(await each.ainvoke(CALL)).content for each in (adapted, native)]
            assert json.loads(answers[0]) == json.loads(answers[1])
            await _turn(native, batch)  # warm both up
            await _turn(adapted, batch)
            natives: list[float] = []
            adapters: list[float] = []
            for index in range(rounds):
                first, second = (native, adapted) if index % 2 == 0 else (adapted, native)
                times = {id(first): await _turn(first, batch)}
                times[id(second)] = await _turn(second, batch)
                natives.append(times[id(native)])
                adapters.append(times[id(adapted)])
    ratios = [a / n for a, n in zip(adapters, natives, strict=True)]
    return {
        "native_us": statistics.median(natives) * 1e6,
        "adapter_us": statistics.median(adapters) * 1e6,
        "ratio": statistics.median(ratios),
    }


def measure(rounds: int = ROUNDS, batch: int = BATCH) -> dict[str, float]:
    """Median per-call microseconds of both, and the median per-round ratio."""
    return asyncio.run(_measure(rounds, batch))


def main() -> None:
    """Measure and print the numbers beside the target."""
    numbers = measure()
    verdict = "met" if numbers["ratio"] <= TARGET else "MISSED"
    print(
        f"LangChain StructuredTool.ainvoke: {numbers['native_us']:.1f} us/call; "
        f"through toolcycle.adapters.langchain: {numbers['adapter_us']:.1f} us/call; "
        f"ratio {numbers['ratio']:.3f} (target: adapter adds <= 15%, {verdict})"
    )


if __name__ == "__main__":
    main()
