"""Strict JSON normalisation and compact encoding."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from toolcycle._json import JSONCompatibilityError, encode, normalize


class Point(BaseModel):
    x: int
    tags: tuple[str, ...] = ()


@dataclasses.dataclass
class Box:
    width: float
    inner: Point


class Level(enum.IntEnum):
    LOW = 1


class Mode(enum.StrEnum):
    FAST = "fast"


def test_tuples_models_and_dataclasses_become_plain_data() -> None:
    """Containers and records normalise to dicts and lists."""
    value = {"t": (1, 2), "p": Point(x=1, tags=("a",)), "b": Box(width=1.5, inner=Point(x=2))}
    assert normalize(value) == {
        "t": [1, 2],
        "p": {"x": 1, "tags": ["a"]},
        "b": {"width": 1.5, "inner": {"x": 2, "tags": []}},
    }


def test_int_and_str_subclasses_become_plain_values() -> None:
    """IntEnum and StrEnum members become plain ints and strings; bools stay bools."""
    out = normalize([Level.LOW, Mode.FAST, True, False, None])
    assert out == [1, "fast", True, False, None]
    assert [type(v) for v in out] == [int, str, bool, bool, type(None)]


@pytest.mark.parametrize(
    ("value", "pointer", "keyword"),
    [
        ({"a": math.nan}, "/a", "type"),
        ([1, math.inf], "/1", "type"),
        ({1: "x"}, "", "type"),
        ({"s": {1, 2}}, "/s", "type"),
        ({"o": object()}, "/o", "type"),
    ],
)
def test_values_outside_json_are_refused_with_a_pointer(
    value: Any, pointer: str, keyword: str
) -> None:
    """NaN, infinity, non-string keys, sets and other objects are refused."""
    with pytest.raises(JSONCompatibilityError) as info:
        normalize(value)
    assert (info.value.pointer, info.value.keyword) == (pointer, keyword)


def test_cycles_are_refused() -> None:
    """A value that contains itself is refused at the point of the cycle."""
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(JSONCompatibilityError) as info:
        normalize({"x": loop})
    assert info.value.keyword == "cycle" and info.value.pointer == "/x/1"


def test_shared_but_acyclic_values_are_fine() -> None:
    """The same list twice is not a cycle."""
    shared = [1]
    assert normalize({"a": shared, "b": shared}) == {"a": [1], "b": [1]}


def test_the_result_is_a_fresh_copy() -> None:
    """Mutating the normalised value leaves the input untouched."""
    source = {"items": [1, {"k": "v"}]}
    out = normalize(source)
    out["items"][1]["k"] = "changed"
    out["items"].append(2)
    assert source == {"items": [1, {"k": "v"}]}


def test_encode_is_compact_utf8() -> None:
    """Encode uses no spaces and keeps non-ASCII characters as UTF-8."""
    assert encode({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=30,
)


@given(json_values)
def test_json_values_round_trip(value: Any) -> None:
    """Any JSON value normalises to itself and survives encode and decode."""
    assert normalize(value) == value
    assert json.loads(encode(value)) == value
