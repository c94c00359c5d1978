"""The pydantic-ai adapter, against the installed pydantic-ai and its FunctionModel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelResponse,
    RunContext,
    TextPart,
    ToolApproved,
    ToolCallPart,
    ToolDenied,
    ToolReturnPart,
    UserError,
)
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from toolcycle import (
    ApprovalDecision,
    ApprovalRequest,
    NullTracer,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)
from toolcycle.adapters.pydantic_ai import ToolcycleToolset
from toolcycle.approvals import MemoryApprovalLedger
from toolcycle.otel import OpenTelemetry
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(writes=True)
def save(text: str) -> str:
    """Save a text."""
    return "saved"


@tool(writes=False)
def explode() -> None:
    """Fail every time."""
    raise RuntimeError("the disk is on fire")


class Ledger(MemoryApprovalLedger):
    """A memory ledger that remembers what it was asked to claim."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def claim(self, approval_id: str) -> bool:
        self.asked.append(approval_id)
        return super().claim(approval_id)


Turn = list[Any]


class Script:
    """A FunctionModel's script: one list of parts per model request, then "done".

    Keeps the parts of every request the model received, so tests can read what it saw.
    """

    def __init__(self, *turns: Turn) -> None:
        self.turns = turns
        self.seen: list[Any] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.extend(messages[-1].parts)
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(self.turns):
            return ModelResponse(parts=self.turns[step])
        return ModelResponse(parts=[TextPart("done")])

    def returns(self) -> list[ToolReturnPart]:
        """The tool returns the model was shown."""
        return [part for part in self.seen if isinstance(part, ToolReturnPart)]


def agent_for(toolset: Any, script: Any, **options: Any) -> Agent[None, Any]:
    return Agent(FunctionModel(script), toolsets=[toolset], **options)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def spans_runtime(exporter: InMemorySpanExporter) -> Iterator[ToolRuntime]:
    """A runtime whose calls become spans in ``exporter``."""
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = ToolRuntime(
        tracer=NullTracer(),
        deactivate_timeout=WAIT,
        instrumentation=OpenTelemetry(tracer_provider=provider),
    )
    try:
        yield runtime
    finally:
        runtime.close()
        provider.shutdown()


async def test_a_scripted_run_calls_through_one_plan_and_the_model_retries_its_mistake(
    spans_runtime: ToolRuntime, exporter: InMemorySpanExporter
) -> None:
    """Two good calls and a bad one: one plan, a trace and span per call, a retry prompt."""
    fake = FakeTool(name="lookup", output="found")
    spans_runtime.register(fake)
    spans_runtime.register(add)
    script = Script(
        [
            ToolCallPart("lookup", {"key": "a"}, tool_call_id="c1"),
            ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c2"),
        ],
        [ToolCallPart("add", {"a": "one"}, tool_call_id="c3")],
    )
    agent = agent_for(ToolcycleToolset(spans_runtime), script)
    with capture_traces(spans_runtime) as traces:
        result = await agent.run("go")

    assert result.output == "done"
    assert (fake.count("activate"), fake.count("deactivate")) == (1, 1)
    assert [(t.tool_name, t.status) for t in traces] == [
        ("lookup", "ok"),
        ("add", "ok"),
        ("add", "invalid_input"),
    ]
    assert len({t.plan_id for t in traces}) == 1
    spans = exporter.get_finished_spans()
    ids = sorted(str(s.attributes.get("gen_ai.tool.call.id")) for s in spans if s.attributes)
    ids = [i for i in ids if i != "None"]
    assert ids == ["c1", "c2", "c3"]
    returns = {part.tool_call_id: part for part in script.returns()}
    assert (returns["c1"].content, returns["c2"].content) == ("found", 3)
    assert returns["c3"].outcome == "retried"
    assert 'missing required property "b"' in str(returns["c3"].content)


async def test_each_run_opens_and_ends_a_plan_of_its_own(runtime: ToolRuntime) -> None:
    """Every run activates and deactivates its tools once, in a plan that ends with it."""
    fake = FakeTool(name="lookup", output="found")
    runtime.register(fake)
    script = Script([ToolCallPart("lookup", {}, tool_call_id="c1")])
    agent = agent_for(ToolcycleToolset(runtime), script)
    with capture_traces(runtime) as traces:
        await agent.run("one")
        await agent.run("two")

    plans = [t.plan_id for t in traces]
    assert len(set(plans)) == 2
    for plan in plans:
        assert fake.stages(plan) == ["activate", "execute", "deactivate"]


