"""Steps about runtimes and plans: building, cancelling, scoping and ending them."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from typing import Any

from behave import given, then, when

import toolcycle

PLAN_KINDS: dict[str, dict[str, bool]] = {
    "ordinary": {},
    "read-only": {"read_only": True},
    "checkpoint": {"requires_checkpoint": True},
    "read-only checkpoint": {"read_only": True, "requires_checkpoint": True},
}

LEAVING: dict[str, BaseException | None] = {
    "normally": None,
    "by an exception": ValueError("the plan's own failure"),
    "by a keyboard interrupt": KeyboardInterrupt(),
}


# -- runtimes ---------------------------------------------------------------------------


@given("a runtime with strict output")
def strict_runtime(context: Any) -> None:
    context.make_runtime(strict_output=True)


@given("a runtime that does not activate tools on demand")
def runtime_without_auto_activation(context: Any) -> None:
    context.make_runtime(auto_activate=False)


@given("a runtime whose deactivate timeout is {seconds:g} seconds")
def runtime_with_deactivate_timeout(context: Any, seconds: float) -> None:
    context.make_runtime(deactivate_timeout=seconds)


@given("a runtime whose activate timeout is {seconds:g} seconds")
def runtime_with_activate_timeout(context: Any, seconds: float) -> None:
    context.make_runtime(activate_timeout=seconds)


@given('a runtime that validates with "{backend}"')
def runtime_with_backend(context: Any, backend: str) -> None:
    context.make_runtime(validator=backend)


@then('the runtime validates with "{backend}"')
def runtime_uses_backend(context: Any, backend: str) -> None:
    assert context.runtime.validator == backend, context.runtime.validator


@given('a runtime that knows the schema "{uri}" as {schema}')
def runtime_with_documents(context: Any, uri: str, schema: str) -> None:
    context.make_runtime(schema_documents={uri: json.loads(schema)})


@given(
    "a runtime whose clock reads {start:g} then {end:g} and whose timer reads {t0:g} then {t1:g}"
)
def runtime_with_fixed_clocks(context: Any, start: float, end: float, t0: float, t1: float) -> None:
    clock = itertools.chain([start, end], itertools.repeat(end))
    timer = itertools.chain([t0, t1], itertools.repeat(t1))
    context.make_runtime(clock=lambda: next(clock), timer=lambda: next(timer))


class EntryCounter:
    """A wall clock that also counts how many calls have entered the runtime.

    The runtime reads its clock once when a call arrives (to stamp the trace),
    before it looks at the activation cache, so the readings tell a scenario
    that a call is inside ``execute``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readings = 0
        self._wanted = 0
        self.reached = threading.Event()

    def expect(self, readings: int) -> None:
        with self._lock:
            self._wanted = readings
            if self._readings >= readings:
                self.reached.set()

    def __call__(self) -> float:
        with self._lock:
            self._readings += 1
            if self._wanted and self._readings >= self._wanted:
                self.reached.set()
        return time.time()


@given("a runtime that signals when calls enter it")
def runtime_counting_entries(context: Any) -> None:
    context.entries = EntryCounter()
    context.make_runtime(clock=context.entries)


# -- plans ------------------------------------------------------------------------------


def _open_plan(context: Any, plan_id: str, **flags: Any) -> None:
    context.plans[plan_id] = context.runtime.new_context(plan_id, **flags)
    context.plan = context.plans[plan_id]


@given('a plan "{plan_id:Name}"')
def a_plan(context: Any, plan_id: str) -> None:
    _open_plan(context, plan_id)


@given('a {kind} plan "{plan_id:Name}"')
def a_plan_of_kind(context: Any, kind: str, plan_id: str) -> None:
    _open_plan(context, plan_id, **PLAN_KINDS[kind])


@given('plan "{plan_id:Name}" is cancelled with reason "{reason}"')
@when('plan "{plan_id:Name}" is cancelled with reason "{reason}"')
def cancel_plan(context: Any, plan_id: str, reason: str) -> None:
    context.plans[plan_id].cancellation_token.cancel(reason)


@when('I start another plan "{plan_id:Name}"')
def start_another_plan(context: Any, plan_id: str) -> None:
    context.start_error = None
    try:
        context.runtime.new_context(plan_id)
    except toolcycle.ToolRuntimeError as error:
        context.start_error = error


@then('starting it was refused with ToolRuntimeError mentioning "{text}"')
def start_refused(context: Any, text: str) -> None:
    assert context.start_error is not None, "the plan was started"
    assert text in str(context.start_error), context.start_error


@then("starting it succeeded")
def start_succeeded(context: Any) -> None:
    assert context.start_error is None, context.start_error


