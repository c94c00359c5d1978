"""ToolExecutionContext: flags, resources and recorded changes."""

from __future__ import annotations

import pytest

from toolcycle import BoundResource, Change, ToolExecutionContext


def test_defaults_and_changes_start_empty() -> None:
    """A new context is neither read-only nor checkpointed and has no changes."""
    ctx = ToolExecutionContext("p")
    assert not ctx.read_only and not ctx.requires_checkpoint
    assert ctx.changes == () and not ctx.ended
    assert not ctx.cancellation_token.is_cancelled


def test_record_change_appends_in_order() -> None:
    """Changes are kept in the order recorded, as an immutable tuple."""
    ctx = ToolExecutionContext("p")
    first, second = Change(kind="write", target="a"), Change(kind="delete", target="b")
    ctx.record_change(first)
    ctx.record_change(second)
    assert ctx.changes == (first, second)


def test_record_change_refuses_other_objects() -> None:
    """Only Change objects can be recorded."""
    with pytest.raises(TypeError, match="expects a Change"):
        ToolExecutionContext("p").record_change({"kind": "write"})  # type: ignore[arg-type]


@pytest.mark.parametrize("plan_id", ["", None, 3])
def test_plan_id_must_be_a_non_empty_string(plan_id: object) -> None:
    """An empty or non-string plan id is refused."""
    with pytest.raises(ValueError, match="plan_id"):
        ToolExecutionContext(plan_id)  # type: ignore[arg-type]


def test_resources_become_a_tuple_and_are_checked() -> None:
    """Resources are stored as a tuple and must be BoundResource objects."""
    workspace = BoundResource(kind="workspace", name="ws", location="/tmp/ws")
    ctx = ToolExecutionContext("p", resources=[workspace])  # type: ignore[arg-type]
    assert ctx.resources == (workspace,)
    with pytest.raises(TypeError, match="BoundResource"):
        ToolExecutionContext("p", resources=("ws",))  # type: ignore[arg-type]


def test_resource_lookup_by_kind_and_name() -> None:
    """resource() finds one resource, and explains missing or ambiguous lookups."""
    a = BoundResource(kind="workspace", name="a")
    b = BoundResource(kind="workspace", name="b")
    ctx = ToolExecutionContext("p", resources=(a, b))
    assert ctx.resource("workspace", "b") is b
    with pytest.raises(LookupError, match="pass a name"):
        ctx.resource("workspace")
    with pytest.raises(LookupError, match="no resource of kind 'database'"):
        ctx.resource("database")
