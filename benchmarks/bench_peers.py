"""One small tool called through toolcycle and through other tool libraries, per call.

Every contestant runs the tool of `benchmarks.asv.common`: four input fields
(``a``, ``b``, ``label``, ``scale``), the output ``{"sum": a + b, "label": label}``.
In order of how much each does around the bare function:

- ``time_peer_bare_call``: the Python function alone.
- ``time_peer_jsonschema_by_hand`` and ``time_peer_jsonschema_rs_by_hand``: the
  function between an input and an output validation with cached validators,
  ``jsonschema.Draft202012Validator`` or ``jsonschema_rs.validator_for`` (formats
  not checked), as a careful caller would write it without any library.
- ``time_peer_toolcycle_execute_*`` and ``time_peer_toolcycle_aexecute_*``:
  ``runtime.execute`` of the sync tool and ``runtime.aexecute`` of the async one,
  for each validator backend (``ToolRuntime(validator=...)``), with a null tracer,
  no listeners and one plan kept open, so that every call finds the tool active.
  The runtime validates input and output and records a trace on every call.
- ``time_peer_toolcycle_acall``: ``runtime.acall`` (jsonschema-rs) of a model's
  tool call in the OpenAI format, ``{"id", "type": "function", "function": {"name",
  "arguments": "<JSON text>"}}``, naming ``add_fields_async`` registered as an
  ``@tool`` async function: reading the call, parsing the JSON arguments, then the
  whole ``aexecute`` pipeline, and the result answering the call.
- ``time_peer_langchain_invoke``: ``StructuredTool.from_function`` with a pydantic
  ``args_schema``, then ``tool.invoke(params)``. Input is validated; output is not.
- ``time_peer_langchain_ainvoke``: the same with the async function as the tool's
  ``coroutine``, then ``await tool.ainvoke(params)``.
- ``time_peer_pydantic_ai_call_tool``: an async function in a ``FunctionToolset``.
  ``setup()`` lists the tools once with ``get_tools`` on a minimal ``RunContext``
  (a ``TestModel`` and an empty ``RunUsage``); each call then validates the
  arguments with the tool's ``args_validator`` (the step pydantic-ai's tool
  manager takes before it calls the toolset, since ``call_tool`` itself checks
  nothing) and awaits ``toolset.call_tool``. Output is not validated. That is the
  least pydantic-ai does for a call.
- ``time_peer_pydantic_ai_call_tool_json``: the same, but the arguments arrive as
  the JSON text a model sends and are validated with ``args_validator.validate_json``.
- ``time_peer_pydantic_ai_handle_call``: what an agent run does for each tool call
  the model makes: ``ToolManager.handle_call(ToolCallPart(...))`` on a manager
  prepared once with ``for_run_step``, which validates the arguments, calls the
  tool and keeps the run's retry and success bookkeeping. The part's arguments are a
  dict; ``time_peer_pydantic_ai_handle_call_json`` gives them as JSON text, as a
  model's reply does.
- ``time_peer_openai_agents_on_invoke_tool``: ``agents.function_tool`` of an async
  function, then ``await tool.on_invoke_tool(ToolContext(...), arguments)`` with
  the arguments as the JSON text a model sends; the ``ToolContext`` is built for
  each call, as the SDK's runner does. Input is parsed and validated; output is
  not (it would be only with ``output_type`` or for programmatic callers).

The async contestants await `ASYNC_BATCH` calls per run of one event loop and say
so in their ``calls`` attribute. Every contestant runs `ROUNDS` times, in turns
with the others, each run lasting at least `ROUND_SECONDS`, so that the restated
targets (`benchmarks.targets`) can take their ratios round by round. The peer libraries are optional: when one is not
installed its benchmarks are not defined, and `SKIPPED` says why. `VERSIONS` holds
each contestant's package version and `CONTESTANTS` the label each is shown by.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import platform
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel

from benchmarks.asv.common import (
    ASYNC_BATCH,
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    PARAMS,
    AddTool,
    AsyncAddTool,
    Backend,
    add,
    add_fields,
    add_fields_async,
)
from toolcycle import NullTracer, ToolRuntime, tool

try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - depends on the environment
    jsonschema_rs = None  # type: ignore[assignment]

try:
    from langchain_core.tools import StructuredTool
except ImportError:  # pragma: no cover
    StructuredTool = None  # type: ignore[misc, assignment]

try:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage
except ImportError:  # pragma: no cover
    FunctionToolset = None  # type: ignore[misc, assignment]

try:
    from agents import function_tool
    from agents.tool_context import ToolContext
except ImportError:  # pragma: no cover
    function_tool = None  # type: ignore[assignment]

BACKENDS: tuple[Backend, ...] = (
    ("jsonschema", "jsonschema-rs") if jsonschema_rs is not None else ("jsonschema",)
)
"""The validator backends measured here, by their ``ToolRuntime(validator=...)`` name."""

FAST_BACKEND = BACKENDS[-1]
"""The backend the targets are set against: jsonschema-rs when it is installed."""

ARGUMENTS_JSON = json.dumps(PARAMS)
"""The arguments as a model sends them, for the contestants that take JSON text."""

ROUNDS = 41
"""Repeats of every contestant, taken in turns: one repeat of each, then the next round."""

ROUND_SECONDS = 0.05
"""How long one repeat of a contestant lasts at least (the runner calibrates to it)."""


def _version(*distributions: str) -> str | None:
    """The version of the first of ``distributions`` that is installed, or None."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _key(backend: str) -> str:
    return backend.replace("-", "_")


