"""A model's call of a deferred tool by name records the reveal in its own trace."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle import NullTracer, ToolExecutionTrace, ToolRuntime, tool


@tool(writes=False, defer_loading=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


@tool(writes=False)
def shown(key: str) -> str:
    """A tool that is never deferred."""
    return key


def _call(name: str, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {"key": "a"}}


def test_the_call_that_reveals_a_deferred_tool_records_it_and_later_calls_do_not() -> None:
    """The first call names the tool in revealed_tools; the next finds it revealed already."""
    traces: list[ToolExecutionTrace] = []
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(lookup)
        runtime.register(shown)
        runtime.add_trace_listener(traces.append)
        with runtime.plan() as ctx:
            first = runtime.call(_call("lookup", "c1"), ctx)
            again = runtime.call(_call("lookup", "c2"), ctx)
            plain = runtime.call(_call("shown", "c3"), ctx)
            assert ctx.revealed_tools == {"lookup"}
    assert first.trace is not None and first.trace.revealed_tools == ("lookup",)
    assert again.trace is not None and again.trace.revealed_tools == ()
    assert plain.trace is not None and plain.trace.revealed_tools == ()
    assert [t.revealed_tools for t in traces] == [("lookup",), (), ()]  # listeners see it too


async def test_acall_and_a_batch_record_the_reveal_once() -> None:
    """Through acall, and in a batch of two calls of the tool, one trace records it."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(lookup)
        async with runtime.aplan() as ctx:
            single = await runtime.acall(_call("lookup", "c1"), ctx)
        async with runtime.aplan() as ctx:
            batch = await runtime.acall_many([_call("lookup", "c2"), _call("lookup", "c3")], ctx)
    assert single.trace is not None and single.trace.revealed_tools == ("lookup",)
    assert sorted(r.trace.revealed_tools for r in batch if r.trace is not None) == [
        (),
        ("lookup",),
    ]


def test_a_refused_call_of_a_deferred_tool_still_records_the_reveal() -> None:
    """The model knew the tool, so it is revealed even when its arguments are wrong."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(lookup)
        with runtime.plan() as ctx:
            bad = runtime.call({"id": "c1", "name": "lookup", "arguments": {"key": 1}}, ctx)
    assert not bad.success and bad.trace is not None
    assert bad.trace.revealed_tools == ("lookup",)


def test_a_host_execute_reveals_nothing() -> None:
    """Only a model's call reveals: the host's execute of a deferred tool leaves it deferred."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(lookup)
        with runtime.plan() as ctx:
            result = runtime.execute("lookup", {"key": "a"}, ctx)
            assert ctx.revealed_tools == frozenset()
    assert result.trace is not None and result.trace.revealed_tools == ()


def test_a_call_of_a_deferred_tool_with_no_plan_is_a_type_error() -> None:
    """A ctx that is not a plan is refused as for any tool, and nothing is revealed."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(lookup)
        with pytest.raises(TypeError, match="ToolExecutionContext"):
            runtime.call(_call("lookup", "c1"), "not a plan")  # type: ignore[arg-type]
