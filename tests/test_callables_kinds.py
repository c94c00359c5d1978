"""Wrapped callables beyond plain functions, and values of theirs that JSON cannot carry."""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from toolcycle import AsyncFunctionTool, ToolDefinitionError, ToolRuntime, wrap


def _scale(value: int, factor: float = 1.0) -> float:
    """Scale a value.

    Args:
        value: what to scale.
        factor: by how much.
    """
    return value * factor


async def _ascale(value: int, factor: float = 1.0) -> float:
    """Scale a value, asynchronously."""
    return value * factor


class _AsyncScaler:
    """Scale values on the event loop."""

    async def __call__(self, value: int) -> float:
        await asyncio.sleep(0)
        return value * 2.0


def test_a_partial_keeps_the_annotations_and_docstring_of_its_function() -> None:
    """A partial's schema has its function's types and descriptions, not ``{}`` and partial's doc."""
    doubled = wrap(functools.partial(_scale, factor=2.0), name="double", writes=False)
    descriptor = doubled.discover()
    assert descriptor.description == "Scale a value."
    assert descriptor.input_schema["properties"]["value"] == {
        "type": "integer",
        "description": "what to scale.",
    }
    assert descriptor.input_schema["properties"]["factor"]["default"] == 2.0
    assert descriptor.output_schema == {"type": "number"}
    with ToolRuntime() as runtime:
        runtime.register(doubled)
        with runtime.plan(read_only=True) as ctx:
            assert runtime.execute("double", {"value": 3}, ctx).output == 6.0
            refused = runtime.execute("double", {"value": "3"}, ctx)
    assert refused.validation is not None
    assert [(i.pointer, i.keyword) for i in refused.validation.issues] == [("/value", "type")]


def test_a_partial_of_an_async_function_is_described_by_that_function() -> None:
    """A partial of an ``async def`` is awaited, and described by the function it binds."""
    tool = wrap(functools.partial(_ascale, factor=3.0), name="triple", writes=False)
    assert isinstance(tool, AsyncFunctionTool)
    assert tool.discover().description == "Scale a value, asynchronously."
    assert tool.discover().input_schema["properties"]["value"]["type"] == "integer"


def test_an_object_with_an_async_call_method_is_awaited() -> None:
    """An instance whose ``__call__`` is ``async def`` runs as an async tool, not a coroutine leak."""
    tool = wrap(_AsyncScaler(), name="scaler", writes=False)
    assert isinstance(tool, AsyncFunctionTool)
    with ToolRuntime() as runtime:
        runtime.register(tool)
        with runtime.plan(read_only=True) as ctx:
            result = runtime.execute("scaler", {"value": 4}, ctx)
    assert result.success, result.error
    assert result.output == 8.0


def _numbers(count: int) -> Iterator[int]:
    """Count up."""
    yield from range(count)


def _untyped_numbers(count: int):  # type: ignore[no-untyped-def]
    """Count up, without saying what comes back."""
    yield from range(count)


async def _stream(count: int) -> AsyncIterator[int]:
    """Count up, asynchronously."""
    for number in range(count):
        yield number


class _Streamer:
    """Stream numbers."""

    async def __call__(self, count: int) -> AsyncIterator[int]:
        yield count


@pytest.mark.parametrize(
    ("fn", "kind"),
    [
        (_numbers, "a generator"),
        (_untyped_numbers, "a generator"),
        (_stream, "an async generator"),
        (_Streamer(), "an async generator"),
    ],
    ids=["generator", "untyped-generator", "async-generator", "async-generator-object"],
)
def test_generator_functions_are_refused_where_they_are_wrapped(fn: object, kind: str) -> None:
    """A function that yields cannot be a tool; it is refused at once, with what to do instead."""
    with pytest.raises(ToolDefinitionError) as caught:
        wrap(fn, name="numbers")  # type: ignore[arg-type]
    assert f"is {kind} function" in str(caught.value)
    assert "return a list" in str(caught.value)


def _raw() -> bytes:
    """Read raw bytes."""
    return b"\xff\x00"


def _huge() -> float:
    """Compute a huge number."""
    return 10**400  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("fn", "cause"),
    [(_raw, "UnicodeDecodeError"), (_huge, "OverflowError")],
    ids=["bytes-not-utf8", "int-too-big-for-float"],
)
def test_a_result_its_annotation_cannot_serialise_fails_as_output_that_is_not_json(
    fn: object, cause: str
) -> None:
    """The call fails with ``ToolOutputError``, as any non-JSON output does, naming the cause."""
    tool = wrap(fn, writes=False)  # type: ignore[arg-type]
    with ToolRuntime() as runtime:
        runtime.register(tool)
        with runtime.plan(read_only=True) as ctx:
            result = runtime.execute(tool.name, {}, ctx)
    assert not result.success
    assert result.error_type == "ToolOutputError"
    assert result.error is not None
    assert result.error.startswith(f"tool {tool.name!r} returned output that is not JSON: {cause}")


class _Reading(BaseModel):
    value: float = math.nan


def _limitless(x: float = math.inf, y: int = 1) -> float:
    """Use a default JSON cannot carry."""
    return x


def _unread() -> _Reading:
    """Return a model whose default JSON cannot carry."""
    return _Reading()


def test_a_default_of_nan_or_infinity_is_refused_where_the_function_is_wrapped() -> None:
    """The schema could not be sent to a model; the definition fails, naming the parameter."""
    with pytest.raises(ToolDefinitionError, match="parameter 'x' of tool '_limitless'.*NaN"):
        wrap(_limitless)
    with pytest.raises(ToolDefinitionError, match="return annotation of tool '_unread'.*NaN"):
        wrap(_unread)
