"""Steps about error classes, registration failures and what errors carry."""

from __future__ import annotations

import json
from typing import Any

from behave import then, when

import toolcycle
from toolcycle.testing import FakeTool


def _attempt(context: Any, action: Any) -> None:
    context.error = None
    try:
        action()
    except (
        toolcycle.ToolRuntimeError,
        toolcycle.ToolSchemaValidationError,
        toolcycle.ToolCancelledError,
    ) as exc:
        context.error = exc


class BrokenDiscovery(FakeTool):
    def discover(self) -> toolcycle.ToolDescriptor:
        raise RuntimeError("cannot describe myself")


@when('I register a tool "{name:Name}" whose input schema is {schema}')
def register_with_schema(context: Any, name: str, schema: str) -> None:
    tool = FakeTool(name=name, input_schema=json.loads(schema))
    _attempt(context, lambda: context.runtime.register(tool))


@when('I register another tool named "{name:Name}"')
def register_duplicate(context: Any, name: str) -> None:
    _attempt(context, lambda: context.runtime.register(FakeTool(name=name)))


@when("I register a tool whose discover raises")
def register_broken_discovery(context: Any) -> None:
    _attempt(context, lambda: context.runtime.register(BrokenDiscovery(name="broken")))


@when("I register a lambda as a tool")
def register_lambda(context: Any) -> None:
    _attempt(context, lambda: context.runtime.register(lambda text: text))


@when('I unregister the tool "{name:Name}"')
def unregister_tool(context: Any, name: str) -> None:
    _attempt(context, lambda: context.runtime.unregister(name))


@then('the runtime lists the tool "{name:Name}"')
def runtime_lists(context: Any, name: str) -> None:
    assert name in [d.name for d in context.runtime.descriptors()]


@then('the runtime does not list the tool "{name:Name}"')
def runtime_does_not_list(context: Any, name: str) -> None:
    assert name not in [d.name for d in context.runtime.descriptors()]


@then('the schema error points at "{pointer}"')
def schema_error_points(context: Any, pointer: str) -> None:
    validation = context.error.validation
    assert validation is not None and not validation.valid
    assert pointer in [issue.pointer for issue in validation.issues], validation


@then('the error names tool "{name:Name}" and plan "{plan_id:Name}"')
def error_names(context: Any, name: str, plan_id: str) -> None:
    assert (context.error.tool_name, context.error.plan_id) == (name, plan_id), context.error


@then('the error message mentions "{text}"')
def error_mentions(context: Any, text: str) -> None:
    assert text in str(context.error), str(context.error)


@then("the error is caused by {cause}")
def error_cause(context: Any, cause: str) -> None:
    assert type(context.error.__cause__).__name__ == cause, repr(context.error.__cause__)


@then('the error carries the reason "{reason}"')
def error_reason(context: Any, reason: str) -> None:
    assert context.error.reason == reason, context.error.reason


@then("the class {child} is a {parent}")
def class_is_a(context: Any, child: str, parent: str) -> None:
    assert issubclass(getattr(toolcycle, child), getattr(toolcycle, parent))


@then("the class {child} is not a ToolRuntimeError")
def class_is_not_runtime_error(context: Any, child: str) -> None:
    assert not issubclass(getattr(toolcycle, child), toolcycle.ToolRuntimeError)


@then("the class {child} can be caught as Exception")
def class_is_exception(context: Any, child: str) -> None:
    assert issubclass(getattr(toolcycle, child), Exception)


@then("the package exports {name}")
def package_exports(context: Any, name: str) -> None:
    assert name in toolcycle.__all__


@then("the handler did not catch it and ToolCancelledError escaped")
def handler_missed(context: Any) -> None:
    assert context.caught is None, repr(context.caught)
    assert isinstance(context.error, toolcycle.ToolCancelledError), repr(context.error)
