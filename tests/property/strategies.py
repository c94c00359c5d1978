"""Every Hypothesis strategy the property tests use, with the records they build.

The runtime machine draws tools (`tool_specs`), plans (`plan_flags`) and call
arguments (`call_args`); the cache properties draw schedules of cache operations
(`cache_ops`, `thread_schedules`, `sequential_ops`). Each record is a small frozen
dataclass so that a failing example prints readably. The hostile-input property
draws values (`hostile_values`), JSON argument texts (`hostile_json_texts`) and
schemas (`hostile_schemas`) that a model, a tool or a server could send.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "INPUT_SCHEMA",
    "OUTPUT_SCHEMA",
    "Begin",
    "CallArgs",
    "End",
    "Finish",
    "PlanFlags",
    "RaisingList",
    "RaisingMapping",
    "ToolSpec",
    "cache_ops",
    "call_args",
    "hostile_json_texts",
    "hostile_schemas",
    "hostile_values",
    "plan_flags",
    "sequential_ops",
    "thread_schedules",
    "tool_specs",
]

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
"""The input schema of every generated tool: one required integer ``n``."""

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tool": {"type": "string"}},
    "required": ["n", "tool"],
}
"""The output schema of every generated tool."""

PLAN_COUNT = 3
"""How many plans a cache schedule spreads its operations over."""

TOOL_NAMES = ("a", "b", "c")
"""The tool names a cache schedule uses; teardown of ``c`` raises."""


def _sometimes(one_in: int) -> st.SearchStrategy[bool]:
    """True about once in ``one_in`` draws (and shrinking towards False)."""
    return st.integers(0, one_in - 1).map(lambda i: i == one_in - 1)


# -- the runtime machine ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """How a generated recording tool behaves.

    Attributes:
        writes: capability flag; a read-only plan must refuse the tool.
        checkpointable: capability flag; a checkpoint plan refuses it when False.
        is_async: the tool's stages are ``async def``.
        activation_failures: how many ``activate`` calls fail (across all plans)
            before one succeeds.
        execute_fails: ``execute`` raises.
        bad_output: ``execute`` returns output that breaks the output schema.
        deactivate_fails: ``deactivate`` raises (after recording itself).
    """

    writes: bool
    checkpointable: bool
    is_async: bool
    activation_failures: int
    execute_fails: bool
    bad_output: bool
    deactivate_fails: bool


def tool_specs() -> st.SearchStrategy[ToolSpec]:
    """Tool behaviours: mostly well-behaved, sometimes failing at one stage."""
    return st.builds(
        ToolSpec,
        writes=st.booleans(),
        checkpointable=st.booleans(),
        is_async=st.booleans(),
        activation_failures=st.sampled_from((0, 0, 0, 1, 2)),
        execute_fails=_sometimes(5),
        bad_output=_sometimes(5),
        deactivate_fails=_sometimes(5),
    )


@dataclass(frozen=True)
class PlanFlags:
    """The flags a generated plan opens with."""

    read_only: bool
    requires_checkpoint: bool


def plan_flags() -> st.SearchStrategy[PlanFlags]:
    """Plan flags: read-only about a third of the time, checkpoints required now and then."""
    return st.builds(PlanFlags, read_only=_sometimes(3), requires_checkpoint=_sometimes(5))


@dataclass(frozen=True)
class CallArgs:
    """Arguments of one call, and whether they match `INPUT_SCHEMA`."""

    params: dict[str, Any]
    valid: bool


def call_args() -> st.SearchStrategy[CallArgs]:
    """Call arguments: usually valid, sometimes of the wrong type, missing or extra."""
    valid = st.integers(-1000, 1000).map(lambda n: CallArgs({"n": n}, valid=True))
    invalid = st.sampled_from(
        (
            CallArgs({"n": "seven"}, valid=False),
            CallArgs({"n": 1.5}, valid=False),
            CallArgs({}, valid=False),
            CallArgs({"n": 1, "extra": True}, valid=False),
        )
    )
    return st.one_of(valid, valid, valid, invalid)


# -- the cache properties --------------------------------------------------------------


@dataclass(frozen=True)
class Begin:
    """Begin activating tool ``name`` in plan ``plan``.

    In a thread schedule the owner finishes at once, failing when ``fail`` is
    set; in a sequential schedule a separate `Finish` settles it.
    """

    plan: int
    name: str
    fail: bool = False


@dataclass(frozen=True)
class Finish:
    """Settle the pending activation of ``name`` in ``plan``, if there is one."""

    plan: int
    name: str
    fail: bool


@dataclass(frozen=True)
class End:
    """End plan ``plan`` (a no-op when it has ended already)."""

    plan: int


_plans = st.integers(0, PLAN_COUNT - 1)
_names = st.sampled_from(TOOL_NAMES)


def cache_ops() -> st.SearchStrategy[Begin | End]:
    """One operation of a thread's schedule: mostly begins, now and then a plan end."""
    begin = st.builds(Begin, plan=_plans, name=_names, fail=_sometimes(4))
    return st.one_of(begin, begin, begin, st.builds(End, plan=_plans))


