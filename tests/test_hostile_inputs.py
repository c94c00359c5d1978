"""Hostile values at every stage: each is answered with a failed result, never raised."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from toolcycle import (
    RedactionPolicy,
    ToolActivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRegistrationError,
    ToolRuntime,
    ToolSchemaValidationError,
    ValidationLimits,
)
from toolcycle.agent._schemas import drop_absent_nulls, openai_strict
from toolcycle.errors import error_text
from toolcycle.testing import FakeTool
from toolcycle.validation._json import JSONCompatibilityError, normalize

BOTH = ("jsonschema", "jsonschema-rs")


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _openai(arguments: str, name: str = "fake") -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


def _brackets(depth: int) -> str:
    return '{"x":' + "[" * depth + "]" * depth + "}"


class RaisingMapping(Mapping[str, Any]):
    """A mapping whose every read raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no reading")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no reading")

    def __len__(self) -> int:
        return 1


class RaisingList(list[Any]):
    """A list whose iteration raises."""

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("no iterating")


class Undumpable(BaseModel):
    """A model whose dump raises a RuntimeError."""

    def model_dump(self, **options: Any) -> dict[str, Any]:
        raise RuntimeError("no dumping")


class Unprintable(Exception):
    """An exception whose message cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class Described:
    """A tool that returns whatever descriptor it was given."""

    def __init__(self, descriptor: ToolDescriptor) -> None:
        self.descriptor = descriptor

    def discover(self) -> ToolDescriptor:
        return self.descriptor

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return "ok"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.fixture(params=BOTH)
def plain(request: pytest.FixtureRequest) -> Iterator[ToolRuntime]:
    """A runtime on each backend, without a redaction policy (its walk is tested apart)."""
    with ToolRuntime(validator=request.param, redaction=None) as runtime:
        runtime.register(FakeTool(output=lambda params, ctx: params))
        yield runtime


# -- model calls: the JSON decoder ---------------------------------------------------------


def test_json_arguments_nested_past_the_decoder_are_answered(plain: ToolRuntime) -> None:
    """20,000 levels of brackets: json.loads gives up, and the call says why."""
    with plain.plan() as ctx:
        result = plain.call(_openai(_brackets(20_000)), ctx)
    assert not result.success
    assert result.error_type == "ToolCallError"
    assert "nest too deeply to be read" in (result.error or "")


def test_call_many_keeps_the_batch_when_one_call_nests_past_the_decoder(
    plain: ToolRuntime,
) -> None:
    """One unreadable call in a batch fails alone; the others run."""
    calls = [_openai(_brackets(20_000)), {**_openai('{"n": 1}'), "id": "c2"}]
    with plain.plan() as ctx:
        first, second = plain.call_many(calls, ctx)
    assert not first.success and "nest too deeply" in (first.error or "")
    assert second.success and second.output == {"n": 1}


def test_json_arguments_with_a_5000_digit_integer_are_refused_clearly(plain: ToolRuntime) -> None:
    """The decoder's digit limit is reported in our words, and the process limit is untouched."""
    limit = sys.get_int_max_str_digits()
    with plain.plan() as ctx:
        result = plain.call(_openai('{"n": ' + "9" * 5000 + "}"), ctx)
    assert not result.success
    assert "more digits than can be read" in (result.error or "")
    assert sys.get_int_max_str_digits() == limit


def test_call_arguments_given_as_objects_must_be_plain_json_data(plain: ToolRuntime) -> None:
    """A container of another class in a call's arguments is refused before anything reads it."""
    call = {"type": "tool_use", "id": "c1", "name": "fake", "input": {"x": RaisingMapping()}}
    with plain.plan() as ctx:
        result = plain.call(call, ctx)
    assert not result.success
    assert "must be plain JSON data, got a RaisingMapping" in (result.error or "")


