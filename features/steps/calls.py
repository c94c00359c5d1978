"""Steps that call tools and check what came back."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from typing import Any

from behave import then, when

import toolcycle

WAIT = 5.0


def _call(context: Any, name: str, params: Any, plan: Any, **options: Any) -> None:
    try:
        result = context.runtime.execute(name, params, plan, **options)
    except (toolcycle.ToolRuntimeError, toolcycle.ToolCancelledError) as exc:
        context.errors.append(exc)
        context.result = None
    else:
        context.results.append(result)
        context.result = result


@when('I call "{name}" with a timeout of {seconds:f} seconds')
def call_with_timeout(context: Any, name: str, seconds: float) -> None:
    _call(context, name, {}, context.plan, timeout=seconds)


@when('I call "{name}" with arguments that are not an object')
def call_with_list(context: Any, name: str) -> None:
    _call(context, name, ["not", "an", "object"], context.plan)


@when('I call "{name}" in plan "{plan_id}"')
def call_in_plan(context: Any, name: str, plan_id: str) -> None:
    _call(context, name, {}, context.plans[plan_id])


@when('I call "{name}" {times:d} times')
def call_many(context: Any, name: str, times: int) -> None:
    for _ in range(times):
        _call(context, name, {}, context.plan)


@when('I call "{name}" with {params}')
def call_with(context: Any, name: str, params: str) -> None:
    _call(context, name, json.loads(params), context.plan)


@when('I call "{name}"')
def call_plain(context: Any, name: str) -> None:
    _call(context, name, {}, context.plan)


@when('{count:d} threads call "{name}" at the same time')
def concurrent_calls(context: Any, count: int, name: str) -> None:
    first = threading.Thread(target=_call, args=(context, name, {}, context.plan))
    first.start()
    assert context.activation_entered.wait(WAIT)
    others = [
        threading.Thread(target=_call, args=(context, name, {}, context.plan))
        for _ in range(count - 1)
    ]
    for thread in others:
        thread.start()
    context.release.set()
    for thread in [first, *others]:
        thread.join(WAIT)
        assert not thread.is_alive()


@when('I await "{name}" and cancel the plan while it runs')
def await_and_cancel(context: Any, name: str) -> None:
    tool = context.tools[name]
    plan = context.plan

    async def scenario() -> None:
        call = asyncio.ensure_future(context.runtime.aexecute(name, {}, plan))
        assert await asyncio.wait_for(asyncio.to_thread(tool.started.wait, WAIT), WAIT)
        plan.cancellation_token.cancel("stop")
        try:
            await asyncio.wait_for(call, WAIT)
        except toolcycle.ToolCancelledError as exc:
            context.errors.append(exc)

    asyncio.run(scenario())


@then("the call succeeds")
def call_succeeds(context: Any) -> None:
    assert context.result is not None and context.result.success, context.result


@then("the call succeeds with output {output}")
def call_succeeds_with(context: Any, output: str) -> None:
    call_succeeds(context)
    assert context.result.output == json.loads(output), context.result.output


@then('the call fails with error type "{error_type}"')
def call_fails(context: Any, error_type: str) -> None:
    assert context.result is not None and not context.result.success
    assert context.result.error_type == error_type, context.result.error_type


@then('the call is rejected at "{pointer}" by the keyword "{keyword}"')
def call_rejected(context: Any, pointer: str, keyword: str) -> None:
    validation = context.result.validation
    assert validation is not None and not validation.valid
    issue = validation.issues[0]
    assert (issue.pointer, issue.keyword) == (pointer if pointer != "/" else "", keyword)


@then("the call raises {error}")
def call_raises(context: Any, error: str) -> None:
    assert context.errors, "no error was raised"
    expected = getattr(toolcycle, error)
    assert isinstance(context.errors[-1], expected), repr(context.errors[-1])


@then('the error names tool "{name}" and plan "{plan_id}"')
def error_names(context: Any, name: str, plan_id: str) -> None:
    error = context.errors[-1]
    assert (error.tool_name, error.plan_id) == (name, plan_id)


@then("the error is a {parent}")
def error_is_a(context: Any, parent: str) -> None:
    assert isinstance(context.errors[-1], getattr(toolcycle, parent))


@then("the error is not a {parent}")
def error_is_not_a(context: Any, parent: str) -> None:
    assert not isinstance(context.errors[-1], getattr(toolcycle, parent))


@then("re-raising the result raises ToolExecutionError caused by {cause}")
def reraise(context: Any, cause: str) -> None:
    try:
        context.result.raise_for_error()
    except toolcycle.ToolExecutionError as exc:
        assert type(exc.__cause__).__name__ == cause
    else:  # pragma: no cover
        raise AssertionError("raise_for_error did not raise")


@then("every call succeeds")
def every_call_succeeds(context: Any) -> None:
    assert context.results and all(r.success for r in context.results)
    assert not context.errors, context.errors


@then('"{name}" was cancelled')
def tool_was_cancelled(context: Any, name: str) -> None:
    assert context.tools[name].cancelled.wait(WAIT)


@then('"{name}" was never activated')
def never_activated(context: Any, name: str) -> None:
    tool = context.tools[name]
    count = getattr(tool, "activations", None)
    assert (count if count is not None else tool.count("activate")) == 0


@then('"{name}" was activated {times:d} times in plan "{plan_id}"')
@then('"{name}" was activated {times:d} time in plan "{plan_id}"')
def activated_times(context: Any, name: str, times: int, plan_id: str) -> None:
    assert context.tools[name].count("activate", plan_id) == times


@then('"{name}" was deactivated {times:d} times in plan "{plan_id}"')
@then('"{name}" was deactivated {times:d} time in plan "{plan_id}"')
def deactivated_times(context: Any, name: str, times: int, plan_id: str) -> None:
    assert context.tools[name].count("deactivate", plan_id) == times


@then('"{name}" is not active in plan "{plan_id}"')
def not_active(context: Any, name: str, plan_id: str) -> None:
    assert not context.runtime.cache.is_active(plan_id, name)


@then("the tools were deactivated in the order {names}")
def deactivated_in_order(context: Any, names: str) -> None:
    expected = [f"deactivate {n.strip()}" for n in names.split(",")]
    seen = [entry for entry in context.order if entry.startswith("deactivate")]
    assert seen == expected, seen


@then('plan "{plan_id}" has recorded {count:d} changes')
def recorded_changes(context: Any, plan_id: str, count: int) -> None:
    assert len(context.plans[plan_id].changes) == count


@then("the call's result lists {count:d} changes")
def result_changes(context: Any, count: int) -> None:
    assert len(context.result.changes) == count
    assert [c.target for c in context.plan.changes][-count:] == [
        c.target for c in context.result.changes
    ]


@then("the interrupt reached the caller")
def interrupt_reached(context: Any) -> None:
    assert context.errors and isinstance(context.errors[-1], KeyboardInterrupt | ValueError)


@then("the package exports {name}")
def package_exports(context: Any, name: str) -> None:
    assert name in importlib.import_module("toolcycle").__all__
