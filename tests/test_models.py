"""The frozen records that cross the runtime's boundaries."""

from __future__ import annotations

import json

import pydantic
import pytest

from toolcycle import (
    BoundResource,
    Change,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionError,
    ToolResult,
    Validation,
    ValidationIssue,
)


def test_capability_defaults_are_the_safe_assumption() -> None:
    """An undescribed tool is assumed to write and not to be checkpointable."""
    capability = ToolCapability()
    assert capability.writes is True and capability.checkpointable is False


def test_descriptor_defaults() -> None:
    """A descriptor needs only a name; its input schema defaults to any object."""
    descriptor = ToolDescriptor(name="t")
    assert descriptor.input_schema == {"type": "object"}
    assert descriptor.output_schema is None and descriptor.source == "custom"
    assert descriptor.tags == frozenset()


@pytest.mark.parametrize("name", ["", " padded", "tab\tname", "x" * 257])
def test_descriptor_refuses_bad_names(name: str) -> None:
    """Empty, padded, non-printable and overlong names are refused."""
    with pytest.raises(pydantic.ValidationError):
        ToolDescriptor(name=name)


def test_descriptor_refuses_unknown_sources_and_fields() -> None:
    """The source must be one of the five kinds, and unknown fields are errors."""
    with pytest.raises(pydantic.ValidationError):
        ToolDescriptor(name="t", source="plugin")  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        ToolDescriptor(name="t", colour="red")  # type: ignore[call-arg]


def test_models_are_frozen() -> None:
    """Values cannot be changed after creation."""
    with pytest.raises(pydantic.ValidationError):
        ToolCapability().writes = False  # type: ignore[misc]


def test_change_is_json_serialisable() -> None:
    """A Change round-trips through JSON, so plan executors can persist it."""
    change = Change(kind="write", target="a.txt", tool_name="w", data={"previous": None})
    assert Change.model_validate(json.loads(change.model_dump_json())) == change


def test_validation_summary_lists_pointer_and_message() -> None:
    """summary() renders one line per issue, with / for the whole value."""
    validation = Validation(
        valid=False,
        issues=(
            ValidationIssue(pointer="", keyword="type", message="not an object"),
            ValidationIssue(pointer="/x", keyword="minimum", message="too small"),
        ),
    )
    assert validation.summary() == "/: not an object\n/x: too small"


def test_raise_for_error_passes_on_success_and_raises_on_failure() -> None:
    """raise_for_error does nothing on success and raises ToolExecutionError otherwise."""
    ToolResult(success=True).raise_for_error()
    with pytest.raises(ToolExecutionError, match="the tool call failed") as info:
        ToolResult(success=False).raise_for_error()
    assert info.value.tool_name is None


def test_bound_resource_defaults_to_writable() -> None:
    """A bound resource is writable unless marked read_only."""
    workspace = BoundResource(kind="workspace", name="ws", location="/tmp/ws")
    assert workspace.read_only is False
    assert BoundResource(kind="workspace", name="ws", read_only=True).read_only
