"""Guardrails: checks of a call's arguments and of its output that can turn it away.

A guardrail is a plain or async function of a `GuardrailCall` and the plan's
`ToolExecutionContext` that returns a `GuardrailDecision`:

- `allow` lets the call go on;
- `reject` answers it with a failed result whose ``error`` is the message: the
  model reads it as the tool's result (trace status ``"rejected"``);
- `stop` makes the call raise `GuardrailTripped` for the host, whichever entry
  point it came through (trace status ``"stopped"``).

*Input* guardrails see the validated arguments, after input validation and
before approval (``ToolRuntime(guardrails_after_approval=True)`` moves them
after it). *Output* guardrails also see the output, after output validation and
before the result leaves the runtime. Guardrails are given per runtime
(``ToolRuntime(input_guardrails=...)``), per source (``register_source``) and
per tool (``@tool``, ``wrap``, ``register``, or an ``input_guardrails`` /
``output_guardrails`` attribute of any tool); they run in that order, and the
first decision that is not ``allow`` ends the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from toolcycle._value import FrozenValue

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from toolcycle.content import ContentPart
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolDescriptor

__all__ = [
    "Guardrail",
    "GuardrailCall",
    "GuardrailDecision",
    "GuardrailStage",
    "allow",
    "reject",
    "stop",
]

GuardrailStage: TypeAlias = Literal["input", "output"]
"""When a guardrail runs: before the tool (``"input"``) or after it (``"output"``)."""


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class GuardrailCall(FrozenValue):
    """The call a guardrail decides about.

    Attributes:
        tool_name: the tool's registered name.
        arguments: the validated arguments, read-only (what the tool receives).
        stage: ``"input"`` or ``"output"``.
        descriptor: the tool's descriptor (its capability, source, tags).
        call_id: the runtime's id of the call, as in its trace.
        tool_call_id: the model's id of the call; None for ``execute``.
        output: the output as JSON data, for an output guardrail; None for an input one.
        content: the content parts the model will be shown (a rich return's, see
            `toolcycle.content`), for an output guardrail; empty otherwise.
    """

    tool_name: str
    arguments: Mapping[str, Any]
    stage: GuardrailStage
    descriptor: ToolDescriptor
    call_id: str
    tool_call_id: str | None = None
    output: Any = None
    content: tuple[ContentPart, ...] = ()


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class GuardrailDecision(FrozenValue):
    """A guardrail's answer; make one with `allow`, `reject` or `stop`.

    Attributes:
        outcome: ``"allow"``, ``"reject"`` or ``"stop"``.
        message: what the model reads (reject) or the host's error says (stop).
    """

    outcome: Literal["allow", "reject", "stop"]
    message: str | None = None

    def __post_init__(self) -> None:
        if self.outcome not in ("allow", "reject", "stop"):
            raise ValueError(
                f"a guardrail decision is 'allow', 'reject' or 'stop', got {self.outcome!r}"
            )
        if self.message is not None and not isinstance(self.message, str):
            raise TypeError(f"a decision's message is text, got {type(self.message).__name__}")


_ALLOW = GuardrailDecision("allow")


def allow() -> GuardrailDecision:
    """Let the call go on (to the next guardrail, then the next step)."""
    return _ALLOW


def reject(message: str) -> GuardrailDecision:
    """Turn the call away: ``message`` reaches the model as the failed result's ``error``.

    Raises:
        TypeError: ``message`` is not a string.
    """
    return GuardrailDecision("reject", _text(message, "reject"))


def stop(message: str) -> GuardrailDecision:
    """Stop the call: it raises `GuardrailTripped` with ``message`` for the host.

    Raises:
        TypeError: ``message`` is not a string.
    """
    return GuardrailDecision("stop", _text(message, "stop"))


def _text(message: object, kind: str) -> str:
    if not isinstance(message, str):
        raise TypeError(f"{kind}() needs a message string, got {type(message).__name__}")
    return message


Guardrail: TypeAlias = (
    "Callable[[GuardrailCall, ToolExecutionContext], "
    "GuardrailDecision | Awaitable[GuardrailDecision]]"
)
"""A guardrail: a function or coroutine function of the call and the plan's context."""
