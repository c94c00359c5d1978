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


def _twin(model: pydantic.BaseModel) -> pydantic.BaseModel:
    """The same values through full validation."""
    cls = type(model)
    return cls(**{name: getattr(model, name) for name in cls.model_fields})


@pytest.mark.parametrize(
    "output", [{"sum": 5, "label": "é"}, "plain text", [1, 2.5, None], 7, "x" * 5000]
)
def test_results_built_without_validation_equal_their_validated_twins(output: object) -> None:
    """The runtime's unvalidated construction of a result and its trace loses nothing."""
    from toolcycle import ToolExecutionTrace, ToolRuntime
    from toolcycle.testing import FakeTool

    with ToolRuntime(max_result_bytes=1000) as runtime:
        runtime.register(FakeTool(name="t", output=output))
        with runtime.plan() as ctx:
            result = runtime.execute("t", {}, ctx)
    assert result.success
    assert result.trace is not None
    for model, cls in ((result, ToolResult), (result.trace, ToolExecutionTrace)):
        assert list(model.__dict__) == list(cls.model_fields)  # every field, in order
        assert model == _twin(model)
        assert model.model_dump() == _twin(model).model_dump()
        if isinstance(output, str | int):  # hashable output: so is the result
            assert hash(model) == hash(_twin(model))
        with pytest.raises(pydantic.ValidationError):
            model.success = False  # still frozen


def test_a_result_message_reuses_the_measured_json_text() -> None:
    """to_message sends the same text the trace measured, without serialising again."""
    from toolcycle import ToolCall, ToolRuntime
    from toolcycle.testing import FakeTool

    output = {"sum": 5, "label": "é", "items": [1, 2.5, None]}
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="t", output=output))
        with runtime.plan() as ctx:
            result = runtime.call(ToolCall(id="c1", name="t", arguments={}), ctx)
    text = result.to_message()["content"]
    assert text == json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    assert result.trace is not None
    assert result.trace.result_size_bytes == len(text.encode())
    assert result._text == text
    assert result.call is not None and result.call.id == "c1"
    assert list(result.__dict__) == list(ToolResult.model_fields)
    assert result == _twin(result)
