"""Steps for Python functions made into tools with @tool.

No ``from __future__ import annotations`` here: behave runs step files without
registering them as modules, so pydantic could not resolve string annotations.
"""

import enum
import json
from typing import Annotated, Any

from behave import given, then, when
from pydantic import BaseModel, Field

from toolcycle import CancellationToken, ToolDefinitionError, ToolExecutionContext, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Reading(BaseModel):
    value: float
    unit: Unit = Unit.CELSIUS


def _convert(reading: Reading, to: Unit) -> Reading:
    """Convert a temperature reading.

    Args:
        reading: the reading to convert.
        to: the unit wanted.
    """
    if reading.unit is to:
        return reading
    value = reading.value * 9 / 5 + 32 if to is Unit.FAHRENHEIT else (reading.value - 32) * 5 / 9
    return Reading(value=round(value, 2), unit=to)


def _repeat(text: str, times: Annotated[int, Field(ge=1, le=3)] = 1) -> str:
    """Repeat a text.

    Parameters
    ----------
    text : str
        what to repeat.
    times : int
        how often.
    """
    return text * times


def _whoami(label: str, context: ToolExecutionContext, token: CancellationToken) -> dict[str, Any]:
    """Report the plan the call runs in.

    :param label: a label to echo.
    """
    return {"label": label, "plan": context.plan_id, "cancelled": token.is_cancelled}


async def _shout(text: str) -> str:
    """Shout a text, asynchronously."""
    return text.upper()


FUNCTIONS = {
    "convert": _convert,
    "repeat": _repeat,
    "whoami": _whoami,
    "shout": _shout,
}


def _star(*values: int) -> int:
    return sum(values)


def _keywords(**options: str) -> None:
    return None


def _positional(a: int, /) -> int:
    return a


class _Opaque:
    pass


def _opaque(thing: _Opaque) -> None:
    return None


BAD = {"*args": _star, "**kwargs": _keywords, "positional-only": _positional, "opaque": _opaque}


@given('the function tool "{name:Name}"')
def function_tool(context: Any, name: str) -> None:
    instance = tool(name=name, writes=False, checkpointable=True)(FUNCTIONS[name])
    context.tools[name] = instance
    context.runtime.register(instance)


@when("I decorate a function that takes {kind}")
def decorate_bad(context: Any, kind: str) -> None:
    try:
        tool(BAD[kind])
    except ToolDefinitionError as exc:
        context.error = exc
    else:  # pragma: no cover - the Then step reports the missing error
        context.error = None


@then('the decoration fails saying "{text}"')
def decoration_fails(context: Any, text: str) -> None:
    assert isinstance(context.error, ToolDefinitionError), context.error
    assert text in str(context.error), str(context.error)


def _schema(context: Any, name: str) -> dict[str, Any]:
    return context.runtime.descriptor(name).input_schema


@then('the description of "{name:Name}" is "{text}"')
def tool_description(context: Any, name: str, text: str) -> None:
    assert context.runtime.descriptor(name).description == text


@then('the input schema of "{name:Name}" requires {fields}')
def schema_requires(context: Any, name: str, fields: str) -> None:
    expected = [f.strip().strip('"') for f in fields.split(",")]
    assert _schema(context, name).get("required", []) == expected, _schema(context, name)


@then('property "{prop}" of "{name:Name}" is described as "{text}"')
def property_description(context: Any, prop: str, name: str, text: str) -> None:
    assert _schema(context, name)["properties"][prop]["description"] == text


@then('property "{prop}" of "{name:Name}" allows {low:d} to {high:d}')
def property_bounds(context: Any, prop: str, name: str, low: int, high: int) -> None:
    schema = _schema(context, name)["properties"][prop]
    assert (schema["minimum"], schema["maximum"]) == (low, high), schema


@then('the input schema of "{name:Name}" lists only {fields}')
def schema_properties(context: Any, name: str, fields: str) -> None:
    expected = {f.strip().strip('"') for f in fields.split(",")}
    assert set(_schema(context, name)["properties"]) == expected


@then('"{name:Name}" has an output schema with the $defs {defs}')
def output_defs(context: Any, name: str, defs: str) -> None:
    output = context.runtime.descriptor(name).output_schema
    assert output is not None
    names = {d.strip().strip('"') for d in defs.split(",")}
    assert set(output.get("$defs", {})) == names, output


@then("the output equals {output} with the plan id filled in")
def output_with_plan(context: Any, output: str) -> None:
    expected = json.loads(output)
    expected["plan"] = context.plan.plan_id
    assert context.result.output == expected, context.result.output
