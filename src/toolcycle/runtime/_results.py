"""Turning what a call produced into a `ToolResult` and its trace (steps 4, 6 and 7).

The runtime decides *when* each step runs; this module decides *what* the result
says: a rejected input, a tool failure, a timeout, or an output that is
normalised, measured once and checked against the output schema (and cut to the
size limit). The input check itself, and the arguments' secrets, live in `_arguments`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle._construct import trusted
from toolcycle.agent._messages import cut_marker
from toolcycle.errors import ToolOutputError, error_text
from toolcycle.models import ToolResult, TraceStatus, Validation
from toolcycle.runtime._rich import RICH_TYPES, Rich, cap_parts, read_rich
from toolcycle.tracing import get_logger
from toolcycle.validation._json import encode, encode_text

if TYPE_CHECKING:
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import Change, ToolCall
    from toolcycle.redaction import RedactionPolicy
    from toolcycle.runtime._record import CallRecord
    from toolcycle.runtime._recorder import TraceRecorder
    from toolcycle.validation import CompiledSchema

__all__ = [
    "RETURNED",
    "Outcome",
    "cut_output",
    "failed_result",
    "invalid_result",
    "output_result",
    "redacted_cut",
]

_log = get_logger("toolcycle.runtime")

# Outputs that are certainly neither a ToolResult nor content parts: checked by type
# before isinstance, which a pydantic model class answers slowly. (A list may hold
# parts, so it is looked into.)
_PLAIN = frozenset({dict, str, int, float, bool, type(None)})
_PARTS = RICH_TYPES


class Outcome:
    """How a run that returned no output ended: a failure, or a timeout."""

    __slots__ = ("abandoned", "error", "reason", "timed_out")

    def __init__(
        self,
        error: Exception | None = None,
        timed_out: bool = False,
        *,
        abandoned: bool = False,
        reason: str = "did not finish in time",
    ) -> None:
        self.error = error
        self.timed_out = timed_out
        self.abandoned = abandoned
        self.reason = reason


def invalid_result(
    traces: TraceRecorder,
    record: CallRecord,
    validation: Validation,
    hint: str = "",
    retries_left: int | None = None,
) -> ToolResult:
    """The result of a refused input; ``hint`` (after the issues) says whether to retry."""
    message = "the arguments do not match the input schema:\n" + validation.summary() + hint
    kind = "ToolSchemaValidationError"
    trace = traces.finish(record, "invalid_input", error_message=message, error_type=kind)
    return ToolResult(
        success=False,
        error=trace.error,
        error_type=kind,
        validation=validation,
        trace=trace,
        retryable=bool(retries_left),
        retries_left=retries_left,
    )


def failed_result(
    traces: TraceRecorder,
    record: CallRecord,
    outcome: Outcome,
    changes: list[Change],
    hint: str = "",
    retries_left: int | None = None,
) -> ToolResult:
    """The result of a run that raised or timed out (a returned output: `output_result`).

    ``hint`` follows the error's message, and ``retries_left`` is set for a
    failure the model may fix (`toolcycle.ModelRetry`).
    """
    if outcome.timed_out:
        message = f"tool {record.tool_name!r} {outcome.reason}"
        if outcome.abandoned:
            message += "; it is synchronous and cannot be stopped, so it was left running"
        trace = traces.finish(
            record,
            "timed_out",
            error_message=message,
            error_type="TimeoutError",
            abandoned=outcome.abandoned,
        )
        return ToolResult(
            success=False,
            error=trace.error,
            error_type="TimeoutError",
            trace=trace,
            changes=tuple(changes),
        )
    assert outcome.error is not None
    return _failed(traces, record, outcome.error, changes, hint=hint, retries_left=retries_left)


def output_result(
    traces: TraceRecorder,
    record: CallRecord,
    ctx: ToolExecutionContext,
    normaliser: CompiledSchema,
    output_schema: CompiledSchema | None,
    output: Any,
    changes: list[Change],
    strict_output: bool,
    max_result_bytes: int | None,
    answers: ToolCall | None,
) -> ToolResult:
    """Steps 6 and 7: normalise, measure and check the output; record returned changes.

    ``answers`` is the model's call a successful run answers, set on the result
    at once (the other results get it from the dispatcher). The arguments are
    positional: this runs once per call that returns.
    """
    name = record.tool_name
    success, error_message, error_type = True, None, None
    # Content parts and a returned ToolResult's pending approval are rare: one flag
    # tells the common output apart, so that it pays one check for both.
    special = False
    kind = type(output)
    if kind not in _PLAIN:
        rich: Rich | None = None
        pending = None
        if kind is list:
            if output and type(output[0]) in _PARTS:
                read = _rich(output, record)
                if isinstance(read, ToolOutputError):
                    return _failed(traces, record, read, changes)
                rich, output = read, read.value
        elif kind in _PARTS:  # one part or a ToolReturn: always readable
            rich = read_rich(output, name, record.plan_id)
            output = rich.value
        elif isinstance(output, ToolResult):
            for change in output.changes:
                ctx.record_change(change)
            success, error_message, error_type = output.success, output.error, output.error_type
            pending = output.pending  # a tool that deferred its own call
            metadata = output.metadata
            if output.content or metadata:  # metadata alone is the host's too
                rich = Rich(None, output.content, dict(metadata) if metadata else None, True)
            output = output.output
        special = rich is not None or pending is not None
        if rich is not None and not rich.has_value:
            output_schema = None  # parts alone: no value to check
    try:
        data = normaliser.normalize(output)
        text = encode_text(data)
        # Sized as UTF-8 (normalisation refused lone surrogates, which UTF-8 cannot hold).
        size = len(text) if text.isascii() else len(text.encode())
    except Exception as exc:  # whatever the output raised while it was read, it is bad output
        error = ToolOutputError(
            f"tool {name!r} returned output that is not JSON: {error_text(exc)}",
            tool_name=name,
            plan_id=record.plan_id,
        )
        return _failed(traces, record, error, changes)
    output_valid: bool | None = None
    if output_schema is not None and success:
        verdict = output_schema.check_normalized(data)
        output_valid = verdict.valid
        if not verdict.valid:
            issues = verdict.summary()
            if record.scrub is not None:
                issues = record.scrub(issues)
            _log.warning("tool.output_invalid", tool=name, plan_id=ctx.plan_id, issues=issues)
            if strict_output:
                success = False
                error_message = "the output does not match the output schema:\n" + verdict.summary()
                error_type = "ToolSchemaValidationError"
    if not success and error_message is None:
        error_message = f"tool {name!r} reported a failure"
    # The one serialisation of the output: its size, and to_message's text later.
    original_size = size
    truncated = max_result_bytes is not None and size > max_result_bytes
    if truncated:
        if hasattr(record, "uncut"):  # an observed call: its payload is redacted, then cut
            record.uncut = (data, max_result_bytes or 0)
        data, size = cut_output(text.encode(), max_result_bytes or 0)
    status: TraceStatus = (
        "ok" if success else "pending" if special and pending is not None else "error"
    )
    if special and rich is not None:
        budget = None if max_result_bytes is None else max(0, max_result_bytes - size)
        parts, content_size, cut = cap_parts(rich.parts, budget, max_result_bytes, record.scrub)
        truncated = truncated or cut
        finished = traces.end(
            record,
            status,
            error_message,
            error_type,
            size,
            original_size,
            output_valid,
            content=(tuple(part.type for part in parts), content_size),
        )
    else:
        # Plain values unless something wants the trace now: the result builds it when read.
        finished = traces.end(
            record, status, error_message, error_type, size, original_size, output_valid
        )
    # Built from checked parts, so not validated again; a copy of the template keeps
    # the fields in declaration order and costs half as much as a literal, and only
    # the fields that differ from a plain success are written.
    values = RETURNED.copy()
    values["output"] = data
    values["trace"] = finished
    if not success or error_type is not None or finished.error is not None:
        values["success"] = success
        values["error"] = finished.error
        values["error_type"] = error_type
    if changes:
        values["changes"] = tuple(changes)
    if truncated:
        values["truncated"] = True
    if answers is not None:
        values["call"] = answers
    if special:
        if pending is not None:
            if answers is not None and pending.call is None:
                # The tool deferred its own call without knowing the model's: the
                # resumed call must answer (and trace) the same tool call id.
                pending = pending.model_copy(update={"call": answers})
            values["pending"] = pending
        if rich is not None:
            values["content"] = parts
            values["metadata"] = rich.metadata
    return trusted(ToolResult, values, {"_text": None if truncated or type(data) is str else text})


# Every field of a ToolResult in declaration order, as a plain success has them:
# `output_result` and the result cache's hits start from a copy (`trusted` needs all).
RETURNED: dict[str, Any] = {
    "success": True,
    "output": None,
    "error": None,
    "error_type": None,
    "validation": None,
    "trace": None,
    "changes": (),
    "truncated": False,
    "exception": None,
    "call": None,
    "pending": None,
    "retryable": False,
    "retries_left": None,
    "content": (),
    "metadata": None,
}


def _rich(output: Any, record: CallRecord) -> Rich | ToolOutputError:
    """Read a rich return apart, or the error saying why it cannot be."""
    try:
        return read_rich(output, record.tool_name, record.plan_id)
    except ToolOutputError as error:
        return error


def cut_output(payload: bytes, limit: int) -> tuple[str, int]:
    """Cut serialised output to fit ``limit`` bytes as a JSON string ending in a marker.

    The result is the beginning of the output's JSON text (cut at a character
    boundary) followed by a marker saying how much was kept; its own JSON encoding
    fits within ``limit``. Returns the string and that encoded size.
    """
    marker = cut_marker(len(payload), limit)
    keep = max(0, limit - len(marker.encode()) - 2)
    while True:
        text = payload[:keep].decode("utf-8", errors="ignore") + marker
        size = len(encode(text))
        if size <= limit or keep == 0:
            return text, size
        keep = max(0, keep - (size - limit))


def redacted_cut(uncut: tuple[Any, int], redaction: RedactionPolicy, schema: Any) -> str:
    """The cut output of a result as a payload may show it: redacted first, then cut.

    Cutting the JSON text leaves a string in which the redaction can no longer
    tell a sensitive key's value apart; so the output before the cut is redacted
    with the output ``schema`` and cut to the same limit, as `output_result` cut it.
    """
    data, limit = uncut
    return cut_output(encode_text(redaction.masked(data, schema)).encode(), limit)[0]


def _failed(
    traces: TraceRecorder,
    record: CallRecord,
    exc: Exception,
    changes: list[Change],
    *,
    error_type: str | None = None,
    hint: str = "",
    retries_left: int | None = None,
) -> ToolResult:
    # The one format of a failed result: the message alone; the class is error_type.
    kind = error_type or type(exc).__name__
    message = error_text(exc) or f"tool {record.tool_name!r} raised {kind} without a message"
    trace = traces.finish(record, "error", error_message=message + hint, error_type=kind)
    return ToolResult(
        success=False,
        error=trace.error,
        error_type=kind,
        trace=trace,
        changes=tuple(changes),
        exception=exc,
        retryable=bool(retries_left),
        retries_left=retries_left,
    )