async def test_a_read_only_plan_hides_a_writing_tool_and_a_call_to_it_is_a_tool_result(
    runtime: ToolRuntime,
) -> None:
    """The model is not shown ``save``; calling it anyway gets a retry prompt, not an error."""
    runtime.register(add)
    runtime.register(save)
    offered: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        return script(messages, info)

    script = Script([ToolCallPart("save", {"text": "x"}, tool_call_id="c1")])
    agent = agent_for(ToolcycleToolset(runtime, read_only=True), model)
    result = await agent.run("go")

    assert result.output == "done"
    assert offered[0] == ["add"]
    [answer] = script.returns()
    assert answer.outcome == "retried"
    assert "save" in str(answer.content)


async def test_a_failing_tool_is_a_failed_tool_return_without_a_retry(
    runtime: ToolRuntime,
) -> None:
    """A tool that raises gives ToolFailed: the model reads the error, the run goes on."""
    runtime.register(explode)
    script = Script([ToolCallPart("explode", {}, tool_call_id="c1")])
    result = await agent_for(ToolcycleToolset(runtime), script).run("go")

    assert result.output == "done"
    [answer] = script.returns()
    assert answer.outcome == "failed"
    assert "the disk is on fire" in str(answer.content)


async def test_two_concurrent_runs_keep_separate_plans(runtime: ToolRuntime) -> None:
    """Two runs of one agent, both inside a call at once, each call in its own plan."""
    arrived = asyncio.Semaphore(0)
    release = asyncio.Event()
    plans: list[str] = []

    @tool(writes=False)
    async def meet(ctx: ToolExecutionContext) -> str:
        """Wait until the other run is here too."""
        plans.append(ctx.plan_id)
        arrived.release()
        await asyncio.wait_for(release.wait(), WAIT)
        return ctx.plan_id

    runtime.register(meet)
    script = Script([ToolCallPart("meet", {}, tool_call_id="c1")])
    agent = agent_for(ToolcycleToolset(runtime), script)
    runs = [asyncio.create_task(agent.run("go")) for _ in range(2)]
    for _ in range(2):
        await asyncio.wait_for(arrived.acquire(), WAIT)
    release.set()
    await asyncio.wait_for(asyncio.gather(*runs), WAIT)

    assert len(set(plans)) == 2


async def test_runs_inside_async_with_agent_each_get_their_own_plan(
    runtime: ToolRuntime,
) -> None:
    """Entering the agent enters the toolset once; its runs still open and end plans."""
    fake = FakeTool(name="lookup", output="found")
    runtime.register(fake)
    script = Script([ToolCallPart("lookup", {}, tool_call_id="c1")])
    agent = agent_for(ToolcycleToolset(runtime), script)
    async with agent:
        await agent.run("one")
        await agent.run("two")

    assert fake.stages().count("activate") == 2
    assert fake.stages().count("deactivate") == 2


async def test_cancelling_the_run_stops_the_tool_before_the_plan_ends(
    runtime: ToolRuntime,
) -> None:
    """The running tool sees the cancellation; its deactivation comes after it stopped."""
    events: list[str] = []
    started = asyncio.Event()

    class Slow(FakeTool):
        async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                events.append("tool stopped")

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            events.append("deactivated")

    runtime.register(Slow(name="slow"))
    script = Script([ToolCallPart("slow", {}, tool_call_id="c1")])
    run = asyncio.create_task(agent_for(ToolcycleToolset(runtime), script).run("go"))
    await asyncio.wait_for(started.wait(), WAIT)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, WAIT)

    assert events == ["tool stopped", "deactivated"]


async def test_an_approval_round_trip_runs_the_call_once_claimed_in_the_ledger() -> None:
    """pydantic-ai's deferred requests and results carry the decision to the runtime."""
    ledger = Ledger()
    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(amount)
        return f"paid {amount}"

    with ToolRuntime(tracer=NullTracer(), approval_ledger=ledger) as runtime:
        runtime.register(pay)
        script = Script([ToolCallPart("pay", {"amount": 5}, tool_call_id="c1")])
        agent = agent_for(
            ToolcycleToolset(runtime), script, output_type=[str, DeferredToolRequests]
        )
        with capture_traces(runtime) as traces:
            first = await agent.run("pay")
            assert isinstance(first.output, DeferredToolRequests)
            [asked] = first.output.approvals
            metadata = first.output.metadata["c1"]
            assert ran == []
            second = await agent.run(
                message_history=first.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
            )

    assert asked.tool_name == "pay"
    assert second.output == "done"
    assert ran == [5]
    assert ledger.asked == [metadata["approval_id"]]
    assert [t.status for t in traces] == ["pending", "ok"]
    assert traces[1].approval is not None and traces[1].approval.resumed


