"""Steps that call tools and check what came back."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

from behave import then, when

import toolcycle

WAIT = 5.0
"""Upper bound, in seconds, of every wait in these steps."""

RAISED = (
    toolcycle.ToolRuntimeError,
    toolcycle.ToolCancelledError,
    toolcycle.ToolSchemaValidationError,
)


def _record(context: Any, call: Any) -> None:
    """Run ``call`` and keep its result, or the toolcycle error it raised."""
    context.result = None
    context.error = None
    try:
        context.result = call()
    except RAISED as exc:
        context.error = exc
    else:
        context.results.append(context.result)


def _call(context: Any, name: str, params: Any, plan: Any = None, **options: Any) -> None:
    ctx = plan if plan is not None else context.plan
    _record(context, lambda: context.runtime.execute(name, params, ctx, **options))


def _cancel_when_started(context: Any, tool: Any) -> threading.Thread:
    """Start a thread that cancels the current plan once ``tool`` is running."""
    plan = context.plan

    def cancel() -> None:
        if tool.started.wait(WAIT):
            plan.cancellation_token.cancel("stop")

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


# -- calls --------------------------------------------------------------------------------


@when('I call "{name:Name}"')
def call_plain(context: Any, name: str) -> None:
    _call(context, name, {})


@when('I call "{name:Name}" {times:d} times')
def call_many(context: Any, name: str, times: int) -> None:
    for _ in range(times):
        _call(context, name, {})


@when('I call "{name:Name}" in plan "{plan_id:Name}"')
def call_in_plan(context: Any, name: str, plan_id: str) -> None:
    _call(context, name, {}, context.plans[plan_id])


@when('I call "{name:Name}" with arguments {params}')
def call_with_arguments(context: Any, name: str, params: str) -> None:
    context.params = json.loads(params)
    _call(context, name, context.params)


@when('I call "{name:Name}" with a list instead of an object')
def call_with_list(context: Any, name: str) -> None:
    _call(context, name, ["not", "an", "object"])


@when('I call "{name:Name}" with a tuple in its arguments')
def call_with_tuple(context: Any, name: str) -> None:
    context.params = {"items": (1, 2)}
    _call(context, name, context.params)


@when('I call "{name:Name}" with a timeout of {seconds:g} seconds')
def call_with_timeout(context: Any, name: str, seconds: float) -> None:
    _call(context, name, {}, timeout=seconds)


@when('I call "{name:Name}" and cancel the plan while it runs')
def call_and_cancel(context: Any, name: str) -> None:
    canceller = _cancel_when_started(context, context.tools[name])
    _call(context, name, {})
    canceller.join(WAIT)
    assert not canceller.is_alive()


@when('I call "{name:Name}" inside a handler for ToolRuntimeError')
def call_inside_handler(context: Any, name: str) -> None:
    context.caught = None
    try:
        try:
            context.runtime.execute(name, {}, context.plan)
        except toolcycle.ToolRuntimeError as exc:
            context.caught = exc
    except toolcycle.ToolCancelledError as exc:
        context.error = exc


@when('I await "{name:Name}"')
def await_call(context: Any, name: str) -> None:
    async def run() -> toolcycle.ToolResult:
        return await context.runtime.aexecute(name, {}, context.plan)

    _record(context, lambda: asyncio.run(run()))


@when('I await "{name:Name}" and cancel the plan while it runs')
def await_and_cancel(context: Any, name: str) -> None:
    tool = context.tools[name]
    plan = context.plan

    async def run() -> toolcycle.ToolResult:
        started = asyncio.Event()
        tool.on_start = started.set
        call = asyncio.ensure_future(context.runtime.aexecute(name, {}, plan))
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({call, waiting}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
        assert started.is_set(), "the tool never started"
        plan.cancellation_token.cancel("stop")
        return await asyncio.wait_for(call, WAIT)

    _record(context, lambda: asyncio.run(run()))


@when('I activate "{name:Name}" ahead of its first call')
def activate_ahead(context: Any, name: str) -> None:
    context.runtime.activate(name, context.plan)


class _LateActivationEnded(logging.Handler):
    """Sets ``seen`` when the runtime logs that an abandoned activate has ended."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "tool.late_activation_ended" in record.getMessage():
            self.seen.set()