@when('plan "{plan_id:Name}" ends')
def end_plan(context: Any, plan_id: str) -> None:
    context.deactivation_errors = context.runtime.end_plan(context.plans[plan_id])


@when("the runtime is closed")
def close_runtime(context: Any) -> None:
    context.runtime.close()


@when('I await "{names}" in plan "{plan_id:Name}" and then end the plan asynchronously')
def await_then_end(context: Any, names: str, plan_id: str) -> None:
    ctx = context.plans[plan_id]

    async def run() -> list[toolcycle.ToolDeactivationError]:
        for name in names.split(","):
            result = await context.runtime.aexecute(name.strip(), {}, ctx)
            assert result.success, result
        return await context.runtime.aend_plan(ctx)

    context.deactivation_errors = asyncio.run(run())


@then('plan "{plan_id:Name}" has ended')
def plan_has_ended(context: Any, plan_id: str) -> None:
    assert context.plans[plan_id].ended


@then("the plan end reported {count:d} deactivation errors")
@then("the plan end reported {count:d} deactivation error")
def deactivation_error_count(context: Any, count: int) -> None:
    assert len(context.deactivation_errors) == count, context.deactivation_errors


@then('the deactivation error names tool "{name:Name}" and plan "{plan_id:Name}"')
def deactivation_error_names(context: Any, name: str, plan_id: str) -> None:
    error = context.deactivation_errors[-1]
    assert (error.tool_name, error.plan_id) == (name, plan_id), error


@then("the deactivation error is caused by {cause}")
def deactivation_error_cause(context: Any, cause: str) -> None:
    error = context.deactivation_errors[-1]
    assert type(error.__cause__).__name__ == cause, repr(error.__cause__)


@then('the deactivation error message mentions "{text}"')
def deactivation_error_message(context: Any, text: str) -> None:
    assert text in str(context.deactivation_errors[-1]), context.deactivation_errors[-1]


@then("the deactivation error is a {cls}")
def deactivation_error_class(context: Any, cls: str) -> None:
    assert isinstance(context.deactivation_errors[-1], getattr(toolcycle, cls))


# -- plan scopes ------------------------------------------------------------------------


def _leave(how: str) -> None:
    error = LEAVING[how]
    if error is not None:
        raise error


@when('a plan scope "{plan_id:Name}" that calls "{name:Name}" is left {how}')
def leave_plan_scope(context: Any, plan_id: str, name: str, how: str) -> None:
    context.escaped = None
    try:
        with context.runtime.plan(plan_id) as ctx:
            context.plans[plan_id] = ctx
            context.runtime.execute(name, {}, ctx)
            _leave(how)
    except (ValueError, KeyboardInterrupt) as exc:
        context.escaped = exc


@when('a plan scope "{plan_id:Name}" that calls "{name:Name}" is cancelled and left normally')
def leave_cancelled_plan_scope(context: Any, plan_id: str, name: str) -> None:
    context.escaped = None
    with context.runtime.plan(plan_id) as ctx:
        context.plans[plan_id] = ctx
        context.runtime.execute(name, {}, ctx)
        ctx.cancellation_token.cancel("stop")


@when('an async plan scope "{plan_id:Name}" that awaits "{name:Name}" is left {how}')
def leave_async_plan_scope(context: Any, plan_id: str, name: str, how: str) -> None:
    context.escaped = None

    async def run() -> None:
        async with context.runtime.aplan(plan_id) as ctx:
            context.plans[plan_id] = ctx
            await context.runtime.aexecute(name, {}, ctx)
            _leave(how)

    try:
        asyncio.run(run())
    except (ValueError, KeyboardInterrupt) as exc:
        context.escaped = exc


@when('a read-only plan scope "{plan_id:Name}" with metadata {key} "{value}" calls "{name:Name}"')
def leave_flagged_plan_scope(context: Any, plan_id: str, key: str, value: str, name: str) -> None:
    with context.runtime.plan(plan_id, read_only=True, metadata={key: value}) as ctx:
        context.plans[plan_id] = ctx
        try:
            context.runtime.execute(name, {}, ctx)
        except toolcycle.ToolRuntimeError as exc:
            context.error = exc


@then('plan "{plan_id:Name}" carries the metadata {key} "{value}"')
def plan_metadata(context: Any, plan_id: str, key: str, value: str) -> None:
    assert context.plans[plan_id].metadata[key] == value


@then("nothing escaped the scope")
def nothing_escaped(context: Any) -> None:
    assert context.escaped is None, repr(context.escaped)


@then("a {error} escaped the scope")
def error_escaped(context: Any, error: str) -> None:
    assert type(context.escaped).__name__ == error, repr(context.escaped)