# -- execute: the arguments ----------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [{"x": RaisingMapping()}, RaisingMapping(), {"x": RaisingList([1])}],
    ids=["nested", "top", "list"],
)
def test_arguments_that_raise_while_read_are_invalid_input(plain: ToolRuntime, params: Any) -> None:
    """A container that raises while it is read fails validation, naming where and why."""
    with plain.plan() as ctx:
        result = plain.execute("fake", params, ctx)
    assert not result.success
    assert result.error_type == "ToolSchemaValidationError"
    assert "raised RuntimeError" in (result.error or "")


def test_arguments_that_raise_under_a_redaction_policy_are_refused_by_name() -> None:
    """Redaction reads around a container that raises; the refusal names the failure."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool())
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {"password": RaisingMapping()}, ctx)
    assert not result.success
    assert result.error_type == "ToolSchemaValidationError"
    assert "reading the RaisingMapping raised RuntimeError" in (result.error or "")


def test_arguments_redaction_cannot_search_withhold_the_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the search for secrets fails, no message quoting the arguments is shown."""

    def cannot_search(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("cannot search")

    monkeypatch.setattr(RedactionPolicy, "secrets", cannot_search)
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(input_schema={"type": "object", "required": ["pin"]}))
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {"token": "sk-123"}, ctx)
    assert not result.success
    assert "[withheld" in (result.error or "") and "sk-123" not in (result.error or "")


def test_a_key_too_long_to_convert_to_text_is_invalid_input(plain: ToolRuntime) -> None:
    """An integer key past Python's digit limit is described, not converted."""
    with plain.plan() as ctx:
        result = plain.execute("fake", {"x": {10**5000: 1}}, ctx)
    assert not result.success
    assert "object keys must be strings, got int <an integer of" in (result.error or "")


@pytest.mark.parametrize(
    ("params", "pointer"),
    [({"x": "a\ud800"}, "/x"), ({"x": {"k\udc00": 1}}, "/x/k\\udc00")],
    ids=["value", "key"],
)
def test_a_lone_surrogate_is_refused_alike_by_both_backends(
    plain: ToolRuntime, params: dict[str, Any], pointer: str
) -> None:
    """Invalid Unicode gets the same verdict and issue on either backend."""
    with plain.plan() as ctx:
        result = plain.execute("fake", params, ctx)
    assert not result.success
    assert result.validation is not None
    (issue,) = result.validation.issues
    assert (issue.pointer, issue.keyword) == (pointer, "unicode")
    (result.error or "").encode("utf-8")  # the message is valid Unicode


@pytest.mark.parametrize("backend", BOTH)
def test_a_call_that_needs_approval_with_a_lone_surrogate_is_answered(backend: Any) -> None:
    """The approval fingerprint never sees text UTF-8 cannot hold: validation refuses it first."""
    with ToolRuntime(validator=backend, redaction=None) as runtime:
        runtime.register(FakeTool(name="w", writes=True))
        with runtime.plan(approver=lambda request: True) as ctx:
            result = runtime.execute("w", {"x": "\udc80"}, ctx)
    assert not result.success
    assert "lone surrogate" in (result.error or "")


def test_a_call_that_needs_approval_with_an_integer_past_the_digit_limit_runs() -> None:
    """With max_integer_bits raised, the fingerprint writes a 6,000-digit integer itself."""
    limits = ValidationLimits(max_integer_bits=20_000)
    seen: list[str] = []
    with ToolRuntime(limits=limits, redaction=None) as runtime:
        runtime.register(FakeTool(name="w", writes=True, output="done"))

        def approver(request: Any) -> bool:
            seen.append(request.fingerprint)
            return True

        with runtime.plan(approver=approver) as ctx:
            result = runtime.execute("w", {"n": 10**6000}, ctx)
    assert result.success, result.error
    assert seen and seen[0].startswith("sha256:")


