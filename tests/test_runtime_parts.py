"""The runtime's parts work through the protocols they are given, each on its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from toolcycle import ToolCall, ToolExecutionContext, ToolResult, ToolRuntime, tool
from toolcycle.models import ApprovalRecord, ProgressEvent
from toolcycle.runtime._shared import Call, Entry
from toolcycle.testing import FakeTool


class RecordingRunner:
    """A stand-in for the pipeline: records what the dispatcher asks it to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], str | None, bool]] = []

    def execute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
    ) -> ToolResult:
        assert answers is not None and answers.id == tool_call_id
        self.calls.append((name, dict(params), tool_call_id, refuse))
        return ToolResult(success=True, output="from the stand-in")

    async def aexecute(
        self,
        name: str,
        params: Mapping[str, Any],
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
        tool_call_id: str | None = None,
        approval: ApprovalRecord | None = None,
        *,
        refuse: bool = False,
        answers: ToolCall | None = None,
        progress: Callable[[ProgressEvent], object] | None = None,
    ) -> ToolResult:
        return self.execute(
            name, params, ctx, timeout, idle_timeout, tool_call_id, refuse=refuse, answers=answers
        )


def test_the_dispatcher_runs_a_model_call_only_through_the_runner_it_is_given() -> None:
    """A provider-safe name is mapped back and the call handed to the runner, refusals on."""
    from toolcycle.runtime._dispatcher import Dispatcher

    @tool(name="weather.today")
    def weather(city: str) -> str:
        """Today's weather."""
        return "sunny"

    with ToolRuntime() as runtime:
        runtime.register(weather)
        runner = RecordingRunner()
        dispatcher = Dispatcher(
            runtime._tools,
            runtime._steps,
            runner,
            runtime._invoker,
            runtime._settings,
            runtime._compiler.limits,
        )
        with runtime.plan() as ctx:
            (offered,) = dispatcher.tool_definitions(ctx, format="openai", strict=False)
            safe_name = offered["function"]["name"]
            assert safe_name != "weather.today"  # OpenAI refuses dots
            model_call = {
                "id": "c1",
                "type": "function",
                "function": {"name": safe_name, "arguments": '{"city": "Oslo"}'},
            }
            result = dispatcher.call(model_call, ctx, None, None)
            aresult = asyncio.run(dispatcher.acall(model_call, ctx, None, None))
    assert runner.calls == [("weather.today", {"city": "Oslo"}, "c1", True)] * 2
    for answer in (result, aresult):
        assert answer.output == "from the stand-in"
        assert answer.call is not None and answer.call.id == "c1"


class DeferEverything:
    """A stand-in approval step: every call needs approval, and the answer is a refusal."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def needed(self, call: Call, entry: Entry) -> bool:
        return True

    def ask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        self.asked.append(call.name)
        return ToolResult(success=False, error="not now", error_type="Stand-in")

    async def aask(self, call: Call, entry: Entry, data: dict[str, Any]) -> ToolResult | None:
        return self.ask(call, entry, data)


def test_the_pipeline_answers_with_its_approval_steps_verdict_and_starts_nothing() -> None:
    """Whatever approval step the pipeline is given decides before the tool is activated."""
    from toolcycle.runtime._pipeline import CallPipeline

    fake = FakeTool(name="fake")
    with ToolRuntime() as runtime:
        runtime.register(fake)
        step = DeferEverything()
        pipeline = CallPipeline(
            runtime._steps, step, runtime._activator, runtime._invoker, runtime._settings
        )
        with runtime.plan() as ctx:
            result = pipeline.execute("fake", {}, ctx, None, None)
            aresult = asyncio.run(pipeline.aexecute("fake", {}, ctx, None, None))
    assert step.asked == ["fake", "fake"]
    assert (result.error, aresult.error) == ("not now", "not now")
    assert fake.stages() == ["discover"]  # neither activated nor run
