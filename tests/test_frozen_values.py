"""The public frozen dataclasses compare, hash and show themselves as generated ones would."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest

from toolcycle import (
    Audio,
    CachePolicy,
    File,
    GuardrailDecision,
    Image,
    RedactionPolicy,
    ResourceLink,
    Text,
    ToolResult,
    ToolReturn,
    ValidationLimits,
)
from toolcycle._value import FrozenValue, frozen_value


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class _Ours(FrozenValue):
    shown: Any
    hidden: int = field(default=0, repr=False)
    ignored: int = field(default=0, compare=False)
    unhashed: int = field(default=0, hash=False)


@dataclass(frozen=True)
class _Generated:
    shown: Any
    hidden: int = field(default=0, repr=False)
    ignored: int = field(default=0, compare=False)
    unhashed: int = field(default=0, hash=False)


def test_equality_hash_and_repr_match_a_generated_dataclass() -> None:
    """Each method reads the fields' repr, compare and hash flags as ``@dataclass`` does."""
    ours, generated = _Ours(1, 2, 3, 4), _Generated(1, 2, 3, 4)
    assert repr(ours) == repr(generated).replace("_Generated", "_Ours")
    assert ours == _Ours(1, 2, 99, 4)  # compare=False
    assert ours != _Ours(1, 2, 3, 5)
    assert ours != _Ours(1, 9, 3, 4)  # repr=False is still compared
    assert hash(ours) == hash(_Ours(1, 2, 99, 77))  # hash=False and compare=False
    assert hash(ours) == hash((1, 2))


def test_an_instance_equals_only_instances_of_its_exact_class() -> None:
    """Another class with equal fields is not equal; the comparison defers to the other side."""
    assert _Ours(1) != _Generated(1)
    assert _Ours(1).__eq__(_Generated(1)) is NotImplemented
    assert Text("a") != "a"


def test_a_value_that_holds_itself_shows_dots_instead_of_recursing() -> None:
    """A repr that reaches the same instance again writes ``...``, as a dataclass does."""
    box: list[Any] = []
    ours = _Ours(box)
    box.append(ours)
    assert repr(ours) == "_Ours(shown=[...], ignored=0, unhashed=0)"


def test_the_public_values_stay_frozen_dataclasses_with_their_behaviour() -> None:
    """Frozen, replaceable, equal by value, hashable, and shown without their raw bytes."""
    text = Text("hi")
    assert dataclasses.is_dataclass(text)
    assert text == Text("hi") and hash(text) == hash(Text("hi")) and text != Text("ho")
    assert dataclasses.replace(text, text="ho") == Text("ho")
    with pytest.raises(dataclasses.FrozenInstanceError):
        text.text = "no"  # type: ignore[misc]
    assert repr(Image(b"\x89PNG", "image/png")) == "Image(mime_type='image/png')"
    assert repr(File(b"x", "text/csv", "a.csv")) == (
        "File(mime_type='text/csv', name='a.csv', uri=None)"
    )
    assert repr(ToolReturn(1, Text("t"))) == (
        "ToolReturn(value=1, content=(Text(text='t'),), metadata={})"
    )
    assert ValidationLimits() == ValidationLimits()
    assert hash(ValidationLimits()) == hash(ValidationLimits())
    assert {GuardrailDecision("allow"), GuardrailDecision("allow")} == {GuardrailDecision("allow")}
    assert CachePolicy(ttl=5) == CachePolicy(ttl=5) != CachePolicy(ttl=6)


_FROZEN_VALUES = (Text, Image, Audio, File, ResourceLink, ToolReturn)
_FROZEN_VALUES += (CachePolicy, ValidationLimits, RedactionPolicy)


@pytest.mark.parametrize("cls", _FROZEN_VALUES, ids=lambda cls: cls.__name__)
def test_a_frozen_values_init_takes_its_fields_in_order_with_their_defaults(cls: type) -> None:
    """Its own ``__init__`` matches its fields, so ``replace`` and introspection stay right."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    declared = [f for f in dataclasses.fields(cls) if f.init]
    assert [p.name for p in parameters] == [f.name for f in declared]
    for parameter, declared_field in zip(parameters, declared, strict=True):
        assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        if cls is ToolReturn:  # its content is any iterable of parts, kept as a tuple
            continue
        expected = (
            inspect.Parameter.empty
            if declared_field.default is dataclasses.MISSING
            else declared_field.default
        )
        assert parameter.default == expected, f"{cls.__name__}.{parameter.name}"
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in cls.__dict__  # slotted, as before: no instance __dict__


def _samples() -> list[Any]:
    return [
        Text("hi"),
        Image(b"\x89PNG", "image/png"),
        Audio(b"RIFF", "audio/wav"),
        File(b"a,b", "text/csv", "a.csv", "file:///a.csv"),
        ResourceLink("res://x", "x", "text/plain", "an x"),
        ToolReturn({"n": 1}, [Text("t")], {"k": "v"}),
        CachePolicy(ttl=5, scope="runtime"),
        ValidationLimits(max_schema_depth=8),
        RedactionPolicy(key_pattern="pin", min_length=4),
    ]


@pytest.mark.parametrize("value", _samples(), ids=lambda value: type(value).__name__)
def test_a_frozen_value_refuses_changes_and_survives_pickle_copy_and_replace(value: Any) -> None:
    """Assigning or deleting a field raises as a frozen dataclass does; copies are equal."""
    name = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, name)
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.copy(value) == value and copy.deepcopy(value) == value
    assert dataclasses.replace(value) == value
    assert dataclasses.asdict(value) == dataclasses.asdict(copy.deepcopy(value))


def test_a_frozen_dataclass_may_subclass_a_frozen_value() -> None:
    """The class records itself as frozen, so ``@dataclass(frozen=True)`` may extend it."""

    @dataclass(frozen=True)
    class Captioned(Text):
        caption: str = ""

    value = Captioned("hi", "a greeting")
    assert value.text == "hi" and value.caption == "a greeting"
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.caption = "no"  # type: ignore[misc]
    with pytest.raises(TypeError, match="Text.text must be a str"):  # its generated __init__
        Captioned(5)  # type: ignore[arg-type]  # still runs Text's checks


def test_a_result_validated_from_data_checks_its_parts_as_their_init_does() -> None:
    """A part pydantic builds without ``__init__`` still runs its checks: a bad part is refused.

    Bytes under a ``text/plain`` type are no image or audio: the union settles on a file.
    """
    data = {"success": True, "content": [{"data": b"x", "mime_type": "text/plain"}]}
    (part,) = ToolResult.model_validate(data).content
    assert type(part) is File and part.mime_type == "text/plain"
    with pytest.raises(pydantic.ValidationError, match="ResourceLink.uri must be a non-empty"):
        ToolResult.model_validate({"success": True, "content": [{"uri": ""}]})
    result = ToolResult(success=True, content=(Text("hi"), Image(b"\x89PNG", "image/png")))
    assert ToolResult.model_validate(result.model_dump()) == result


def test_frozen_value_refuses_a_class_without_its_own_init() -> None:
    """The decorator generates no ``__init__``: a class that lacks one is told so at once."""
    with pytest.raises(TypeError, match="must define __init__"):

        @frozen_value
        class _Bare(FrozenValue):
            x: int
