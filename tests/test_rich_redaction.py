"""Redaction of text parts: a secret echoed back is hidden, and no secret costs no walk."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    RedactionPolicy,
    Text,
    ToolDescriptor,
    ToolExecutionContext,
    ToolReturn,
    ToolRuntime,
)

SECRET = "pin-4321-9876"


class Echo:
    """A tool that shows the model each argument value in a text part of its own."""

    def __init__(self, schema: dict[str, Any], parts: int = 1) -> None:
        self.schema = schema
        self.parts = parts

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="echo", capability={"writes": False}, input_schema=self.schema)

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        texts = [f"got {value}" for value in params.values()] * self.parts
        return ToolReturn(value={"n": len(params)}, content=[Text(text) for text in texts])

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


class Key(StrEnum):
    """An argument name given as a str subclass, which normalisation turns into a str."""

    PIN = "pin"


def _run(schema: dict[str, Any], arguments: dict[Any, Any], parts: int = 1) -> tuple[Text, ...]:
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(Echo(schema, parts))
        with runtime.plan() as ctx:
            result = runtime.execute("echo", arguments, ctx)
    assert result.success, result.error
    return result.content  # type: ignore[return-value]


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The arguments every search of a call's arguments for secrets was given."""
    seen: list[Any] = []
    search = RedactionPolicy.secrets

    def counted(self: RedactionPolicy, arguments: Any, schema: Any) -> tuple[str, ...]:
        seen.append(arguments)
        return search(self, arguments, schema)

    monkeypatch.setattr(RedactionPolicy, "secrets", counted)
    return seen


def test_a_secret_under_a_sensitive_key_is_hidden_in_every_text_part() -> None:
    """The key pattern's secret, echoed in several parts, is redacted in each."""
    content = _run({"type": "object"}, {"api_token": SECRET, "city": "Oslo"}, parts=3)
    assert [part.text for part in content] == ["got [redacted]", "got Oslo"] * 3


def test_a_secret_marked_by_the_schema_is_hidden_in_a_text_part() -> None:
    """A writeOnly argument with an innocent name is still a secret of the call."""
    schema = {"type": "object", "properties": {"code": {"type": "string", "writeOnly": True}}}
    assert _run(schema, {"code": SECRET}) == (Text("got [redacted]"),)


def test_a_nested_secret_is_hidden_in_a_text_part() -> None:
    """A secret inside an object argument is found by the walk."""
    content = _run({"type": "object"}, {"auth": {"password": SECRET}})
    assert SECRET not in content[0].text
    assert "[redacted]" in content[0].text


def test_a_str_subclass_key_is_judged_as_its_plain_name() -> None:
    """An argument named by a StrEnum member gets the mark its plain name has."""
    schema = {"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}}}
    assert _run(schema, {Key.PIN: SECRET}) == (Text("got [redacted]"),)


def test_arguments_with_no_secret_are_not_walked_for_text_parts(walks: list[Any]) -> None:
    """Plain arguments that nothing marks pass every text part as it is, with no walk."""
    content = _run({"type": "object"}, {"city": "Oslo", "days": 3, "metric": True}, parts=4)
    assert [part.text for part in content] == ["got Oslo", "got 3", "got True"] * 4
    assert walks == []


def test_arguments_with_a_secret_are_walked_once_for_all_text_parts(walks: list[Any]) -> None:
    """The arguments are searched once per call, however many parts quote them."""
    content = _run({"type": "object"}, {"password": SECRET, "city": "Oslo"}, parts=5)
    assert [part.text for part in content] == ["got [redacted]", "got Oslo"] * 5
    assert walks == [{"password": SECRET, "city": "Oslo"}]


def test_hides_nothing_is_true_only_for_a_flat_object_that_nothing_marks() -> None:
    """The quick verdict never says "nothing" where the walk finds a secret."""
    policy = RedactionPolicy()
    marked = {"type": "object", "properties": {"code": {"writeOnly": True}}}
    hidden_keys = {"type": "object", "propertyNames": {"x-sensitive": True}}
    cases: list[tuple[Any, dict[str, Any], bool]] = [
        ({"city": "Oslo", "days": 3, "ratio": 0.5, "on": False, "none": None}, {}, True),
        ({"max_tokens": 512}, {}, True),  # a safe key
        ({"api_token": "tok-123"}, {}, False),
        ({"code": "abc-123"}, marked, False),
        ({"city": "Oslo"}, hidden_keys, False),
        ({"city": {"name": "Oslo"}}, {}, False),  # nested: the walk decides
        ({"cities": ["Oslo"]}, {}, False),
        ({Key.PIN: "4321"}, {}, False),  # not a plain str key
        ([("city", "Oslo")], {}, False),  # not an object
    ]
    for arguments, schema, verdict in cases:
        assert policy.hides_nothing(arguments, schema) is verdict, arguments
        if verdict:
            assert policy.secrets(arguments, schema) == ()


def test_hides_nothing_follows_the_policy() -> None:
    """Without a key pattern a sensitive-looking key hides nothing; a schema mark still does."""
    policy = RedactionPolicy(key_pattern=None)
    assert policy.hides_nothing({"api_token": "tok-123"}, {})
    marked = {"type": "object", "properties": {"api_token": {"x-sensitive": True}}}
    assert not policy.hides_nothing({"api_token": "tok-123"}, marked)