def thread_schedules() -> st.SearchStrategy[list[list[Begin | End]]]:
    """Two to four threads, each with its own short list of cache operations."""
    return st.lists(st.lists(cache_ops(), min_size=1, max_size=8), min_size=2, max_size=4)


def sequential_ops() -> st.SearchStrategy[list[Begin | Finish | End]]:
    """A single-threaded interleaving of begins, finishes and ends over several plans."""
    op = st.one_of(
        st.builds(Begin, plan=_plans, name=_names),
        st.builds(Finish, plan=_plans, name=_names, fail=_sometimes(3)),
        st.builds(End, plan=_plans),
    )
    return st.lists(op, max_size=30)


# -- hostile inputs ----------------------------------------------------------------------


class RaisingMapping(Mapping[str, Any]):
    """A mapping whose iteration and item access raise, as a hostile container may."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("this mapping cannot be read")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("this mapping cannot be read")

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "RaisingMapping()"


class RaisingList(list[Any]):
    """A list whose iteration raises."""

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("this list cannot be read")

    def __repr__(self) -> str:
        return "RaisingList()"


DEPTHS = st.one_of(
    st.integers(1, 70), st.sampled_from([500, 1_000, 5_000, 20_000]), st.integers(1, 20_000)
)
"""Nesting depths: around the default limit of 64, past the stack, and up to 20,000."""


def _nest(leaf: Any, depth: int, key: str) -> Any:
    """``leaf`` inside ``depth`` containers (objects under ``key``, or arrays if key is "")."""
    value = leaf
    for _ in range(depth):
        value = [value] if key == "" else {key: value}
    return value


def _hostile_leaves() -> st.SearchStrategy[Any]:
    """Single hostile values: huge, invalid or raising."""
    return st.one_of(
        st.just("x" * 1_000_000),  # a 10^6-character string
        st.just("\u00e9" * 1_000_000),  # the same, not ASCII
        st.just(list(range(100_000))),  # a 10^5-element array
        st.integers(4_300, 5_000).map(lambda digits: 10 ** (digits - 1) + 7),  # 5,000 digits
        st.sampled_from([float("nan"), float("inf"), float("-inf")]),
        st.sampled_from(["\ud800", "a\udfff", "\udc80z"]),  # lone surrogates as values
        st.sampled_from([{"\ud800": 1}, {"k\udc00": [1]}]),  # ... and as keys
        st.sampled_from([{1: "a"}, {(1, 2): "b"}, {None: 1}]),  # keys that are not strings
        st.builds(lambda: {10**5000: 1}),  # ... one too long to show (built: never shown)
        st.builds(RaisingMapping),
        st.builds(RaisingList, st.just([1])),
        st.just({"fine": [1, "two", None, True, 2.5]}),  # and a value that is no threat
    )


def hostile_values() -> st.SearchStrategy[dict[str, Any]]:
    """Tool arguments (always an object at the top) holding a hostile leaf, nested 0..20,000 deep.

    The nesting alternates objects and arrays so that every container kind is
    walked at depth.
    """
    return st.builds(
        lambda leaf, depth, key: {"x": _nest(leaf, depth, key)},
        _hostile_leaves(),
        st.one_of(st.just(0), DEPTHS),
        st.sampled_from(["a", "", "\ud800"]),
    )


def hostile_json_texts() -> st.SearchStrategy[str]:
    """Raw JSON argument texts a model could send: deep, huge, or past the number limits."""
    return st.one_of(
        DEPTHS.map(lambda depth: '{"x":' + "[" * depth + "]" * depth + "}"),
        DEPTHS.map(lambda depth: '{"x":' + '{"a":' * depth + "1" + "}" * depth + "}"),
        st.integers(4_300, 5_000).map(lambda digits: '{"x":' + "9" * digits + "}"),
        st.sampled_from(['{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', '{"x": 1e999}']),
        st.sampled_from(['{"x": "\\ud800"}', '{"\\udc00": 1}', '{"x": "\\ud83d\\ude00"}']),
        st.just('{"x": "' + "y" * 1_000_000 + '"}'),
        st.just('{"x": [' + ",".join(["1"] * 100_000) + "]}"),
        st.just('{"x": 1'),  # and one that is simply broken
    )


def hostile_schemas() -> st.SearchStrategy[dict[str, Any]]:
    """Input schemas a source could declare: nested 1..20,000 deep, or holding hostile values."""
    return st.one_of(
        DEPTHS.map(_nest_schema),
        st.builds(lambda leaf: {"type": "object", "default": leaf}, _hostile_leaves()),
        st.builds(
            lambda depth: {"type": "object", "properties": {"a": {"enum": [_nest(1, depth, "")]}}},
            DEPTHS,
        ),
        st.just({"type": "object", "description": "\ud800"}),
        st.just({"type": "object", "properties": {"\udc00": {"type": "string"}}}),
        st.just({"type": "object", "properties": {"a": {"type": "string"}}}),
    )


def _nest_schema(depth: int) -> dict[str, Any]:
    """An object schema whose property ``a`` is such a schema, ``depth`` times over."""
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema
