"""toolcycle tools in OpenAI Agents SDK runs, and SDK function tools under toolcycle plans.

Every run uses the SDK's own `ScriptedModel`: no client, no network, and the SDK's
tracing is switched off with its own setting so nothing is exported.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    Runner,
    RunState,
    ToolApprovalItem,
    ToolOutputText,
    function_tool,
    set_tracing_disabled,
)
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from toolcycle import (
    ApprovalDecision,
    NullTracer,
    ToolAccessDeniedError,
    ToolApprovalError,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolRuntime,
    tool,
)
from toolcycle.adapters.openai_agents import from_function_tool, function_tools, reject
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0
CONFIG = RunConfig(tracing_disabled=True)


class CallIds:
    """An `Instrumentation` that notes the model's tool-call id of each traced call."""

    def __init__(self) -> None:
        self.ids: dict[str, str | None] = {}

    def call_started(self, *, call_id: str, tool_call_id: str | None, **_: Any) -> Any:
        self.ids[call_id] = tool_call_id
        return self

    record_payloads = False

    def finish(self, *_: Any, **__: Any) -> None:
        """Nothing to do at the end of a call."""

    def stage_started(self, *_: Any, **__: Any) -> Any:
        return self

    def of(self, traces: list[ToolExecutionTrace]) -> list[str | None]:
        """The tool-call ids of ``traces``, in order."""
        return [self.ids[trace.call_id] for trace in traces]


@pytest.fixture
def call_ids() -> CallIds:
    """Records the model's call id of each call."""
    return CallIds()


@pytest.fixture
def runtime(call_ids: CallIds) -> Iterator[ToolRuntime]:
    """A runtime that reports call ids to ``call_ids``, closed after the test."""
    with ToolRuntime(tracer=NullTracer(), instrumentation=call_ids) as runtime:
        yield runtime


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The SDK's own switch turns its trace export off, and no socket may connect."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a test tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(True)


def _lookup() -> FakeTool:
    return FakeTool(
        name="lookup",
        input_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
            "additionalProperties": False,
        },
        output=lambda params, ctx: {"value": params["key"].upper(), "plan": ctx.plan_id},
    )