# -- the tool's output and errors ----------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "needle"),
    [
        (RaisingList([1]), "reading the RaisingList raised RuntimeError"),
        ({"m": Undumpable()}, "the Undumpable model cannot be serialised"),
        ({"r": RaisingMapping()}, "reading the RaisingMapping raised RuntimeError"),
    ],
    ids=["iteration", "model_dump", "mapping"],
)
def test_an_output_that_raises_while_read_is_a_failed_result(
    plain: ToolRuntime, output: Any, needle: str
) -> None:
    """Any exception while the output is read makes the call fail as ToolOutputError."""
    plain.register(FakeTool(name="out", output=output))
    with plain.plan() as ctx:
        result = plain.execute("out", {}, ctx)
    assert not result.success
    assert result.error_type == "ToolOutputError"
    assert needle in (result.error or "")


def test_a_tool_error_whose_message_raises_is_a_failed_result(plain: ToolRuntime) -> None:
    """An exception with a broken __str__ is described by its type."""
    plain.register(FakeTool(name="bad", execute_error=Unprintable()))
    with plain.plan() as ctx:
        result = plain.execute("bad", {}, ctx)
    assert not result.success
    assert result.error_type == "Unprintable"
    assert "could not be read" in (result.error or "")


# -- schemas and descriptors ---------------------------------------------------------------


@pytest.mark.parametrize("backend", BOTH)
def test_a_schema_600_levels_deep_is_refused_as_a_schema_error(backend: Any) -> None:
    """Registration refuses it with ToolSchemaValidationError, not RecursionError."""
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(600):
        schema = {"type": "object", "properties": {"a": schema}}
    descriptor = ToolDescriptor(name="deep", input_schema=schema)
    with ToolRuntime(validator=backend) as runtime:
        with pytest.raises(ToolSchemaValidationError, match="nests deeper than 64 levels"):
            runtime.register(Described(descriptor))


def test_annotations_nested_5000_deep_are_copied_at_registration() -> None:
    """The descriptor is detached without recursion, and edits to the original change nothing."""
    annotations: dict[str, Any] = {"deep": _nested(5000)}
    descriptor = ToolDescriptor(name="annotated", annotations=annotations)
    with ToolRuntime() as runtime:
        registered = runtime.register(Described(descriptor))
    original = annotations["deep"]
    annotations["deep"] = "changed"
    node, depth = registered.annotations["deep"], 0
    while isinstance(node, dict):  # compared in a loop: == itself would recurse
        assert node is not original
        node, original, depth = node["a"], original["a"], depth + 1
    assert (node, depth) == (1, 5000)


def test_strict_mode_of_a_schema_beyond_the_stack_is_not_offered() -> None:
    """openai_strict gives None (no strict mode) where its walk would exhaust the stack."""
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    assert openai_strict(schema) is None


def test_dropping_strict_nulls_stops_at_the_depth_limit() -> None:
    """A recursive schema and arguments 5,000 deep: the walk stops; the arguments are kept."""
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/node"}, "b": {"type": "string"}},
            }
        },
        "$ref": "#/$defs/node",
    }
    arguments = _nested(5000, {"b": None})
    assert drop_absent_nulls(arguments, schema) == arguments
    assert drop_absent_nulls({"a": {"b": None}, "b": None}, schema) == {"a": {}}


def test_a_strict_call_with_deep_arguments_and_a_recursive_schema_is_answered() -> None:
    """Through call(): strict-mode null dropping never raises out of the runtime."""
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"a": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    with ToolRuntime(redaction=None) as runtime:
        runtime.register(FakeTool(input_schema=schema))
        arguments = json.dumps(_nested(700, None))
        with runtime.plan() as ctx:
            result = runtime.call(_openai(arguments), ctx)
    assert not result.success
    assert "nests deeper than 64 levels" in (result.error or "")


# -- the last-resort paths -----------------------------------------------------------------


