"""Strict JSON normalisation and compact encoding."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from toolcycle.validation._json import JSONCompatibilityError, encode, normalize, short_repr


class Point(BaseModel):
    x: int
    tags: tuple[str, ...] = ()


class Node(BaseModel):
    children: list[Any] = []


@dataclasses.dataclass
class Box:
    width: float
    inner: Point


@dataclasses.dataclass
class Link:
    next: Any = None


class Level(enum.IntEnum):
    LOW = 1


class Mode(enum.StrEnum):
    FAST = "fast"


class Shouty(str):
    def __str__(self) -> str:
        return self.upper()


class Tagged(str):
    """A string that is only equal to itself, so it can sit beside an equal plain key."""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


class Lying(int):
    def __int__(self) -> int:
        return 0


def _refusal(value: Any, **limits: Any) -> JSONCompatibilityError:
    with pytest.raises(JSONCompatibilityError) as info:
        normalize(value, **limits)
    return info.value


def test_tuples_become_lists() -> None:
    """Tuples, nested or not, become lists."""
    assert normalize((1, (2, (3,)), {"t": ()})) == [1, [2, [3]], {"t": []}]


def test_models_dataclasses_and_mappings_become_dicts() -> None:
    """Pydantic models, dataclasses and other mappings normalise to plain dicts."""
    value = {
        "p": Point(x=1, tags=("a",)),
        "b": Box(width=1.5, inner=Point(x=2)),
        "m": MappingProxyType({"k": (1,)}),
        "o": OrderedDict(z=1),
    }
    out = normalize(value)
    assert out == {
        "p": {"x": 1, "tags": ["a"]},
        "b": {"width": 1.5, "inner": {"x": 2, "tags": []}},
        "m": {"k": [1]},
        "o": {"z": 1},
    }
    assert type(out["m"]) is dict and type(out["o"]) is dict


def test_int_and_str_subclasses_become_plain_values() -> None:
    """IntEnum and StrEnum members become plain ints and strings; bools stay bools."""
    out = normalize([Level.LOW, Mode.FAST, True, False, None, {"b": True}])
    assert out == [1, "fast", True, False, None, {"b": True}]
    assert [type(v) for v in out[:5]] == [int, str, bool, bool, type(None)]
    assert type(out[5]["b"]) is bool


def test_subclasses_keep_the_value_they_hold_whatever_their_conversions_say() -> None:
    """A str or int subclass normalises to its own characters or value, not its __str__/__int__."""
    out = normalize([Shouty("quiet"), Lying(7)])
    assert out == ["quiet", 7]
    assert [type(v) for v in out] == [str, int]


def test_str_subclass_keys_become_plain_strings() -> None:
    """A StrEnum key is a string: it becomes its plain value."""
    out = normalize({Mode.FAST: 1, "slow": 2})
    assert out == {"fast": 1, "slow": 2}
    assert all(type(key) is str for key in out)


def test_keys_that_collide_once_converted_are_refused() -> None:
    """Two distinct keys that are one plain string would silently merge, so they are refused."""
    error = _refusal({"outer": {Tagged("fast"): 1, "fast": 2}})
    assert error.pointer == "/outer" and "same string" in error.reason


@pytest.mark.parametrize(
    ("value", "pointer"),
    [
        ({"a": math.nan}, "/a"),
        ([1, math.inf], "/1"),
        ({"deep": [{"x": -math.inf}]}, "/deep/0/x"),
    ],
)
def test_nan_and_infinities_are_refused(value: Any, pointer: str) -> None:
    """NaN, inf and -inf are not JSON numbers."""
    error = _refusal(value)
    assert (error.pointer, error.keyword) == (pointer, "type")
    assert "not a JSON number" in error.reason


@pytest.mark.parametrize("key", [1, None, (1, 2), True, 1.5])
def test_non_string_keys_are_refused(key: Any) -> None:
    """An object key that is not a string is refused, at the pointer of that object."""
    error = _refusal({"obj": {key: "x"}})
    assert (error.pointer, error.keyword) == ("/obj", "type")
    assert "keys must be strings" in error.reason


@pytest.mark.parametrize(
    "value", [{1, 2}, frozenset({1}), b"bytes", object(), 1 + 2j, Point], ids=repr
)
def test_sets_and_other_objects_are_refused(value: Any) -> None:
    """Sets, bytes, complex numbers, classes and arbitrary objects are not JSON."""
    error = _refusal({"s": [value]})
    assert (error.pointer, error.keyword) == ("/s/0", "type")
    assert "not JSON-compatible" in error.reason


def test_list_and_dict_cycles_are_refused_at_the_point_of_the_cycle() -> None:
    """A list or dict that contains itself is refused, with the pointer of the repeat."""
    loop: list[Any] = [1]
    loop.append(loop)
    error = _refusal({"x": loop})
    assert (error.keyword, error.pointer) == ("cycle", "/x/1")
    me: dict[str, Any] = {}
    me["self"] = {"again": me}
    error = _refusal(me)
    assert (error.keyword, error.pointer) == ("cycle", "/self/again")


def test_dataclass_and_model_cycles_are_refused() -> None:
    """A dataclass or a pydantic model that contains itself is refused with a pointer."""
    link = Link()
    link.next = link
    error = _refusal([link])
    assert (error.keyword, error.pointer) == ("cycle", "/0/next")
    node = Node()
    node.children.append(node)
    error = _refusal({"tree": node})
    assert (error.keyword, error.pointer) == ("cycle", "/tree")


def test_a_model_that_cannot_be_serialised_is_refused() -> None:
    """A model holding a value pydantic cannot dump is a normalisation error, not a crash."""
    error = _refusal({"m": Node(children=[object()])})
    assert (error.keyword, error.pointer) == ("type", "/m")
    assert "Node" in error.reason


def test_shared_but_acyclic_values_are_fine() -> None:
    """The same list twice is not a cycle, and each occurrence is copied."""
    shared = [1]
    out = normalize({"a": shared, "b": shared})
    assert out == {"a": [1], "b": [1]}
    assert out["a"] is not out["b"]


def test_the_result_is_a_fresh_copy() -> None:
    """Mutating the normalised value leaves the input untouched."""
    inner = {"k": "v"}
    source = {"items": [1, inner], "box": Link(next=[1])}
    out = normalize(source)
    out["items"][1]["k"] = "changed"
    out["items"].append(2)
    out["box"]["next"].append(2)
    assert source["items"] == [1, {"k": "v"}] and inner == {"k": "v"}
    assert source["box"] == Link(next=[1])
    assert out is not source and out["items"] is not source["items"]


def test_limits_are_reported_with_their_keyword_and_pointer() -> None:
    """Depth, node and integer-width caps raise with a keyword naming the cap."""
    assert _refusal({"a": [[[]]]}, max_depth=3).keyword == "maxDepth"
    assert normalize({"a": [[]]}, max_depth=3) == {"a": [[]]}
    assert _refusal(list(range(10)), max_nodes=10).keyword == "maxNodes"
    assert normalize(list(range(9)), max_nodes=10) == list(range(9))
    error = _refusal({"n": [2**64]}, max_integer_bits=64)
    assert (error.keyword, error.pointer) == ("maxIntegerBits", "/n/0")
    assert normalize(2**64 - 1, max_integer_bits=64) == 2**64 - 1


def test_encode_is_compact_utf8_keeping_non_ascii() -> None:
    """Encoding uses no spaces and writes non-ASCII characters as UTF-8, not escapes."""
    data = {"a": [1, "é"], "b": {"c": "日本 🎉"}, "d": None}
    encoded = encode(data)
    assert encoded == '{"a":[1,"é"],"b":{"c":"日本 🎉"},"d":null}'.encode()
    assert b"\\u" not in encoded and b" " not in encoded.replace("日本 🎉".encode(), b"")
    assert json.loads(encoded) == data


def test_encode_refuses_nan() -> None:
    """Encoding is strict too: NaN is never written."""
    with pytest.raises(ValueError):
        encode([math.nan])


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


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(item) for item in value)
    if isinstance(value, dict):
        return {key: _tuples(item) for key, item in value.items()}
    return value


@given(json_values)
def test_json_values_round_trip(value: Any) -> None:
    """Any JSON value normalises to itself and survives encode and decode."""
    assert normalize(value) == value
    assert json.loads(encode(value)) == value


@given(json_values)
def test_tuples_anywhere_normalise_to_the_list_form(value: Any) -> None:
    """Writing every list of a JSON value as a tuple normalises back to the same value."""
    assert normalize(_tuples(value)) == value


_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()
    | st.text(max_size=5)
)


@given(
    st.dictionaries(st.text(max_size=4) | st.integers(0, 3), _LEAVES, max_size=6),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=8, max_value=100),
)
def test_the_flat_object_shortcut_agrees_with_the_walker(
    value: dict[Any, Any], max_nodes: int, max_integer_bits: int
) -> None:
    """A flat dict normalises exactly as the general walker does, errors and caps included."""
    from toolcycle.validation._json import _Walker

    def outcome(run: Any) -> Any:
        try:
            result = run()
        except JSONCompatibilityError as exc:
            return ("error", exc.pointer, exc.keyword, exc.reason)
        return ("ok", result, [type(item) for item in result.values()])

    limits = {"max_depth": 64, "max_nodes": max_nodes, "max_integer_bits": max_integer_bits}
    fast = outcome(lambda: normalize(value, **limits))
    slow = outcome(lambda: _Walker(64, max_nodes, max_integer_bits).walk(value, 0))
    assert fast == slow


@given(
    st.recursive(
        _LEAVES,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=3), children, max_size=4)
        ),
        max_leaves=20,
    ),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=1, max_value=30),
)
def test_flat_objects_inside_containers_are_counted_and_capped_as_the_walker_would(
    value: Any, max_depth: int, max_nodes: int
) -> None:
    """Nested flat objects take the shortcut yet give the walker's result, depth and node caps too."""
    from toolcycle.validation._json import _Walker

    class Plain(_Walker):
        """The walker without the flat-object shortcut."""

        def _flat_child(self, item: dict[Any, Any], depth: int) -> dict[str, Any] | None:
            return None

    def outcome(run: Any) -> Any:
        try:
            return ("ok", json.dumps(run(), sort_keys=False))
        except JSONCompatibilityError as exc:
            return ("error", exc.pointer, exc.keyword, exc.reason)

    fast = outcome(lambda: _Walker(max_depth, max_nodes, 64).walk(value, 0))
    slow = outcome(lambda: Plain(max_depth, max_nodes, 64).walk(value, 0))
    assert fast == slow