async def test_a_denial_through_pydantic_ai_is_claimed_and_the_tool_never_runs() -> None:
    """ToolDenied reaches the ledger: the deferred call is claimed, denied, and not run."""
    ledger = Ledger()
    ran: list[str] = []

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    with ToolRuntime(tracer=NullTracer(), approval_ledger=ledger) as runtime:
        runtime.register(delete)
        script = Script([ToolCallPart("delete", {"path": "/etc"}, tool_call_id="c1")])
        toolset = ToolcycleToolset(runtime, approval="writes")
        agent = agent_for(toolset, script, output_type=[str, DeferredToolRequests])
        with capture_traces(runtime) as traces:
            first = await agent.run("delete")
            denied = ToolDenied("not that one")
            await agent.run(
                message_history=first.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals={"c1": denied}),
            )

    assert ran == []
    assert len(ledger.asked) == 1
    assert [t.status for t in traces] == ["pending", "denied"]
    assert traces[1].approval is not None and traces[1].approval.reason == "not that one"


async def test_an_approval_that_changes_the_arguments_is_refused(runtime: ToolRuntime) -> None:
    """Approving other arguments than the deferred call's fails it; the tool does not run."""
    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(amount)
        return "paid"

    runtime.register(pay)
    script = Script([ToolCallPart("pay", {"amount": 5}, tool_call_id="c1")])
    agent = agent_for(ToolcycleToolset(runtime), script, output_type=[str, DeferredToolRequests])
    first = await agent.run("pay")
    changed = ToolApproved(override_args={"amount": 500})
    await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c1": changed}),
    )

    assert ran == []
    [answer] = [r for r in script.returns() if r.tool_call_id == "c1"]
    assert answer.outcome == "failed"
    assert "fingerprint" in str(answer.content)


