"""Tool search and deferred loading: definitions per provider, the search_tools meta-tool, reveals."""

from __future__ import annotations

import asyncio
import builtins
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcycle import (
    NullTracer,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolNotFoundError,
    ToolRuntime,
    ToolRuntimeError,
    tool,
    wrap,
)
from toolcycle.agent._deferred import SEARCH_TOOL
from toolcycle.agent._search import SearchIndex, words
from toolcycle.testing import FakeTool, capture_traces


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(writes=False, defer_loading=True)
def github_create_issue(repo: str, title: str) -> str:
    """Create an issue in a GitHub repository."""
    return f"{repo}#{title}"


@tool(writes=False, defer_loading=True)
def slack_post_message(channel: str, text: str) -> str:
    """Post a message to a Slack channel."""
    return "posted"


@tool(defer_loading=True)
def delete_repository(repo: str) -> str:
    """Delete a GitHub repository for good (a tool that writes)."""
    return "gone"


@pytest.fixture
def searchable(runtime: ToolRuntime) -> ToolRuntime:
    """The runtime with one plain tool and three deferred ones."""
    for each in (add, github_create_issue, slack_post_message, delete_repository):
        runtime.register(each)
    return runtime


@pytest.fixture
def ctx(searchable: ToolRuntime) -> Iterator[ToolExecutionContext]:
    """A read-only plan of the searchable runtime, ended after the test."""
    with searchable.plan(read_only=True) as context:
        yield context


def names(definitions: list[dict[str, Any]]) -> list[str]:
    """The name (or type, for a search entry) of each definition, in order."""
    found = []
    for item in definitions:
        if "function" in item:
            found.append(item["function"]["name"])
        else:
            found.append(item.get("name") or item["type"])
    return found


def search(runtime: ToolRuntime, ctx: ToolExecutionContext, query: str, **more: Any) -> Any:
    """A model's plain search_tools call through runtime.call."""
    return runtime.call({"name": "search_tools", "arguments": {"query": query, **more}}, ctx)


# -- defer_loading where a tool is defined and registered -------------------------------


def test_defer_loading_is_false_unless_the_tool_asks() -> None:
    """A tool is shown in full by default; @tool and wrap set the descriptor's flag."""
    assert add.discover().defer_loading is False
    assert github_create_issue.discover().defer_loading is True
    assert (
        wrap(lambda: 1, name="one", description="One.", defer_loading=True).discover().defer_loading
        is True
    )


def test_register_overrides_the_descriptors_defer_loading(runtime: ToolRuntime) -> None:
    """register(defer_loading=...) replaces the flag; None keeps the descriptor's."""
    assert runtime.register(add, defer_loading=True).defer_loading is True
    assert runtime.register(github_create_issue, defer_loading=False).defer_loading is False
    assert runtime.register(slack_post_message).defer_loading is True
    assert runtime.descriptor("add").defer_loading is True


class Source:
    """A source of two plain tools that may defer all of them."""

    def __init__(self, defer_loading: bool | None = None) -> None:
        if defer_loading is not None:
            self.defer_loading = defer_loading

    def tools(self) -> list[Any]:
        return [FakeTool(name="one"), FakeTool(name="two")]


def test_register_source_defers_every_tool_of_a_source() -> None:
    """defer_loading on register_source, or on the source itself, sets all its tools'."""
    cases = [(Source(), True, True), (Source(True), None, True), (Source(True), False, False)]
    for source, argument, expected in cases:
        with ToolRuntime() as runtime:
            registered = runtime.register_source(source, defer_loading=argument)
        assert [d.defer_loading for d in registered] == [expected, expected]


def test_a_source_that_says_false_leaves_each_tools_own_choice(runtime: ToolRuntime) -> None:
    """A source's defer_loading=False does not undo a tool that defers itself."""

    class Mixed:
        defer_loading = False

        def tools(self) -> list[Any]:
            return [github_create_issue, add]

    registered = runtime.register_source(Mixed())
    assert [d.defer_loading for d in registered] == [True, False]


def test_a_refreshed_source_keeps_deferring(runtime: ToolRuntime) -> None:
    """A stale source registered afresh before the next plan still defers its tools."""
    source = Source()
    runtime.register_source(source, defer_loading=True)
    source.stale = True  # type: ignore[attr-defined]
    with runtime.plan():
        pass
    assert runtime.descriptor("one").defer_loading is True