def _outputs(call: ModelCall) -> dict[str, str]:
    """The tool outputs a model was shown, by call id."""
    return {
        item["call_id"]: item["output"]
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def _context(name: str, call_id: str, arguments: str) -> ToolContext[Any]:
    return ToolContext(None, tool_name=name, tool_call_id=call_id, tool_arguments=arguments)


async def test_a_scripted_run_calls_toolcycle_tools_through_the_runtime(
    runtime: ToolRuntime, call_ids: CallIds
) -> None:
    """Two calls and a wrong one: one activation, a trace per call, the model retries."""
    lookup = _lookup()
    runtime.register(lookup)

    def retry_after_the_error(call: ModelCall) -> Any:
        assert "key" in _outputs(call)["c2"]  # the runtime's validation message
        return [function_call("lookup", {"key": "b"}, call_id="c3")]

    model = ScriptedModel(
        [
            [
                function_call("lookup", {"key": "a"}, call_id="c1"),
                function_call("lookup", {"key": 7}, call_id="c2"),
            ],
            ModelStep.respond(retry_after_the_error),
            [assistant_message("done")],
        ]
    )
    with capture_traces(runtime) as traces:
        async with runtime.aplan("run-1") as plan:
            agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
            result = await Runner.run(agent, "go", run_config=CONFIG)

    assert result.final_output == "done"
    model.assert_complete()
    assert sorted(zip(call_ids.of(traces), [t.status for t in traces], strict=True)) == [
        ("c1", "ok"),
        ("c2", "invalid_input"),
        ("c3", "ok"),
    ]
    assert (lookup.count("activate"), lookup.count("deactivate")) == (1, 1)
    assert json.loads(_outputs(model.calls[2])["c3"]) == {"value": "B", "plan": "run-1"}


async def test_a_streamed_run_calls_the_tools_the_same_way(runtime: ToolRuntime) -> None:
    """Runner.run_streamed drives the same function tools through the runtime."""
    lookup = _lookup()
    runtime.register(lookup)
    model = ScriptedModel(
        [[function_call("lookup", {"key": "s"}, call_id="st1")], [assistant_message("streamed")]]
    )
    async with runtime.aplan("streamed") as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        result = Runner.run_streamed(agent, "go", run_config=CONFIG)
        events = [event.type async for event in result.stream_events()]

    assert result.final_output == "streamed" and events
    assert json.loads(_outputs(model.calls[1])["st1"]) == {"value": "S", "plan": "streamed"}
    assert lookup.count("execute") == 1


@pytest.fixture
def thread_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """This thread's default event loop, which Runner.run_sync runs on; closed after the test."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


class LoopProbe:
    """An async tool that notes the event loop each of its stages ran on."""

    def __init__(self) -> None:
        self.loops: list[tuple[str, asyncio.AbstractEventLoop]] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="probe", capability=ToolCapability(writes=False))

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.loops.append(("activate", asyncio.get_running_loop()))

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        self.loops.append(("execute", asyncio.get_running_loop()))
        return "probed"

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.loops.append(("deactivate", asyncio.get_running_loop()))


def test_a_sync_run_over_a_sync_plan_goes_through_the_runtime(
    thread_loop: asyncio.AbstractEventLoop,
) -> None:
    """Runner.run_sync in runtime.plan(): a trace per call, one activation, ended with the plan.

    The calls run on the loop run_sync drives; the sync plan's end deactivates an async
    tool on the runtime's own loop thread, not on that loop.
    """
    lookup = _lookup()
    probe = LoopProbe()
    model = ScriptedModel(
        [
            [
                function_call("lookup", {"key": "a"}, call_id="y1"),
                function_call("probe", {}, call_id="y2"),
            ],
            [function_call("lookup", {"key": "b"}, call_id="y3")],
            [assistant_message("synced")],
        ]
    )
    with ToolRuntime(tracer=NullTracer(), keep_traces=8) as runtime:
        runtime.register(lookup)
        runtime.register(probe)
        with runtime.plan("sync-run") as plan:
            agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
            result = Runner.run_sync(agent, "go", run_config=CONFIG)
            still_open = lookup.stages("sync-run")
        ended = lookup.stages("sync-run")
        traces = runtime.recent_traces()

    assert result.final_output == "synced"
    model.assert_complete()
    assert sorted((t.tool_call_id, t.tool_name, t.status) for t in traces) == [
        ("y1", "lookup", "ok"),
        ("y2", "probe", "ok"),
        ("y3", "lookup", "ok"),
    ]
    assert {t.plan_id for t in traces} == {"sync-run"}
    assert still_open == ["activate", "execute", "execute"]
    assert ended == [*still_open, "deactivate"]
    assert json.loads(_outputs(model.calls[2])["y3"]) == {"value": "B", "plan": "sync-run"}
    [(_, activated_on), (_, executed_on), (_, deactivated_on)] = probe.loops
    assert [stage for stage, _ in probe.loops] == ["activate", "execute", "deactivate"]
    assert activated_on is thread_loop and executed_on is thread_loop
    assert deactivated_on is not thread_loop


async def test_a_sync_and_an_async_tool_in_one_run_and_the_sync_one_leaves_the_loop_free(
    runtime: ToolRuntime,
) -> None:
    """A plain def runs on the runtime's pool: the loop runs the async tool meanwhile.

    The sync tool returns only once the async one, on the loop, has seen it running and
    released it; run inline, it would hold the loop and never be released in time.
    """
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    sync_running = asyncio.Event()
    release = threading.Event()
    threads: dict[str, int] = {}

    @tool(writes=False)
    def shout(text: str) -> str:
        """Upper-case a text, once released."""
        threads["shout"] = threading.get_ident()
        loop.call_soon_threadsafe(sync_running.set)
        if not release.wait(WAIT):
            return "the loop was blocked"
        return text.upper()

    @tool(writes=False)
    async def mirror(text: str) -> str:
        """Reverse a text, while the sync tool is still running."""
        threads["mirror"] = threading.get_ident()
        await asyncio.wait_for(sync_running.wait(), WAIT)
        release.set()  # the sync tool is waiting for this, so it has not returned yet
        return text[::-1]

    runtime.register(shout)
    runtime.register(mirror)
    model = ScriptedModel(
        [
            [
                function_call("shout", {"text": "abc"}, call_id="m1"),
                function_call("mirror", {"text": "abc"}, call_id="m2"),
            ],
            [assistant_message("both")],
        ]
    )
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as plan:
            agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
            result = await asyncio.wait_for(Runner.run(agent, "go", run_config=CONFIG), WAIT)

    assert result.final_output == "both"
    assert _outputs(model.calls[1]) == {"m1": "ABC", "m2": "cba"}
    assert sorted((t.tool_name, t.status) for t in traces) == [("mirror", "ok"), ("shout", "ok")]
    assert threads["mirror"] == loop_thread and threads["shout"] != loop_thread


async def test_the_tools_are_the_plans_definitions_with_strict_mode_where_it_holds(
    runtime: ToolRuntime,
) -> None:
    """Names, descriptions and schemas come from tool_definitions(strict=True)."""

    @tool(writes=False)
    def greet(name: str, greeting: str = "hello") -> str:
        """Greet someone."""
        return f"{greeting} {name}"

    @tool(name="notes.read", writes=False)
    def read_note(title: str) -> str:
        """Read a note."""
        return title

    runtime.register(greet)
    runtime.register(read_note)
    runtime.register(
        FakeTool(
            name="short",
            input_schema={
                "type": "object",
                "properties": {"s": {"type": "string", "maxLength": 3}},
            },
        )
    )
    with runtime.plan() as plan:
        tools = function_tools(runtime, plan)
        definitions = runtime.tool_definitions(plan, format="openai-responses", strict=True)

    assert [t.name for t in tools] == [d["name"] for d in definitions]
    assert tools[1].name.startswith("notes_read_")
    assert [t.strict_json_schema for t in tools] == [True, True, False]
    assert tools[0].params_json_schema == definitions[0]["parameters"]
    assert tools[0].description == "Greet someone."
    assert tools[2].params_json_schema == runtime.descriptor("short").input_schema


async def test_strict_nulls_are_dropped_and_mapped_names_reach_their_tool(
    runtime: ToolRuntime,
) -> None:
    """A strict call's null for a left-out field means the default; a safe name maps back."""

    @tool(name="greet.someone", writes=False)
    def greet(name: str, greeting: str = "hello") -> str:
        """Greet someone."""
        return f"{greeting} {name}"

    runtime.register(greet)
    async with runtime.aplan() as plan:
        [sdk_tool] = function_tools(runtime, plan)
        arguments = '{"name": "ann", "greeting": null}'
        output = await sdk_tool.on_invoke_tool(_context(sdk_tool.name, "c1", arguments), arguments)
    assert output == "hello ann"


async def test_a_failed_call_answers_with_the_runtimes_message_and_never_raises(
    runtime: ToolRuntime,
) -> None:
    """A failing tool, unreadable JSON and an ended plan all come back as text."""
    runtime.register(FakeTool(name="broken", execute_error=ValueError("disk on fire")))
    async with runtime.aplan() as plan:
        [sdk_tool] = function_tools(runtime, plan)
        failed = await sdk_tool.on_invoke_tool(_context("broken", "c1", "{}"), "{}")
        unreadable = await sdk_tool.on_invoke_tool(_context("broken", "c2", "{oops"), "{oops")
    after_end = await sdk_tool.on_invoke_tool(_context("broken", "c3", "{}"), "{}")

    assert "disk on fire" in failed
    assert "JSON" in unreadable
    assert "ended" in after_end


async def test_a_cancelled_plan_answers_the_call_instead_of_failing_the_run(
    runtime: ToolRuntime,
) -> None:
    """The plan's cancellation reaches the model as text; the SDK run does not fail."""
    lookup = _lookup()
    runtime.register(lookup)
    async with runtime.aplan() as plan:
        [sdk_tool] = function_tools(runtime, plan)
        plan.cancellation_token.cancel("stop")
        text = await sdk_tool.on_invoke_tool(
            _context("lookup", "c1", '{"key": "a"}'), '{"key": "a"}'
        )
    assert "cancel" in text
    assert lookup.count("execute") == 0


async def test_a_read_only_plan_hides_a_writing_tool_and_a_call_to_it_is_a_tool_result(
    runtime: ToolRuntime,
) -> None:
    """The writer is not offered; the model calling it anyway gets an error, not a crash."""
    writer = FakeTool(name="writer", writes=True)
    runtime.register(_lookup())
    runtime.register(writer)
    model = ScriptedModel(
        [[function_call("writer", {}, call_id="w1")], [assistant_message("gave up")]]
    )
    async with runtime.aplan(read_only=True) as plan:
        tools = function_tools(runtime, plan)
        agent = Agent(name="a", tools=tools, model=model)
        config = RunConfig(tracing_disabled=True, tool_not_found_behavior="return_error_to_model")
        result = await Runner.run(agent, "go", run_config=config)

    assert [t.name for t in tools] == ["lookup"]
    assert result.final_output == "gave up"
    assert "writer" in _outputs(model.calls[1])["w1"]
    assert writer.count("execute") == 0


async def test_two_concurrent_runs_keep_separate_plans(runtime: ToolRuntime) -> None:
    """Each run's calls land in its own plan, while both runs are in a call at once."""
    inside = [asyncio.Event(), asyncio.Event()]
    seen: list[tuple[str, str]] = []

    class Meet:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="meet", capability=ToolCapability(writes=False))

        def activate(self, ctx: ToolExecutionContext) -> None:
            seen.append(("activate", ctx.plan_id))

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
            index = int(ctx.plan_id[-1])
            inside[index].set()
            await asyncio.wait_for(inside[1 - index].wait(), WAIT)  # the other run is here too
            return ctx.plan_id

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            seen.append(("deactivate", ctx.plan_id))

    runtime.register(Meet())

    async def run(plan_id: str) -> str:
        model = ScriptedModel(
            [
                [function_call("meet", {}, call_id=f"{plan_id}-c")],
                ModelStep.respond(lambda call: [assistant_message(_outputs(call)[f"{plan_id}-c"])]),
            ]
        )
        async with runtime.aplan(plan_id) as plan:
            agent = Agent(name=plan_id, tools=function_tools(runtime, plan), model=model)
            result = await Runner.run(agent, "go", run_config=CONFIG)
        return str(result.final_output)

    answers = await asyncio.wait_for(asyncio.gather(run("plan-0"), run("plan-1")), WAIT)

    assert answers == ["plan-0", "plan-1"]
    assert sorted(seen) == [
        ("activate", "plan-0"),
        ("activate", "plan-1"),
        ("deactivate", "plan-0"),
        ("deactivate", "plan-1"),
    ]


