"""`needs_approval`: which calls of a plan need approval, from its rule and the tool's capability.

Public as ``toolcycle.approvals.needs_approval`` (with `ApprovalRule`). It lives
apart so that the runtime's per-call check reads a plan's rule without loading
the approvals module, which only a call that needs approval uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    from toolcycle.models import ToolDescriptor

__all__ = ["ApprovalRule", "needs_approval"]

ApprovalRule: TypeAlias = "Literal['writes', 'all', 'flagged'] | Callable[[ToolDescriptor], bool]"
"""Which calls of a plan need approval; see `needs_approval`."""


def needs_approval(descriptor: ToolDescriptor, rule: ApprovalRule) -> bool:
    """Whether a call of the tool needs approval under a plan's rule.

    A tool's own ``capability.requires_approval`` is honoured by the named rules:
    True always asks, False never asks under ``"writes"``.

    - ``"writes"`` (the default): tools that write, and tools that ask for it;
    - ``"all"``: every call;
    - ``"flagged"``: only tools whose capability says ``requires_approval=True``;
    - a callable: what it returns for the descriptor (it decides alone).

    Raises:
        TypeError: the callable returned something other than a bool (None from a
            missing ``return``, or the coroutine of an ``async def``): a rule in
            doubt must not let a call through unasked, nor ask by accident.
    """
    flag = descriptor.capability.requires_approval
    if callable(rule):
        answer = rule(descriptor)
        if type(answer) is bool:
            return answer
        awaitable = hasattr(answer, "__await__")
        if awaitable and hasattr(answer, "close"):
            answer.close()  # an async rule's coroutine: never awaited, and no warning about it
        raise TypeError(
            f"an approval rule must return a bool, got {type(answer).__name__}"
            + (" (a rule cannot be an async function)" if awaitable else "")
        )
    if rule == "all" or flag is True:
        return True
    if rule == "flagged" or flag is False:
        return False
    return descriptor.capability.writes
