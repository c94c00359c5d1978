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
)
from toolcycle.models import ToolResult

if TYPE_CHECKING:
    from toolcycle.models import ToolCall, ToolExecutionTrace

__all__ = ["REFUSED", "refusal"]

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
    """A failed result that answers ``call`` with ``message``, carrying the refusal's trace."""
    return ToolResult(success=False, error=message, error_type=error_type, call=call, trace=trace)
