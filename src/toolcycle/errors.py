"""Every exception toolcycle raises, in one place.

The tree::

    ToolRuntimeError                  a run of a tool failed, or the runtime was misused
    ├── ToolAccessDeniedError         a read-only plan asked for a tool that writes
    ├── ToolCheckpointRequiredError   a checkpoint plan asked for a tool it cannot roll back
    ├── ToolNotActivatedError         a stage that needs activation ran without it
    ├── ToolActivationError           a tool's activate() failed
    ├── ToolExecutionError            a tool's execute() failed (raised by raise_for_error)
    ├── ToolOutputError               a tool returned output that is not strict JSON
    ├── ToolInterruptedError          a durable plan's call died with its process; not re-run
    ├── ConcurrentCallError           a durable plan was given a call while another ran
    ├── PlanResumeError               a durable plan cannot be resumed or replayed as asked
    ├── ToolDeactivationError         a tool's deactivate() failed or hung (collected, never raised)
    ├── ToolNotFoundError             no tool is registered under that name
    ├── ToolApprovalError             a deferred call cannot be resumed as asked
    ├── GuardrailTripped              a guardrail stopped a call (or failed); raised for the host
    └── ToolRegistrationError         a tool could not be registered
        └── ToolDefinitionError       a function cannot be described as a tool

    ToolCancelledError                the plan was cancelled; a signal, not a failure
    ToolSchemaValidationError         a schema or a value does not satisfy JSON Schema

    ModelRetry                        raised by a tool: the model should fix its call and retry
    ToolFailed                        raised by a tool: a failure to report, never retried

    ToolSkippedWarning (UserWarning)  a source's tool was skipped at registration
    ToolDefinitionWarning (UserWarning)  a function became a tool the model will understand less

`ToolCancelledError` and `ToolSchemaValidationError` stand apart on purpose: code
that catches `ToolRuntimeError` to report a failed call must not swallow a
cancellation, and a schema problem is a property of data, not of a run.
`ModelRetry` and `ToolFailed` are signals a tool's own code raises; the runtime
turns each into a failed result and never lets it out of a call.

Every error carries the tool name and plan id it concerns as keyword-only
attributes (``None`` when it concerns no tool or plan).

`error_text` reads any exception's message without running the risk of its
``__str__`` raising: tools' exceptions are the tools' own code. `cut_error_text`
bounds such a message to `MAX_ERROR_BYTES` before it is recorded anywhere.
`shown_value` names a refused value in a message, even an int too long to print.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcycle._trace_records import ToolExecutionTrace
    from toolcycle._validation_records import Validation

__all__ = [
    "MAX_ERROR_BYTES",
    "ConcurrentCallError",
    "GuardrailTripped",
    "ModelRetry",
    "PlanResumeError",
    "ToolAccessDeniedError",
    "ToolActivationError",
    "ToolApprovalError",
    "ToolCancelledError",
    "ToolCheckpointRequiredError",
    "ToolDeactivationError",
    "ToolDefinitionError",
    "ToolDefinitionWarning",
    "ToolExecutionError",
    "ToolFailed",
    "ToolInterruptedError",
    "ToolNotActivatedError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolRegistrationError",
    "ToolRuntimeError",
    "ToolSchemaValidationError",
    "ToolSkippedWarning",
    "cut_error_text",
    "error_text",
    "shown_value",
]

MAX_ERROR_BYTES = 16 * 1024
"""The most UTF-8 bytes a call's error text carries; a longer one is cut (`cut_error_text`)."""

# The end of a cut message is kept too: a script's stderr and a traceback end
# with the actual error, and the runtime appends a retry hint for the model there.
_ERROR_TAIL_BYTES = 4 * 1024


class _ContextMixin:
    """Holds the tool name and plan id an error concerns."""

    tool_name: str | None
    plan_id: str | None

    def _set_context(self, tool_name: str | None, plan_id: str | None) -> None:
        self.tool_name = tool_name
        self.plan_id = plan_id


