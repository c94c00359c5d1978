"""The records of one call's trace: `ToolExecutionTrace` and the records it holds.

`ApprovalRecord`, `RetryAttempt`, `GuardrailRecord` and `ProgressEvent` say what
happened during the call; the trace gathers them. They are public through
`toolcycle` and `toolcycle.models`, like every record; they live here so that
`models` stays a page a reader can take in.
"""

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ApprovalRecord",
    "GuardrailRecord",
    "ProgressEvent",
    "RetryAttempt",
    "ToolExecutionTrace",
    "TraceStatus",
]

TraceStatus: TypeAlias = Literal[
    "ok",
    "error",
    "denied",
    "invalid_input",
    "cancelled",
    "timed_out",
    "pending",
    "rejected",
    "stopped",
]
"""The outcome of one call, as recorded in its trace."""

# Frozen like every record in `models`; the validator is built on first use.
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ApprovalRecord(BaseModel):
    """How a call's approval was decided, as its trace records it."""

    model_config = _FROZEN

    outcome: Literal["approved", "denied", "deferred"]
    fingerprint: str
    """The fingerprint of the call that was decided (tool name and exact arguments)."""
    reason: str | None = None
    approval_id: str | None = None
    """The id of the pending call, for a deferred call and for a resumed one."""
    resumed: bool = False
    """The decision was given to ``runtime.resume``, after the call was deferred."""


class RetryAttempt(BaseModel):
    """One attempt of a call that a `toolcycle.RetryPolicy` may run again."""

    model_config = _FROZEN

    error_type: str | None = None
    """The class name of what the attempt raised; None for the attempt that returned."""
    duration_ms: float


class GuardrailRecord(BaseModel):
    """One guardrail's decision about a call, as its trace records it."""

    model_config = _FROZEN

    name: str
    """The guardrail's name: its function's ``__qualname__``."""
    stage: Literal["input", "output"]
    outcome: Literal["allow", "reject", "stop"]
    message: str | None = None
    """What a rejection or a stop said (redacted like the trace's ``error``)."""


class ToolExecutionTrace(BaseModel):
    """The record of one call that reached ``execute``, whatever its outcome."""

    model_config = _FROZEN

    tool_name: str
    plan_id: str
    call_id: str
    """The runtime's id of the call, unique per runtime."""
    tool_call_id: str | None = None
    """The id the model gave the call (``call``, ``acall`` and the adapters); None for
    ``execute``, and for a model call that came without one."""
    started_at: str
    """ISO-8601 UTC time the call reached the runtime."""
    ended_at: str
    """ISO-8601 UTC time the runtime finished with it."""
    duration_ms: float
    result_size_bytes: int = 0
    """UTF-8 size of the compact JSON-serialised output (4 for ``null``); 0 for a call
    that failed before producing output."""
    original_size_bytes: int = 0
    """The size before ``max_result_bytes`` cut the output; equal to
    ``result_size_bytes`` when nothing was cut."""
    success: bool
    status: TraceStatus
    error: str | None = None
    error_type: str | None = None
    output_valid: bool | None = None
    """Whether the output satisfied the output schema; None when nothing was checked."""
    progress_count: int = 0
    """How many progress reports the tool made during the call."""
    abandoned: bool = False
    """The call was left running: a sync tool timed out (Python cannot stop it), or
    its plan ended and stopped waiting for it (``drain_timeout``)."""
    approval: ApprovalRecord | None = None
    """How the call's approval was decided; None for a call that needed none."""
    retry: int = 0
    """Which model retry this call is: how many model-fixable failures of the tool
    (an invalid input, `toolcycle.ModelRetry`) came just before it in the plan."""
    attempts: tuple[RetryAttempt, ...] = ()
    """Each attempt of a tool with a `toolcycle.RetryPolicy`, in order; empty otherwise."""
    cache_hit: bool = False
    """The call was answered from the result cache, or its kept result was turned away
    by an output guardrail: either way the tool was neither activated nor run."""
    guardrails: tuple[GuardrailRecord, ...] = ()
    """Each guardrail's decision, in the order they ran; empty when none ran."""
    revealed_tools: tuple[str, ...] = ()
    """The deferred tools a ``search_tools`` call found, revealed for the rest of the plan;
    for a model's call of a deferred tool not yet revealed, that tool."""
    content_kinds: tuple[str, ...] = ()
    """The kind of each content part the result shows the model, in order
    (``"text"``, ``"image"``, ``"audio"``, ``"file"``, ``"resource_link"``)."""
    content_bytes: int = 0
    """The bytes of those parts (UTF-8 text, raw binary), after ``max_result_bytes``."""
    host: str | None = None
    """The name of the host the tool's body ran in (``toolcycle.hosts``); None when
    it ran in the caller's process."""
    host_id: str | None = None
    """Where in that host: its worker (``"pid 1234"`` for a `ProcessHost`); None when
    no worker had started."""


class ProgressEvent(BaseModel):
    """One progress report of a running call, as a context's ``on_progress`` receives it."""

    model_config = _FROZEN

    tool_name: str
    plan_id: str
    call_id: str | None
    """The call's trace id; None when reported outside a call the runtime runs."""
    progress: float
    total: float | None = None
    message: str | None = None
