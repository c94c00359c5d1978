"""The refusals a model's tool call can read, in place of an exception.

``runtime.call`` never raises for what a model got wrong; this module turns each
such mistake into a failed `ToolResult` that answers the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcycle.errors import (
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCheckpointRequiredError,
    ToolNotActivatedError,
    ToolNotFoundError,
    cut_error_text,
)
from toolcycle.models import ToolResult

if TYPE_CHECKING:
    from toolcycle.models import ToolCall, ToolExecutionTrace

__all__ = ["REFUSED", "refusal", "refused", "unknown_tool"]

REFUSED = (
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCheckpointRequiredError,
    ToolNotActivatedError,
    ToolNotFoundError,
)
"""What ``execute`` raises that ``call`` returns as a failed result instead."""


def refusal(
    call: ToolCall | None,
    message: str,
    error_type: str,
    trace: ToolExecutionTrace | None = None,
) -> ToolResult:
    """A failed result that answers ``call`` with ``message``, carrying the refusal's trace.

    The message is cut as a trace's error is: it may quote a tool's exception
    (an activation that failed) or a name the model made up.
    """
    return ToolResult(
        success=False,
        error=cut_error_text(message),
        error_type=error_type,
        call=call,
        trace=trace,
    )


def unknown_tool(name: str) -> str:
    """What a model reads for a tool name nobody registered: not the names that are."""
    return f"there is no tool named {name!r}; call one of the tools you were given"


def refused(error: Exception, trace: ToolExecutionTrace | None) -> ToolResult:
    """The failed result that answers a model's call which ``execute`` refused with ``error``.

    A tool unregistered after the call was read is answered as any unknown name:
    the list of known tools the error gives the host would hand the model the
    whole catalogue, deferred tools included.
    """
    if isinstance(error, ToolNotFoundError):
        message = unknown_tool(error.tool_name or "")
    else:
        message = str(error)
    return refusal(None, message, type(error).__name__, trace)
