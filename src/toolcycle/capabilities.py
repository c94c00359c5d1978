"""The capability check: may this plan run this tool?

One rule per plan flag, from the design's table:

==========================  ==========================  ================================
plan                        tool                        error
==========================  ==========================  ================================
``read_only=True``          ``writes=True``             `ToolAccessDeniedError`
``requires_checkpoint=True``  ``writes=True`` and         `ToolCheckpointRequiredError`
                            ``checkpointable=False``
==========================  ==========================  ================================

A tool that does not write has nothing to undo, so a checkpoint plan runs it
whatever its ``checkpointable`` flag says. When both rules refuse a tool, the
read-only denial is the one raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcycle.errors import ToolAccessDeniedError, ToolCheckpointRequiredError

if TYPE_CHECKING:
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolCapability, ToolDescriptor

__all__ = ["check_capabilities", "is_allowed"]


def check_capabilities(descriptor: ToolDescriptor, ctx: ToolExecutionContext) -> None:
    """Return if the plan of ``ctx`` may run the tool; raise otherwise.

    Raises:
        ToolAccessDeniedError: the plan is read-only and the tool writes.
        ToolCheckpointRequiredError: the plan requires checkpoints and the tool
            writes and is not checkpointable.
    """
    capability = descriptor.capability
    if ctx.read_only and capability.writes:
        raise ToolAccessDeniedError(
            f"tool {descriptor.name!r} writes, and plan {ctx.plan_id!r} is read-only; "
            "run it in a plan with read_only=False"
            + _remedy(descriptor, "declare writes=False if it only reads"),
            tool_name=descriptor.name,
            plan_id=ctx.plan_id,
        )
    if ctx.requires_checkpoint and not _undoable(capability):
        raise ToolCheckpointRequiredError(
            f"tool {descriptor.name!r} cannot be rolled back, and plan {ctx.plan_id!r} "
            "requires checkpoints; run it in a plan with requires_checkpoint=False"
            + _remedy(
                descriptor, "declare checkpointable=True if it records how to undo every change"
            ),
            tool_name=descriptor.name,
            plan_id=ctx.plan_id,
        )


def _remedy(descriptor: ToolDescriptor, declare: str) -> str:
    """The second way out of a denial: change the declaration, if the user wrote it.

    A tool the user wrote (a `ToolInstance` class, ``@tool`` or ``wrap``) may be
    declared wrongly; a built-in, MCP or skill tool is what it says it is, so
    the only advice there is about the plan.
    """
    if descriptor.source in ("custom", "wrapped"):
        return f", or {declare}"
    if descriptor.source == "builtin":
        return " (it is a built-in tool: its capability is fixed)"
    if descriptor.source == "mcp":
        server = f" {descriptor.source_name!r}" if descriptor.source_name else ""
        return f" (its capability comes from MCP server{server})"
    return " (it runs a skill's script, which the runtime can neither inspect nor undo)"


def is_allowed(descriptor: ToolDescriptor, ctx: ToolExecutionContext) -> bool:
    """Whether `check_capabilities` would let the plan of ``ctx`` run the tool."""
    capability = descriptor.capability
    return not (ctx.read_only and capability.writes) and not (
        ctx.requires_checkpoint and not _undoable(capability)
    )


def _undoable(capability: ToolCapability) -> bool:
    """Whether a checkpoint plan may run the tool: it changes nothing, or can undo it."""
    return not capability.writes or capability.checkpointable
