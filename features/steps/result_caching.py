"""Steps for result caching: hits, scopes, refusals and the checks a hit still passes."""

from __future__ import annotations

import json
from typing import Any

from behave import given, then, when

import toolcycle
from toolcycle import CachePolicy


def _weather(context: Any, policy: CachePolicy, *, approval: bool = False) -> None:
    context.weather_runs = []
    context.activations = 0

    @toolcycle.tool(writes=False, requires_approval=approval or None, cache=policy)
    def weather(city: str) -> str:
        """Say the weather in a city."""
        context.weather_runs.append(city)
        return f"rain in {city}"

    @weather.on_activate
    def activated(ctx: toolcycle.ToolExecutionContext) -> None:
        context.activations += 1

    context.runtime.register(weather)
    context.answers = []


@given("a cached weather tool with a time to live of {ttl:d} seconds")
def cached_per_plan(context: Any, ttl: int) -> None:
    _weather(context, CachePolicy(ttl=ttl))


@given("a cached weather tool shared across plans")
def cached_per_runtime(context: Any) -> None:
    _weather(context, CachePolicy(ttl=60, scope="runtime"))


@given("a cached weather tool that needs approval")
def cached_with_approval(context: Any) -> None:
    _weather(context, CachePolicy(ttl=60), approval=True)


@when('a plan asks the weather in "{city}" twice')
def ask_twice(context: Any, city: str) -> None:
    with context.runtime.plan(read_only=True) as ctx:
        for _ in range(2):
            context.answers.append(context.runtime.execute("weather", {"city": city}, ctx))


@when('a new plan asks the weather in "{city}"')
def ask_in_new_plan(context: Any, city: str) -> None:
    with context.runtime.plan(read_only=True) as ctx:
        context.answers.append(context.runtime.execute("weather", {"city": city}, ctx))


@when('a plan whose approver says yes, then no, asks the weather in "{city}" twice')
def ask_with_approver(context: Any, city: str) -> None:
    answers = [True, False]
    with context.runtime.plan(approver=lambda request: answers.pop(0)) as ctx:
        for _ in range(2):
            context.answers.append(context.runtime.execute("weather", {"city": city}, ctx))


@when('a plan asks the weather in "{city}" and the model calls it with the same input')
def ask_then_model_call(context: Any, city: str) -> None:
    model_call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "weather", "arguments": json.dumps({"city": city})},
    }
    with context.runtime.plan() as ctx:
        context.answers.append(context.runtime.execute("weather", {"city": city}, ctx))
        context.answers.append(context.runtime.call(model_call, ctx))


@when("a tool that writes is registered with a cache policy")
def register_writing(context: Any) -> None:
    @toolcycle.tool
    def send(text: str) -> str:
        """Send a message."""
        return text

    try:
        context.runtime.register(send, cache=CachePolicy(ttl=60))
    except toolcycle.ToolRegistrationError as exc:
        context.error = exc
    else:
        context.error = None


@then("the weather tool ran once")
def ran_once(context: Any) -> None:
    assert len(context.weather_runs) == 1, context.weather_runs


@then("the weather tool ran {count:d} times")
def ran_times(context: Any, count: int) -> None:
    assert len(context.weather_runs) == count, context.weather_runs


@then("the weather tool was activated once")
def activated_once(context: Any) -> None:
    assert context.activations == 1, context.activations


@then('both answers say "{text}"')
def both_say(context: Any, text: str) -> None:
    assert [answer.output for answer in context.answers] == [text, text]


@then("the second trace is marked as a cache hit")
def second_hit(context: Any) -> None:
    first, second = (answer.trace for answer in context.answers)
    assert not first.cache_hit and second.cache_hit


@then("the result cache is empty once every plan has ended")
def cache_empty(context: Any) -> None:
    assert len(context.runtime.result_cache) == 0


@then('the registration is refused with "{text}"')
def refused(context: Any, text: str) -> None:
    assert context.error is not None and text in str(context.error), context.error


@then("the second answer is denied")
def second_denied(context: Any) -> None:
    second = context.answers[1]
    assert not second.success and second.trace.status == "denied", second


@then("the model's answer quotes its call id and is marked as a cache hit")
def model_hit(context: Any) -> None:
    answer = context.answers[1]
    assert answer.trace.cache_hit and answer.trace.tool_call_id == "call_7"
    assert answer.to_message()["tool_call_id"] == "call_7"
