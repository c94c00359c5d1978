"""Steps about the traces the runtime delivers."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from behave import given, then, when


@given("a trace listener that raises")
def failing_listener(context: Any) -> None:
    def broken(trace: Any) -> None:
        raise RuntimeError("a listener bug")

    context.runtime.add_trace_listener(broken)


@given("a second trace listener")
def second_listener(context: Any) -> None:
    context.second_traces = []
    context.remove_second = context.runtime.add_trace_listener(context.second_traces.append)


@when("the second listener is removed")
def remove_second_listener(context: Any) -> None:
    context.remove_second()


@then("the second listener received {count:d} trace")
def second_listener_received(context: Any, count: int) -> None:
    assert len(context.second_traces) == count, context.second_traces


@then("{count:d} traces were delivered")
@then("{count:d} trace was delivered")
def traces_delivered(context: Any, count: int) -> None:
    assert len(context.traces) == count, [t.status for t in context.traces]


@then('the trace statuses are "{statuses}"')
def trace_statuses(context: Any, statuses: str) -> None:
    expected = [s.strip() for s in statuses.split(",")]
    assert [t.status for t in context.traces] == expected, [t.status for t in context.traces]


@then("every trace has its own call id")
def distinct_call_ids(context: Any) -> None:
    ids = [t.call_id for t in context.traces]
    assert all(ids) and len(set(ids)) == len(ids), ids


@then('the last trace has status "{status}"')
def last_trace_status(context: Any, status: str) -> None:
    assert context.traces, "no trace was delivered"
    assert context.traces[-1].status == status, context.traces[-1]


@then('the last trace names tool "{name:Name}" and plan "{plan_id:Name}"')
def trace_names(context: Any, name: str, plan_id: str) -> None:
    trace = context.traces[-1]
    assert (trace.tool_name, trace.plan_id) == (name, plan_id), trace


@then("the last trace has a call id")
def trace_call_id(context: Any) -> None:
    assert context.traces[-1].call_id


@then("the result carries the last trace")
def result_carries_trace(context: Any) -> None:
    assert context.result.trace == context.traces[-1]


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() == timedelta(0), text
    return moment


@then("the last trace has UTC ISO-8601 start and end times in order")
def trace_times(context: Any) -> None:
    trace = context.traces[-1]
    assert _utc(trace.started_at) <= _utc(trace.ended_at), trace


@then("the last trace has a duration that is not negative")
def trace_duration(context: Any) -> None:
    assert context.traces[-1].duration_ms >= 0


@then('the last trace started at "{moment}"')
def trace_started_at(context: Any, moment: str) -> None:
    assert context.traces[-1].started_at == moment, context.traces[-1].started_at


@then('the last trace ended at "{moment}"')
def trace_ended_at(context: Any, moment: str) -> None:
    assert context.traces[-1].ended_at == moment, context.traces[-1].ended_at


@then("the last trace took {milliseconds:g} milliseconds")
def trace_took(context: Any, milliseconds: float) -> None:
    assert abs(context.traces[-1].duration_ms - milliseconds) < 1e-6, context.traces[-1]


@then("the last trace measures {size:d} bytes of output")
def trace_size(context: Any, size: int) -> None:
    assert context.traces[-1].result_size_bytes == size, context.traces[-1].result_size_bytes


@then("the result size is the UTF-8 length of the compact JSON of {output}")
def trace_size_matches(context: Any, output: str) -> None:
    compact = json.dumps(json.loads(output), separators=(",", ":"), ensure_ascii=False)
    assert context.traces[-1].result_size_bytes == len(compact.encode("utf-8"))


@then("the last trace reports success {flag}")
def trace_success(context: Any, flag: str) -> None:
    assert context.traces[-1].success is {"true": True, "false": False}[flag]


@then("the last trace reports no error")
def trace_no_error(context: Any) -> None:
    trace = context.traces[-1]
    assert trace.error is None and trace.error_type is None, trace


@then('the last trace reports the error "{text}"')
def trace_error(context: Any, text: str) -> None:
    assert text in (context.traces[-1].error or ""), context.traces[-1].error


@then('the last trace reports the error type "{error_type}"')
def trace_error_type(context: Any, error_type: str) -> None:
    assert context.traces[-1].error_type == error_type, context.traces[-1].error_type


@then("the last trace reports output_valid {flag}")
def trace_output_valid(context: Any, flag: str) -> None:
    expected = {"true": True, "false": False, "none": None}[flag]
    assert context.traces[-1].output_valid is expected, context.traces[-1]


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@given("the runtime's warnings are captured")
def capture_warnings(context: Any) -> None:
    collector = _Collector()
    logger = logging.getLogger("toolcycle")
    # The host (here: behave's log capture) may have raised the root level; make sure
    # warnings of the toolcycle loggers are emitted for this scenario only.
    context.add_cleanup(logger.setLevel, logger.level)
    context.add_cleanup(setattr, logger, "propagate", logger.propagate)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(collector)
    context.add_cleanup(logger.removeHandler, collector)
    context.warnings = collector.records


@then('a warning "{event}" was logged for "{name:Name}"')
def warning_logged(context: Any, event: str, name: str) -> None:
    found = [
        r for r in context.warnings if r.getMessage() == event and getattr(r, "tool", None) == name
    ]
    assert found, [(r.getMessage(), r.__dict__.get("tool")) for r in context.warnings]