async def test_cancelling_the_run_cancels_the_tool_and_the_plan_ends_after_it_stopped(
    runtime: ToolRuntime,
) -> None:
    """The running tool is cancelled; its deactivation comes only after it stopped."""
    started = asyncio.Event()
    events: list[str] = []

    class Slow:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="slow", capability=ToolCapability(writes=False))

        def activate(self, ctx: ToolExecutionContext) -> None:
            events.append("activated")

        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                events.append("tool stopped")
            return "never"  # pragma: no cover - the wait above ends only by cancellation

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            events.append("deactivated")

    runtime.register(Slow())
    model = ScriptedModel([[function_call("slow", {}, call_id="s1")]])
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as plan:
            agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
            run = asyncio.create_task(Runner.run(agent, "go", run_config=CONFIG))
            await asyncio.wait_for(started.wait(), WAIT)
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(run, WAIT)
            events.append("run cancelled")

    assert events == ["activated", "tool stopped", "run cancelled", "deactivated"]
    assert [t.status for t in traces] == ["cancelled"]


def _writer(sent: list[str]) -> Any:
    @tool
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    return send


async def test_an_approval_round_trip_through_the_sdks_run_state(
    runtime: ToolRuntime, call_ids: CallIds
) -> None:
    """The SDK interrupts, RunState.approve runs the call once, claimed in the ledger."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    asked: list[str] = []

    def approver(request: Any) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision.deny("the plan's approver is not asked for SDK calls")

    model = ScriptedModel(
        [[function_call("send", {"to": "ann"}, call_id="a1")], [assistant_message("done")]]
    )
    with capture_traces(runtime) as traces:
        async with runtime.aplan(approver=approver) as plan:
            [sdk_tool] = function_tools(runtime, plan)
            agent = Agent(name="a", tools=[sdk_tool], model=model)
            first = await Runner.run(agent, "go", run_config=CONFIG)
            assert sent == []
            [item] = first.interruptions
            state = first.to_state()
            state.approve(item)
            stored = state.to_json()
            done = await Runner.run(agent, state, run_config=CONFIG)

            # The same approved state resumed again (a retry, a second worker): runs nothing.
            model.extend([[assistant_message("again")]])
            again = await Runner.run(
                agent, await RunState.from_json(agent, stored), run_config=CONFIG
            )

    assert sdk_tool.needs_approval is True and sdk_tool.strict_json_schema is False
    assert done.final_output == "done"
    assert sent == ["ann"] and asked == []
    [approved] = traces  # the second resume was refused before anything ran
    assert approved.approval is not None and approved.approval.outcome == "approved"
    assert approved.approval.resumed and call_ids.of(traces) == ["a1"]
    assert "RunState.approve" in (approved.approval.reason or "")
    assert again.final_output == "again"
    assert "resumed before" in _outputs(model.calls[-1])["a1"]


async def test_a_rejection_through_the_runtime_claims_the_call_and_the_model_reads_why(
    runtime: ToolRuntime, call_ids: CallIds
) -> None:
    """reject() traces the denial, rejects the item, and a forked approval then runs nothing."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    model = ScriptedModel(
        [[function_call("send", {"to": "eve"}, call_id="r1")], [assistant_message("ok")]]
    )
    with capture_traces(runtime) as traces:
        async with runtime.aplan(approver=lambda request: True) as plan:
            agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
            first = await Runner.run(agent, "go", run_config=CONFIG)
            fork = first.to_state()  # a copy of the run state, decided elsewhere
            state = first.to_state()
            denied = await reject(runtime, plan, state, first.interruptions[0], "not to eve")
            await Runner.run(agent, state, run_config=CONFIG)

            fork.approve(fork.get_interruptions()[0])
            model.extend([[assistant_message("forked")]])
            await Runner.run(agent, fork, run_config=CONFIG)

    assert sent == []
    assert denied.error_type == "ApprovalDenied" and "not to eve" in (denied.error or "")
    assert _outputs(model.calls[1])["r1"] == denied.error
    assert "resumed before" in _outputs(model.calls[2])["r1"]
    [trace] = traces
    assert trace.status == "denied" and call_ids.of(traces) == ["r1"]
    assert trace.approval is not None and trace.approval.outcome == "denied"


