"""Property: no hostile value, argument text or schema makes a public entry point raise.

Every entry point a model, a tool or a source can reach (execute, aexecute,
call, acall, call_many, acall_many, register and tool_definitions in every
format) is fed values nested 1..20,000 deep, 10^5-element arrays,
10^6-character strings, 5,000-digit integers, NaN and the infinities, lone
surrogates in values and keys, keys that are not strings and containers whose
reading raises, on both validation backends. Each answers with a `ToolResult`
(or, for register, with the documented `ToolSchemaValidationError`).

Every test runs on each backend both without a redaction policy and with the
default one, whose walks (masking ``result.call``, finding secrets to scrub
from messages) read the same hostile values first.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcycle import (
    ToolDescriptor,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
    ToolSchemaValidationError,
)
from toolcycle.testing import FakeTool

from .strategies import hostile_json_texts, hostile_schemas, hostile_values

BACKENDS = ("jsonschema", "jsonschema-rs")
FORMATS = ("openai", "openai-responses", "anthropic", "gemini", "mcp")

# Few examples, each of them large: the whole file stays well under a minute.
HOSTILE = settings(
    max_examples=30, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

_names = itertools.count()


class Emitting:
    """A tool that returns whatever value it was built with, as its output."""

    def __init__(self, output: Any) -> None:
        self.output = output

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="emit", capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return self.output

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


class Declaring(Emitting):
    """A tool whose descriptor declares a given input schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__("ok")
        self.descriptor = ToolDescriptor.model_construct(
            **{**ToolDescriptor(name=f"declared{next(_names)}").__dict__, "input_schema": schema}
        )

    def discover(self) -> ToolDescriptor:
        return self.descriptor


@pytest.fixture(
    scope="module",
    params=[(backend, redacted) for backend in BACKENDS for redacted in (False, True)],
    ids=lambda param: f"{param[0]}-{'redacted' if param[1] else 'plain'}",
)
def runtime(request: pytest.FixtureRequest) -> Iterator[ToolRuntime]:
    """One runtime per backend and redaction: an echoing tool and one that needs approval."""
    backend, redacted = request.param
    options: dict[str, Any] = {} if redacted else {"redaction": None}
    with ToolRuntime(validator=backend, **options) as built:
        built.register(FakeTool(name="echo", output=lambda params, ctx: params))
        built.register(FakeTool(name="guarded", writes=True, output="done"))
        yield built


def _answered(result: Any) -> None:
    assert isinstance(result, ToolResult)
    assert result.trace is not None
    if not result.success:
        assert result.error  # every failure says what went wrong
        result.error.encode("utf-8")  # ... in valid Unicode


def _plain(arguments: Any) -> dict[str, Any]:
    return {"id": "c1", "name": "echo", "arguments": arguments}


def _openai(arguments: str) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": arguments}}


@HOSTILE
@given(arguments=hostile_values())
def test_execute_answers_any_hostile_arguments(runtime: ToolRuntime, arguments: Any) -> None:
    """The execute twins, with and without an approval step, return a result."""
    with runtime.plan(approver=lambda request: True) as ctx:
        _answered(runtime.execute("echo", arguments, ctx))
        _answered(runtime.execute("guarded", arguments, ctx))
        _answered(asyncio.run(runtime.aexecute("echo", arguments, ctx)))


@HOSTILE
@given(output=hostile_values())
def test_a_hostile_output_is_answered(runtime: ToolRuntime, output: Any) -> None:
    """Whatever a tool returns, the call answers with a result."""
    emitting = Emitting(output["x"])
    runtime.register(emitting)
    try:
        with runtime.plan() as ctx:
            _answered(runtime.execute("emit", {}, ctx))
    finally:
        runtime.unregister("emit")


@HOSTILE
@given(arguments=hostile_values())
def test_model_calls_with_hostile_arguments_are_answered(
    runtime: ToolRuntime, arguments: Any
) -> None:
    """call, acall, call_many and acall_many answer every call, and a batch keeps the rest."""
    calls = [_plain(arguments), {**_plain({"fine": 1}), "id": "c2"}]
    with runtime.plan() as ctx:
        _answered(runtime.call(calls[0], ctx))
        _answered(asyncio.run(runtime.acall(calls[0], ctx)))
        results = runtime.call_many(calls, ctx)
        results += asyncio.run(runtime.acall_many(calls, ctx))
    for result in results:
        _answered(result)
    assert results[1].success and results[3].success


@HOSTILE
@given(text=hostile_json_texts())
def test_model_calls_with_hostile_json_texts_are_answered(runtime: ToolRuntime, text: str) -> None:
    """Raw argument texts that are deep, huge or past the number limits are answered."""
    calls = [_openai(text), {**_openai('{"fine": 1}'), "id": "c2"}]
    with runtime.plan() as ctx:
        _answered(runtime.call(calls[0], ctx))
        _answered(asyncio.run(runtime.acall(calls[0], ctx)))
        results = runtime.call_many(calls, ctx)
        results += asyncio.run(runtime.acall_many(calls, ctx))
    for result in results:
        _answered(result)
    assert results[1].success and results[3].success


@HOSTILE
@given(schema=hostile_schemas())
def test_a_hostile_schema_registers_or_is_refused_as_documented(
    runtime: ToolRuntime, schema: dict[str, Any]
) -> None:
    """A register gives a descriptor or ToolSchemaValidationError; definitions never raise."""
    declaring = Declaring(schema)
    try:
        descriptor = runtime.register(declaring)
    except ToolSchemaValidationError:
        return
    try:
        with runtime.plan() as ctx:
            for format_, strict in itertools.product(FORMATS, (False, True)):
                definitions = runtime.tool_definitions(ctx, format=format_, strict=strict)
                assert len(definitions) == len(runtime.descriptors())
            _answered(runtime.execute(descriptor.name, {"a": {}}, ctx))
    finally:
        runtime.unregister(descriptor.name)


@HOSTILE
@given(
    key=st.sampled_from(["\ud800", "a\udfff", "\udc80z"]),
    value=st.sampled_from([1, "v", None]),
)
def test_both_backends_give_the_same_verdict_on_lone_surrogate_keys(key: str, value: Any) -> None:
    """A lone surrogate as a key is refused, with the same issue, on either backend."""
    issues = []
    for backend in BACKENDS:
        with ToolRuntime(validator=backend, redaction=None) as one:  # type: ignore[arg-type]
            one.register(FakeTool(name="echo"))
            with one.plan() as ctx:
                result = one.execute("echo", {"x": {key: value}}, ctx)
        assert not result.success and result.validation is not None
        issues.append(result.validation.issues)
    assert issues[0] == issues[1]
    assert issues[0][0].keyword == "unicode"