def _toolcycle_version(backend: str) -> str:
    return f"{_version('toolcycle')} ({backend} {_version(backend)})"


CONTESTANTS: dict[str, str] = {
    "time_peer_bare_call": "bare call",
    "time_peer_jsonschema_by_hand": "jsonschema by hand (in + out)",
    "time_peer_jsonschema_rs_by_hand": "jsonschema-rs by hand (in + out)",
    **{
        f"time_peer_toolcycle_{call}_{_key(backend)}": f"toolcycle {call} ({backend})"
        for call in ("execute", "aexecute")
        for backend in ("jsonschema", "jsonschema-rs")
    },
    "time_peer_toolcycle_acall": "toolcycle acall (OpenAI-format call, @tool async)",
    "time_peer_langchain_invoke": "LangChain StructuredTool.invoke",
    "time_peer_langchain_ainvoke": "LangChain StructuredTool.ainvoke (async tool)",
    "time_peer_pydantic_ai_call_tool": "pydantic-ai FunctionToolset.call_tool",
    "time_peer_pydantic_ai_call_tool_json": "pydantic-ai FunctionToolset.call_tool (validate_json)",
    "time_peer_pydantic_ai_handle_call": "pydantic-ai ToolManager.handle_call",
    "time_peer_pydantic_ai_handle_call_json": "pydantic-ai ToolManager.handle_call (JSON args)",
    "time_peer_openai_agents_on_invoke_tool": "OpenAI Agents on_invoke_tool",
}
"""Every contestant's benchmark name and the label it is reported by, in order."""

EARLIER_PEERS = (
    "LangChain StructuredTool.invoke",
    "pydantic-ai FunctionToolset.call_tool",
    "pydantic-ai ToolManager.handle_call",
    "OpenAI Agents on_invoke_tool",
)
"""The peers of the earlier targets (each at least 25x slower than ``execute``)."""

ASYNC_PEERS = (
    "LangChain StructuredTool.ainvoke (async tool)",
    "pydantic-ai FunctionToolset.call_tool",
    "pydantic-ai FunctionToolset.call_tool (validate_json)",
    "pydantic-ai ToolManager.handle_call",
    "pydantic-ai ToolManager.handle_call (JSON args)",
    "OpenAI Agents on_invoke_tool",
)
"""The peers that call the async function, shown against toolcycle ``aexecute`` too."""

VERSIONS: dict[str, str | None] = {
    "time_peer_bare_call": f"Python {platform.python_version()}",
    "time_peer_jsonschema_by_hand": _version("jsonschema"),
    "time_peer_jsonschema_rs_by_hand": _version("jsonschema-rs"),
    **{
        f"time_peer_toolcycle_{call}_{_key(backend)}": _toolcycle_version(backend)
        for call in ("execute", "aexecute")
        for backend in BACKENDS
    },
    "time_peer_toolcycle_acall": _toolcycle_version(FAST_BACKEND),
    "time_peer_langchain_invoke": _version("langchain-core"),
    "time_peer_langchain_ainvoke": _version("langchain-core"),
    "time_peer_pydantic_ai_call_tool": _version("pydantic-ai-slim", "pydantic-ai"),
    "time_peer_pydantic_ai_call_tool_json": _version("pydantic-ai-slim", "pydantic-ai"),
    "time_peer_pydantic_ai_handle_call": _version("pydantic-ai-slim", "pydantic-ai"),
    "time_peer_pydantic_ai_handle_call_json": _version("pydantic-ai-slim", "pydantic-ai"),
    "time_peer_openai_agents_on_invoke_tool": _version("openai-agents"),
}
"""Each contestant's package version (None for one that is not installed)."""