async def test_a_plain_sdk_rejection_never_reaches_the_tool(runtime: ToolRuntime) -> None:
    """RunState.reject alone answers the model through the SDK; the tool does not run."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    model = ScriptedModel(
        [[function_call("send", {"to": "eve"}, call_id="p1")], [assistant_message("ok")]]
    )
    async with runtime.aplan(approver=lambda request: True) as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        first = await Runner.run(agent, "go", run_config=CONFIG)
        state = first.to_state()
        state.reject(first.interruptions[0], rejection_message="not to eve")
        await Runner.run(agent, state, run_config=CONFIG)

    assert sent == []
    assert _outputs(model.calls[1])["p1"] == "not to eve"


async def test_reject_refuses_what_is_not_its_plans_or_was_decided(runtime: ToolRuntime) -> None:
    """An item of another tool is a ValueError; a call approved and run cannot be rejected."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    model = ScriptedModel(
        [
            [function_call("send", {"to": "ann"}, call_id="d1")],
            [assistant_message("done")],
            [function_call("send", "{oops", call_id="d2")],
        ]
    )
    async with runtime.aplan(approver=lambda request: True) as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        first = await Runner.run(agent, "go", run_config=CONFIG)
        [item] = first.interruptions
        state = first.to_state()
        state.approve(item)
        await Runner.run(agent, state, run_config=CONFIG)
        with pytest.raises(ToolApprovalError):
            await reject(runtime, plan, first.to_state(), item, "too late")

        other = ToolApprovalItem(agent=agent, raw_item=function_call("other", {}, call_id="o1"))
        with pytest.raises(ValueError, match="not a toolcycle tool"):
            await reject(runtime, plan, first.to_state(), other, "no")

        unreadable = await Runner.run(agent, "again", run_config=CONFIG)
        [bad] = unreadable.interruptions
        refused = await reject(runtime, plan, unreadable.to_state(), bad, "no")

    assert sent == ["ann"]
    assert refused.error_type == "ToolCallError"


