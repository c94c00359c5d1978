"""Steps about streaming a call's progress with astream and astream_call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from behave import given, then, when

from toolcycle import ProgressEvent, ToolExecutionContext, ToolResult, tool

WAIT = 5.0


@given(
    'a tool "{name:Name}" that reports {steps:d} steps and waits after the first '
    "until the host has seen it"
)
def a_reporting_tool(context: Any, name: str, steps: int) -> None:
    context.seen_first = threading.Event()
    context.tool_finished = threading.Event()

    def crawl(ctx: ToolExecutionContext) -> int:
        ctx.report_progress(1, steps)
        assert context.seen_first.wait(WAIT), "the host never saw the first event"
        for step in range(2, steps + 1):
            ctx.report_progress(step, steps)
        context.tool_finished.set()
        return steps

    context.runtime.register(tool(crawl, name=name, description="Crawl.", writes=False))


@given('a tool "{name:Name}" that reports once and then runs until cancelled')
def a_tool_that_runs_on(context: Any, name: str) -> None:
    async def watch(ctx: ToolExecutionContext) -> None:
        ctx.report_progress(0, None, "watching")
        await asyncio.Event().wait()

    context.runtime.register(tool(watch, name=name, description="Watch.", writes=False))


async def _collect(context: Any, stream: Any) -> None:
    context.streamed = []
    context.finished_before_first = None
    async for item in stream:
        if not context.streamed:
            context.finished_before_first = context.tool_finished.is_set()
            context.seen_first.set()
        context.streamed.append(item)


@when('I stream the call of "{name:Name}"')
def stream_the_call(context: Any, name: str) -> None:
    stream = context.runtime.astream(name, {}, context.plan)
    asyncio.run(asyncio.wait_for(_collect(context, stream), WAIT))


@when('I stream the model\'s call "{call_id}" of "{name:Name}"')
def stream_the_models_call(context: Any, call_id: str, name: str) -> None:
    model_call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }
    stream = context.runtime.astream_call(model_call, context.plan)
    asyncio.run(asyncio.wait_for(_collect(context, stream), WAIT))


@when('I stream the call of "{name:Name}" and leave the loop after the first event')
def stream_and_leave(context: Any, name: str) -> None:
    async def run() -> set[asyncio.Task[Any]]:
        async with asyncio.timeout(WAIT), context.runtime.astream(name, {}, context.plan) as stream:
            async for item in stream:
                assert isinstance(item, ProgressEvent)
                break
        return asyncio.all_tasks() - {asyncio.current_task()}

    context.left_running = asyncio.run(run())


@then('the stream gave {count:d} progress events of "{name:Name}", then the result')
def stream_gave(context: Any, count: int, name: str) -> None:
    *events, result = context.streamed
    assert isinstance(result, ToolResult) and result.success, result
    assert [type(e) for e in events] == [ProgressEvent] * count, context.streamed
    assert [e.progress for e in events] == list(range(1, count + 1))
    assert {(e.tool_name, e.call_id) for e in events} == {(name, result.trace.call_id)}
    context.result = result


@then("the host saw the first event before the tool finished")
def saw_first_event_early(context: Any) -> None:
    assert context.finished_before_first is False


@then('the result answers the model\'s call "{call_id}"')
def answers_the_call(context: Any, call_id: str) -> None:
    assert context.result.to_message()["tool_call_id"] == call_id
    assert context.result.trace.tool_call_id == call_id


@then("no task of the stream is left running")
def no_task_left(context: Any) -> None:
    assert context.left_running == set(), context.left_running


@then('the span "{name}" has {count:d} "{event}" events, progress 1 to {last:d}')
def span_has_progress_events(context: Any, name: str, count: int, event: str, last: int) -> None:
    (span,) = [s for s in context.span_exporter.get_finished_spans() if s.name == name]
    found = [e for e in span.events if e.name == event]
    assert len(found) == count, span.events
    assert [(e.attributes or {})["progress"] for e in found] == list(range(1, last + 1))