async def test_pydantic_ais_own_approval_wrapper_hands_approved_calls_to_the_plan(
    runtime: ToolRuntime,
) -> None:
    """A call approved by an ``approval_required()`` wrapper runs as any other call."""
    runtime.register(add)
    script = Script([ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")])
    toolset = ToolcycleToolset(runtime).approval_required()
    agent = agent_for(toolset, script, output_type=[str, DeferredToolRequests])
    first = await agent.run("add")
    assert isinstance(first.output, DeferredToolRequests)
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
    )

    assert second.output == "done"
    assert [r.content for r in script.returns()] == [3]


async def test_a_given_plan_serves_every_run_and_stays_open(runtime: ToolRuntime) -> None:
    """With ``plan=``, runs share the caller's plan and the toolset never ends it."""
    fake = FakeTool(name="lookup", output="found")
    runtime.register(fake)
    script = Script([ToolCallPart("lookup", {}, tool_call_id="c1")])
    with runtime.plan("mine") as ctx:
        toolset = ToolcycleToolset(runtime, plan=ctx)
        agent = agent_for(toolset, script)
        await agent.run("one")
        await agent.run("two")
        assert not ctx.ended
        assert toolset.plan is ctx
    assert fake.stages("mine") == ["activate", "execute", "execute", "deactivate"]


async def test_a_cancelled_plan_fails_the_call_instead_of_raising(runtime: ToolRuntime) -> None:
    """A call in a cancelled plan is a failed tool return; the run itself goes on."""
    runtime.register(add)
    script = Script([ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")])
    with runtime.plan() as ctx:
        ctx.cancellation_token.cancel()
        result = await agent_for(ToolcycleToolset(runtime, plan=ctx), script).run("go")

    assert result.output == "done"
    [answer] = script.returns()
    assert answer.outcome == "failed"
    assert "cancel" in str(answer.content)


async def test_arguments_that_are_not_an_object_get_the_runtimes_words(
    runtime: ToolRuntime,
) -> None:
    """The pass-through validator leaves a JSON array for the runtime to refuse."""
    runtime.register(add)
    script = Script([ToolCallPart("add", "[1, 2]", tool_call_id="c1")])
    await agent_for(ToolcycleToolset(runtime), script).run("go")

    [answer] = script.returns()
    assert answer.outcome == "retried"
    assert "object" in str(answer.content)


async def test_tools_are_offered_with_their_schemas_and_sequential_flags(
    runtime: ToolRuntime,
) -> None:
    """The definitions keep the JSON schema as it is, map names and mark sequential tools."""

    @tool(name="notes.save", sequential=True)
    def save_note(text: str) -> str:
        """Save a note."""
        return "saved"

    runtime.register(save_note)
    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(info.function_tools)
        if len(messages) == 1:
            call = ToolCallPart(info.function_tools[0].name, {"text": "hi"}, tool_call_id="c1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    with capture_traces(runtime) as traces:
        await agent_for(ToolcycleToolset(runtime, id="notes"), model).run("go")

    definition = seen[0]
    assert definition.name.startswith("notes_save_")
    assert definition.sequential
    assert definition.parameters_json_schema == runtime.descriptor("notes.save").input_schema
    assert [(t.tool_name, t.status) for t in traces] == [("notes.save", "ok")]


async def test_calls_outside_a_run_are_refused_and_options_exclude_a_plan(
    runtime: ToolRuntime,
) -> None:
    """A toolset with no plan says how to use it; ``plan`` and plan options do not mix."""
    toolset = ToolcycleToolset(runtime, id="tc")
    assert toolset.id == "tc" and toolset.plan is None
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    async with toolset:
        with pytest.raises(UserError, match="has no plan"):
            await toolset.get_tools(ctx)
    with runtime.plan() as plan, pytest.raises(ValueError, match="not both"):
        ToolcycleToolset(runtime, plan=plan, read_only=True)


async def test_a_deferred_call_outside_a_run_is_kept_under_its_approval_id(
    runtime: ToolRuntime,
) -> None:
    """Called directly with no tool call id, a deferral still raises ApprovalRequired."""
    from pydantic_ai.exceptions import ApprovalRequired

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    runtime.register(pay)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("later")) as plan:
        toolset = ToolcycleToolset(runtime, plan=plan)
        tools = await toolset.get_tools(ctx)
        with pytest.raises(ApprovalRequired) as raised:
            await toolset.call_tool("pay", {"amount": 1}, ctx, tools["pay"])
    assert raised.value.metadata is not None
    assert raised.value.metadata["approval_id"] in toolset._pending


async def test_the_adapter_raises_only_pydantic_ais_own_exceptions(runtime: ToolRuntime) -> None:
    """An unknown tool is a ModelRetry; a tool failure is ToolFailed."""
    runtime.register(explode)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), tool_call_id="c1")
    with runtime.plan() as plan:
        toolset = ToolcycleToolset(runtime, plan=plan)
        tools = await toolset.get_tools(ctx)
        with pytest.raises(ModelRetry, match="no tool named"):
            await toolset.call_tool("nope", {}, ctx, tools["explode"])
        with pytest.raises(ToolFailed, match="on fire"):
            await toolset.call_tool("explode", {}, ctx, tools["explode"])


def test_importing_without_pydantic_ai_names_the_extra() -> None:
    """With pydantic_ai blocked, the import error says which extra to install."""
    code = (
        "import sys\n"
        "sys.modules['pydantic_ai'] = None\n"
        "try:\n"
        "    import toolcycle.adapters.pydantic_ai\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert (
        "pip install -e '.[pydantic-ai]' from a clone (toolcycle[pydantic-ai] once published)"
        in done.stdout
    )


async def test_a_runs_copy_entered_twice_ends_its_plan_on_the_last_exit(
    runtime: ToolRuntime,
) -> None:
    """Entries of a run's copy are counted: one plan, ended when the last one leaves."""
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    run = await ToolcycleToolset(runtime).for_run(ctx)
    async with run:
        plan = run.plan
        async with run:
            assert run.plan is plan
        assert plan is not None and not plan.ended
    assert plan.ended


async def test_a_given_approver_decides_instead_of_pydantic_ai(runtime: ToolRuntime) -> None:
    """With an ``approver`` in the plan options, approvals never reach pydantic-ai."""
    asked: list[str] = []

    def approver(request: ApprovalRequest) -> bool:
        asked.append(request.tool_name)
        return True

    runtime.register(save)
    script = Script([ToolCallPart("save", {"text": "x"}, tool_call_id="c1")])
    toolset = ToolcycleToolset(runtime, approver=approver)
    result = await agent_for(toolset, script).run("go")

    assert result.output == "done"
    assert asked == ["save"]
    assert [r.content for r in script.returns()] == ["saved"]


async def test_an_approval_handed_back_with_its_metadata_resumes_in_another_toolset() -> None:
    """The deferred call travels in the metadata, so a new toolset (or process) can resume it."""
    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(amount)
        return "paid"

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(pay)
        script = Script([ToolCallPart("pay", {"amount": 5}, tool_call_id="c1")])
        options: dict[str, Any] = {"output_type": [str, DeferredToolRequests]}
        first = await agent_for(ToolcycleToolset(runtime), script, **options).run("pay")
        assert isinstance(first.output, DeferredToolRequests)
        later = agent_for(ToolcycleToolset(runtime), script, **options)
        results = DeferredToolResults(approvals={"c1": True}, metadata=first.output.metadata)
        await later.run(message_history=first.all_messages(), deferred_tool_results=results)
        again = await later.run(message_history=first.all_messages(), deferred_tool_results=results)

    assert ran == [5]  # the second hand-back is refused by the ledger
    assert again.output == "done"
    answers = [r for r in script.returns() if r.tool_call_id == "c1"]
    assert [a.outcome for a in answers] == ["success", "failed"]
    assert "resumed before" in str(answers[1].content)


async def test_unreadable_metadata_handed_back_fails_the_call(runtime: ToolRuntime) -> None:
    """A deferred call that cannot be read back is a failed tool return, not a crash."""
    runtime.register(add)
    script = Script([ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")])
    toolset = ToolcycleToolset(runtime).approval_required()
    agent = agent_for(toolset, script, output_type=[str, DeferredToolRequests])
    first = await agent.run("add")
    results = DeferredToolResults(approvals={"c1": True}, metadata={"c1": {"pending": {"x": 1}}})
    await agent.run(message_history=first.all_messages(), deferred_tool_results=results)

    [answer] = script.returns()
    assert answer.outcome == "failed"
    assert "cannot be read" in str(answer.content)


async def test_the_deferred_calls_a_toolset_holds_are_bounded_and_a_forgotten_one_resumes(
    runtime: ToolRuntime,
) -> None:
    """Beyond the latest PENDING_KEPT the oldest is forgotten; its metadata still resumes it."""
    from pydantic_ai.exceptions import ApprovalRequired

    from toolcycle.adapters.pydantic_ai._toolset import PENDING_KEPT

    paid: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    def asked(call_id: str, **approval: Any) -> RunContext[None]:
        return RunContext(
            deps=None, model=TestModel(), usage=RunUsage(), tool_call_id=call_id, **approval
        )

    runtime.register(pay)
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("later")) as plan:
        toolset = ToolcycleToolset(runtime, plan=plan)
        tools = await toolset.get_tools(asked("c0"))
        metadata: dict[str, Any] = {}
        for number in range(PENDING_KEPT + 3):
            with pytest.raises(ApprovalRequired) as raised:
                await toolset.call_tool(
                    "pay", {"amount": number}, asked(f"c{number}"), tools["pay"]
                )
            metadata[f"c{number}"] = raised.value.metadata
        assert len(toolset._pending) == PENDING_KEPT  # the bound itself is private state
        assert "c0" not in toolset._pending and f"c{PENDING_KEPT + 2}" in toolset._pending
        newest = f"c{PENDING_KEPT + 2}"
        assert (
            await toolset.call_tool(
                "pay",
                {"amount": PENDING_KEPT + 2},
                asked(newest, tool_call_approved=True),
                tools["pay"],
            )
            == "paid"
        )
        forgotten = asked("c0", tool_call_approved=True, tool_call_metadata=metadata["c0"])
        assert await toolset.call_tool("pay", {"amount": 0}, forgotten, tools["pay"]) == "paid"
    assert paid == [PENDING_KEPT + 2, 0]


def test_a_misspelt_plan_option_is_refused_when_the_toolset_is_made(runtime: ToolRuntime) -> None:
    """readonly=True used to pass here and fail inside the agent's first run."""
    with pytest.raises(TypeError) as raised:
        ToolcycleToolset(runtime, readonly=True)
    message = str(raised.value)
    assert message.startswith(
        "ToolcycleToolset got an unknown plan option 'readonly' (did you mean 'read_only'?); "
        "besides plan, id and search it takes the options of runtime.new_context: "
    )
    assert "requires_checkpoint" in message and "approver" in message
    with pytest.raises(TypeError, match="unknown plan option 'colour'; besides"):
        ToolcycleToolset(runtime, colour="blue")
    ToolcycleToolset(runtime, read_only=True, timeout=5.0, metadata={"user": "ann"})
