"""Steps for the OpenAI Agents SDK adapter: runs with the SDK's ScriptedModel, both ways.

Every step text names the OpenAI Agents SDK (or "the SDK"), so that none clashes
with the steps of the other framework adapters.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, RunConfig, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ModelCall, ScriptedModel, assistant_message, function_call
from behave import given, then, when

import toolcycle
from toolcycle.adapters.openai_agents import from_function_tool, function_tools
from toolcycle.testing import FakeTool

_CONFIG = RunConfig(tracing_disabled=True, tool_not_found_behavior="return_error_to_model")


def _outputs(call: ModelCall) -> dict[str, str]:
    return {
        item["call_id"]: item["output"]
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def _setup(context: Any, **plan_options: Any) -> None:
    set_tracing_disabled(True)  # the SDK's own switch: nothing is exported
    context.lookup = FakeTool(
        name="lookup",
        input_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        },
        output=lambda params, ctx: params["key"].upper(),
    )
    context.runtime.register(context.lookup)
    context.ran = []
    context.plan = context.runtime.new_context(**plan_options)


def _writer(context: Any, name: str) -> None:
    def write(to: str) -> str:
        context.ran.append(name)
        return f"{name} done"

    context.runtime.register(toolcycle.wrap(write, name=name, description=f"{name} it"))


def _run(context: Any, model: ScriptedModel) -> Any:
    context.model = model
    context.agent = Agent(
        name="agent", tools=function_tools(context.runtime, context.plan), model=model
    )
    return asyncio.run(Runner.run(context.agent, "go", run_config=_CONFIG))


@given("an OpenAI Agents plan with the lookup tool")
def plan_with_lookup(context: Any) -> None:
    _setup(context)


@given('an OpenAI Agents read-only plan with the lookup tool and the writing tool "{name:Name}"')
def read_only_plan(context: Any, name: str) -> None:
    _setup(context, read_only=True)
    _writer(context, name)


@given('an OpenAI Agents plan with an approver and the writing tool "{name:Name}"')
def approval_plan(context: Any, name: str) -> None:
    _setup(context, approver=lambda request: True)
    _writer(context, name)


@when('the SDK agent looks up "a", then 7, then "b"')
def look_up_three(context: Any) -> None:
    model = ScriptedModel(
        [
            [
                function_call("lookup", {"key": "a"}, call_id="k1"),
                function_call("lookup", {"key": 7}, call_id="k2"),
            ],
            [function_call("lookup", {"key": "b"}, call_id="k3")],
            [assistant_message("done")],
        ]
    )
    assert _run(context, model).final_output == "done"
    context.runtime.end_plan(context.plan)


@given('an OpenAI Agents plan with the lookup tool and the async tool "{name:Name}"')
def plan_with_async_tool(context: Any, name: str) -> None:
    _setup(context)

    async def echo(text: str) -> str:
        return text

    context.runtime.register(toolcycle.wrap(echo, name=name, description="Echo a text."))


@when(
    'Runner.run_sync runs the SDK agent, which calls "{sync:Name}" and "{coro:Name}", '
    "in runtime.plan()"
)
def run_sync(context: Any, sync: str, coro: str) -> None:
    context.model = ScriptedModel(
        [
            [
                function_call(sync, {"key": "a"}, call_id="r1"),
                function_call(coro, {"text": "hi"}, call_id="r2"),
            ],
            [assistant_message("done")],
        ]
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # run_sync runs on this thread's default loop
    try:
        with context.runtime.plan() as plan:
            tools = function_tools(context.runtime, plan)
            agent = Agent(name="agent", tools=tools, model=context.model)
            result = Runner.run_sync(agent, "go", run_config=_CONFIG)
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert result.final_output == "done"


@then('the SDK model read "{first}" from "{sync:Name}" and "{second}" from "{coro:Name}"')
def read_both(context: Any, first: str, sync: str, second: str, coro: str) -> None:
    outputs = _outputs(context.model.calls[1])
    assert {sync: outputs["r1"], coro: outputs["r2"]} == {sync: first, coro: second}, outputs


@then("each SDK call was traced with the SDK's call id")
def traced_with_ids(context: Any) -> None:
    pairs = sorted((trace.tool_call_id, trace.tool_name) for trace in context.traces)
    assert pairs == [("r1", "lookup"), ("r2", "echo")], pairs


@when('the SDK agent calls "{name:Name}" anyway')
def call_anyway(context: Any, name: str) -> None:
    model = ScriptedModel(
        [[function_call(name, {"to": "x"}, call_id="w1")], [assistant_message("")]]
    )
    _run(context, model)


@when('the SDK agent calls "{name:Name}" and the run stops for approval')
def call_for_approval(context: Any, name: str) -> None:
    model = ScriptedModel([[function_call(name, {"to": "ann"}, call_id="s1")]])
    context.first = _run(context, model)
    assert context.first.interruptions


@when("the host approves the interrupted call in the run state and resumes twice")
def approve_and_resume_twice(context: Any) -> None:
    state = context.first.to_state()
    state.approve(state.get_interruptions()[0])
    stored = state.to_json()
    context.model.extend([[assistant_message("one")], [assistant_message("two")]])

    async def resume_twice() -> None:
        await Runner.run(context.agent, state, run_config=_CONFIG)
        again = await RunState.from_json(context.agent, stored)
        await Runner.run(context.agent, again, run_config=_CONFIG)

    asyncio.run(resume_twice())


@then("the OpenAI Agents lookup was activated once and deactivated once")
def activated_once(context: Any) -> None:
    assert (context.lookup.count("activate"), context.lookup.count("deactivate")) == (1, 1)


@then("the OpenAI Agents plan traced {count:d} calls, one with invalid input")
def traced(context: Any, count: int) -> None:
    statuses = sorted(trace.status for trace in context.traces)
    assert len(statuses) == count and statuses.count("invalid_input") == 1, statuses


@then('the SDK model read the runtime\'s message about "{word}" before it retried')
def read_message(context: Any, word: str) -> None:
    assert word in _outputs(context.model.calls[1])["k2"]


@then('the SDK agent was offered only "{name:Name}"')
def offered_only(context: Any, name: str) -> None:
    assert [tool.name for tool in context.model.calls[0].tools] == [name]


@then('the SDK model read an answer mentioning "{name:Name}"')
def answered(context: Any, name: str) -> None:
    assert name in _outputs(context.model.calls[1])["w1"]


@then('the OpenAI Agents tool "{name:Name}" never ran')
def never_ran(context: Any, name: str) -> None:
    assert name not in context.ran


@then('the OpenAI Agents tool "{name:Name}" ran once')
def ran_once(context: Any, name: str) -> None:
    assert context.ran == [name]


@then("its trace says the call was approved and resumed")
def approved_in_trace(context: Any) -> None:
    [trace] = context.traces
    assert trace.approval is not None
    assert (trace.approval.outcome, trace.approval.resumed) == ("approved", True)


@then('the second resume was answered with "{words}"')
def second_refused(context: Any, words: str) -> None:
    assert words in _outputs(context.model.calls[-1])["s1"]


def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@given('the SDK function tool "{name:Name}" registered with toolcycle')
def sdk_tool(context: Any, name: str) -> None:
    context.runtime.register(from_function_tool(function_tool(_add, name_override=name)))


@when('a toolcycle plan runs "{name:Name}" with 2 and 3, and with "two" and 3')
def run_sdk_tool(context: Any, name: str) -> None:
    with context.runtime.plan() as plan:
        context.results = [
            context.runtime.execute(name, {"a": 2, "b": 3}, plan),
            context.runtime.execute(name, {"a": "two", "b": 3}, plan),
        ]


@then("the first call returned 5 and the second was refused as invalid input")
def sdk_results(context: Any) -> None:
    ok, refused = context.results
    assert ok.output == 5
    assert refused.error_type == "ToolSchemaValidationError"
    assert [t.status for t in context.traces] == ["ok", "invalid_input"]


@then('a read-only plan refuses "{name:Name}", which is taken to write')
def read_only_refuses(context: Any, name: str) -> None:
    with context.runtime.plan(read_only=True) as plan:
        call = {"name": name, "arguments": {"a": 1, "b": 1}}
        assert context.runtime.call(call, plan).error_type == "ToolAccessDeniedError"
