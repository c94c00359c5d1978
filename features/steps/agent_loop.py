"""Steps for the agent loop: definitions, calls as a model sends them, batches."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from behave import given, then, when

import toolcycle


def _answer(context: Any, run: Any) -> None:
    context.error = None
    context.result = None
    try:
        context.result = run()
    except toolcycle.ToolRuntimeError as exc:  # kept for the "did not raise" checks
        context.error = exc


@when('I ask for the tool definitions in the "{fmt}" format')
def definitions(context: Any, fmt: str) -> None:
    context.definitions = context.runtime.tool_definitions(context.plan, format=fmt)
    context.format = fmt


def _offered_names(context: Any) -> list[str]:
    if context.format == "openai":
        return [d["function"]["name"] for d in context.definitions]
    return [d["name"] for d in context.definitions]


@then('the model is offered the tools "{names}"')
def offered(context: Any, names: str) -> None:
    assert _offered_names(context) == [n.strip() for n in names.split(",")], context.definitions


@then('the model is offered one tool whose name starts with "{prefix}"')
def offered_mapped(context: Any, prefix: str) -> None:
    [name] = _offered_names(context)
    assert name.startswith(prefix), name
    context.offered = name


@when('the model calls that tool in the "openai" format with id "{call_id}"')
def call_offered(context: Any, call_id: str) -> None:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": context.offered, "arguments": "{}"},
    }
    _answer(context, lambda: context.runtime.call(call, context.plan))


@then('the result answers "{call_id}" in a role=tool message')
def answers(context: Any, call_id: str) -> None:
    assert context.error is None, repr(context.error)
    message = context.result.to_message()
    assert (message["role"], message["tool_call_id"]) == ("tool", call_id), message


@then('the trace names the tool "{name:Name}"')
def trace_names(context: Any, name: str) -> None:
    assert context.result.trace.tool_name == name


@when("the model sends the OpenAI tool call {call}")
def model_sends(context: Any, call: str) -> None:
    raw = json.loads(call)
    _answer(context, lambda: context.runtime.call(raw, context.plan))


@then('the call failed with error type "{error_type}" and did not raise')
def failed_without_raising(context: Any, error_type: str) -> None:
    assert context.error is None, repr(context.error)
    assert not context.result.success
    assert context.result.error_type == error_type, context.result
    assert context.result.error


@then('the tool-result message quotes the call id "{call_id}"')
def quotes(context: Any, call_id: str) -> None:
    assert context.result.to_message()["tool_call_id"] == call_id


@given("sequential tools that record whether they ran alone")
def sequential_tools(context: Any) -> None:
    lock = threading.Lock()
    state = {"running": 0}
    context.alone = {}

    async def run(label: str) -> None:
        with lock:
            state["running"] += 1
        await asyncio.sleep(0)
        with lock:
            context.alone[label] = context.alone.get(label, True) and state["running"] == 1
            state["running"] -= 1

    @toolcycle.tool(name="step", writes=False)
    async def step() -> str:
        """A step."""
        await run("step")
        return "step"

    @toolcycle.tool(name="commit", writes=False, sequential=True)
    async def commit() -> str:
        """A step that must run alone."""
        await run("commit")
        return "commit"

    context.runtime.register(step)
    context.runtime.register(commit)


@when('the model sends a batch of calls to "{names}"')
def send_batch(context: Any, names: str) -> None:
    batch = [
        {"id": f"b{i}", "type": "function", "function": {"name": name.strip(), "arguments": "{}"}}
        for i, name in enumerate(names.split(","))
    ]
    context.batch = context.runtime.call_many(batch, context.plan)


@then('the batch answered the ids "{ids}" with successes "{flags}"')
def batch_answered(context: Any, ids: str, flags: str) -> None:
    assert [r.to_message()["tool_call_id"] for r in context.batch] == [
        i.strip() for i in ids.split(",")
    ]
    assert [r.success for r in context.batch] == [f.strip() == "yes" for f in flags.split(",")]


@then('"{name:Name}" ran alone')
def ran_alone(context: Any, name: str) -> None:
    assert all(r.success for r in context.batch), context.batch
    assert context.alone[name] is True, context.alone
