"""The capability check, table-driven over plan flags and tool flags."""

from __future__ import annotations

import itertools

import pytest

from toolcycle import (
    ToolAccessDeniedError,
    ToolCapability,
    ToolCheckpointRequiredError,
    ToolDescriptor,
    ToolExecutionContext,
)
from toolcycle.capabilities import check_capabilities, is_allowed


def _expected(read_only: bool, checkpoint: bool, writes: bool, checkpointable: bool) -> type | None:
    if read_only and writes:
        return ToolAccessDeniedError
    if checkpoint and writes and not checkpointable:
        return ToolCheckpointRequiredError
    return None


@pytest.mark.parametrize(
    ("read_only", "checkpoint", "writes", "checkpointable"),
    list(itertools.product([False, True], repeat=4)),
)
def test_capability_table(
    read_only: bool, checkpoint: bool, writes: bool, checkpointable: bool
) -> None:
    """Each combination raises the design's error, or passes, and is_allowed agrees."""
    descriptor = ToolDescriptor(
        name="t", capability=ToolCapability(writes=writes, checkpointable=checkpointable)
    )
    ctx = ToolExecutionContext("p", read_only=read_only, requires_checkpoint=checkpoint)
    expected = _expected(read_only, checkpoint, writes, checkpointable)
    assert is_allowed(descriptor, ctx) is (expected is None)
    if expected is None:
        check_capabilities(descriptor, ctx)
    else:
        with pytest.raises(expected) as info:
            check_capabilities(descriptor, ctx)
        assert info.value.tool_name == "t" and info.value.plan_id == "p"


def test_a_checkpoint_plan_runs_a_tool_that_does_not_write_even_if_not_checkpointable() -> None:
    """A tool that changes nothing has nothing to undo, so a checkpoint plan allows it."""
    descriptor = ToolDescriptor(
        name="lookup", capability=ToolCapability(writes=False, checkpointable=False)
    )
    ctx = ToolExecutionContext("p", requires_checkpoint=True)
    check_capabilities(descriptor, ctx)
    assert is_allowed(descriptor, ctx)
