"""Steps for tool search: deferred tools, definitions with a search, search_tools calls."""

from __future__ import annotations

import itertools
import json
from typing import Any

from behave import given, then, when

from toolcycle import wrap
from toolcycle.testing import FakeTool


@given('a deferred tool "{name:Name}" described as "{description}"')
def deferred_tool(context: Any, name: str, description: str) -> None:
    context.runtime.register(
        wrap(lambda: "done", name=name, description=description, writes=False),
        defer_loading=True,
    )


@given('a deferred recording tool "{name:Name}"')
def deferred_recording_tool(context: Any, name: str) -> None:
    context.tools[name] = FakeTool(name=name)
    context.runtime.register(context.tools[name], defer_loading=True)


@given('200 deferred tools named "mcp__x__<verb>_<thing>"')
def prefixed_tools(context: Any) -> None:
    verbs = ["create", "list", "read", "update", "delete"]
    things = ["issue", "file", "user", "invoice", "calendar", "ticket", "message", "folder"]
    pairs = itertools.product(verbs, things)
    for number, (verb, thing) in enumerate(itertools.islice(itertools.cycle(pairs), 200)):
        suffix = "" if number < 40 else f"_{number}"
        context.runtime.register(
            wrap(
                lambda: None,
                name=f"mcp__x__{verb}_{thing}{suffix}",
                description=f"{verb.title()} a {thing}.",
                writes=False,
            ),
            defer_loading=True,
        )


@when('I ask for the definitions in the "{fmt}" format with search "{search}"')
def definitions_with_search(context: Any, fmt: str, search: str) -> None:
    context.format = fmt
    context.error = None
    try:
        context.definitions = context.runtime.tool_definitions(
            context.plan, format=fmt, search=search
        )
    except ValueError as exc:
        context.error = exc


def _names(context: Any) -> list[str]:
    return [
        d["function"]["name"] if "function" in d else d.get("name", d.get("type"))
        for d in context.definitions
    ]


@then('the definitions are "{names}"')
def definitions_are(context: Any, names: str) -> None:
    assert _names(context) == [n.strip() for n in names.split(",")], context.definitions


@then("no definition says defer_loading")
def no_defer_loading(context: Any) -> None:
    assert "defer_loading" not in json.dumps(context.definitions)


@then("the first definition is the search entry {entry}")
def first_is_search_entry(context: Any, entry: str) -> None:
    assert context.definitions[0] == json.loads(entry), context.definitions[0]


@then("the deferred tools are sent with defer_loading true")
def deferred_flagged(context: Any) -> None:
    flags = {d["name"]: d.get("defer_loading") for d in context.definitions[1:]}
    assert flags == {"lookup": None, "github_create_issue": True, "slack_post_message": True}


@then('asking was refused with ValueError mentioning "{text}"')
def refused_with_value_error(context: Any, text: str) -> None:
    assert isinstance(context.error, ValueError) and text in str(context.error), context.error


@when('the model searches for "{query}"')
def model_searches(context: Any, query: str) -> None:
    call = {"name": "search_tools", "arguments": {"query": query}}
    context.result = context.runtime.call(call, context.plan)


@then('the search answered with "{name:Name}" first')
def search_first(context: Any, name: str) -> None:
    assert context.result.success, context.result.error
    assert context.result.output["tools"][0]["name"] == name, context.result.output


@then('the search answered with no tool and a note mentioning "{text}"')
def search_nothing(context: Any, text: str) -> None:
    assert context.result.output["tools"] == [], context.result.output
    assert text in context.result.output["note"]


@then('the last trace of "{name:Name}" revealed "{names}"')
def trace_revealed(context: Any, name: str, names: str) -> None:
    trace = [t for t in context.traces if t.tool_name == name][-1]
    assert trace.revealed_tools == tuple(n.strip() for n in names.split(",")), trace


@then('the last trace of "{name:Name}" revealed nothing')
def trace_revealed_nothing(context: Any, name: str) -> None:
    trace = [t for t in context.traces if t.tool_name == name][-1]
    assert trace.revealed_tools == (), trace


@then('the recording tool "{name:Name}" was only discovered')
def only_discovered(context: Any, name: str) -> None:
    assert context.tools[name].stages() == ["discover"]


@when('the model calls "{name:Name}" by name')
def model_calls_by_name(context: Any, name: str) -> None:
    context.result = context.runtime.call({"name": name, "arguments": {}}, context.plan)


@then("the call succeeded")
def call_succeeded(context: Any) -> None:
    assert context.result.success, context.result.error


@then('the call failed without naming "{names}"')
def failed_without_naming(context: Any, names: str) -> None:
    assert not context.result.success
    for name in names.split(","):
        assert name.strip() not in context.result.error, context.result.error