SKIPPED: dict[str, str] = {}
"""The benchmark name of every contestant that is not defined here, and why."""

if jsonschema_rs is None:
    SKIPPED["time_peer_jsonschema_rs_by_hand"] = "jsonschema-rs is not installed"
    for _call in ("execute", "aexecute"):
        SKIPPED[f"time_peer_toolcycle_{_call}_jsonschema_rs"] = "jsonschema-rs is not installed"
if StructuredTool is None:
    SKIPPED["time_peer_langchain_invoke"] = "langchain-core is not installed"
    SKIPPED["time_peer_langchain_ainvoke"] = "langchain-core is not installed"
if FunctionToolset is None:
    for _name in ("call_tool", "call_tool_json", "handle_call", "handle_call_json"):
        SKIPPED[f"time_peer_pydantic_ai_{_name}"] = "pydantic-ai is not installed"
if function_tool is None:
    SKIPPED["time_peer_openai_agents_on_invoke_tool"] = "openai-agents is not installed"


class AddArguments(BaseModel):
    """The tool's four input fields, for LangChain's ``args_schema``."""

    a: int
    b: int
    label: str = ""
    scale: float = 1.0


OPENAI_CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "add_fields_async", "arguments": ARGUMENTS_JSON},
}
"""A model's tool call of ``add_fields_async`` in the OpenAI Chat Completions format."""


_state: dict[str, Any] = {}


def _check(name: str, output: Any) -> None:
    """Fail setup if a contestant does not return the right output (a failure would flatter it)."""
    expected = add(dict(PARAMS))
    if output != expected:
        raise RuntimeError(f"{name} returned {output!r}, expected {expected!r}")


def setup() -> None:
    """Build every contestant once, warm it with one call and check that call's output."""
    if _state:
        return
    loop = asyncio.new_event_loop()
    _state["loop"] = loop
    _state["jsonschema"] = (Draft202012Validator(INPUT_SCHEMA), Draft202012Validator(OUTPUT_SCHEMA))
    if jsonschema_rs is not None:
        _state["jsonschema_rs"] = (
            jsonschema_rs.validator_for(INPUT_SCHEMA, validate_formats=False),
            jsonschema_rs.validator_for(OUTPUT_SCHEMA, validate_formats=False),
        )
    for backend in BACKENDS:
        runtime = ToolRuntime(tracer=NullTracer(), validator=backend)
        if runtime.validator != backend:
            raise RuntimeError(f"asked for the {backend} validator, got {runtime.validator}")
        runtime.register(AddTool())
        runtime.register(AsyncAddTool())
        ctx = runtime.new_context(f"bench-peers-{backend}")
        _check("toolcycle execute", runtime.execute("add", PARAMS, ctx).output)
        result = loop.run_until_complete(runtime.aexecute("aadd", PARAMS, ctx))
        _check("toolcycle aexecute", result.output)
        _state[f"toolcycle_{_key(backend)}"] = (runtime, ctx)
        if backend == FAST_BACKEND:
            runtime.register(tool(add_fields_async))
            result = loop.run_until_complete(runtime.acall(OPENAI_CALL, ctx))
            _check("toolcycle acall", result.output)
    if StructuredTool is not None:
        langchain_tool = StructuredTool.from_function(
            func=add_fields, name="add", description="Add two integers.", args_schema=AddArguments
        )
        _check("LangChain invoke", langchain_tool.invoke(dict(PARAMS)))
        _state["langchain"] = langchain_tool
        async_tool = StructuredTool.from_function(
            coroutine=add_fields_async,
            name="add",
            description="Add two integers.",
            args_schema=AddArguments,
        )
        _check("LangChain ainvoke", loop.run_until_complete(async_tool.ainvoke(dict(PARAMS))))
        _state["langchain_async"] = async_tool
    if FunctionToolset is not None:
        toolset = FunctionToolset([add_fields_async])
        run_ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        listed = loop.run_until_complete(toolset.get_tools(run_ctx))
        _state["pydantic_ai"] = (toolset, run_ctx, listed["add_fields_async"])
        for arguments in (dict(PARAMS), ARGUMENTS_JSON):
            _state["pydantic_ai_output"] = None
            loop.run_until_complete(_pydantic_ai_batch(1, arguments))
            _check("pydantic-ai call_tool", _state["pydantic_ai_output"])
        manager = loop.run_until_complete(ToolManager(toolset).for_run_step(run_ctx))
        _state["pydantic_ai_manager"] = manager
        for arguments in (dict(PARAMS), ARGUMENTS_JSON):
            part = ToolCallPart(tool_name="add_fields_async", args=arguments, tool_call_id="call-1")
            _state["pydantic_ai_manager_output"] = None
            loop.run_until_complete(_pydantic_ai_manager_batch(1, part))
            _check("pydantic-ai handle_call", _state["pydantic_ai_manager_output"])
    if function_tool is not None:
        _state["agents"] = function_tool(add_fields_async, name_override="add")
        loop.run_until_complete(_agents_batch(1))
        _check("OpenAI Agents on_invoke_tool", _state["agents_output"])


