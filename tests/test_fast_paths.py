"""The warm agent-loop call's short cuts give what the long way gives, case by case."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

from toolcycle import RedactionPolicy, ToolCall
from toolcycle.agent._calls import parse_tool_call
from toolcycle.agent._schemas import drop_absent_nulls
from toolcycle.redaction import _mask

SCHEMAS: dict[str, dict[str, Any]] = {
    "plain": {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}},
    "write-only property": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "pin": {"type": "string", "writeOnly": True}},
    },
    "marked object": {"type": "object", "writeOnly": True, "properties": {"a": {}}},
    "marked pattern": {
        "type": "object",
        "patternProperties": {"^x-": {"x-sensitive": True}},
    },
    "marked extras": {
        "type": "object",
        "properties": {"a": {}},
        "additionalProperties": {"writeOnly": True},
    },
    "marked names": {"type": "object", "propertyNames": {"writeOnly": True}},
    "no schema": {},
}
VALUES: list[dict[str, Any]] = [
    {},
    {"a": "hello", "n": 3},
    {"a": None, "n": 2.5, "flag": True},
    {"pin": "1234", "a": "x"},
    {"x-token": "abc", "a": "x"},
    {"password": "hunter2", "a": "x"},
    {"api_key": None, "a": "x"},
    {"other": "free", "a": "x"},
    {"a": {"nested": "no"}},
    {"a": ["list"]},
]


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
@pytest.mark.parametrize("value", VALUES, ids=json.dumps)
def test_masking_a_flat_object_agrees_with_the_full_walk(
    schema_name: str, value: dict[str, Any]
) -> None:
    """The flat-object short cut of masked() hides exactly what the full walk hides."""
    policy = RedactionPolicy()
    schema = SCHEMAS[schema_name]
    walked = _mask(policy, policy._reader(schema).top(), value, False)
    masked = policy.masked(value, schema)
    assert masked == walked
    assert (masked is value) == (walked is value)  # unchanged exactly when nothing hid


def test_a_flat_object_with_nothing_secret_comes_back_as_it_is() -> None:
    """Nothing to hide: masked() returns the arguments themselves, not a copy."""
    value = {"a": "hello", "n": 3}
    assert RedactionPolicy().masked(value, SCHEMAS["plain"]) is value


def test_a_secret_looking_key_in_a_flat_object_is_still_hidden() -> None:
    """The short cut never skips a key the pattern matches."""
    masked = RedactionPolicy().masked({"password": "hunter2", "a": "x"}, SCHEMAS["plain"])
    assert masked == {"password": "[redacted]", "a": "x"}


@pytest.mark.parametrize(
    "arguments",
    [{"a": "x", "b": 1}, {"a": "x", "b": None}, {"a": {"c": None}}, {"a": [None]}, {}],
    ids=json.dumps,
)
def test_dropping_nulls_from_flat_arguments_agrees_with_the_walk(arguments: dict[str, Any]) -> None:
    """Flat arguments without a null come back unchanged; the rest as the walk makes them."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "array"}]},
            "b": {"type": "integer"},
        },
        "required": ["a"],
    }
    dropped = drop_absent_nulls(arguments, schema)
    expected = {
        key: value for key, value in arguments.items() if not (key == "b" and value is None)
    }
    assert dropped == expected


@pytest.mark.parametrize(
    "raw",
    [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
        {"type": "function_call", "call_id": 7, "name": "add", "arguments": ""},
        {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": [1, None]}},
        {"functionCall": {"name": "add", "args": {"x": "y"}}},
        {"method": "tools/call", "id": 3, "params": {"name": "add", "arguments": {}}},
        {"name": "add", "arguments": {"k": True}},
    ],
    ids=lambda raw: next(iter(raw)),
)
def test_a_parsed_tool_call_equals_its_validated_twin(raw: dict[str, Any]) -> None:
    """The call built without validation is the call pydantic would build, field by field."""
    call, problem = parse_tool_call(raw)
    assert problem is None and call is not None
    twin = ToolCall(**{name: getattr(call, name) for name in ToolCall.model_fields})
    assert call == twin
    assert call.model_dump() == twin.model_dump()
    assert list(call.__dict__) == list(ToolCall.model_fields)
    with pytest.raises(pydantic.ValidationError):
        call.name = "other"  # still frozen


def test_a_parsed_call_keeps_its_own_copy_of_the_callers_arguments() -> None:
    """Changing the caller's dict afterwards leaves the parsed call as it was."""
    arguments = {"a": 1}
    call, _ = parse_tool_call({"name": "add", "arguments": arguments})
    arguments["a"] = 2
    assert call is not None and call.arguments == {"a": 1}


def test_the_verdicts_a_policy_remembers_on_keys_stay_bounded() -> None:
    """A model sending ever new argument names cannot grow the policy's memory without end."""
    from toolcycle.redaction import _MAX_KEYS

    policy = RedactionPolicy()
    for index in range(_MAX_KEYS + 10):
        policy.masked({f"key{index}": "value"}, {})
    assert len(policy._hits) <= _MAX_KEYS
    assert policy.masked({"password": "x" * 8}, {}) == {"password": "[redacted]"}


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_one_policy_masking_many_calls_agrees_with_the_full_walk_every_time(
    schema_name: str,
) -> None:
    """What a policy remembers from earlier calls never changes a later verdict."""
    policy = RedactionPolicy()
    schema = SCHEMAS[schema_name]
    for value in [*VALUES, *reversed(VALUES), *VALUES]:
        walked = _mask(policy, policy._reader(schema).top(), value, False)
        assert policy.masked(value, schema) == walked
