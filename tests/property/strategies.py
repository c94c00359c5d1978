"""Every Hypothesis strategy the property tests use, with the records they build.

The runtime machine draws tools (`tool_specs`), plans (`plan_flags`) and call
arguments (`call_args`); the cache properties draw schedules of cache operations
(`cache_ops`, `thread_schedules`, `sequential_ops`). Each record is a small frozen
dataclass so that a failing example prints readably.
"""

from __future__ import annotations

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
    "ToolSpec",
    "cache_ops",
    "call_args",
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
