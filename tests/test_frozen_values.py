"""The public frozen dataclasses compare, hash and show themselves as generated ones would."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolcycle import (
    CachePolicy,
    File,
    GuardrailDecision,
    Image,
    Text,
    ToolReturn,
    ValidationLimits,
)
from toolcycle._value import FrozenValue


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