# -- definitions per provider -----------------------------------------------------------


def test_local_search_hides_deferred_tools_behind_search_tools(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """OpenAI Chat, Gemini and MCP get the meta-tool in place of the deferred tools."""
    for format in ("openai", "gemini", "mcp"):
        definitions = searchable.tool_definitions(ctx, format=format)  # type: ignore[arg-type]
        assert names(definitions) == ["add", "search_tools"]
        assert "defer_loading" not in str(definitions)


def test_anthropic_gets_its_tool_search_tool_and_defer_loading(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """The BM25 tool-search tool by default, the regex one on request; deferred tools flagged."""
    definitions = searchable.tool_definitions(ctx, format="anthropic")
    assert definitions[0] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    flagged = {d["name"]: d.get("defer_loading") for d in definitions[1:]}
    assert flagged == {"add": None, "github_create_issue": True, "slack_post_message": True}
    regex = searchable.tool_definitions(ctx, format="anthropic", search="regex")
    assert regex[0]["type"] == "tool_search_tool_regex_20251119"


def test_openai_responses_gets_hosted_tool_search(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """The Responses API gets {"type": "tool_search"} and defer_loading on deferred functions."""
    definitions = searchable.tool_definitions(ctx, format="openai-responses", search="hosted")
    assert definitions[0] == {"type": "tool_search"}
    assert [d.get("defer_loading", False) for d in definitions[1:]] == [False, True, True]


def test_search_local_works_for_every_format(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """search='local' sends the meta-tool to providers that have a native search too."""
    for format in ("anthropic", "openai-responses"):
        definitions = searchable.tool_definitions(ctx, format=format, search="local")
        assert names(definitions) == ["add", "search_tools"]
        assert "defer_loading" not in str(definitions)


@pytest.mark.parametrize(
    ("format", "search"),
    [
        ("openai", "native"),
        ("gemini", "native"),
        ("mcp", "native"),
        ("openai", "bm25"),
        ("anthropic", "hosted"),
        ("openai-responses", "regex"),
        ("openai", "fuzzy"),
    ],
)
def test_a_search_the_provider_lacks_is_refused(
    searchable: ToolRuntime, ctx: ToolExecutionContext, format: str, search: str
) -> None:
    """defer_loading is never sent to a provider without search: asking for it raises."""
    with pytest.raises(ValueError, match="search"):
        searchable.tool_definitions(ctx, format=format, search=search)  # type: ignore[arg-type]


def test_native_means_each_providers_own_search(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """search='native' picks Anthropic's BM25 tool and OpenAI's hosted search."""
    anthropic = searchable.tool_definitions(ctx, format="anthropic", search="native")
    responses = searchable.tool_definitions(ctx, format="openai-responses", search="native")
    assert anthropic[0]["name"] == "tool_search_tool_bm25"
    assert responses[0] == {"type": "tool_search"}


def test_without_deferred_tools_nothing_is_added(runtime: ToolRuntime) -> None:
    """No deferred tool, no search entry: definitions are what they were before."""
    runtime.register(add)
    with runtime.plan() as ctx:
        for format in ("openai", "anthropic", "openai-responses"):
            assert names(runtime.tool_definitions(ctx, format=format)) == ["add"]  # type: ignore[arg-type]


def test_deferred_tools_the_plan_may_not_run_add_no_search(runtime: ToolRuntime) -> None:
    """A read-only plan whose only deferred tool writes gets no search tool."""
    runtime.register(add)
    runtime.register(delete_repository)
    with runtime.plan(read_only=True) as ctx:
        assert names(runtime.tool_definitions(ctx)) == ["add"]


def test_a_registered_search_tools_clashes_with_local_search(runtime: ToolRuntime) -> None:
    """A tool already named search_tools must be renamed to use local search."""
    runtime.register(wrap(lambda query: query, name="search_tools", description="Mine."))
    runtime.register(github_create_issue)
    with runtime.plan() as ctx:
        with pytest.raises(ValueError, match="register it under another name"):
            runtime.tool_definitions(ctx)
        assert runtime.tool_definitions(ctx, format="anthropic")[0]["type"].startswith("tool_")
        result = search(runtime, ctx, "github")
    assert result.output == "github"  # the registered tool answers, not the meta-tool


# -- the search_tools meta-tool ----------------------------------------------------------


def test_search_reveals_the_best_match_for_the_rest_of_the_plan(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A search returns name and description, reveals it, and definitions then include it."""
    result = search(searchable, ctx, "open an issue on github")
    assert result.success
    assert result.output["tools"][0] == {
        "name": "github_create_issue",
        "description": "Create an issue in a GitHub repository.",
    }
    assert "github_create_issue" in ctx.revealed_tools
    assert names(searchable.tool_definitions(ctx)) == [
        "add",
        "github_create_issue",
        "search_tools",
    ]
    with searchable.plan() as other:
        assert other.revealed_tools == frozenset()  # per plan


def test_the_search_calls_trace_records_what_it_revealed(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """The trace of a search says ok, names search_tools, and lists the revealed tools."""
    with capture_traces(searchable) as traces:
        result = search(searchable, ctx, "slack message")
    assert result.trace is not None
    assert result.trace.revealed_tools == ("slack_post_message",)
    assert [(t.tool_name, t.status, t.revealed_tools) for t in traces] == [
        ("search_tools", "ok", ("slack_post_message",))
    ]
    assert result.trace.result_size_bytes > 0


def test_search_never_activates_anything(runtime: ToolRuntime) -> None:
    """Searching reads descriptors only: no deferred tool is activated or run."""
    fakes = [FakeTool(name=f"fake_{word}") for word in ("alpha", "beta", "gamma")]
    for fake in fakes:
        runtime.register(fake, defer_loading=True)
    with runtime.plan() as ctx:
        found = search(runtime, ctx, "fake alpha")
    assert found.output["tools"][0]["name"] == "fake_alpha"
    assert [fake.stages() for fake in fakes] == [["discover"]] * 3


def test_search_only_finds_tools_the_plan_may_run(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A read-only plan's search never returns a tool that writes."""
    result = search(searchable, ctx, "delete github repository")
    assert "delete_repository" not in str(result.output)


def test_search_answers_in_the_names_the_provider_takes(runtime: ToolRuntime) -> None:
    """A deferred tool whose name a provider rejects is returned in that provider's form."""
    weather = wrap(lambda: "sunny", name="weather.today", description="Today's weather.")
    runtime.register(weather, defer_loading=True)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_tools", "arguments": '{"query": "weather"}'},
    }
    with runtime.plan() as ctx:
        result = runtime.call(call, ctx)
        [found] = result.output["tools"]
        assert found["name"].startswith("weather_today_")
        ran = runtime.call({**call, "function": {"name": found["name"], "arguments": "{}"}}, ctx)
    assert ran.output == "sunny"
    assert result.to_message()["tool_call_id"] == "call_1"


def test_calling_a_deferred_tool_by_name_works_and_reveals_it(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A model that knows a deferred tool may call it; it is shown in full from then on."""
    result = searchable.call(
        {"name": "slack_post_message", "arguments": {"channel": "c", "text": "t"}}, ctx
    )
    assert result.output == "posted"
    assert ctx.revealed_tools == frozenset({"slack_post_message"})
    anthropic = searchable.tool_definitions(ctx, format="anthropic")
    assert {d["name"]: d.get("defer_loading") for d in anthropic[1:]}["slack_post_message"] is None


def test_a_host_reveals_what_a_native_search_found(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """ctx.reveal_tools shows tools in full, as a provider's tool search reported them."""
    ctx.reveal_tools(["github_create_issue", "slack_post_message"])
    ctx.reveal_tools(["github_create_issue"])  # again: nothing changes
    assert names(searchable.tool_definitions(ctx)) == [
        "add",
        "github_create_issue",
        "slack_post_message",
    ]


def test_revealing_one_name_given_as_a_string_is_refused(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A bare string is refused with a TypeError, not revealed letter by letter."""
    with pytest.raises(TypeError, match=r"pass \['slack_post_message'\]"):
        ctx.reveal_tools("slack_post_message")
    assert ctx.revealed_tools == frozenset()


def test_executing_search_tools_says_that_call_answers_it(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A host that executes the search meta-tool is told that call and acall answer it."""
    with pytest.raises(ToolNotFoundError, match=r"'search_tools' is registered: .* runtime\.call"):
        searchable.execute(SEARCH_TOOL, {"query": "issue"}, ctx)
    with pytest.raises(ToolNotFoundError) as other:
        searchable.execute("search_tool", {}, ctx)
    assert "runtime.call" not in str(other.value)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "needs a 'query'"),
        ({"query": "  "}, "needs a 'query'"),
        ({"query": "github", "limit": 0}, "from 1 to 50"),
        ({"query": "github", "limit": 51}, "from 1 to 50"),
        ({"query": "github", "limit": True}, "from 1 to 50"),
        ({"query": "github", "tools": "all"}, "only 'query' and 'limit'"),
    ],
)
def test_a_bad_search_is_answered_with_what_to_fix(
    searchable: ToolRuntime, ctx: ToolExecutionContext, arguments: dict[str, Any], problem: str
) -> None:
    """Bad arguments get a failed result (status invalid_input) saying what to change."""
    result = searchable.call({"name": "search_tools", "arguments": arguments}, ctx)
    assert not result.success
    assert problem in (result.error or "")
    assert result.trace is not None and result.trace.status == "invalid_input"
    assert ctx.revealed_tools == frozenset()


def test_limit_caps_the_answer_and_null_means_the_default(runtime: ToolRuntime) -> None:
    """Limit bounds how many tools come back; null (OpenAI strict mode) means 5."""
    for number in range(20):
        runtime.register(
            wrap(lambda: None, name=f"other_{number}", description="Something else."),
            defer_loading=True,
        )
    for number in range(12):
        runtime.register(
            wrap(lambda: None, name=f"report_{number}", description=f"Report number {number}."),
            defer_loading=True,
        )
    with runtime.plan() as ctx:
        assert len(search(runtime, ctx, "report", limit=3).output["tools"]) == 3
        assert len(search(runtime, ctx, "report", limit=None).output["tools"]) == 5


def test_a_whole_number_sent_as_a_float_is_a_valid_limit(runtime: ToolRuntime) -> None:
    """A limit of 3.0 is an integer to JSON Schema, as the meta-tool's schema says; 2.5 is not."""
    for number in range(6):
        runtime.register(
            wrap(lambda: None, name=f"report_{number}", description=f"Report number {number}."),
            defer_loading=True,
        )
        runtime.register(
            wrap(lambda: None, name=f"other_{number}", description="Something else."),
            defer_loading=True,
        )
    with runtime.plan() as ctx:
        assert len(search(runtime, ctx, "report", limit=3.0).output["tools"]) == 3
        refused = search(runtime, ctx, "report", limit=2.5)
    assert not refused.success and "got 2.5" in (refused.error or "")


def test_no_match_says_so(searchable: ToolRuntime, ctx: ToolExecutionContext) -> None:
    """A query no tool's words contain gets an empty list and a note, and reveals nothing."""
    result = search(searchable, ctx, "quantum teleportation")
    assert result.output == {
        "tools": [],
        "note": "no tool matched; try other words for what you want to do",
    }
    assert ctx.revealed_tools == frozenset()


def test_search_through_acall_and_call_many(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """The meta-tool answers the same through acall and in a batch beside real calls."""
    first = asyncio.run(
        searchable.acall({"name": "search_tools", "arguments": {"query": "slack"}}, ctx)
    )
    assert first.output["tools"][0]["name"] == "slack_post_message"
    batch = searchable.call_many(
        [
            {"name": "search_tools", "arguments": {"query": "github issue"}},
            {"name": "add", "arguments": {"a": 1, "b": 2}},
        ],
        ctx,
    )
    assert batch[0].output["tools"][0]["name"] == "github_create_issue"
    assert batch[1].output == 3


def test_a_search_in_a_cancelled_plan_raises_and_reveals_nothing(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """As any call of a cancelled plan, a search is refused before it starts, traced cancelled."""
    ctx.cancellation_token.cancel("budget spent")
    with capture_traces(searchable) as traces, pytest.raises(ToolCancelledError):
        search(searchable, ctx, "github issue")
    with pytest.raises(ToolCancelledError):
        asyncio.run(
            searchable.acall({"name": "search_tools", "arguments": {"query": "slack"}}, ctx)
        )
    assert [trace.status for trace in traces] == ["cancelled"]
    assert ctx.revealed_tools == frozenset()


def test_a_search_in_a_batch_waits_for_its_turn(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A search after a sequential call that cancels the plan is answered as cancelled."""

    @tool(writes=False, sequential=True)
    def give_up(ctx: ToolExecutionContext) -> str:
        """Cancel the plan, as a tool that spent its budget would."""
        ctx.cancellation_token.cancel("budget spent")
        return "stopped"

    searchable.register(give_up)
    first, second = searchable.call_many(
        [
            {"name": "give_up", "arguments": {}},
            {"name": "search_tools", "arguments": {"query": "github issue"}},
        ],
        ctx,
    )
    assert first.output == "stopped"
    assert not second.success and second.error_type == "ToolCancelledError"
    assert ctx.revealed_tools == frozenset()


@pytest.mark.parametrize("how", ["call_many", "acall_many"])
def test_a_search_in_a_batch_after_a_call_that_ended_the_plan_is_refused(
    searchable: ToolRuntime, how: str
) -> None:
    """A search queued behind a call that ends the plan raises as any call of an ended plan."""
    ctx = searchable.new_context(read_only=True)

    @tool(writes=False, sequential=True)
    def finish() -> str:
        """End the plan this call runs in."""
        searchable.end_plan(ctx)
        return "ended"

    searchable.register(finish)
    batch = [
        {"name": "finish", "arguments": {}},
        {"name": "search_tools", "arguments": {"query": "github issue"}},
    ]
    with capture_traces(searchable) as traces, pytest.raises(ToolRuntimeError, match="has ended"):
        if how == "call_many":
            searchable.call_many(batch, ctx)
        else:
            asyncio.run(searchable.acall_many(batch, ctx))
    assert [(trace.tool_name, trace.status) for trace in traces] == [
        ("finish", "ok"),
        ("search_tools", "error"),
    ]
    assert ctx.revealed_tools == frozenset()


# -- the failure modes peers ran into ----------------------------------------------------


@pytest.fixture
def prefixed(runtime: ToolRuntime) -> ToolRuntime:
    """200 deferred tools that all start with mcp__x__, each with its own words."""
    verbs = ["create", "list", "read", "update", "delete"]
    things = ["issue", "file", "user", "invoice", "calendar", "ticket", "message", "folder"]
    colours = ["red", "green", "blue", "amber", "violet"]
    for number in range(200):
        verb = verbs[number % 5]
        thing = things[(number // 5) % 8]
        colour = colours[number // 40]
        runtime.register(
            wrap(
                lambda: None,
                name=f"mcp__x__{verb}_{thing}_{colour}",
                description=f"{verb.title()} a {colour} {thing}.",
            ),
            defer_loading=True,
        )
    return runtime


def test_a_shared_prefix_does_not_match_every_tool(prefixed: ToolRuntime) -> None:
    """A query of only the prefix returns nothing, with a note, not an arbitrary five."""
    with prefixed.plan() as ctx:
        result = search(prefixed, ctx, "mcp")
        assert result.output["tools"] == []
        assert "ignored 'mcp'" in result.output["note"]
        assert ctx.revealed_tools == frozenset()


def test_real_words_rank_the_right_tool_first_despite_the_prefix(prefixed: ToolRuntime) -> None:
    """Among 200 mcp__x__ tools, "update a violet invoice" finds exactly that tool first."""
    with prefixed.plan() as ctx:
        result = search(prefixed, ctx, "mcp update a violet invoice")
    assert result.output["tools"][0]["name"] == "mcp__x__update_invoice_violet"
    assert "ignored 'mcp'" in result.output["note"]


def test_an_unknown_tool_is_refused_without_the_catalogue(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """The retry message for an unknown name lists no tool, deferred or not."""
    result = searchable.call({"name": "github_open_issue", "arguments": {}}, ctx)
    assert not result.success
    for name in ("github_create_issue", "slack_post_message", "delete_repository", "add"):
        assert name not in (result.error or "")


def test_a_tool_unregistered_after_its_call_was_read_is_refused_without_the_catalogue(
    searchable: ToolRuntime, ctx: ToolExecutionContext
) -> None:
    """A batch call whose tool goes away before it runs lists no other tool either."""

    @tool(writes=False, sequential=True)
    def tidy() -> str:
        """Unregister add, which the next call of the batch names."""
        searchable.unregister("add")
        return "tidied"

    searchable.register(tidy)
    first, second = searchable.call_many(
        [{"name": "tidy", "arguments": {}}, {"name": "add", "arguments": {"a": 1, "b": 2}}], ctx
    )
    assert first.output == "tidied"
    assert not second.success and second.error_type == "ToolNotFoundError"
    assert second.error == "there is no tool named 'add'; call one of the tools you were given"


def test_without_bm25s_local_search_says_how_to_install_it(
    searchable: ToolRuntime, ctx: ToolExecutionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local search without the search extra raises ImportError with the install hint."""
    monkeypatch.setitem(
        sys.modules, "bm25s", None
    )  # as if not installed: neither found nor imported
    with pytest.raises(ImportError, match=r"pip install -e '\.\[search\]'"):
        searchable.tool_definitions(ctx)
    assert searchable.tool_definitions(ctx, format="anthropic")  # native needs no bm25s


def test_offering_local_search_looks_for_bm25s_without_importing_it(
    searchable: ToolRuntime, ctx: ToolExecutionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tool_definitions only checks bm25s is there; the first search imports it."""
    real_import = builtins.__import__
    imported: list[str] = []

    def recording(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "bm25s":
            imported.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "bm25s", raising=False)
    monkeypatch.setattr(builtins, "__import__", recording)
    assert "search_tools" in names(searchable.tool_definitions(ctx))
    assert imported == []
    assert search(searchable, ctx, "slack").output["tools"][0]["name"] == "slack_post_message"
    assert imported == ["bm25s"]


# -- the index ---------------------------------------------------------------------------


def test_the_index_is_rebuilt_only_when_the_registry_changes(runtime: ToolRuntime) -> None:
    """Two searches share one index; a registration makes the next search see the new tool."""
    runtime.register(github_create_issue)
    tool_search = runtime._dispatcher._search
    with runtime.plan() as ctx:
        search(runtime, ctx, "github")
        index = tool_search._current(ctx)
        search(runtime, ctx, "issue")
        assert tool_search._current(ctx) is index
        runtime.register(slack_post_message)
        assert search(runtime, ctx, "slack").output["tools"][0]["name"] == "slack_post_message"
        assert tool_search._current(ctx) is not index
        runtime.unregister("slack_post_message")
        assert search(runtime, ctx, "slack").output["tools"] == []


def test_tools_the_plan_may_not_run_do_not_make_a_word_too_common() -> None:
    """A read-only plan's search counts only the tools it may run: writers change nothing."""

    def answer(writers: int) -> Any:
        with ToolRuntime(tracer=NullTracer()) as each:
            each.register(github_create_issue)
            each.register(slack_post_message)
            for number in range(writers):
                each.register(
                    wrap(
                        lambda: None,
                        name=f"github_write_{number}",
                        description="Write to a GitHub repository.",
                        writes=True,
                    ),
                    defer_loading=True,
                )
            with each.plan(read_only=True) as ctx:
                return search(each, ctx, "github").output

    expected = {
        "tools": [
            {
                "name": "github_create_issue",
                "description": "Create an issue in a GitHub repository.",
            }
        ]
    }
    assert answer(0) == expected
    assert answer(10) == expected  # "github" is in 11 of 12 tools, but in 1 of the plan's 2


def test_plans_that_may_run_different_tools_search_different_indexes(
    searchable: ToolRuntime,
) -> None:
    """A read-only plan and an open one each get an index of what they may run, kept apart."""
    tool_search = searchable._dispatcher._search
    with searchable.plan(read_only=True) as reading, searchable.plan() as writing:
        assert search(searchable, reading, "repository").output["tools"] == [
            {
                "name": "github_create_issue",
                "description": "Create an issue in a GitHub repository.",
            }
        ]
        assert [t["name"] for t in search(searchable, writing, "repository").output["tools"]] == [
            "delete_repository",
            "github_create_issue",
        ]
        assert tool_search._current(reading) is not tool_search._current(writing)
        with searchable.plan(read_only=True) as another:
            assert tool_search._current(another) is tool_search._current(reading)


def test_an_empty_index_finds_nothing() -> None:
    """With no deferred tool there is nothing to score and nothing found."""
    hits = SearchIndex([]).search("anything", 5)
    assert hits.tools == [] and hits.too_common == []


def test_words_are_case_folded_not_only_lowered() -> None:
    """An upper-case query finds a word whose lower case differs from plain lowering."""
    assert words("GRÖSSE") == words("Größe") == ["grösse"]
    assert words("ΣΟΦΊΑ") == words("σοφία")


def test_a_decomposed_accent_or_a_full_width_letter_reads_as_the_usual_word(
    runtime: ToolRuntime,
) -> None:
    """Text is NFKC-normalised, so a combining accent does not cut a word in two."""
    assert words("re\u0301sume\u0301") == words("résumé") == ["résumé"]
    assert words("ＧｉｔＨｕｂ") == words("GitHub")
    runtime.register(
        wrap(lambda: None, name="cv_writer", description="Write a re\u0301sume\u0301."),
        defer_loading=True,
    )
    runtime.register(
        wrap(lambda: None, name="summarise", description="Re-sume the meeting."),
        defer_loading=True,
    )
    with runtime.plan() as ctx:
        found = search(runtime, ctx, "résumé").output["tools"]
    assert [tool["name"] for tool in found] == ["cv_writer"]


def test_names_are_split_into_words() -> None:
    """Underscores, dashes, dots and camelCase humps separate words; tiny words go."""
    assert words("github_createIssue") == ["github", "createissue", "create", "issue"]
    assert words("mcp__x__HTTPServer.get-URL") == [
        "mcp",
        "httpserver",
        "http",
        "server",
        "get",
        "url",
    ]
    assert words("Create a GitHub issue in the repo") == [
        "create",
        "github",
        "git",
        "hub",
        "issue",
        "repo",
    ]


def test_parameter_names_are_searched_too() -> None:
    """A tool is found by one of its parameter names."""
    descriptor = ToolDescriptor(
        name="lookup",
        description="Look something up.",
        input_schema={"type": "object", "properties": {"postcode": {"type": "string"}}},
    )
    hits = SearchIndex([descriptor]).search("postcode", 5)
    assert hits.tools == [descriptor]


def test_long_descriptions_are_cut_to_one_line(runtime: ToolRuntime) -> None:
    """The answer shows the first line of a description, at most 200 characters."""
    runtime.register(
        wrap(lambda: None, name="verbose", description="Word " * 80 + "\nSecond line."),
        defer_loading=True,
    )
    with runtime.plan() as ctx:
        [found] = search(runtime, ctx, "verbose").output["tools"]
    assert len(found["description"]) == 200 and found["description"].endswith("...")


_INDEX = SearchIndex(
    [
        ToolDescriptor(name=f"tool_{word}", description=f"Does {word} things.")
        for word in ("alpha", "beta", "gamma", "delta", "omega", "sigma")
    ]
)


@given(st.text(max_size=40))
def test_any_query_returns_at_most_limit_tools_all_matching(query: str) -> None:
    """Whatever the query, a search returns at most limit tools, each sharing a word with it."""
    found = _INDEX.search(query, 3).tools
    assert len(found) <= 3
    query_words = set(words(query))
    for descriptor in found:
        assert query_words & set(words(descriptor.name + " " + descriptor.description))


def test_an_index_another_thread_just_built_is_used(runtime: ToolRuntime) -> None:
    """Two searches racing past a stale index build it once: the second uses the first's."""
    runtime.register(github_create_issue)
    tool_search = runtime._dispatcher._search
    built = SearchIndex([github_create_issue.discover()])

    class Raced:
        """A lock whose holder finds the index built meanwhile, as by another thread."""

        def __enter__(self) -> None:
            tool_search._indexes = (runtime._tools.generation, {(False, False): built})

        def __exit__(self, *exc_info: object) -> None:
            pass

    tool_search._lock = Raced()  # type: ignore[assignment]
    with runtime.plan() as ctx:
        assert tool_search._current(ctx) is built


def test_a_tool_gone_between_reading_and_running_the_call_is_refused(
    runtime: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that resolves to a tool unregistered meanwhile gets a failed result, not a raise."""
    import toolcycle.runtime._dispatcher as dispatcher

    runtime.register(add)
    monkeypatch.setattr(dispatcher.ProviderNames, "resolve", lambda *args: "ghost")
    call = {"type": "function", "function": {"name": "add_", "arguments": "{}"}}
    with runtime.plan() as ctx:
        result = runtime.call(call, ctx)
    assert not result.success and result.error_type == "ToolNotFoundError"