@pytest.mark.parametrize(("max_nodes", "fits"), [(5, True), (4, False)])
def test_a_flat_object_in_an_array_counts_itself_and_each_leaf(max_nodes: int, fits: bool) -> None:
    """[{"a": 1, "b": 2, "c": 3}] is five values: the array, the object and three leaves."""
    value = [{"a": 1, "b": 2, "c": 3}]
    if fits:
        assert normalize(value, max_nodes=max_nodes) == value
    else:
        with pytest.raises(JSONCompatibilityError) as caught:
            normalize(value, max_nodes=max_nodes)
        assert caught.value.keyword == "maxNodes"


# -- hostile values ------------------------------------------------------------------------


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
    """A model whose dump raises something other than a ValueError."""

    def model_dump(self, **options: Any) -> dict[str, Any]:
        raise RuntimeError("no dumping")


@dataclasses.dataclass
class Trap:
    """A dataclass whose field raises when read."""

    value: int = 0

    def __getattribute__(self, name: str) -> Any:
        if name == "value":
            raise RuntimeError("no field")
        return object.__getattribute__(self, name)


@pytest.mark.parametrize(
    ("value", "pointer", "needle"),
    [
        ({"a": [1, RaisingMapping()]}, "/a/1", "RaisingMapping raised RuntimeError: no reading"),
        ([RaisingList([1])], "/0", "RaisingList raised RuntimeError: no iterating"),
        ({"m": Undumpable()}, "/m", "cannot be serialised: no dumping"),
        ({"d": Trap()}, "/d", "Trap raised RuntimeError: no field"),
    ],
)
def test_a_value_that_raises_while_read_is_refused_with_its_pointer(
    value: Any, pointer: str, needle: str
) -> None:
    """Containers, models and dataclasses that raise become a refusal, not an escape."""
    error = _refusal(value)
    assert error.pointer == pointer
    assert needle in error.reason