class Exploding:
    """An object that looks like a provider's model but cannot be dumped."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def model_dump(self, **options: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "needle"),
    [(RuntimeError("no"), "could not be read (RuntimeError)"), (RecursionError(), "too deeply")],
)
def test_a_tool_call_object_that_raises_while_read_is_answered(
    plain: ToolRuntime, error: BaseException, needle: str
) -> None:
    """A call object whose model_dump raises gets a ToolCallError result."""
    with plain.plan() as ctx:
        result = plain.call(Exploding(error), ctx)
    assert not result.success and result.error_type == "ToolCallError"
    assert needle in (result.error or "")


def test_a_model_whose_dump_recurses_without_end_is_refused_as_too_deep() -> None:
    """A RecursionError from model_dump is the depth refusal, not an escape."""

    class Recursing(BaseModel):
        def model_dump(self, **options: Any) -> dict[str, Any]:
            raise RecursionError

    with pytest.raises(JSONCompatibilityError) as info:
        normalize({"m": Recursing()})
    assert info.value.keyword == "maxDepth"


def test_an_error_whose_message_raises_inside_a_dump_is_described_by_its_type() -> None:
    """The refusal of an undumpable model names the exception's type when its text fails."""

    class Undescribed(BaseModel):
        def model_dump(self, **options: Any) -> dict[str, Any]:
            raise Unprintable

    with pytest.raises(JSONCompatibilityError, match="cannot be serialised: Unprintable"):
        normalize([Undescribed()])


def test_dropping_strict_nulls_past_the_stack_keeps_the_arguments() -> None:
    """With a depth limit past the stack, the walk gives up and returns the arguments."""
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"a": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    arguments = _nested(5000, None)
    assert drop_absent_nulls(arguments, schema, max_depth=10**6) is arguments


def test_an_annotation_that_cannot_be_copied_is_shared() -> None:
    """An object whose deep copy raises stays the same object on the registered descriptor."""
    trap = RaisingList([1])
    descriptor = ToolDescriptor(name="trapped", annotations={"trap": trap})
    with ToolRuntime() as runtime:
        registered = runtime.register(Described(descriptor))
    assert registered.annotations["trap"] is trap


def test_error_text_never_raises() -> None:
    """An exception whose __str__ raises is described by its type."""
    assert error_text(ValueError("plain")) == "plain"
    assert error_text(Unprintable()) == "<the message of a Unprintable could not be read>"


class _Unprintable(Exception):
    """An exception whose message cannot be read: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no message")


def test_an_activate_error_whose_message_raises_is_still_a_clear_activation_error() -> None:
    """The activation error describes the exception by its type instead of raising."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="t", activate_error=_Unprintable()))
        with runtime.plan() as ctx:
            with pytest.raises(ToolActivationError, match="_Unprintable: <the message"):
                runtime.execute("t", {}, ctx)
            answered = runtime.call({"name": "t", "arguments": {}}, ctx)
    assert not answered.success and "_Unprintable" in (answered.error or "")


def test_a_deactivate_error_whose_message_raises_does_not_break_plan_end() -> None:
    """Plan end reports the failed deactivation and ends the plan."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="t", deactivate_error=_Unprintable()))
        ctx = runtime.new_context()
        assert runtime.execute("t", {}, ctx).success
        [error] = runtime.end_plan(ctx)
    assert "_Unprintable: <the message" in str(error) and ctx.ended


def test_a_discover_error_whose_message_raises_is_a_registration_error() -> None:
    """The registration fails with its documented error, not the exception's own."""

    class Broken:
        def discover(self) -> Any:
            raise _Unprintable

        def activate(self, ctx: Any) -> None: ...
        def execute(self, params: Any, ctx: Any) -> None: ...
        def deactivate(self, ctx: Any) -> None: ...

    with ToolRuntime() as runtime, pytest.raises(ToolRegistrationError, match="_Unprintable"):
        runtime.register(Broken())


def test_an_approver_error_whose_message_raises_denies_the_call() -> None:
    """An approver that fails with an unreadable error denies the call; nothing raises."""

    def approver(request: Any) -> Any:
        raise _Unprintable

    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="t", writes=True))
        with runtime.plan(approver=approver) as ctx:
            result = runtime.execute("t", {}, ctx)
    assert not result.success and "the approver failed (_Unprintable" in (result.error or "")
