"""toolcycle: an embeddable runtime that drives tools through their lifecycle.

A `ToolRuntime` runs `ToolInstance` objects through four stages (discover,
activate, execute, deactivate) plan by plan, enforcing capabilities, caching
activations, validating with JSON Schema draft 2020-12, propagating cancellation
and tracing every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle._version import __version__
from toolcycle.cache import ToolLifecycleCache
from toolcycle.callables import AsyncFunctionTool, FunctionTool, tool, wrap
from toolcycle.cancellation import CancellationToken
from toolcycle.content import Audio, ContentPart, File, Image, ResourceLink, Text, ToolReturn
from toolcycle.context import ToolExecutionContext
from toolcycle.errors import (
    ConcurrentCallError,
    GuardrailTripped,
    ModelRetry,
    PlanResumeError,
    ToolAccessDeniedError,
    ToolActivationError,
    ToolApprovalError,
    ToolCancelledError,
    ToolCheckpointRequiredError,
    ToolDeactivationError,
    ToolDefinitionError,
    ToolDefinitionWarning,
    ToolExecutionError,
    ToolFailed,
    ToolInterruptedError,
    ToolNotActivatedError,
    ToolNotFoundError,
    ToolOutputError,
    ToolRegistrationError,
    ToolRuntimeError,
    ToolSchemaValidationError,
    ToolSkippedWarning,
)
from toolcycle.models import (
    ApprovalRecord,
    BoundResource,
    Change,
    GuardrailRecord,
    PendingApproval,
    ProgressEvent,
    ProviderFormat,
    RetryAttempt,
    SourceKind,
    Tool,
    ToolCall,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionTrace,
    ToolResult,
    ToolSearchMode,
    TraceStatus,
    Validation,
    ValidationIssue,
)
from toolcycle.protocols import PlanHost, ToolInstance, ToolSource
from toolcycle.redaction import RedactionPolicy
from toolcycle.result_cache import CachePolicy, ResultCache
from toolcycle.retries import RetryPolicy
from toolcycle.runtime import ToolRuntime
from toolcycle.tracing import NullTracer, StructlogTracer, TraceListener, Tracer

if TYPE_CHECKING:
    from toolcycle.approvals import (
        ApprovalDecision,
        ApprovalRequest,
        Resumption,
        current_resumption,
    )
    from toolcycle.guardrails import Guardrail, GuardrailCall, GuardrailDecision
    from toolcycle.instrumentation import Instrumentation
    from toolcycle.rollback import (
        Checkpoint,
        RollbackConflictError,
        RollbackReport,
        RollbackUnsupportedError,
        UndoOutcome,
    )
    from toolcycle.runtime import CallStream
    from toolcycle.validation import ValidationLimits

_LAZY = {
    "ApprovalDecision": "toolcycle.approvals",
    "ApprovalRequest": "toolcycle.approvals",
    "Resumption": "toolcycle.approvals",
    "current_resumption": "toolcycle.approvals",
    "Guardrail": "toolcycle.guardrails",
    "GuardrailCall": "toolcycle.guardrails",
    "GuardrailDecision": "toolcycle.guardrails",
    "Checkpoint": "toolcycle.rollback",
    "RollbackConflictError": "toolcycle.rollback",
    "RollbackReport": "toolcycle.rollback",
    "RollbackUnsupportedError": "toolcycle.rollback",
    "UndoOutcome": "toolcycle.rollback",
    "CallStream": "toolcycle.runtime",
    "Instrumentation": "toolcycle.instrumentation",
    "ValidationLimits": "toolcycle.validation",
}
"""Public names whose module loads on first use: many programs never ask for approval, guard,
roll back, stream a call or instrument the runtime, and the validation engine loads with the
first runtime."""

_LAZY_MODULES = frozenset({"approvals", "guardrails", "rollback"})
"""Those modules themselves, which ``import toolcycle`` used to load: ``toolcycle.rollback``
still works without its own import."""


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(f"toolcycle.{name}")  # which sets the attribute
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcycle' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)


__all__ = [
    "ApprovalDecision",
    "ApprovalRecord",
    "ApprovalRequest",
    "AsyncFunctionTool",
    "Audio",
    "BoundResource",
    "CachePolicy",
    "CallStream",
    "CancellationToken",
    "Change",
    "Checkpoint",
    "ConcurrentCallError",
    "ContentPart",
    "File",
    "FunctionTool",
    "Guardrail",
    "GuardrailCall",
    "GuardrailDecision",
    "GuardrailRecord",
    "GuardrailTripped",
    "Image",
    "Instrumentation",
    "ModelRetry",
    "NullTracer",
    "PendingApproval",
    "PlanHost",
    "PlanResumeError",
    "ProgressEvent",
    "ProviderFormat",
    "RedactionPolicy",
    "ResourceLink",
    "ResultCache",
    "Resumption",
    "RetryAttempt",
    "RetryPolicy",
    "RollbackConflictError",
    "RollbackReport",
    "RollbackUnsupportedError",
    "SourceKind",
    "StructlogTracer",
    "Text",
    "Tool",
    "ToolAccessDeniedError",
    "ToolActivationError",
    "ToolApprovalError",
    "ToolCall",
    "ToolCancelledError",
    "ToolCapability",
    "ToolCheckpointRequiredError",
    "ToolDeactivationError",
    "ToolDefinitionError",
    "ToolDefinitionWarning",
    "ToolDescriptor",
    "ToolExecutionContext",
    "ToolExecutionError",
    "ToolExecutionTrace",
    "ToolFailed",
    "ToolInstance",
    "ToolInterruptedError",
    "ToolLifecycleCache",
    "ToolNotActivatedError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolRegistrationError",
    "ToolResult",
    "ToolReturn",
    "ToolRuntime",
    "ToolRuntimeError",
    "ToolSchemaValidationError",
    "ToolSearchMode",
    "ToolSkippedWarning",
    "ToolSource",
    "TraceListener",
    "TraceStatus",
    "Tracer",
    "UndoOutcome",
    "Validation",
    "ValidationIssue",
    "ValidationLimits",
    "__version__",
    "current_resumption",
    "tool",
    "wrap",
]
