"""Steps about plans: opening, cancelling and ending them."""

from __future__ import annotations

from typing import Any

from behave import given, then, when

from toolcycle import ToolRuntimeError


@given('a read-only plan "{plan_id}" that requires checkpoints')
def a_strict_plan(context: Any, plan_id: str) -> None:
    context.plans[plan_id] = context.runtime.new_context(
        plan_id, read_only=True, requires_checkpoint=True
    )
    context.plan = context.plans[plan_id]


@given('a plan "{plan_id}" that requires checkpoints')
def a_checkpoint_plan(context: Any, plan_id: str) -> None:
    context.plans[plan_id] = context.runtime.new_context(plan_id, requires_checkpoint=True)
    context.plan = context.plans[plan_id]


@given('a read-only plan "{plan_id}"')
def a_read_only_plan(context: Any, plan_id: str) -> None:
    context.plans[plan_id] = context.runtime.new_context(plan_id, read_only=True)
    context.plan = context.plans[plan_id]


@given('a plan "{plan_id}"')
def a_plan(context: Any, plan_id: str) -> None:
    context.plans[plan_id] = context.runtime.new_context(plan_id)
    context.plan = context.plans[plan_id]


@when('plan "{plan_id}" is cancelled with reason "{reason}"')
@given('plan "{plan_id}" is cancelled with reason "{reason}"')
def cancel_plan(context: Any, plan_id: str, reason: str) -> None:
    context.plans[plan_id].cancellation_token.cancel(reason)


@when('plan "{plan_id}" ends')
def end_plan(context: Any, plan_id: str) -> None:
    context.deactivation_errors = context.runtime.end_plan(context.plans[plan_id])


@when("the runtime is closed")
def close_runtime(context: Any) -> None:
    context.runtime.close()


@when('a plan scope "{plan_id}" that calls "{name}" is left by {how}')
def leave_scope(context: Any, plan_id: str, name: str, how: str) -> None:
    interrupts = {"an exception": ValueError("boom"), "a keyboard interrupt": KeyboardInterrupt()}
    try:
        with context.runtime.plan(plan_id) as ctx:
            context.plans[plan_id] = ctx
            context.runtime.execute(name, {}, ctx)
            raise interrupts[how]
    except (ValueError, KeyboardInterrupt) as exc:
        context.errors.append(exc)


@then('plan "{plan_id}" has ended')
def plan_has_ended(context: Any, plan_id: str) -> None:
    assert context.plans[plan_id].ended


@then("ending it again does nothing")
def end_again(context: Any) -> None:
    assert context.runtime.end_plan(context.plan) == []


@then('calling "{name}" in plan "{plan_id}" fails because the plan has ended')
def call_after_end(context: Any, name: str, plan_id: str) -> None:
    try:
        context.runtime.execute(name, {}, context.plans[plan_id])
    except ToolRuntimeError as exc:
        assert "has ended" in str(exc)
    else:  # pragma: no cover - the assertion below documents the failure
        raise AssertionError("the call on an ended plan was not refused")


@then("{count:d} deactivation errors are reported")
@then("{count:d} deactivation error is reported")
def deactivation_errors(context: Any, count: int) -> None:
    assert len(context.deactivation_errors) == count, context.deactivation_errors