def teardown() -> None:
    """Close the runtimes (and so their plans) and the event loop."""
    if not _state:
        return
    for backend in BACKENDS:
        entry = _state.get(f"toolcycle_{_key(backend)}")
        if entry is not None:
            entry[0].close()
    loop = _state["loop"]
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    _state.clear()


def time_peer_bare_call() -> None:
    """The function alone, on a copy of the arguments."""
    add(dict(PARAMS))


def time_peer_jsonschema_by_hand() -> None:
    """The function between cached jsonschema validations of its input and output."""
    check_input, check_output = _state["jsonschema"]
    params = dict(PARAMS)
    check_input.validate(params)
    check_output.validate(add(params))


if jsonschema_rs is not None:

    def time_peer_jsonschema_rs_by_hand() -> None:
        """The function between cached jsonschema-rs validations of its input and output."""
        check_input, check_output = _state["jsonschema_rs"]
        params = dict(PARAMS)
        check_input.validate(params)
        check_output.validate(add(params))


def _execute(backend: str) -> None:
    runtime, ctx = _state[f"toolcycle_{backend}"]
    runtime.execute("add", PARAMS, ctx)


async def _aexecute_batch(backend: str) -> None:
    runtime, ctx = _state[f"toolcycle_{backend}"]
    for _ in range(ASYNC_BATCH):
        await runtime.aexecute("aadd", PARAMS, ctx)


def time_peer_toolcycle_execute_jsonschema() -> None:
    """runtime.execute with the jsonschema backend, warm plan, null tracer."""
    _execute("jsonschema")


def time_peer_toolcycle_aexecute_jsonschema() -> None:
    """Await runtime.aexecute of the async tool with the jsonschema backend, batched."""
    _state["loop"].run_until_complete(_aexecute_batch("jsonschema"))


time_peer_toolcycle_aexecute_jsonschema.calls = ASYNC_BATCH  # type: ignore[attr-defined]


if jsonschema_rs is not None:

    def time_peer_toolcycle_execute_jsonschema_rs() -> None:
        """runtime.execute with the jsonschema-rs backend, warm plan, null tracer."""
        _execute("jsonschema_rs")

    def time_peer_toolcycle_aexecute_jsonschema_rs() -> None:
        """Await runtime.aexecute of the async tool with the jsonschema-rs backend, batched."""
        _state["loop"].run_until_complete(_aexecute_batch("jsonschema_rs"))

    time_peer_toolcycle_aexecute_jsonschema_rs.calls = ASYNC_BATCH  # type: ignore[attr-defined]


async def _acall_batch() -> None:
    runtime, ctx = _state[f"toolcycle_{_key(FAST_BACKEND)}"]
    for _ in range(ASYNC_BATCH):
        await runtime.acall(OPENAI_CALL, ctx)


def time_peer_toolcycle_acall() -> None:
    """Await runtime.acall of an OpenAI-format call of an @tool async function; batched."""
    _state["loop"].run_until_complete(_acall_batch())


time_peer_toolcycle_acall.calls = ASYNC_BATCH  # type: ignore[attr-defined]


async def _langchain_async_batch() -> None:
    invoke = _state["langchain_async"].ainvoke
    for _ in range(ASYNC_BATCH):
        await invoke(dict(PARAMS))


if StructuredTool is not None:

    def time_peer_langchain_invoke() -> None:
        """LangChain's StructuredTool.invoke with a pydantic args_schema."""
        _state["langchain"].invoke(dict(PARAMS))

    def time_peer_langchain_ainvoke() -> None:
        """LangChain: await StructuredTool.ainvoke of the async function; batched."""
        _state["loop"].run_until_complete(_langchain_async_batch())

    time_peer_langchain_ainvoke.calls = ASYNC_BATCH  # type: ignore[attr-defined]