async def test_approval_follows_the_runtimes_rule_for_the_plan(runtime: ToolRuntime) -> None:
    """No approver: only flagged tools ask; with one, the plan's rule; or the rule given."""

    @tool(writes=False, requires_approval=True)
    def payroll(employee: str) -> int:
        """Read a salary."""
        return 1

    runtime.register(_writer([]))
    runtime.register(payroll)
    with runtime.plan() as plan:
        plain = {t.name: t.needs_approval for t in function_tools(runtime, plan)}
    with runtime.plan(approver=lambda request: True, approval="all") as plan:
        every = {t.name: t.needs_approval for t in function_tools(runtime, plan)}
        chosen = {
            t.name: t.needs_approval for t in function_tools(runtime, plan, approval="writes")
        }
    assert plain == {"send": False, "payroll": True}
    assert every == {"send": True, "payroll": True}
    assert chosen == {"send": True, "payroll": True}  # a flag True asks under any named rule


async def test_an_unapproved_invocation_goes_to_the_plans_own_approval(
    runtime: ToolRuntime,
) -> None:
    """Called without the SDK's approval, the runtime asks (or refuses) as always."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    async with runtime.aplan(approver=lambda request: ApprovalDecision.deny("no")) as plan:
        [sdk_tool] = function_tools(runtime, plan)
        text = await sdk_tool.on_invoke_tool(_context("send", "u1", '{"to": "x"}'), '{"to": "x"}')
    assert "denied" in text and sent == []


@pytest.mark.parametrize(
    ("arguments", "said"), [("[1, 2]", "object"), ("{oops", "JSON"), ('{"to": 5}', "string")]
)
async def test_unreadable_arguments_of_an_approved_call_run_nothing(
    runtime: ToolRuntime, arguments: str, said: str
) -> None:
    """An approved call with arguments the runtime refuses gets its message, and runs nothing."""
    sent: list[str] = []
    runtime.register(_writer(sent))
    model = ScriptedModel(
        [[function_call("send", arguments, call_id="b1")], [assistant_message("ok")]]
    )
    async with runtime.aplan(approver=lambda request: True) as plan:
        agent = Agent(name="a", tools=function_tools(runtime, plan), model=model)
        first = await Runner.run(agent, "go", run_config=CONFIG)
        state = first.to_state()
        state.approve(first.interruptions[0])
        await Runner.run(agent, state, run_config=CONFIG)
    assert sent == []
    assert said in _outputs(model.calls[1])["b1"]


# -- the other way: SDK function tools under toolcycle --------------------------------


@function_tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@function_tool(failure_error_function=None)
async def explode(reason: str) -> str:
    """Fail on purpose."""
    raise ValueError(reason)


@function_tool(needs_approval=True)
def rich(text: str) -> list[ToolOutputText]:
    """Answer with structured parts."""
    return [ToolOutputText(text=text)]


def test_an_sdk_function_tool_runs_under_a_plan_with_validation_and_traces(
    runtime: ToolRuntime,
) -> None:
    """Validated before the SDK sees it, traced, and refused by a read-only plan."""
    descriptor = runtime.register(from_function_tool(add))
    with capture_traces(runtime) as traces, runtime.plan() as plan:
        ok = runtime.execute("add", {"a": 1, "b": 5}, plan)
        invalid = runtime.execute("add", {"a": "one", "b": 5}, plan)
    with runtime.plan(read_only=True) as plan, pytest.raises(ToolAccessDeniedError):
        runtime.execute("add", {"a": 1, "b": 5}, plan)

    assert ok.output == 6
    assert invalid.error_type == "ToolSchemaValidationError"
    assert [t.status for t in traces] == ["ok", "invalid_input"]
    assert descriptor.capability.writes is True
    assert descriptor.source_name == "openai-agents"
    assert descriptor.input_schema == add.params_json_schema


def test_capabilities_of_an_sdk_tool_are_the_callers_to_state(runtime: ToolRuntime) -> None:
    """writes=False lets a read-only plan run it; needs_approval becomes requires_approval."""
    reader = runtime.register(from_function_tool(add, writes=False, checkpointable=True))
    flagged = runtime.register(from_function_tool(rich))
    with runtime.plan(read_only=True) as plan:
        assert runtime.execute("add", {"a": 2, "b": 2}, plan).output == 4
    assert reader.capability == ToolCapability(writes=False, checkpointable=True)
    assert flagged.capability.requires_approval is True


def test_an_sdk_tools_exception_fails_the_call_and_structured_output_is_json(
    runtime: ToolRuntime,
) -> None:
    """failure_error_function=None lets the error through; output models become data."""
    runtime.register(from_function_tool(explode))
    runtime.register(from_function_tool(rich, requires_approval=False))
    with runtime.plan() as plan:
        failed = runtime.execute("explode", {"reason": "on purpose"}, plan)
        parts = runtime.execute("rich", {"text": "hi"}, plan)
    assert not failed.success and "on purpose" in (failed.error or "")
    assert parts.output == [{"type": "text", "text": "hi"}]


def test_an_sdk_tools_context_is_the_plans_and_odd_outputs_become_text(
    runtime: ToolRuntime,
) -> None:
    """The tool's ToolContext carries the plan's context; a non-JSON output is its text."""
    seen: list[Any] = []

    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        seen.append((ctx.context, ctx.tool_name, arguments))
        return {"set": 1} if arguments == "{}" else object.__new__(_Odd)

    sdk_tool = FunctionTool(
        name="odd",
        description="",
        params_json_schema={"type": "object"},
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
    runtime.register(from_function_tool(sdk_tool, writes=False))
    with runtime.plan() as plan:
        plain = runtime.execute("odd", {}, plan)
        odd = runtime.execute("odd", {"x": None}, plan)
    assert plain.output == {"set": 1} and odd.output == "odd one"
    assert seen[0][0] is plan and seen[1][1:] == ("odd", '{"x":null}')


class _Odd:
    def __str__(self) -> str:
        return "odd one"


def test_without_the_sdk_the_import_names_the_extra() -> None:
    """Importing the adapter without openai-agents says which extra to install."""
    code = (
        "import sys\n"
        "sys.modules['agents'] = None\n"
        "try:\n"
        "    import toolcycle.adapters.openai_agents\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert (
        "pip install -e '.[openai-agents]' from a clone (toolcycle[openai-agents] once published)"
        in done.stdout
    )
    assert "toolcycle.adapters.openai_agents needs openai-agents" in done.stdout


def test_calls_carry_the_sdks_call_id(call_ids: CallIds) -> None:
    """The SDK's call_id is the tool_call_id of the call's trace and of its instrumentation.

    So it is for a call, a call the runtime refuses, and an approved call resumed
    through the runtime's approval ledger; toolcycle's own call_id stays apart.
    """
    sent: list[str] = []
    model = ScriptedModel(
        [
            [
                function_call("lookup", {"key": 7}, call_id="x1"),
                function_call("send", {"to": "ann"}, call_id="x2"),
            ],
            [assistant_message("done")],
        ]
    )
    with ToolRuntime(tracer=NullTracer(), instrumentation=call_ids, keep_traces=4) as runtime:
        runtime.register(_lookup())
        runtime.register(_writer(sent))
        traces: list[ToolExecutionTrace] = []
        runtime.add_trace_listener(traces.append)

        async def main() -> None:
            async with runtime.aplan(approver=lambda request: True, approval="writes") as plan:
                tools = function_tools(runtime, plan)
                lookup = next(t for t in tools if t.name == "lookup")
                assert isinstance(lookup, FunctionTool)
                arguments = '{"key":"k"}'
                await lookup.on_invoke_tool(_context("lookup", "x9", arguments), arguments)
                agent = Agent(name="a", tools=tools, model=model)
                first = await Runner.run(agent, "go", run_config=CONFIG)
                state = first.to_state()
                state.approve(first.interruptions[0])
                await Runner.run(agent, state, run_config=CONFIG)

        asyncio.run(main())
        recent = runtime.recent_traces()

    assert call_ids.of(traces) == ["x9", "x1", "x2"]
    assert [(t.tool_call_id, t.tool_name, t.status) for t in recent] == [
        ("x9", "lookup", "ok"),
        ("x1", "lookup", "invalid_input"),
        ("x2", "send", "ok"),
    ]
    assert recent == tuple(traces)
    assert recent[2].approval is not None and recent[2].approval.resumed
    assert {t.call_id for t in recent}.isdisjoint({"x9", "x1", "x2"})
    assert sent == ["ann"]
