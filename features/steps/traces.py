"""Steps about the traces the runtime delivers."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from behave import given, then

from toolcycle.testing import FakeTool


@given("a trace listener that raises")
def failing_listener(context: Any) -> None:
    def broken(trace: Any) -> None:
        raise RuntimeError("listener bug")

    context.runtime.add_trace_listener(broken)


@then("{count:d} traces were delivered")
@then("{count:d} trace was delivered")
def traces_delivered(context: Any, count: int) -> None:
    assert len(context.traces) == count, [t.status for t in context.traces]


@then("the trace statuses are {statuses}")
def trace_statuses(context: Any, statuses: str) -> None:
    expected = [s.strip().strip('"') for s in statuses.split(",")]
    assert [t.status for t in context.traces] == expected, [t.status for t in context.traces]


@then('the last trace has status "{status}"')
def last_trace_status(context: Any, status: str) -> None:
    assert context.traces[-1].status == status, context.traces[-1]


@then('the last trace names tool "{name}" and plan "{plan_id}"')
def trace_names(context: Any, name: str, plan_id: str) -> None:
    trace = context.traces[-1]
    assert (trace.tool_name, trace.plan_id) == (name, plan_id)


@then("the last trace has a call id")
def trace_call_id(context: Any) -> None:
    assert context.traces[-1].call_id


@then("the last trace has UTC ISO-8601 start and end times in order")
def trace_times(context: Any) -> None:
    trace = context.traces[-1]
    started = datetime.fromisoformat(trace.started_at)
    ended = datetime.fromisoformat(trace.ended_at)
    assert started.utcoffset() == timedelta(0) and ended.utcoffset() == timedelta(0)
    assert started <= ended


@then("the last trace has a non-negative duration")
def trace_duration(context: Any) -> None:
    assert context.traces[-1].duration_ms >= 0


@then("the last trace measures {size:d} bytes of output")
def trace_size(context: Any, size: int) -> None:
    assert context.traces[-1].result_size_bytes == size


@then("the result size is the UTF-8 length of the compact JSON of {output}")
def trace_size_matches(context: Any, output: str) -> None:
    compact = json.dumps(json.loads(output), separators=(",", ":"), ensure_ascii=False)
    assert context.traces[-1].result_size_bytes == len(compact.encode())


@then('the last trace reports success "{flag}"')
def trace_success(context: Any, flag: str) -> None:
    assert context.traces[-1].success is (flag == "true")


@then('the last trace reports the error "{text}"')
def trace_error(context: Any, text: str) -> None:
    assert text in (context.traces[-1].error or ""), context.traces[-1].error


@then('the last trace reports output_valid "{flag}"')
def trace_output_valid(context: Any, flag: str) -> None:
    expected = {"true": True, "false": False, "none": None}[flag]
    assert context.traces[-1].output_valid is expected


@given(
    'a strict-output runtime with a tool "{name}" that returns {output} against the output schema {schema}'
)
def strict_runtime(context: Any, name: str, output: str, schema: str) -> None:
    from toolcycle import NullTracer, ToolRuntime

    context.runtime.close()
    context.runtime = ToolRuntime(tracer=NullTracer(), strict_output=True)
    context.runtime.add_trace_listener(context.traces.append)
    tool = FakeTool(
        name=name, writes=False, output=json.loads(output), output_schema=json.loads(schema)
    )
    context.tools[name] = tool
    context.runtime.register(tool)