async def _pydantic_ai_batch(count: int, arguments: dict[str, Any] | str) -> None:
    """Validate ``arguments`` (a dict, or JSON text) and await call_tool, ``count`` times."""
    toolset, run_ctx, listed = _state["pydantic_ai"]
    validator = listed.args_validator
    output = None
    if isinstance(arguments, str):
        for _ in range(count):
            checked = validator.validate_json(arguments, context=run_ctx.validation_context)
            output = await toolset.call_tool("add_fields_async", checked, run_ctx, listed)
    else:
        for _ in range(count):
            checked = validator.validate_python(dict(arguments), context=run_ctx.validation_context)
            output = await toolset.call_tool("add_fields_async", checked, run_ctx, listed)
    _state["pydantic_ai_output"] = output


async def _pydantic_ai_manager_batch(count: int, part: Any) -> None:
    manager = _state["pydantic_ai_manager"]
    output = None
    for _ in range(count):
        output = await manager.handle_call(part)
    _state["pydantic_ai_manager_output"] = output


if FunctionToolset is not None:
    _DICT_PART = ToolCallPart(
        tool_name="add_fields_async", args=dict(PARAMS), tool_call_id="call-1"
    )
    _JSON_PART = ToolCallPart(
        tool_name="add_fields_async", args=ARGUMENTS_JSON, tool_call_id="call-1"
    )

    def time_peer_pydantic_ai_call_tool() -> None:
        """pydantic-ai: validate_python the arguments, await FunctionToolset.call_tool; batched."""
        _state["loop"].run_until_complete(_pydantic_ai_batch(ASYNC_BATCH, PARAMS))

    def time_peer_pydantic_ai_call_tool_json() -> None:
        """pydantic-ai: validate_json the JSON arguments, await FunctionToolset.call_tool; batched."""
        _state["loop"].run_until_complete(_pydantic_ai_batch(ASYNC_BATCH, ARGUMENTS_JSON))

    def time_peer_pydantic_ai_handle_call() -> None:
        """pydantic-ai: await ToolManager.handle_call of a model's tool call; batched."""
        _state["loop"].run_until_complete(_pydantic_ai_manager_batch(ASYNC_BATCH, _DICT_PART))

    def time_peer_pydantic_ai_handle_call_json() -> None:
        """pydantic-ai: the same with the call's arguments as JSON text; batched."""
        _state["loop"].run_until_complete(_pydantic_ai_manager_batch(ASYNC_BATCH, _JSON_PART))

    for _bench in (
        time_peer_pydantic_ai_call_tool,
        time_peer_pydantic_ai_call_tool_json,
        time_peer_pydantic_ai_handle_call,
        time_peer_pydantic_ai_handle_call_json,
    ):
        _bench.calls = ASYNC_BATCH  # type: ignore[attr-defined]


async def _agents_batch(count: int) -> None:
    invoke = _state["agents"].on_invoke_tool
    output = None
    for _ in range(count):
        tool_ctx = ToolContext(
            context=None, tool_name="add", tool_call_id="call-1", tool_arguments=ARGUMENTS_JSON
        )
        output = await invoke(tool_ctx, ARGUMENTS_JSON)
    _state["agents_output"] = output


if function_tool is not None:

    def time_peer_openai_agents_on_invoke_tool() -> None:
        """OpenAI Agents: await FunctionTool.on_invoke_tool on a new ToolContext; batched."""
        _state["loop"].run_until_complete(_agents_batch(ASYNC_BATCH))

    time_peer_openai_agents_on_invoke_tool.calls = ASYNC_BATCH  # type: ignore[attr-defined]


def summary(timings: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """The measured contestants as plain data, for the runner's ratios and `benchmarks.report`.

    Args:
        timings: best and median seconds per call, by benchmark name, as the runner
            measures them.

    Returns:
        ``{"reference": label, "rows": {label: {"benchmark", "version", "best_us",
        "median_us"}}, "skipped": {label: reason}}``, rows in `CONTESTANTS` order;
        the reference is toolcycle ``execute`` with `FAST_BACKEND`.
    """
    rows = {
        label: {
            "benchmark": name,
            "version": VERSIONS.get(name),
            "best_us": timings[name][0] * 1e6,
            "median_us": timings[name][1] * 1e6,
        }
        for name, label in CONTESTANTS.items()
        if name in timings
    }
    return {
        "reference": CONTESTANTS[f"time_peer_toolcycle_execute_{_key(FAST_BACKEND)}"],
        "rows": rows,
        "skipped": {CONTESTANTS[name]: why for name, why in SKIPPED.items()},
    }