class ToolRuntimeError(_ContextMixin, Exception):
    """Base class of the failures and misuses of the runtime."""

    # Set by the runtime on what a broken hook of one call raises (a plan's approval
    # rule, a guardrail): that call's fault alone, which a batch answers with a failed
    # result carrying this trace instead of stopping the batch's other calls.
    _one_call: bool = False
    _one_call_trace: ToolExecutionTrace | None = None

    def __init__(
        self, message: str, *, tool_name: str | None = None, plan_id: str | None = None
    ) -> None:
        super().__init__(message)
        self._set_context(tool_name, plan_id)


class ToolAccessDeniedError(ToolRuntimeError):
    """A read-only plan asked to run a tool whose capability says it writes."""


class ToolCheckpointRequiredError(ToolRuntimeError):
    """A plan that requires checkpoints asked to run a tool that is not checkpointable."""


class ToolNotActivatedError(ToolRuntimeError):
    """A tool was asked to execute in a plan for which it was never activated."""


class ToolActivationError(ToolRuntimeError):
    """A tool's ``activate`` raised; the cause is chained and nothing was cached."""


class ToolExecutionError(ToolRuntimeError):
    """A tool call failed; raised by `ToolResult.raise_for_error` with the cause chained."""


class ToolOutputError(ToolRuntimeError):
    """A tool returned output that is not strict JSON; the call's result is a failure."""


class ToolInterruptedError(ToolRuntimeError):
    """A durable plan's call was running when its process died, and its tool is not idempotent.

    The resumed plan reports the call as failed with this error instead of running
    it again (see docs/durable-plans.md).
    """


class ConcurrentCallError(ToolRuntimeError):
    """A durable plan was given a call while another of its calls was running.

    A resumed plan gets its recorded results back by their order, so a durable
    plan's calls must start one after the other (see docs/durable-plans.md). The
    refused call is not run and not recorded; the running one goes on.
    """


class PlanResumeError(ToolRuntimeError):
    """A durable plan cannot be resumed as asked: no plan has that id, or it is of another version.

    Raised by `toolcycle.hosts.DBOSPlan.resume`; and by a call of a replayed plan
    whose arguments differ from those of the call recorded at its place, instead
    of handing it that call's result. The message says which, and what to do.
    """


class ToolDeactivationError(ToolRuntimeError):
    """A tool's ``deactivate`` raised or did not finish in time; collected at plan end."""


class ToolNotFoundError(ToolRuntimeError):
    """No tool is registered under the requested name."""


class ToolApprovalError(ToolRuntimeError):
    """``runtime.resume`` refused a pending call, or a plan's approval rule raised.

    The pending record was changed after it was made or cannot be read at all
    (cut short, say; the error quotes none of its values), the decision names another
    call's fingerprint or defers again, or the call was resumed before (a call
    never runs twice). A call whose plan's ``approval=`` function raised, or
    answered something other than a bool, does not run either; that exception (a
    ``TypeError`` for such an answer) is the error's ``__cause__``. In a batch, such a
    call is answered with a failed result of this ``error_type`` instead.
    """


class GuardrailTripped(ToolRuntimeError):
    """A guardrail stopped a call, or raised; the call raises this for the host.

    Raised by ``execute`` and ``call`` alike (a model never reads it as a result),
    and by ``call_many`` for a stop; a batch answers the call of a guardrail that
    raised or gave no decision with a failed result of this ``error_type`` instead.

    Attributes:
        guardrail: the name of the guardrail that stopped the call.
        stage: ``"input"`` or ``"output"``.
    """

    def __init__(
        self,
        message: str,
        *,
        guardrail: str,
        stage: str,
        tool_name: str | None = None,
        plan_id: str | None = None,
    ) -> None:
        super().__init__(message, tool_name=tool_name, plan_id=plan_id)
        self.guardrail = guardrail
        self.stage = stage


class ToolRegistrationError(ToolRuntimeError):
    """A tool could not be registered: ``discover`` failed, or the name is taken."""


