"""Steps for the pydantic-ai adapter: agent runs with a scripted FunctionModel, and from_toolset.

Every step text starts with or names "pydantic-ai", so that none can clash with the
steps of another framework's adapter.
"""

from __future__ import annotations

import asyncio
from typing import Any

from behave import given, then, when
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolset,
    ModelResponse,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolcycle
from toolcycle.adapters.pydantic_ai import ToolcycleToolset, from_toolset
from toolcycle.approvals import MemoryApprovalLedger
from toolcycle.testing import FakeTool

WAIT = 5.0


@toolcycle.tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@toolcycle.tool
def save(text: str) -> str:
    """Save a text."""
    return "saved"


class _Script:
    """A FunctionModel's script: the parts of each reply, then "done"; keeps what it saw."""

    def __init__(self, *turns: list[Any]) -> None:
        self.turns = turns
        self.seen: list[Any] = []
        self.offered: list[list[str]] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        self.seen.extend(messages[-1].parts)
        self.offered.append([t.name for t in info.function_tools])
        step = sum(isinstance(message, ModelResponse) for message in messages)
        if step < len(self.turns):
            return ModelResponse(parts=self.turns[step])
        return ModelResponse(parts=[TextPart("done")])

    def returns(self) -> list[ToolReturnPart]:
        return [part for part in self.seen if isinstance(part, ToolReturnPart)]


def _agent(context: Any, script: _Script, **options: Any) -> None:
    context.script = script
    toolset = ToolcycleToolset(context.runtime, **options)
    context.agent = Agent(
        FunctionModel(script), toolsets=[toolset], output_type=[str, DeferredToolRequests]
    )


@given('a pydantic-ai agent with the runtime\'s tools "lookup" and "add"')
def step_agent_lookup_add(context: Any) -> None:
    context.fake = FakeTool(name="lookup", output="found")
    context.runtime.register(context.fake)
    context.runtime.register(add)


@when('the pydantic-ai model calls "lookup", then "add" right and "add" wrong')
def step_calls_twice_and_wrong(context: Any) -> None:
    script = _Script(
        [
            ToolCallPart("lookup", {"key": "a"}, tool_call_id="c1"),
            ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c2"),
        ],
        [ToolCallPart("add", {"a": "one"}, tool_call_id="c3")],
    )
    _agent(context, script)
    context.result = asyncio.run(context.agent.run("go"))


@then('the pydantic-ai run activated and deactivated "lookup" once, in one plan')
def step_one_plan(context: Any) -> None:
    assert context.fake.stages() == ["discover", "activate", "execute", "deactivate"]
    assert len({trace.plan_id for trace in context.traces}) == 1


@then('the pydantic-ai run left {count:d} traces, the last one "{status}"')
def step_traces(context: Any, count: int, status: str) -> None:
    assert len(context.traces) == count
    assert context.traces[-1].status == status


@then("the pydantic-ai model was told what was wrong and asked to retry")
def step_retried(context: Any) -> None:
    [wrong] = [r for r in context.script.returns() if r.tool_call_id == "c3"]
    assert wrong.outcome == "retried"
    assert 'missing required property "b"' in str(wrong.content)
    assert context.result.output == "done"


@given('a pydantic-ai agent with a read-only toolset of "add" and the writing "save"')
def step_read_only_agent(context: Any) -> None:
    context.runtime.register(add)
    context.runtime.register(save)


@when('the pydantic-ai model calls the hidden "save"')
def step_call_hidden(context: Any) -> None:
    script = _Script([ToolCallPart("save", {"text": "x"}, tool_call_id="c1")])
    _agent(context, script, read_only=True)
    context.result = asyncio.run(context.agent.run("go"))


@then('the pydantic-ai model was shown only "add"')
def step_shown_only(context: Any) -> None:
    assert context.script.offered[0] == ["add"]


@then('the pydantic-ai model got a retry prompt for "save", and the run finished')
def step_retry_prompt(context: Any) -> None:
    [answer] = context.script.returns()
    assert answer.outcome == "retried" and "save" in str(answer.content)
    assert context.result.output == "done"


@given("a pydantic-ai agent whose tool waits for a second run")
def step_meeting_tool(context: Any) -> None:
    context.met = []

    @toolcycle.tool(writes=False)
    async def meet(ctx: toolcycle.ToolExecutionContext) -> str:
        """Wait until the other run is here too."""
        context.met.append(ctx.plan_id)
        context.arrived.release()
        await asyncio.wait_for(context.release.wait(), WAIT)
        return "met"

    context.runtime.register(meet)


