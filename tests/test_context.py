"""ToolExecutionContext: flags, resources and recorded changes."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

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


def test_record_change_in_a_call_fills_the_tool_name_and_time_left_empty() -> None:
    """A change recorded without a tool name or time gets the calling tool's and now."""
    from datetime import UTC, datetime

    from toolcycle import ToolRuntime, tool

    @tool(writes=True, checkpointable=True)
    def touch(ctx: ToolExecutionContext) -> None:
        """Record two changes, one naming its own tool and time."""
        ctx.record_change(Change(kind="write", target="a"))
        ctx.record_change(
            Change(kind="write", target="b", tool_name="other", recorded_at="2020-01-01T00:00:00")
        )

    before = datetime.now(UTC)
    with ToolRuntime() as runtime:
        runtime.register(touch)
        with runtime.plan() as ctx:
            result = runtime.execute("touch", {}, ctx)
            stamped, kept = ctx.changes
    assert result.changes == (stamped, kept)
    assert stamped.tool_name == "touch"
    assert stamped.recorded_at is not None
    assert before <= datetime.fromisoformat(stamped.recorded_at) <= datetime.now(UTC)
    assert (kept.tool_name, kept.recorded_at) == ("other", "2020-01-01T00:00:00")


def test_record_change_outside_a_call_keeps_the_change_as_given() -> None:
    """Outside any call there is no tool to name, so the change is stored unchanged."""
    ctx = ToolExecutionContext("p")
    change = Change(kind="write", target="a")
    ctx.record_change(change)
    assert ctx.changes[0] is change


def test_record_change_refuses_other_objects() -> None:
    """Only Change objects can be recorded."""
    with pytest.raises(TypeError, match="expects a Change"):
        ToolExecutionContext("p").record_change({"kind": "write"})  # type: ignore[arg-type]


@pytest.mark.parametrize("plan_id", ["", None, 3])
def test_plan_id_must_be_a_non_empty_string(plan_id: object) -> None:
    """An empty or non-string plan id is refused."""
    with pytest.raises(ValueError, match="plan_id"):
        ToolExecutionContext(plan_id)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("read_only", "false", TypeError),
        ("requires_checkpoint", 1, TypeError),
        ("timeout", "5", TypeError),
        ("idle_timeout", True, TypeError),
        ("timeout", 0, ValueError),
        ("cancellation_token", "stop", TypeError),
        ("metadata", "user=ada", TypeError),
        ("on_progress", 5, TypeError),
    ],
)
def test_a_plan_option_of_the_wrong_kind_is_refused_when_the_context_is_made(
    option: str, value: object, error: type[Exception]
) -> None:
    """Each option is checked up front and named in the error, not misread later."""
    with pytest.raises(error, match=option):
        ToolExecutionContext("p", **{option: value})  # type: ignore[arg-type]


def test_new_context_refuses_metadata_that_is_not_a_mapping_and_frees_the_plan_id() -> None:
    """runtime.new_context names the option at fault, and the plan id stays free."""
    from toolcycle import ToolRuntime

    with ToolRuntime() as runtime:
        with pytest.raises(TypeError, match="metadata must be a dict"):
            runtime.new_context("p", metadata="user=ada")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="cancellation_token"):
            runtime.new_context("p", cancellation_token="stop")  # type: ignore[arg-type]
        ctx = runtime.new_context("p", metadata=(("user", "ada"),))  # type: ignore[arg-type]
    assert ctx.metadata == {"user": "ada"}


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


def test_the_context_init_takes_its_fields_and_its_repr_is_a_dataclass_repr() -> None:
    """Its own ``__init__`` takes each init field by the same name, in order, with its default.

    A field with a factory default takes None, which makes a fresh value, as the
    factory did; the repr shows the fields a dataclass would, in its format.
    """
    parameters = list(inspect.signature(ToolExecutionContext.__init__).parameters.values())[1:]
    declared = [f for f in dataclasses.fields(ToolExecutionContext) if f.init]
    assert [p.name for p in parameters] == [f.name for f in declared]
    for parameter, declared_field in zip(parameters, declared, strict=True):
        if declared_field.default is not dataclasses.MISSING:
            assert parameter.default == declared_field.default, parameter.name
        elif declared_field.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, parameter.name
        assert parameter.kind is (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if declared_field.name == "plan_id"
            else inspect.Parameter.KEYWORD_ONLY
        )
    first, second = ToolExecutionContext("p"), ToolExecutionContext("p")
    assert first.cancellation_token is not second.cancellation_token
    assert first.metadata == {} and first.metadata is not second.metadata
    metadata = {"tenant": "a"}
    assert ToolExecutionContext("p", metadata=metadata).metadata is metadata  # kept, not copied
    shown = ", ".join(
        f"{f.name}={getattr(first, f.name)!r}" for f in dataclasses.fields(first) if f.repr
    )
    assert repr(first) == f"ToolExecutionContext({shown})"
    assert repr(first).startswith("ToolExecutionContext(plan_id='p', read_only=False, ")


@pytest.mark.parametrize("plan_id", ["", 5])
def test_new_context_refuses_an_empty_or_non_text_plan_id_rather_than_making_one_up(
    plan_id: Any,
) -> None:
    """Only None asks for a new id; "" is a mistake, as ToolExecutionContext("") says."""
    from toolcycle import ToolRuntime

    with ToolRuntime() as runtime:
        with pytest.raises(ValueError, match="plan_id must be a non-empty string, or None"):
            runtime.new_context(plan_id)
        assert runtime.new_context(None).plan_id.startswith("plan-")
