"""Warm calls through the runtime: execute, aexecute, call, acall, per validator backend.

Every class builds its runtimes in ``setup`` with a null tracer and one plan kept
open, and makes each call once there, so that the timed calls find the tool active
and the schemas compiled. The async benchmarks await `ASYNC_BATCH` calls in one run
of an event loop (their names end in ``_batch``): one ``run_until_complete`` per call
would cost more than the call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

from toolcycle import NullTracer, ToolRuntime, tool

from .common import (
    ASYNC_BATCH,
    PARAMS,
    AddTool,
    AsyncAddTool,
    Backend,
    CountTool,
    add,
    add_fields,
    add_fields_async,
    items_input,
)

BACKENDS: tuple[Backend, ...] = ("jsonschema", "jsonschema-rs")
"""The validator backends, by their ``ToolRuntime(validator=...)`` name."""

OPENAI_CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "add_fields_async", "arguments": json.dumps(PARAMS)},
}
"""A model's tool call of the ``@tool`` async function, in the OpenAI format."""

SYNC_OPENAI_CALL = {
    "id": "call-2",
    "type": "function",
    "function": {"name": "add_fields", "arguments": json.dumps(PARAMS)},
}
"""The same call of the ``@tool`` sync function."""


def _runtime(validator: Backend, **options: Any) -> ToolRuntime:
    """A runtime with ``validator``; asv skips the case when that backend is not installed."""
    if validator == "jsonschema-rs" and importlib.util.find_spec("jsonschema_rs") is None:
        raise NotImplementedError("jsonschema-rs is not installed")
    options.setdefault("tracer", NullTracer())
    return ToolRuntime(validator=validator, **options)


def _check(output: Any) -> None:
    """Fail setup when a call does not give the small tool's output (a failure would flatter it)."""
    if output != add(dict(PARAMS)):
        raise RuntimeError(f"unexpected output {output!r}")


class Execute:
    """One call of the small tool on a warm plan, through each entry point."""

    params = BACKENDS
    param_names = ("validator",)

    def setup(self, validator: Backend) -> None:
        self.runtime = runtime = _runtime(validator)
        for instance in (AddTool(), AsyncAddTool(), tool(add_fields), tool(add_fields_async)):
            runtime.register(instance)
        self.ctx = runtime.new_context("asv")
        self.loop = asyncio.new_event_loop()
        _check(runtime.execute("add", PARAMS, self.ctx).output)
        _check(self.loop.run_until_complete(runtime.aexecute("aadd", PARAMS, self.ctx)).output)
        _check(runtime.call(SYNC_OPENAI_CALL, self.ctx).output)
        _check(self.loop.run_until_complete(runtime.acall(OPENAI_CALL, self.ctx)).output)

    def teardown(self, validator: Backend) -> None:
        self.runtime.close()
        self.loop.close()

    def time_execute(self, validator: Backend) -> None:
        """``execute`` of the sync tool."""
        self.runtime.execute("add", PARAMS, self.ctx)

    def time_execute_tool_function(self, validator: Backend) -> None:
        """``execute`` of an ``@tool`` function (schema from its signature)."""
        self.runtime.execute("add_fields", PARAMS, self.ctx)

    def time_call(self, validator: Backend) -> None:
        """``call`` of an OpenAI-format tool call (JSON arguments) of an ``@tool`` function."""
        self.runtime.call(SYNC_OPENAI_CALL, self.ctx)

    async def _aexecute(self, name: str) -> None:
        runtime, ctx = self.runtime, self.ctx
        for _ in range(ASYNC_BATCH):
            await runtime.aexecute(name, PARAMS, ctx)

    async def _acall(self) -> None:
        runtime, ctx = self.runtime, self.ctx
        for _ in range(ASYNC_BATCH):
            await runtime.acall(OPENAI_CALL, ctx)

    def time_aexecute_batch(self, validator: Backend) -> None:
        """100 awaited ``aexecute`` calls of the async tool, on the caller's loop."""
        self.loop.run_until_complete(self._aexecute("aadd"))

    def time_aexecute_sync_tool_batch(self, validator: Backend) -> None:
        """100 awaited ``aexecute`` calls of the sync tool, which runs on the thread pool."""
        self.loop.run_until_complete(self._aexecute("add"))

    def time_acall_batch(self, validator: Backend) -> None:
        """100 awaited ``acall`` of an OpenAI-format call of an ``@tool`` async function."""
        self.loop.run_until_complete(self._acall())


class Tracing:
    """``execute`` of the small tool as a host gets it, with what reads its traces."""

    def setup(self) -> None:
        self.default = ToolRuntime()  # the default structlog tracer, logging unconfigured
        self.listened = ToolRuntime(tracer=NullTracer())
        self.listened.add_trace_listener(lambda trace: None)
        self.kept = ToolRuntime(tracer=NullTracer(), keep_traces=100)
        self.plans = []
        for runtime in (self.default, self.listened, self.kept):
            runtime.register(AddTool())
            ctx = runtime.new_context("asv")
            _check(runtime.execute("add", PARAMS, ctx).output)
            self.plans.append((runtime, ctx))

    def teardown(self) -> None:
        for runtime, _ in self.plans:
            runtime.close()

    def time_execute_default_tracer(self) -> None:
        """The default structlog tracer, logging unconfigured."""
        runtime, ctx = self.plans[0]
        runtime.execute("add", PARAMS, ctx)

    def time_execute_trace_listener(self) -> None:
        """One trace listener attached (the trace record is built for it)."""
        runtime, ctx = self.plans[1]
        runtime.execute("add", PARAMS, ctx)

    def time_execute_keep_traces(self) -> None:
        """``keep_traces=100``: the latest traces kept in a ring."""
        runtime, ctx = self.plans[2]
        runtime.execute("add", PARAMS, ctx)


class InputSize:
    """``execute`` of the items tool with an input of many objects, per backend."""

    params = (BACKENDS, (1_000, 10_000))
    param_names = ("validator", "objects")

    def setup(self, validator: Backend, objects: int) -> None:
        self.runtime = _runtime(validator)
        self.runtime.register(CountTool())
        self.ctx = self.runtime.new_context("asv")
        self.input = items_input(objects)
        if self.runtime.execute("count", self.input, self.ctx).output != {"count": objects}:
            raise RuntimeError("the items tool did not count its input")

    def teardown(self, validator: Backend, objects: int) -> None:
        self.runtime.close()

    def time_execute(self, validator: Backend, objects: int) -> None:
        """One call; the cost is validating and copying the input."""
        self.runtime.execute("count", self.input, self.ctx)

    def peakmem_execute(self, validator: Backend, objects: int) -> None:
        """Peak resident memory of the process through one call (input built in setup)."""
        self.runtime.execute("count", self.input, self.ctx)