@when("two pydantic-ai runs call it at the same time")
def step_two_runs(context: Any) -> None:
    async def main() -> None:
        context.arrived, context.release = asyncio.Semaphore(0), asyncio.Event()
        _agent(context, _Script([ToolCallPart("meet", {}, tool_call_id="c1")]))
        runs = [asyncio.create_task(context.agent.run("go")) for _ in range(2)]
        for _ in range(2):
            await asyncio.wait_for(context.arrived.acquire(), WAIT)
        context.release.set()
        await asyncio.wait_for(asyncio.gather(*runs), WAIT)

    asyncio.run(main())


@then("the two pydantic-ai calls ran in different plans")
def step_different_plans(context: Any) -> None:
    assert len(context.met) == 2 and len(set(context.met)) == 2


@given("a pydantic-ai agent whose tool runs until cancelled")
def step_slow_tool(context: Any) -> None:
    context.events = []

    class Slow(FakeTool):
        async def execute(self, params: dict[str, Any], ctx: Any) -> Any:
            context.started.set()
            try:
                await asyncio.Event().wait()
            finally:
                context.events.append("tool stopped")

        def deactivate(self, ctx: Any) -> None:
            context.events.append("deactivated")

    context.runtime.register(Slow(name="slow"))


@when("the pydantic-ai run is cancelled while the tool runs")
def step_cancel_run(context: Any) -> None:
    async def main() -> None:
        context.started = asyncio.Event()
        _agent(context, _Script([ToolCallPart("slow", {}, tool_call_id="c1")]))
        run = asyncio.create_task(context.agent.run("go"))
        await asyncio.wait_for(context.started.wait(), WAIT)
        run.cancel()
        try:
            await asyncio.wait_for(run, WAIT)
        except asyncio.CancelledError:
            context.events.append("run cancelled")

    asyncio.run(main())


@then("the pydantic-ai tool stopped before it was deactivated")
def step_stopped_first(context: Any) -> None:
    assert context.events == ["tool stopped", "deactivated", "run cancelled"]


class _Ledger(MemoryApprovalLedger):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def claim(self, approval_id: str) -> bool:
        self.asked.append(approval_id)
        return super().claim(approval_id)


@given('a pydantic-ai agent with a tool "pay" that needs approval')
def step_pay_tool(context: Any) -> None:
    context.ledger = _Ledger()
    context.paid = []
    runtime = context.make_runtime(approval_ledger=context.ledger)

    @toolcycle.tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        context.paid.append(amount)
        return "paid"

    runtime.register(pay)


@when("the pydantic-ai run asks to pay {amount:d} and the caller approves it")
def step_approve(context: Any, amount: int) -> None:
    _agent(context, _Script([ToolCallPart("pay", {"amount": amount}, tool_call_id="c1")]))
    first = asyncio.run(context.agent.run("pay"))
    assert isinstance(first.output, DeferredToolRequests)
    assert context.paid == []
    context.approval_id = first.output.metadata["c1"]["approval_id"]
    approved = DeferredToolResults(approvals={"c1": True})
    context.result = asyncio.run(
        context.agent.run(message_history=first.all_messages(), deferred_tool_results=approved)
    )


@then("the pydantic-ai run paid {amount:d} once, claimed in the approval ledger")
def step_paid_once(context: Any, amount: int) -> None:
    assert context.paid == [amount]
    assert context.ledger.asked == [context.approval_id]
    assert context.traces[-1].approval is not None and context.traces[-1].approval.resumed


@given('a pydantic-ai FunctionToolset with a read tool "greet" and a writing tool "delete"')
def step_function_toolset(context: Any) -> None:
    toolset: FunctionToolset[str] = FunctionToolset()

    @toolset.tool
    def greet(ctx: RunContext[str], name: str) -> str:
        """Greet someone on the deps' behalf."""
        return f"{ctx.deps} greets {name}"

    @toolset.tool_plain
    def delete(name: str) -> str:
        """Delete someone."""
        return "deleted"

    capabilities = {"greet": toolcycle.ToolCapability(writes=False)}
    context.runtime.register_source(from_toolset(toolset, deps="ann", capabilities=capabilities))


@when('a read-only plan calls the pydantic-ai tools: "greet" right, "greet" wrong and "delete"')
def step_source_calls(context: Any) -> None:
    with context.runtime.plan(read_only=True) as ctx:
        context.results = [
            context.runtime.execute("greet", {"name": "bob"}, ctx),
            context.runtime.execute("greet", {"name": 7}, ctx),
        ]
        try:
            context.runtime.execute("delete", {"name": "bob"}, ctx)
        except toolcycle.ToolAccessDeniedError as error:
            context.error = error


@then('the pydantic-ai "greet" answered, its wrong call failed validation and "delete" was refused')
def step_source_outcomes(context: Any) -> None:
    right, wrong = context.results
    assert right.output == "ann greets bob"
    assert wrong.error_type == "ToolSchemaValidationError"
    assert isinstance(context.error, toolcycle.ToolAccessDeniedError)
    assert [t.status for t in context.traces] == ["ok", "invalid_input", "denied"]