@when('the gate of "{name:Name}" opens and its late activation has ended')
def open_gate_and_wait_for_late_activation(context: Any, name: str) -> None:
    logger = logging.getLogger("toolcycle.runtime")
    handler = _LateActivationEnded()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        context.tools[name].gate.set()
        assert handler.seen.wait(WAIT), "the abandoned activate never ended"
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@when('{count:d} threads make the first call of "{name:Name}" at the same time')
def concurrent_first_calls(context: Any, count: int, name: str) -> None:
    tool = context.tools[name]
    outcomes: list[Any] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            outcome: Any = context.runtime.execute(name, {}, context.plan)
        except Exception as exc:
            outcome = exc
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=call) for _ in range(count)]
    context.entries.expect(count)
    threads[0].start()
    assert tool.entered.wait(WAIT), "the first call never started activating"
    for thread in threads[1:]:
        thread.start()
    # Every call has entered the runtime while the first still holds the activation.
    assert context.entries.reached.wait(WAIT), "not every call reached the runtime"
    assert not outcomes, "a call finished while the activation was still pending"
    tool.gate.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    context.outcomes = outcomes
    context.results = [o for o in outcomes if isinstance(o, toolcycle.ToolResult)]
    errors = [o for o in outcomes if not isinstance(o, toolcycle.ToolResult)]
    context.error = errors[-1] if errors else None


# -- results ------------------------------------------------------------------------------


@then("the call succeeds")
def call_succeeds(context: Any) -> None:
    assert context.error is None, repr(context.error)
    assert context.result is not None and context.result.success, context.result


@then("the call succeeds with output {output}")
def call_succeeds_with(context: Any, output: str) -> None:
    call_succeeds(context)
    assert context.result.output == json.loads(output), context.result.output


@then('the call fails with error type "{error_type}"')
def call_fails(context: Any, error_type: str) -> None:
    assert context.error is None, repr(context.error)
    assert context.result is not None and not context.result.success, context.result
    assert context.result.error_type == error_type, context.result.error_type
    assert context.result.error


@then('the outcome is "{outcome}"')
def outcome_is(context: Any, outcome: str) -> None:
    if outcome == "allowed":
        call_succeeds(context)
    else:
        call_raises(context, outcome)


@then("the call raises {error}")
@then("the registration raises {error}")
@then("unregistering raises {error}")
def call_raises(context: Any, error: str) -> None:
    assert context.error is not None, f"nothing was raised; result: {context.result}"
    assert type(context.error) is getattr(toolcycle, error), repr(context.error)


@then("no error was raised")
def nothing_raised(context: Any) -> None:
    assert context.error is None, repr(context.error)
    assert context.result is not None


@then("no result was returned")
def no_result(context: Any) -> None:
    assert context.result is None, context.result


@then("every call succeeded")
def every_call_succeeded(context: Any) -> None:
    assert context.results and all(r.success for r in context.results), context.results
    assert context.error is None, repr(context.error)


@then("every call raised {error}")
def every_call_raised(context: Any, error: str) -> None:
    expected = getattr(toolcycle, error)
    assert context.outcomes and all(type(o) is expected for o in context.outcomes), context.outcomes


@then('the input was rejected at "{pointer}" by the keyword "{keyword}"')
def input_rejected(context: Any, pointer: str, keyword: str) -> None:
    validation = context.result.validation
    assert validation is not None and not validation.valid, context.result
    wanted = "" if pointer == "(root)" else pointer
    found = [(issue.pointer, issue.keyword) for issue in validation.issues]
    assert (wanted, keyword) in found, found


@then('the issue at "{pointer}" reads: {message}')
def issue_reads(context: Any, pointer: str, message: str) -> None:
    validation = context.result.validation
    wanted = "" if pointer == "(root)" else pointer
    found = [issue.message for issue in validation.issues if issue.pointer == wanted]
    assert message in found, found


@then('the result explains the problem with "{pointer}"')
def result_explains(context: Any, pointer: str) -> None:
    assert not context.result.success
    assert pointer in context.result.error, context.result.error


@then("the result keeps the {cls} it came from")
def result_keeps_exception(context: Any, cls: str) -> None:
    assert type(context.result.exception).__name__ == cls, repr(context.result.exception)


