"""The error hierarchy is exactly the documented tree."""

from __future__ import annotations

import pytest

import toolcycle
from toolcycle import errors

RUNTIME_ERRORS = [
    "ToolAccessDeniedError",
    "ToolCheckpointRequiredError",
    "ToolNotActivatedError",
    "ToolActivationError",
    "ToolExecutionError",
    "ToolDeactivationError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolRegistrationError",
]


@pytest.mark.parametrize("name", RUNTIME_ERRORS)
def test_runtime_errors_derive_from_tool_runtime_error(name: str) -> None:
    """Every node under ToolRuntimeError derives from it directly."""
    cls = getattr(toolcycle, name)
    assert cls.__bases__ == (toolcycle.ToolRuntimeError,)


@pytest.mark.parametrize("name", ["ToolCancelledError", "ToolSchemaValidationError"])
def test_standalone_errors_are_not_runtime_errors(name: str) -> None:
    """Cancellation and schema errors stand apart from ToolRuntimeError."""
    cls = getattr(toolcycle, name)
    assert not issubclass(cls, toolcycle.ToolRuntimeError)
    assert issubclass(cls, Exception)


def test_definition_error_is_a_registration_error() -> None:
    """A bad function definition is a kind of registration failure."""
    assert toolcycle.ToolDefinitionError.__bases__ == (toolcycle.ToolRegistrationError,)


def test_errors_carry_tool_and_plan_context() -> None:
    """Context attributes are keyword-only and default to None."""
    error = toolcycle.ToolActivationError("failed", tool_name="t", plan_id="p")
    assert (error.tool_name, error.plan_id, str(error)) == ("t", "p", "failed")
    bare = toolcycle.ToolRuntimeError("x")
    assert bare.tool_name is None and bare.plan_id is None


def test_cancelled_error_has_a_default_message_and_reason() -> None:
    """ToolCancelledError defaults to a plain message and keeps its reason."""
    error = toolcycle.ToolCancelledError(reason="user")
    assert str(error) == "the plan was cancelled" and error.reason == "user"


def test_schema_error_carries_validation_and_kind() -> None:
    """ToolSchemaValidationError keeps the Validation and which schema failed."""
    validation = toolcycle.Validation(valid=False)
    error = toolcycle.ToolSchemaValidationError("bad", validation=validation, schema_kind="output")
    assert error.validation is validation and error.schema_kind == "output"


def test_every_error_is_drawn_in_the_module_docstring() -> None:
    """The tree in the errors module docstring names every exported error."""
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        assert name in doc