@pytest.mark.parametrize(
    ("value", "pointer", "what"),
    [
        ({"a": "ok \ud800"}, "/a", "text"),
        ({"a": ["x", "\udfff"]}, "/a/1", "text"),
        ({"k\udc80": 1}, "/k\\udc80", "key"),
        ({"n": {"k\udc80": [1]}}, "/n/k\\udc80", "key"),
        (Shouty("\ud83d"), "", "text"),
    ],
)
def test_a_lone_surrogate_in_a_value_or_a_key_is_refused(
    value: Any, pointer: str, what: str
) -> None:
    """Text must be valid Unicode; the pointer shows a surrogate key as its escape."""
    error = _refusal(value)
    assert error.keyword == "unicode"
    assert error.pointer == pointer
    assert f"the {what} holds a lone surrogate" in error.reason
    str(error).encode("utf-8")  # the message itself is valid Unicode


def test_paired_surrogates_are_valid_text() -> None:
    """A character outside the BMP is one code point in Python, and valid."""
    assert normalize({"emoji \U0001f600": "\U0001f600"}) == {"emoji \U0001f600": "\U0001f600"}


def test_a_key_too_long_to_show_is_described_by_its_size() -> None:
    """An integer key past Python's conversion limit is refused without converting it."""
    error = _refusal({10**5000: 1})
    assert "object keys must be strings, got int <an integer of" in error.reason


def test_a_depth_limit_beyond_the_stack_is_a_refusal_not_a_recursion_error() -> None:
    """With max_depth raised past what the stack can walk, deep values are still refused."""
    value: Any = 1
    for _ in range(20_000):
        value = {"a": [value]}
    error = _refusal(value, max_depth=10**6, max_nodes=10**6)
    assert error.keyword == "maxDepth"
    assert "nests too deeply" in error.reason


def test_short_repr_never_raises() -> None:
    """short_repr cuts long text and describes what it cannot show."""

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert short_repr("x" * 100, 10) == "'xxxxxx..."
    assert short_repr(Broken()) == "<a Broken that cannot be shown>"
    assert short_repr(-(10**5000)).startswith("<an integer of")
