"""Steps for guardrails: rejections for the model, stops for the host, and their order."""

from __future__ import annotations

from typing import Any

from behave import given, then, when

import toolcycle
from toolcycle.approvals import ApprovalDecision
from toolcycle.guardrails import allow, reject, stop


def _delete_tool(context: Any, **options: Any) -> Any:
    context.deleted = []
    context.events = []

    @toolcycle.tool(**options)
    def delete(path: str) -> str:
        """Delete a file."""
        context.deleted.append(path)
        return f"deleted {path}"

    return delete


@given('a runtime whose guardrail rejects deleting "{path}" with "{message}"')
def rejecting_runtime(context: Any, path: str, message: str) -> None:
    def protect_root(call: Any, ctx: Any) -> Any:
        return reject(message) if call.arguments["path"] == path else allow()

    runtime = context.make_runtime(input_guardrails=[protect_root])
    context.delete = _delete_tool(context)
    runtime.register(context.delete)


@given('a runtime whose guardrail stops every call of "{name}"')
def stopping_runtime(context: Any, name: str) -> None:
    def freeze(call: Any, ctx: Any) -> Any:
        return stop("deletes are frozen") if call.tool_name == name else allow()

    runtime = context.make_runtime(input_guardrails=[freeze])
    runtime.register(_delete_tool(context))


@given('the tool "{name}" also has its own guardrail')
def own_guardrail(context: Any, name: str) -> None:
    context.own_ran = []

    def own(call: Any, ctx: Any) -> Any:
        context.own_ran.append(call.tool_name)
        return allow()

    context.runtime.unregister(name)
    context.runtime.register(context.delete, input_guardrails=[own])


@given('a tool "{name}" whose output guardrail rejects outputs holding "{word}"')
def output_guarded(context: Any, name: str, word: str) -> None:
    def no_passwords(call: Any, ctx: Any) -> Any:
        return reject(f"the output held a {word}") if word in str(call.output) else allow()

    @toolcycle.tool(name=name, writes=False, output_guardrails=[no_passwords])
    def read(path: str) -> str:
        """Read a file."""
        return f"{path}: password=hunter2"

    context.runtime.register(read)


def _ordered_plan(context: Any, after: bool) -> None:
    def noting(call: Any, ctx: Any) -> Any:
        context.events.append("guardrail")
        return allow()

    def approver(request: Any) -> Any:
        context.events.append("approver")
        return ApprovalDecision.approve()

    runtime = context.make_runtime(input_guardrails=[noting], guardrails_after_approval=after)
    runtime.register(_delete_tool(context))
    context.plan = runtime.new_context(approver=approver)


@given("a plan whose approver approves and a guardrail that notes when it runs")
def before_approval(context: Any) -> None:
    _ordered_plan(context, after=False)


@given("a plan whose approver approves and a guardrail after approval that notes when it runs")
def after_approval(context: Any) -> None:
    _ordered_plan(context, after=True)


def _model_call(name: str, path: str) -> dict[str, Any]:
    return {"id": "call_1", "name": name, "arguments": {"path": path}}


@when('the model calls "{name}" with path "{path}"')
def model_calls(context: Any, name: str, path: str) -> None:
    with context.runtime.plan() as ctx:
        context.result = context.runtime.call(_model_call(name, path), ctx)


@when('the model calls "{name}" with path "{path}" and the host catches the error')
def model_calls_caught(context: Any, name: str, path: str) -> None:
    context.caught = None
    with context.runtime.plan() as ctx:
        try:
            context.runtime.call(_model_call(name, path), ctx)
        except toolcycle.GuardrailTripped as error:
            context.caught = error


@when('the plan reads "{path}"')
def plan_reads(context: Any, path: str) -> None:
    with context.runtime.plan() as ctx:
        context.result = context.runtime.execute("read", {"path": path}, ctx)


@when('the plan deletes "{path}"')
def plan_deletes(context: Any, path: str) -> None:
    context.result = context.runtime.execute("delete", {"path": path}, context.plan)
    context.runtime.end_plan(context.plan)


@then('the model\'s answer is a failure saying "{message}"')
def answer_fails(context: Any, message: str) -> None:
    result = context.result
    assert not result.success and result.error == message, result
    assert message in result.to_message()["content"]


@then("nothing was deleted")
def nothing_deleted(context: Any) -> None:
    assert context.deleted == [], context.deleted


@then('the trace says "{status}" with the decisions "{decisions}"')
def trace_says(context: Any, status: str, decisions: str) -> None:
    trace = context.traces[-1]
    assert trace.status == status, trace
    listed = [f"{g.stage}:{g.name}:{g.outcome}" for g in trace.guardrails]
    assert listed == decisions.split(", "), listed


@then('the host caught GuardrailTripped from guardrail "{name}"')
def host_caught(context: Any, name: str) -> None:
    assert context.caught is not None and context.caught.guardrail == name, context.caught
    assert context.traces[-1].status == "stopped"


@then('the read failed with "{message}"')
def read_failed(context: Any, message: str) -> None:
    assert not context.result.success and context.result.error == message, context.result
    assert context.result.output is None


@then("the tool's own guardrail never ran")
def own_never_ran(context: Any) -> None:
    assert context.own_ran == [], context.own_ran


@then("the guardrail ran before the approver")
def ran_before(context: Any) -> None:
    assert context.events == ["guardrail", "approver"], context.events


@then("the guardrail ran after the approver")
def ran_after(context: Any) -> None:
    assert context.events == ["approver", "guardrail"], context.events
