"""Per-call overhead of the runtime on a trivial tool with small schemas.

Each ``time_*`` function performs one call, except the async ones, which await a
batch of `ASYNC_BATCH` calls in one loop turn so that starting the loop does not
swamp the call; their ``calls`` attribute says so, and ``python -m benchmarks``
divides by it. ``setup()`` builds what they share, so asv (or
``python -m benchmarks``) times only the calls. The baseline does what any
careful caller would do without toolcycle: validate the input and the output with
cached ``jsonschema`` validators around a bare call. The runtimes here use the same
``jsonschema`` backend, so the ratio compares like with like; `benchmarks.bench_peers`
measures both backends.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jsonschema import Draft202012Validator

from toolcycle import (
    NullTracer,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)

ASYNC_BATCH = 100
"""Calls awaited per run of an async benchmark."""

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
        "label": {"type": "string"},
        "scale": {"type": "number"},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["sum"],
}
PARAMS = {"a": 2, "b": 3, "label": "total", "scale": 1.5}


def add(params: dict[str, Any]) -> dict[str, Any]:
    """The work itself: trivial on purpose, so the overhead shows."""
    return {"sum": params["a"] + params["b"], "label": params.get("label", "")}


class AddTool:
    """``add`` as a hand-written sync tool."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="add",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return add(params)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class AsyncAddTool(AddTool):
    """``add`` as an async tool."""

    def discover(self) -> ToolDescriptor:
        return super().discover().model_copy(update={"name": "aadd"})

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:  # type: ignore[override]
        return add(params)


@tool(writes=False, checkpointable=True)
def wrapped_add(a: int, b: int, label: str = "", scale: float = 1.0) -> dict[str, Any]:
    """Add two integers."""
    return {"sum": a + b, "label": label}


_state: dict[str, Any] = {}


def setup() -> None:
    """Build the validators, the runtimes and a warm plan for every benchmark."""
    if _state:
        return
    _state["input"] = Draft202012Validator(INPUT_SCHEMA)
    _state["output"] = Draft202012Validator(OUTPUT_SCHEMA)
    quiet = ToolRuntime(tracer=NullTracer(), validator="jsonschema")
    for instance in (AddTool(), AsyncAddTool(), wrapped_add):
        quiet.register(instance)
    listened = ToolRuntime(tracer=NullTracer(), validator="jsonschema")
    listened.register(AddTool())
    listened.add_trace_listener(lambda trace: None)
    default = ToolRuntime(validator="jsonschema")  # the default structlog tracer, silent
    default.register(AddTool())
    _state["runtime"], _state["listened"], _state["default"] = quiet, listened, default
    _state["ctx"] = quiet.new_context("bench")
    _state["listened_ctx"] = listened.new_context("bench")
    _state["default_ctx"] = default.new_context("bench")
    _state["loop"] = asyncio.new_event_loop()
    for name in ("add", "aadd", "wrapped_add"):
        quiet.execute(name, PARAMS if name != "wrapped_add" else {"a": 2, "b": 3}, _state["ctx"])
    listened.execute("add", PARAMS, _state["listened_ctx"])
    default.execute("add", PARAMS, _state["default_ctx"])
    _state["loop"].run_until_complete(quiet.aexecute("add", PARAMS, _state["ctx"]))


def teardown() -> None:
    """Close what setup opened."""
    if _state:
        _state["runtime"].close()
        _state["listened"].close()
        _state["default"].close()
        _state["loop"].close()
        _state.clear()


def time_bare_call() -> None:
    """The function alone."""
    add(dict(PARAMS))


def time_baseline_validated_call() -> None:
    """The function between two cached jsonschema validations: the fair baseline."""
    params = dict(PARAMS)
    _state["input"].validate(params)
    _state["output"].validate(add(params))


def time_runtime_execute() -> None:
    """runtime.execute with warm activation, small schemas, a null tracer."""
    _state["runtime"].execute("add", PARAMS, _state["ctx"])


def time_runtime_execute_with_listener() -> None:
    """The same with one trace listener attached."""
    _state["listened"].execute("add", PARAMS, _state["listened_ctx"])


def time_runtime_execute_default_tracer() -> None:
    """runtime.execute as a host gets it: the default structlog tracer, logging unconfigured."""
    _state["default"].execute("add", PARAMS, _state["default_ctx"])


async def _await_batch(name: str) -> None:
    runtime, ctx = _state["runtime"], _state["ctx"]
    for _ in range(ASYNC_BATCH):
        await runtime.aexecute(name, PARAMS, ctx)


def time_runtime_aexecute() -> None:
    """Await runtime.aexecute of an async tool, awaited on the caller's loop."""
    _state["loop"].run_until_complete(_await_batch("aadd"))


time_runtime_aexecute.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_runtime_aexecute_sync_tool() -> None:
    """Await runtime.aexecute of the sync tool, which runs on the runtime's thread pool."""
    _state["loop"].run_until_complete(_await_batch("add"))


time_runtime_aexecute_sync_tool.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def time_wrapped_function_execute() -> None:
    """runtime.execute of a @tool function (schema derived from its signature)."""
    _state["runtime"].execute("wrapped_add", {"a": 2, "b": 3}, _state["ctx"])


def time_wrapped_function_direct() -> None:
    """The @tool function called directly, bypassing the runtime."""
    wrapped_add(2, 3)