@then("the result re-raises as ToolExecutionError caused by {cause}")
def result_reraises(context: Any, cause: str) -> None:
    try:
        context.result.raise_for_error()
    except toolcycle.ToolExecutionError as exc:
        context.reraised = exc
    else:
        raise AssertionError("raise_for_error did not raise")
    assert type(context.reraised.__cause__).__name__ == cause, repr(context.reraised.__cause__)


@then('the re-raised error names tool "{name:Name}" and plan "{plan_id:Name}"')
def reraised_names(context: Any, name: str, plan_id: str) -> None:
    assert (context.reraised.tool_name, context.reraised.plan_id) == (name, plan_id)


@then("the result does not re-raise")
def result_does_not_reraise(context: Any) -> None:
    context.result.raise_for_error()


@then("the arguments I passed were left as they were")
def arguments_untouched(context: Any) -> None:
    assert context.params == {"items": (1, 2)}, context.params


@then('the result lists changes to "{targets}"')
def result_changes(context: Any, targets: str) -> None:
    seen = [change.target for change in context.result.changes]
    assert seen == [t.strip() for t in targets.split(",")], seen


@then('plan "{plan_id:Name}" lists changes to "{targets}"')
def plan_changes(context: Any, plan_id: str, targets: str) -> None:
    seen = [change.target for change in context.plans[plan_id].changes]
    assert seen == [t.strip() for t in targets.split(",")], seen


# -- what the tools saw -------------------------------------------------------------------


def _counts(context: Any, name: str, stage: str, plan_id: str | None = None) -> int:
    return context.tools[name].count(stage, plan_id)


@then('"{name:Name}" was never activated')
def never_activated(context: Any, name: str) -> None:
    assert _counts(context, name, "activate") == 0


@then('"{name:Name}" never ran')
def never_ran(context: Any, name: str) -> None:
    assert _counts(context, name, "execute") == 0


@then('"{name:Name}" ran {times:d} times in plan "{plan_id:Name}"')
def ran_times(context: Any, name: str, times: int, plan_id: str) -> None:
    assert _counts(context, name, "execute", plan_id) == times


@then('"{name:Name}" was activated {times:d} time in plan "{plan_id:Name}"')
@then('"{name:Name}" was activated {times:d} times in plan "{plan_id:Name}"')
def activated_times(context: Any, name: str, times: int, plan_id: str) -> None:
    assert _counts(context, name, "activate", plan_id) == times


@then('"{name:Name}" was deactivated {times:d} time in plan "{plan_id:Name}"')
@then('"{name:Name}" was deactivated {times:d} times in plan "{plan_id:Name}"')
def deactivated_times(context: Any, name: str, times: int, plan_id: str) -> None:
    assert _counts(context, name, "deactivate", plan_id) == times


@then('"{name:Name}" is active in plan "{plan_id:Name}"')
def is_active(context: Any, name: str, plan_id: str) -> None:
    assert context.runtime.cache.is_active(plan_id, name)


@then('"{name:Name}" is not active in plan "{plan_id:Name}"')
def is_not_active(context: Any, name: str, plan_id: str) -> None:
    assert not context.runtime.cache.is_active(plan_id, name)


@then('"{name:Name}" saw its cancellation')
def saw_cancellation(context: Any, name: str) -> None:
    assert context.tools[name].cancelled.wait(WAIT)


@then('the stages of "{name:Name}" are "{stages}"')
def stages_are(context: Any, name: str, stages: str) -> None:
    expected = [s.strip() for s in stages.split(",")]
    assert context.tools[name].stages() == expected, context.tools[name].stages()


@then('the stages of "{name:Name}" in plan "{plan_id:Name}" are "{stages}"')
def stages_in_plan_are(context: Any, name: str, plan_id: str, stages: str) -> None:
    expected = [s.strip() for s in stages.split(",")]
    assert context.tools[name].stages(plan_id) == expected, context.tools[name].stages(plan_id)


@then('the tools were activated in the order "{names}"')
def activated_in_order(context: Any, names: str) -> None:
    expected = [f"activate {n.strip()}" for n in names.split(",")]
    assert [e for e in context.order if e.startswith("activate")] == expected, context.order


@then('the tools were deactivated in the order "{names}"')
def deactivated_in_order(context: Any, names: str) -> None:
    expected = [f"deactivate {n.strip()}" for n in names.split(",")]
    assert [e for e in context.order if e.startswith("deactivate")] == expected, context.order
