"""From a model's tool call to the registered tool it means, or to a refusal it can read.

``runtime.call`` never raises for what a model got wrong; this module turns each
such mistake into a failed `ToolResult` that answers the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcycle.agent._names import FORMATS, provider_name
from toolcycle.errors import (
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCheckpointRequiredError,
    ToolNotActivatedError,
    ToolNotFoundError,
)
from toolcycle.models import ToolResult

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcycle.models import ToolCall, ToolExecutionTrace

__all__ = ["REFUSED", "refusal", "resolve"]

REFUSED = (
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCheckpointRequiredError,
    ToolNotActivatedError,
    ToolNotFoundError,
)
"""What ``execute`` raises that ``call`` returns as a failed result instead."""


def resolve(name: str, format: str, registered: Iterable[str]) -> str | None:
    """The registered tool the model's ``name`` means, or None.

    A name is ours as it is, or the provider-safe form of one of ours (see
    ``_names``): in the call's format, or in any format for a plain call.
    """
    names = list(registered)
    if name in names:
        return name
    formats = FORMATS if format == "plain" else (format,)
    for candidate in names:
        if any(provider_name(candidate, each) == name for each in formats):
            return candidate
    return None


def refusal(
    call: ToolCall | None,
    message: str,
    error_type: str,
    trace: ToolExecutionTrace | None = None,
) -> ToolResult:
    """A failed result that answers ``call`` with ``message``, carrying the refusal's trace."""
    return ToolResult(success=False, error=message, error_type=error_type, call=call, trace=trace)
