"""The capability check, table-driven over plan flags and tool flags."""

from __future__ import annotations

import itertools

import pytest

from toolcycle import (
    SourceKind,
    ToolAccessDeniedError,
    ToolCapability,
    ToolCheckpointRequiredError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
)
from toolcycle.builtins import workspace_tools
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


@pytest.mark.parametrize(
    ("source", "source_name", "advice"),
    [
        ("custom", None, "or declare writes=False if it only reads"),
        ("wrapped", None, "or declare writes=False if it only reads"),
        ("builtin", None, "(it is a built-in tool: its capability is fixed)"),
        ("mcp", "notes", "(its capability comes from MCP server 'notes')"),
        ("mcp", None, "(its capability comes from MCP server)"),
        ("skill", "pdf", "(it runs a skill's script, which the runtime can neither inspect"),
    ],
)
def test_a_read_only_denial_suggests_a_new_declaration_only_for_the_users_own_tools(
    source: SourceKind, source_name: str | None, advice: str
) -> None:
    """Only a tool the user wrote is told to declare writes=False; others get plan advice."""
    descriptor = ToolDescriptor(name="w", source=source, source_name=source_name)
    with pytest.raises(ToolAccessDeniedError) as info:
        check_capabilities(descriptor, ToolExecutionContext("p", read_only=True))
    message = str(info.value)
    assert message.startswith(
        "tool 'w' writes, and plan 'p' is read-only; run it in a plan with read_only=False"
    )
    assert advice in message
    assert ("declare" in message) is (source in ("custom", "wrapped"))


@pytest.mark.parametrize("source", ["custom", "wrapped", "builtin", "mcp", "skill"])
def test_a_checkpoint_denial_suggests_checkpointable_only_for_the_users_own_tools(
    source: SourceKind,
) -> None:
    """checkpointable=True is offered for a tool the user wrote, never for another's."""
    descriptor = ToolDescriptor(name="w", source=source)
    with pytest.raises(ToolCheckpointRequiredError) as info:
        check_capabilities(descriptor, ToolExecutionContext("p", requires_checkpoint=True))
    message = str(info.value)
    assert "run it in a plan with requires_checkpoint=False" in message
    assert ("declare checkpointable=True" in message) is (source in ("custom", "wrapped"))


def test_a_model_calling_a_built_in_that_writes_in_a_read_only_plan_is_told_about_the_plan() -> (
    None
):
    """The failed result of call names the plan's flag and never asks to redeclare write_file."""
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        with runtime.plan("p", read_only=True) as ctx:
            result = runtime.call({"name": "write_file", "arguments": {}}, ctx)
    assert result.error_type == "ToolAccessDeniedError"
    assert result.error == (
        "tool 'write_file' writes, and plan 'p' is read-only; run it in a plan with "
        "read_only=False (it is a built-in tool: its capability is fixed)"
    )