class ToolCancelledError(_ContextMixin, Exception):
    """The plan's cancellation token was cancelled; always propagates, never a result.

    Attributes:
        reason: why the plan was cancelled, as given to the token (or None).
        trace: the cancelled call's trace, when the runtime traced the call it
            stopped (None for a cancellation raised anywhere else).
    """

    trace: ToolExecutionTrace | None

    def __init__(
        self,
        message: str = "the plan was cancelled",
        *,
        reason: str | None = None,
        tool_name: str | None = None,
        plan_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.trace = None
        self._set_context(tool_name, plan_id)


class ToolSchemaValidationError(_ContextMixin, Exception):
    """A schema is not a usable draft 2020-12 schema, or a value does not satisfy one.

    Attributes:
        validation: the issues found, each with a JSON Pointer and a keyword.
        schema_kind: ``"input"`` or ``"output"`` when the schema belongs to a tool.
    """

    def __init__(
        self,
        message: str,
        *,
        validation: Validation | None = None,
        schema_kind: str | None = None,
        tool_name: str | None = None,
        plan_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.validation = validation
        self.schema_kind = schema_kind
        self._set_context(tool_name, plan_id)


class ModelRetry(Exception):
    """A tool asks the model to fix its call and try again; the message says what to fix.

    The call's result is a failure whose message goes to the model, and the
    failure counts against the tool's ``max_retries`` within the plan (see
    `toolcycle.RetryPolicy` for retrying transient faults instead).

    Attributes:
        message: what the model should change, in words it can act on.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolFailed(Exception):
    """A tool reports a failure on purpose: recorded as it is, never retried.

    Unlike any other exception, it is never retried by a `toolcycle.RetryPolicy`,
    and unlike `ModelRetry` it does not ask the model to try again.

    Attributes:
        message: what failed, as the result's ``error`` says it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolDefinitionError(ToolRegistrationError):
    """A function cannot become a tool; raised where it is decorated or wrapped."""


class ToolSkippedWarning(UserWarning):
    """A tool of a source was not registered because its schema or its name is unusable."""


class ToolDefinitionWarning(UserWarning):
    """A function was made a tool, but something a model needs is missing (a description)."""


def error_text(error: BaseException) -> str:
    """``str(error)``, never raising: an exception's ``__str__`` is a tool's own code.

    One whose ``__str__`` raises (or returns something that is not text) is
    described by its type.
    """
    try:
        return str(error)
    except Exception:
        return f"<the message of a {type(error).__name__} could not be read>"


# An int longer than this is shown by its size: Python refuses to print one of more
# than `sys.get_int_max_str_digits()` digits (4,300 by default), and a message with
# hundreds of digits says no more than its length does.
_MOST_BITS = 256


def shown_value(value: object) -> str:
    """``repr(value)`` for an error message, or the size of an int too long to print.

    ``repr`` of an int of more than 4,300 digits raises `ValueError` (Python's
    limit on turning ints into text), which would replace the message that
    refuses the value with one about printing it.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MOST_BITS:
        digits = math.floor(math.log10(abs(value))) + 1  # log10 takes ints of any size
        sign = "a negative" if value < 0 else "an"
        return f"{sign} int of about {digits:,} digits"
    return repr(value)


def cut_error_text(text: str) -> str:
    """``text`` cut to `MAX_ERROR_BYTES` of UTF-8, or ``text`` itself when it fits.

    A longer text keeps its beginning and its last 4 KiB, at character
    boundaries, with a line between them saying how many bytes were left
    out (``[... 123456 bytes of this error cut ...]``). Redact a text before
    cutting it: a secret cut in two is no longer found whole.
    """
    if len(text) <= MAX_ERROR_BYTES // 4:  # a code point is at most 4 bytes
        return text
    data = text.encode("utf-8", "surrogatepass")
    total = len(data)
    if total <= MAX_ERROR_BYTES:
        return text
    # The marker is sized for the whole length: what is cut is never longer.
    room = MAX_ERROR_BYTES - len(_cut_marker(total).encode())
    head = room - _ERROR_TAIL_BYTES
    tail = total - _ERROR_TAIL_BYTES
    # Back the head off, and move the tail on, past continuation bytes (0b10xxxxxx).
    while head > 0 and data[head] & 0xC0 == 0x80:
        head -= 1
    while tail < total and data[tail] & 0xC0 == 0x80:
        tail += 1
    return (
        data[:head].decode("utf-8", "surrogatepass")
        + _cut_marker(total - head - (total - tail))
        + data[tail:].decode("utf-8", "surrogatepass")
    )


def _cut_marker(cut: int) -> str:
    return f"\n[... {cut} bytes of this error cut ...]\n"
