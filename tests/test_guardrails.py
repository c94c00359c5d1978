"""Guardrails: where they run, what each decision does, and how they are traced."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import (
    CachePolicy,
    Change,
    GuardrailCall,
    GuardrailDecision,
    GuardrailTripped,
    NullTracer,
    Text,
    ToolCancelledError,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    tool,
    wrap,
)
from toolcycle.approvals import ApprovalDecision, ApprovalRequest
from toolcycle.guardrails import allow, reject, stop
from toolcycle.testing import FakeTool

WAIT = 5.0


@tool(writes=False)
def echo(text: str) -> str:
    """Return the text."""
    return text


def allow_all(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
    """A guardrail that lets everything through."""
    return allow()


def no_rm(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
    """A guardrail that rejects the text "rm"."""
    return reject("rm is not allowed here") if call.arguments.get("text") == "rm" else allow()


def halt(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
    """A guardrail that stops every call."""
    return stop("nobody may call this now")


def traced(runtime: ToolRuntime) -> list[ToolExecutionTrace]:
    """Every later trace of ``runtime``, in order."""
    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    return traces


def test_an_allowed_call_runs_and_its_trace_lists_the_decision(runtime: ToolRuntime) -> None:
    """A guardrail that allows lets the tool run; the trace records its decision."""
    runtime.register(echo, input_guardrails=[allow_all])
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "hi"}, ctx)
    assert result.success and result.output == "hi"
    assert result.trace is not None
    assert [(g.name, g.stage, g.outcome) for g in result.trace.guardrails] == [
        ("allow_all", "input", "allow")
    ]


def test_a_rejected_input_is_a_failed_result_and_the_tool_never_runs() -> None:
    """A rejection answers with a failed result carrying the message; nothing is activated."""
    fake = FakeTool(name="fake", output="ran")
    with ToolRuntime(tracer=NullTracer(), input_guardrails=[no_rm]) as runtime:
        runtime.register(fake)
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {"text": "rm"}, ctx)
            assert fake.stages() == ["discover"]
    assert not result.success
    assert result.error == "rm is not allowed here"
    assert result.error_type == "GuardrailRejected"
    assert result.trace is not None and result.trace.status == "rejected"
    assert result.trace.guardrails[0].message == "rm is not allowed here"


def test_a_stop_raises_guardrail_tripped_for_the_host(runtime: ToolRuntime) -> None:
    """A stop makes execute raise GuardrailTripped naming the guardrail; trace: stopped."""
    traces = traced(runtime)
    runtime.register(echo, input_guardrails=[halt])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped) as caught:
        runtime.execute("echo", {"text": "hi"}, ctx)
    error = caught.value
    assert (error.guardrail, error.stage, error.tool_name) == ("halt", "input", "echo")
    assert error.plan_id == ctx.plan_id
    assert "nobody may call this now" in str(error)
    assert traces[-1].status == "stopped" and traces[-1].error_type == "GuardrailTripped"


def test_a_guardrail_that_raises_stops_the_call_with_its_exception_chained(
    runtime: ToolRuntime,
) -> None:
    """A broken guardrail does not let the call through: it stops it, naming the guardrail."""

    def broken(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        raise KeyError("missing")

    runtime.register(echo, input_guardrails=[broken])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped, match="'broken' raised KeyError"):
        runtime.execute("echo", {"text": "hi"}, ctx)


def test_an_async_guardrail_that_raises_stops_an_awaited_call(runtime: ToolRuntime) -> None:
    """From aexecute too, a guardrail that raises stops the call; an output rejection answers."""

    async def broken(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        raise ValueError("bad")

    async def hide(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject("hidden")

    runtime.register(echo, input_guardrails=[broken])
    runtime.register(
        wrap(echo.fn, name="shy", writes=False, description="x"), output_guardrails=[hide]
    )

    async def main() -> ToolResult:
        async with runtime.aplan() as ctx:
            with pytest.raises(GuardrailTripped, match="'broken' raised ValueError"):
                await runtime.aexecute("echo", {"text": "x"}, ctx)
            return await runtime.aexecute("shy", {"text": "x"}, ctx)

    result = asyncio.run(main())
    assert result.error == "hidden" and result.output is None


def test_a_guardrail_that_answers_no_decision_stops_the_call(runtime: ToolRuntime) -> None:
    """Returning something other than a GuardrailDecision (None, True) stops the call."""
    runtime.register(echo, input_guardrails=[lambda call, ctx: None])  # type: ignore[list-item,return-value]
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped, match="returned NoneType"):
        runtime.execute("echo", {"text": "hi"}, ctx)


def test_async_guardrails_run_from_sync_execute(runtime: ToolRuntime) -> None:
    """An async guardrail works from sync code, on the runtime's loop thread."""

    async def later(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        await asyncio.sleep(0)
        return reject("not today")

    runtime.register(echo, input_guardrails=[later])
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "hi"}, ctx)
    assert result.error == "not today"


def test_sync_and_async_guardrails_run_from_aexecute(runtime: ToolRuntime) -> None:
    """The async driver awaits async guardrails and calls sync ones, in order."""
    seen: list[str] = []

    async def first(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        seen.append("first")
        return allow()

    def second(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        seen.append("second")
        return allow()

    runtime.register(echo, input_guardrails=[first, second], output_guardrails=[first])

    async def main() -> ToolResult:
        async with runtime.aplan() as ctx:
            return await runtime.aexecute("echo", {"text": "hi"}, ctx)

    result = asyncio.run(main())
    assert result.output == "hi"
    assert seen == ["first", "second", "first"]


def test_a_sync_guardrail_returning_an_awaitable_is_awaited(runtime: ToolRuntime) -> None:
    """A plain function that returns a coroutine is awaited, from sync and async code."""

    async def decide() -> GuardrailDecision:
        return reject("awaited")

    runtime.register(echo, input_guardrails=[lambda call, ctx: decide()])

    async def main() -> ToolResult:
        async with runtime.aplan() as ctx:
            return await runtime.aexecute("echo", {"text": "hi"}, ctx)

    assert asyncio.run(main()).error == "awaited"
    with runtime.plan() as ctx:
        assert runtime.execute("echo", {"text": "hi"}, ctx).error == "awaited"


def test_a_callable_object_with_an_async_call_is_awaited(runtime: ToolRuntime) -> None:
    """A guardrail object whose __call__ is async is run as a coroutine; its class names it."""

    class Moderation:
        async def __call__(self, call: GuardrailCall, ctx: ToolExecutionContext) -> Any:
            return reject("flagged")

    runtime.register(echo, input_guardrails=[Moderation()])
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "hi"}, ctx)
    assert result.error == "flagged"
    assert result.trace is not None and result.trace.guardrails[0].name == "Moderation"


def test_guardrails_run_runtime_then_source_then_tool_then_register(
    runtime: ToolRuntime,
) -> None:
    """The order is the runtime's, the source's, the tool's own, then those given to register."""
    order: list[str] = []

    def named(label: str) -> Any:
        def guard(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
            order.append(label)
            return allow()

        guard.__name__ = label
        return guard

    class Source:
        def tools(self) -> list[Any]:
            fn = wrap(
                lambda text: text,
                name="said",
                description="Say it.",
                writes=False,
                input_guardrails=[named("tool")],
            )
            return [fn]

    with ToolRuntime(tracer=NullTracer(), input_guardrails=[named("runtime")]) as rt:
        rt.register_source(Source(), input_guardrails=[named("source")])
        rt.register(echo, input_guardrails=[named("register")])
        with rt.plan() as ctx:
            rt.execute("said", {"text": "x"}, ctx)
            assert order == ["runtime", "source", "tool"]
            order.clear()
            rt.execute("echo", {"text": "x"}, ctx)
            assert order == ["runtime", "register"]


def test_the_first_decision_that_is_not_allow_wins(runtime: ToolRuntime) -> None:
    """After a rejection no later guardrail runs."""
    later: list[str] = []

    def after(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        later.append("ran")
        return stop("never reached")

    runtime.register(echo, input_guardrails=[no_rm, after])
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "rm"}, ctx)
    assert result.trace is not None and result.trace.status == "rejected"
    assert later == [] and len(result.trace.guardrails) == 1


def test_input_guardrails_run_before_approval_by_default() -> None:
    """A rejected call never reaches the approver."""
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.approve()

    with ToolRuntime(tracer=NullTracer(), input_guardrails=[no_rm]) as runtime:
        runtime.register(wrap(echo.fn, name="send", description="Send."))
        with runtime.plan(approver=approver) as ctx:
            assert runtime.execute("send", {"text": "rm"}, ctx).error == "rm is not allowed here"
            assert asked == []
            assert runtime.execute("send", {"text": "ok"}, ctx).output == "ok"
            assert len(asked) == 1


def test_guardrails_after_approval_run_once_the_approver_said_yes() -> None:
    """With guardrails_after_approval, the approver is asked first; a denial runs no guardrail."""
    events: list[str] = []

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        events.append("approver")
        deny = request.arguments["text"] == "deny"
        return ApprovalDecision.deny("no") if deny else ApprovalDecision.approve()

    def guard(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        events.append("guard")
        return reject("late") if call.arguments["text"] == "rm" else allow()

    with ToolRuntime(
        tracer=NullTracer(), input_guardrails=[guard], guardrails_after_approval=True
    ) as runtime:
        runtime.register(wrap(echo.fn, name="send", description="Send."))
        with runtime.plan(approver=approver) as ctx:
            rejected = runtime.execute("send", {"text": "rm"}, ctx)
            assert events == ["approver", "guard"]
            assert rejected.trace is not None and rejected.trace.approval is not None
            assert rejected.trace.status == "rejected"
            events.clear()
            assert runtime.execute("send", {"text": "deny"}, ctx).error_type is not None
            assert events == ["approver"]

            async def main() -> ToolResult:
                return await runtime.aexecute("send", {"text": "ok"}, ctx)

            events.clear()
            assert asyncio.run(main()).output == "ok"
            assert events == ["approver", "guard"]


def test_a_denied_call_through_aexecute_is_not_guarded_after_approval() -> None:
    """The async driver stops at a denial before running later input guardrails."""
    ran: list[str] = []

    def guard(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        ran.append("guard")
        return allow()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.deny("not now")

    async def main(runtime: ToolRuntime) -> ToolResult:
        async with runtime.aplan(approver=approver) as ctx:
            return await runtime.aexecute("send", {"text": "x"}, ctx)

    with ToolRuntime(
        tracer=NullTracer(), input_guardrails=[guard], guardrails_after_approval=True
    ) as runtime:
        runtime.register(wrap(echo.fn, name="send", description="Send."))
        assert asyncio.run(main(runtime)).trace.status == "denied"  # type: ignore[union-attr]
    assert ran == []


def test_a_call_rejected_before_approval_in_aexecute_asks_nobody() -> None:
    """The async driver's input guardrails run before its approver too."""
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append("asked")
        return ApprovalDecision.approve()

    async def main(runtime: ToolRuntime) -> ToolResult:
        async with runtime.aplan(approver=approver) as ctx:
            return await runtime.aexecute("send", {"text": "rm"}, ctx)

    with ToolRuntime(tracer=NullTracer(), input_guardrails=[no_rm]) as runtime:
        runtime.register(wrap(echo.fn, name="send", description="Send."))
        assert asyncio.run(main(runtime)).error == "rm is not allowed here"
    assert asked == []


def test_output_guardrails_see_the_output_and_can_reject_it(runtime: ToolRuntime) -> None:
    """An output rejection hides the output and keeps the changes the call recorded."""
    seen: list[GuardrailCall] = []

    def no_secrets(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        seen.append(call)
        return reject("the output held a secret") if "secret" in call.output["text"] else allow()

    change = Change(kind="write", target="x")
    fake = FakeTool(name="fake", output={"text": "a secret"}, changes=(change,))
    runtime.register(fake, output_guardrails=[no_secrets])
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {"a": 1}, ctx)
    assert not result.success and result.output is None
    assert result.error == "the output held a secret"
    assert [c.target for c in result.changes] == ["x"]
    assert seen[0].stage == "output" and seen[0].arguments == {"a": 1}
    assert seen[0].descriptor.name == "fake" and seen[0].call_id == result.trace.call_id  # type: ignore[union-attr]


def test_the_changes_a_returned_tool_result_lists_survive_its_output_guardrails(
    runtime: ToolRuntime,
) -> None:
    """Allowed, rejected or stopped at its output, the call's returned changes reach the plan."""

    def judge(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        verdicts = {"keep": allow(), "hide": reject("hidden"), "halt": stop("halted")}
        return verdicts[call.arguments["path"]]

    @tool(output_guardrails=[judge])
    def write(path: str) -> ToolResult:
        """Write a file and say so."""
        return ToolResult(
            success=True, output="written", changes=[Change(kind="write", target=path)]
        )

    runtime.register(write)
    with runtime.plan() as ctx:
        kept = runtime.execute("write", {"path": "keep"}, ctx)
        hidden = runtime.execute("write", {"path": "hide"}, ctx)
        with pytest.raises(GuardrailTripped):
            runtime.execute("write", {"path": "halt"}, ctx)

        async def main() -> ToolResult:
            return await runtime.aexecute("write", {"path": "hide"}, ctx)

        awaited = asyncio.run(main())
        assert [c.target for c in ctx.changes] == ["keep", "hide", "halt", "hide"]
    assert [c.target for c in kept.changes] == ["keep"]
    assert not hidden.success and [c.target for c in hidden.changes] == ["hide"]
    assert not awaited.success and [c.target for c in awaited.changes] == ["hide"]


def test_an_output_stop_raises_after_the_tool_ran(runtime: ToolRuntime) -> None:
    """A stop at the output raises GuardrailTripped with stage "output", sync and async."""
    fake = FakeTool(name="fake", output="x")
    runtime.register(fake, output_guardrails=[halt])
    with runtime.plan() as ctx:
        with pytest.raises(GuardrailTripped) as caught:
            runtime.execute("fake", {}, ctx)
        assert caught.value.stage == "output"
        assert fake.count("execute") == 1

        async def main() -> None:
            await runtime.aexecute("fake", {}, ctx)

        with pytest.raises(GuardrailTripped):
            asyncio.run(main())


def test_output_guardrails_skip_a_tool_that_reported_its_own_failure(runtime: ToolRuntime) -> None:
    """A tool's own failed ToolResult reaches the host unchecked; a successful one is checked."""
    calls: list[Any] = []

    def record(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        calls.append(call.output)
        return allow()

    runtime.register(
        FakeTool(name="failing", output=ToolResult(success=False, error="no")),
        output_guardrails=[record],
    )
    runtime.register(
        FakeTool(name="fine", output=ToolResult(success=True, output=[1, 2])),
        output_guardrails=[record],
    )
    with runtime.plan() as ctx:
        assert runtime.execute("failing", {}, ctx).error == "no"
        assert runtime.execute("fine", {}, ctx).output == [1, 2]
    assert calls == [[1, 2]]


def test_output_guardrails_skip_output_that_is_not_json(runtime: ToolRuntime) -> None:
    """Output that is not JSON fails the call as ever; no guardrail sees it."""
    runtime.register(FakeTool(name="odd", output={1, 2}), output_guardrails=[halt])
    with runtime.plan() as ctx:
        assert runtime.execute("odd", {}, ctx).error_type == "ToolOutputError"


def test_output_guardrails_follow_output_validation(runtime: ToolRuntime) -> None:
    """Under strict_output an invalid output fails before guardrails; otherwise they see it."""
    seen: list[Any] = []

    def record(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        seen.append(call.output)
        return allow()

    runtime.register(
        FakeTool(name="num", output="text", output_schema={"type": "integer"}),
        output_guardrails=[record],
    )
    with runtime.plan() as ctx:
        assert runtime.execute("num", {}, ctx).success
        runtime.strict_output = True
        assert runtime.execute("num", {}, ctx).error_type == "ToolSchemaValidationError"
    assert seen == ["text"]


def test_a_tool_with_only_output_guardrails_skips_the_input_stage(runtime: ToolRuntime) -> None:
    """Only output guardrails: the input stage runs nothing, the trace lists the output one."""
    runtime.register(echo, output_guardrails=[allow_all])

    async def main() -> ToolResult:
        async with runtime.aplan() as ctx:
            return await runtime.aexecute("echo", {"text": "x"}, ctx)

    result = asyncio.run(main())
    assert result.trace is not None
    assert [g.stage for g in result.trace.guardrails] == ["output"]


def test_guardrail_arguments_are_read_only(runtime: ToolRuntime) -> None:
    """A guardrail cannot change what the tool receives."""

    def meddle(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        call.arguments["text"] = "changed"  # type: ignore[index]
        return allow()

    runtime.register(echo, input_guardrails=[meddle])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped, match="TypeError"):
        runtime.execute("echo", {"text": "x"}, ctx)


def test_a_guardrail_changing_nested_arguments_does_not_change_what_the_tool_receives(
    runtime: ToolRuntime,
) -> None:
    """A list or dict inside the arguments is the guardrail's own copy."""
    received: list[Any] = []

    def meddle(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        call.arguments["tags"].append("injected")
        call.arguments["options"]["force"] = True
        return allow()

    @tool(writes=False, input_guardrails=[meddle])
    def label(tags: list[str], options: dict[str, bool]) -> int:
        """Count the tags."""
        received.append((tags, options))
        return len(tags)

    runtime.register(label)
    with runtime.plan() as ctx:
        result = runtime.execute("label", {"tags": ["a"], "options": {}}, ctx)
    assert result.output == 1
    assert received == [(["a"], {})]


def test_model_calls_answer_a_rejection_and_raise_a_stop(runtime: ToolRuntime) -> None:
    """A model's call is answered with a rejection; a stop raises for the host."""
    runtime.register(echo, input_guardrails=[no_rm])
    runtime.register(
        wrap(echo.fn, name="halted", description="x", writes=False), input_guardrails=[halt]
    )
    rm_call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "echo", "arguments": '{"text": "rm"}'},
    }
    with runtime.plan() as ctx:
        answer = runtime.call(rm_call, ctx)
        assert answer.to_message()["content"].endswith("rm is not allowed here")
        assert answer.trace is not None and answer.trace.tool_call_id == "c1"
        with pytest.raises(GuardrailTripped):
            runtime.call({"name": "halted", "arguments": {"text": "x"}}, ctx)

        async def main() -> None:
            assert (await runtime.acall(rm_call, ctx)).error == "rm is not allowed here"
            await runtime.acall({"name": "halted", "arguments": {"text": "x"}}, ctx)

        with pytest.raises(GuardrailTripped):
            asyncio.run(main())


def test_call_many_raises_a_stop_and_answers_the_rest(runtime: ToolRuntime) -> None:
    """In a batch a rejection is one more result; a stop raises from call_many."""
    runtime.register(echo, input_guardrails=[no_rm])
    runtime.register(
        wrap(echo.fn, name="halted", description="x", writes=False), input_guardrails=[halt]
    )
    with runtime.plan() as ctx:
        results = runtime.call_many(
            [
                {"id": "a", "name": "echo", "arguments": {"text": "rm"}},
                {"id": "b", "name": "echo", "arguments": {"text": "ok"}},
            ],
            ctx,
        )
        assert [r.success for r in results] == [False, True]
        with pytest.raises(GuardrailTripped):
            runtime.call_many([{"id": "c", "name": "halted", "arguments": {"text": "x"}}], ctx)


def test_source_guardrails_apply_to_every_tool_and_after_a_refresh(runtime: ToolRuntime) -> None:
    """One set for a whole source, kept when the source lists its tools afresh."""

    class Source:
        def __init__(self) -> None:
            self.stale = False
            self.names = ["a", "b"]

        def tools(self) -> list[Any]:
            self.stale = False
            return [FakeTool(name=n) for n in self.names]

    source = Source()
    runtime.register_source(source, input_guardrails=[halt])
    with runtime.plan() as ctx:
        for name in ("a", "b"):
            with pytest.raises(GuardrailTripped):
                runtime.execute(name, {}, ctx)
    source.names, source.stale = ["c"], True
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped):
        runtime.execute("c", {}, ctx)


def test_a_rejection_quoting_a_secret_is_redacted(runtime: ToolRuntime) -> None:
    """A guardrail's message is redacted like every message of the call."""

    @tool(writes=False)
    def login(user: str, password: str) -> str:
        """Log in."""
        return user

    def quote(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject(f"refused {call.arguments['password']}")

    runtime.register(login, input_guardrails=[quote])
    with runtime.plan() as ctx:
        result = runtime.execute("login", {"user": "u", "password": "hunter2"}, ctx)
    assert result.error is not None and "hunter2" not in result.error
    assert result.trace is not None and "hunter2" not in str(result.trace.guardrails)


@pytest.mark.parametrize("how", ["stop", "raise"])
def test_a_stop_quoting_a_secret_raises_an_error_without_it(runtime: ToolRuntime, how: str) -> None:
    """The GuardrailTripped the host catches (and logs) is redacted like the trace."""

    @tool(writes=False)
    def login(user: str, password: str) -> str:
        """Log in."""
        return user

    def quote(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        if how == "raise":
            raise ValueError(f"cannot check {call.arguments['password']}")
        return stop(f"refusing {call.arguments['password']}")

    runtime.register(login, input_guardrails=[quote])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped) as caught:
        runtime.execute("login", {"user": "u", "password": "hunter2"}, ctx)
    assert "[redacted]" in str(caught.value) and "hunter2" not in str(caught.value)


def test_a_rejection_without_a_message_says_which_guardrail(runtime: ToolRuntime) -> None:
    """An empty message is replaced by one naming the guardrail and the tool."""
    runtime.register(echo, input_guardrails=[lambda call, ctx: reject("")])
    with runtime.plan() as ctx:
        assert runtime.execute("echo", {"text": "x"}, ctx).error == (
            "guardrail '<lambda>' rejected the call of 'echo'"
        )


def test_a_stop_without_a_message_names_the_stage(runtime: ToolRuntime) -> None:
    """An empty stop message still says which guardrail stopped what."""
    runtime.register(echo, output_guardrails=[lambda call, ctx: stop("")])
    with runtime.plan() as ctx, pytest.raises(GuardrailTripped) as caught:
        runtime.execute("echo", {"text": "x"}, ctx)
    assert str(caught.value) == "guardrail '<lambda>' stopped the call of 'echo' at its output"


def test_a_cancelled_plan_during_an_async_guardrail_cancels_the_call(runtime: ToolRuntime) -> None:
    """Cancelling the plan while an async guardrail waits raises ToolCancelledError."""
    entered = threading.Event()

    async def slow(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        entered.set()
        await asyncio.Event().wait()
        return allow()  # pragma: no cover - cancelled while waiting

    runtime.register(echo, input_guardrails=[slow])
    with runtime.plan() as ctx:

        def cancel() -> None:
            assert entered.wait(WAIT)
            ctx.cancellation_token.cancel("enough")

        canceller = threading.Thread(target=cancel)
        canceller.start()
        with pytest.raises(ToolCancelledError, match="enough"):
            runtime.execute("echo", {"text": "x"}, ctx)
        canceller.join(WAIT)

    async def main() -> None:
        async with runtime.aplan() as actx:

            async def cancel_soon() -> None:
                await asyncio.sleep(0)
                actx.cancellation_token.cancel("again")

            entered.clear()
            task = asyncio.ensure_future(cancel_soon())
            with pytest.raises(ToolCancelledError, match="again"):
                await runtime.aexecute("echo", {"text": "x"}, actx)
            await task

    asyncio.run(main())


def test_a_plain_guardrail_returning_an_awaitable_is_cancelled_with_its_plan(
    runtime: ToolRuntime,
) -> None:
    """A plain function handing back a coroutine is awaited under the plan's token too."""
    entered = asyncio.Event()

    async def waits() -> GuardrailDecision:
        entered.set()
        await asyncio.Event().wait()
        return allow()  # pragma: no cover - cancelled while waiting

    def plain(call: GuardrailCall, ctx: ToolExecutionContext) -> Any:
        return waits()

    runtime.register(echo, input_guardrails=[plain])

    async def main() -> None:
        async with runtime.aplan() as ctx:
            task = asyncio.ensure_future(runtime.aexecute("echo", {"text": "x"}, ctx))
            await asyncio.wait_for(entered.wait(), WAIT)
            ctx.cancellation_token.cancel("enough")
            with pytest.raises(ToolCancelledError, match="enough"):
                await asyncio.wait_for(task, WAIT)

    asyncio.run(main())


@pytest.mark.parametrize("driver", ["execute", "aexecute"])
def test_a_guardrail_raising_keyboard_interrupt_is_traced_cancelled_and_obeyed(
    runtime: ToolRuntime, driver: str
) -> None:
    """KeyboardInterrupt from a guardrail propagates, and the call still has its trace."""
    traces = traced(runtime)

    def interrupted(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        raise KeyboardInterrupt

    runtime.register(echo, input_guardrails=[interrupted])
    with pytest.raises(KeyboardInterrupt):
        if driver == "execute":
            with runtime.plan() as ctx:
                runtime.execute("echo", {"text": "x"}, ctx)
        else:

            async def main() -> None:
                async with runtime.aplan() as actx:
                    await runtime.aexecute("echo", {"text": "x"}, actx)

            asyncio.run(main())
    assert [(trace.tool_name, trace.status) for trace in traces] == [("echo", "cancelled")]
    assert traces[0].error_type == "KeyboardInterrupt"


def test_a_guardrail_raising_cancellation_cancels_the_call(runtime: ToolRuntime) -> None:
    """ToolCancelledError from a guardrail is a cancellation, not a stop, in both drivers."""

    def cancelled(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        raise ToolCancelledError("guard gave up")

    runtime.register(echo, input_guardrails=[cancelled])
    with runtime.plan() as ctx, pytest.raises(ToolCancelledError):
        runtime.execute("echo", {"text": "x"}, ctx)

    async def main() -> None:
        async with runtime.aplan() as actx:
            await runtime.aexecute("echo", {"text": "x"}, actx)

    with pytest.raises(ToolCancelledError):
        asyncio.run(main())


def test_a_caller_cancelled_during_an_async_guardrail_propagates(runtime: ToolRuntime) -> None:
    """Cancelling the awaiting task during a guardrail raises CancelledError, traced cancelled."""
    traces = traced(runtime)
    entered = asyncio.Event()

    async def slow(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        entered.set()
        await asyncio.Event().wait()
        return allow()  # pragma: no cover - cancelled while waiting

    runtime.register(echo, input_guardrails=[slow])

    async def main() -> None:
        async with runtime.aplan() as ctx:
            task = asyncio.ensure_future(runtime.aexecute("echo", {"text": "x"}, ctx))
            await asyncio.wait_for(entered.wait(), WAIT)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    assert traces[-1].status == "cancelled"


def test_a_resumed_call_is_guarded_again(runtime: ToolRuntime) -> None:
    """A deferred call's input guardrails run again when it is resumed."""
    count: list[int] = []

    def counting(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        count.append(1)
        return allow()

    runtime.register(wrap(echo.fn, name="send", description="Send."), input_guardrails=[counting])
    with runtime.plan(approver=lambda request: ApprovalDecision.defer()) as ctx:
        pending = runtime.execute("send", {"text": "x"}, ctx).pending
        assert pending is not None
        result = runtime.resume(pending, ApprovalDecision.approve(), ctx)
    assert result.output == "x" and len(count) == 2


def test_tool_and_wrap_refuse_guardrails_that_are_not_a_list_of_callables() -> None:
    """A bad guardrail option fails where the tool is defined, with ToolDefinitionError."""
    with pytest.raises(ToolDefinitionError, match=r"wrap .* in \[\.\.\.\]"):
        tool(writes=False, input_guardrails=allow_all)(echo.fn)  # type: ignore[call-overload]
    with pytest.raises(ToolDefinitionError, match="not callable"):
        wrap(echo.fn, output_guardrails=["nope"])  # type: ignore[list-item]


def test_register_and_the_runtime_refuse_guardrails_that_are_not_callables(
    runtime: ToolRuntime,
) -> None:
    """register, register_source and ToolRuntime raise TypeError for a bad guardrail list."""
    with pytest.raises(TypeError, match="not callable"):
        runtime.register(echo, input_guardrails=[42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"in \[\.\.\.\]"):
        ToolRuntime(output_guardrails=allow_all)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a list of guardrails, got int"):
        runtime.register(echo, output_guardrails=7)  # type: ignore[arg-type]

    class Odd(FakeTool):
        input_guardrails = "nope"

    with pytest.raises(TypeError, match="the input_guardrails of 'odd'"):
        runtime.register(Odd(name="odd"))
    assert runtime.descriptors() == ()


def test_the_decision_helpers_themselves_are_refused_as_guardrails(
    runtime: ToolRuntime,
) -> None:
    """allow, reject or stop given in place of a guardrail fails where it is given."""
    hint = r"pass a function of \(call, ctx\) that returns allow\(\)"
    with pytest.raises(TypeError, match=rf"input_guardrails holds allow is .*{hint}"):
        ToolRuntime(input_guardrails=[allow])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=rf"output_guardrails holds reject is .*{hint}"):
        runtime.register(echo, output_guardrails=[reject])  # type: ignore[list-item]
    with pytest.raises(ToolDefinitionError, match=rf"of tool 'echo' holds stop is .*{hint}"):
        wrap(echo.fn, name="echo", input_guardrails=[stop])  # type: ignore[list-item]
    assert runtime.descriptors() == ()


def test_reject_and_stop_need_a_message_string() -> None:
    """The reject and stop helpers refuse a message that is not text."""
    with pytest.raises(TypeError, match="reject"):
        reject(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="stop"):
        stop(3)  # type: ignore[arg-type]
    assert allow() is allow() and allow().outcome == "allow"
    with pytest.raises(ValueError, match="'maybe'"):
        GuardrailDecision("maybe")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        GuardrailDecision("reject", 5)  # type: ignore[arg-type]


def test_an_unguarded_tool_has_no_guard_chain(runtime: ToolRuntime) -> None:
    """A tool without any guardrail costs the call one attribute check: its chain is None."""
    runtime.register(echo)
    assert runtime._tools.entries["echo"].guards is None


def _answering(decision: GuardrailDecision) -> Any:
    """A guardrail that always gives ``decision``."""
    return lambda call, ctx: decision


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["allow", "reject", "stop"]), min_size=1, max_size=5),
    st.booleans(),
)
def test_the_first_non_allow_decision_decides_the_call(
    outcomes: list[str], output_stage: bool
) -> None:
    """Whatever the decisions, the call ends as the first one that is not allow says."""
    decisions = {"allow": allow(), "reject": reject("r"), "stop": stop("s")}
    guards = [_answering(decisions[outcome]) for outcome in outcomes]
    decisive = next((o for o in outcomes if o != "allow"), "allow")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        if output_stage:
            runtime.register(echo, output_guardrails=guards)
        else:
            runtime.register(echo, input_guardrails=guards)
        with runtime.plan() as ctx:
            if decisive == "stop":
                with pytest.raises(GuardrailTripped):
                    runtime.execute("echo", {"text": "x"}, ctx)
                return
            result = runtime.execute("echo", {"text": "x"}, ctx)
    assert result.success is (decisive == "allow")
    assert result.trace is not None
    recorded = [g.outcome for g in result.trace.guardrails]
    assert recorded == outcomes[: len(recorded)] and recorded[-1] == decisive


def test_each_decision_is_an_event_on_the_calls_span() -> None:
    """With OpenTelemetry, the span has one event per decision and lists them as an attribute."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolcycle.otel import OpenTelemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with ToolRuntime(
            tracer=NullTracer(), instrumentation=OpenTelemetry(tracer_provider=provider)
        ) as runtime:
            runtime.register(echo, input_guardrails=[allow_all, no_rm])
            with runtime.plan() as ctx:
                runtime.execute("echo", {"text": "rm"}, ctx)
    finally:
        provider.shutdown()
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["toolcycle.status"] == "rejected"
    assert list(span.attributes["toolcycle.guardrails"]) == [  # type: ignore[arg-type]
        "input:allow_all:allow",
        "input:no_rm:reject",
    ]
    events = [dict(event.attributes or {}) for event in span.events]
    assert [e["toolcycle.guardrail.outcome"] for e in events] == ["allow", "reject"]
    assert events[1]["toolcycle.guardrail.message"] == "rm is not allowed here"
    assert "toolcycle.guardrail.message" not in events[0]


def test_a_cache_hit_still_passes_the_input_and_output_guardrails() -> None:
    """A cached result is answered only if the guardrails allow it now, in either stage."""
    closed = {"input": False, "output": False}

    def gate(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject(f"{call.stage} closed") if closed[call.stage] else allow()

    runs: list[str] = []

    @tool(writes=False, cache=CachePolicy(ttl=60), input_guardrails=[gate])
    def look(text: str) -> str:
        """Look something up."""
        runs.append(text)
        return text.upper()

    with ToolRuntime(output_guardrails=[gate]) as runtime:
        runtime.register(look)
        with runtime.plan() as ctx:
            first = runtime.execute("look", {"text": "a"}, ctx)
            hit = runtime.execute("look", {"text": "a"}, ctx)
            closed["output"] = True
            out_closed = runtime.execute("look", {"text": "a"}, ctx)
            closed["input"] = True
            in_closed = runtime.execute("look", {"text": "a"}, ctx)
    assert runs == ["a"]
    assert first.output == hit.output == "A"
    assert hit.trace is not None and hit.trace.cache_hit
    assert not out_closed.success and out_closed.error == "output closed"
    assert not in_closed.success and in_closed.error == "input closed"


async def test_an_awaited_cache_hit_still_passes_the_output_guardrails() -> None:
    """From aexecute too, the output guardrails judge a cached result before it is answered."""
    closed = False

    async def gate(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject("closed") if closed else allow()

    @tool(writes=False, cache=CachePolicy(ttl=60), output_guardrails=[gate])
    async def look(text: str) -> str:
        """Look something up."""
        return text.upper()

    with ToolRuntime() as runtime:
        runtime.register(look)
        async with runtime.aplan() as ctx:
            hit = [await runtime.aexecute("look", {"text": "a"}, ctx) for _ in range(2)][-1]
            closed = True
            refused = await runtime.aexecute("look", {"text": "a"}, ctx)
    assert hit.trace is not None and hit.trace.cache_hit and hit.output == "A"
    assert not refused.success and refused.error == "closed"


def test_a_cache_hit_turned_away_by_an_output_guardrail_is_traced_as_a_hit() -> None:
    """A rejected or stopped hit ran no tool: its trace says cache_hit, through both drivers."""
    verdict = {"now": "allow"}

    def gate(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        outcome = verdict["now"]
        return allow() if outcome == "allow" else reject("no") if outcome == "reject" else stop("x")

    runs: list[str] = []

    @tool(writes=False, cache=CachePolicy(ttl=60), output_guardrails=[gate])
    def look(text: str) -> str:
        """Look something up."""
        runs.append(text)
        return text.upper()

    async def awaited(runtime: ToolRuntime, ctx: ToolExecutionContext) -> ToolResult:
        return await runtime.aexecute("look", {"text": "a"}, ctx)

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(look)
        traces = traced(runtime)
        with runtime.plan() as ctx:
            runtime.execute("look", {"text": "a"}, ctx)
            verdict["now"] = "reject"
            rejected = runtime.execute("look", {"text": "a"}, ctx)
            awaited_rejected = asyncio.run(awaited(runtime, ctx))
            verdict["now"] = "stop"
            with pytest.raises(GuardrailTripped):
                runtime.execute("look", {"text": "a"}, ctx)
            with pytest.raises(GuardrailTripped):
                asyncio.run(awaited(runtime, ctx))
    assert runs == ["a"]
    assert not rejected.success and not awaited_rejected.success
    assert [t.status for t in traces] == ["ok", "rejected", "rejected", "stopped", "stopped"]
    assert [t.cache_hit for t in traces] == [False, True, True, True, True]


def test_a_cache_hits_output_guardrails_judge_what_the_model_will_be_shown() -> None:
    """A host editing the first result's output changes neither a hit nor what guards judge."""
    blocked: set[str] = set()

    def policy(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        return reject("blocked") if call.output["body"] in blocked else allow()

    @tool(writes=False, cache=CachePolicy(ttl=60), output_guardrails=[policy])
    def read(name: str) -> dict[str, str]:
        """Read a note."""
        return {"body": "launch codes"}

    async def awaited(runtime: ToolRuntime, ctx: ToolExecutionContext) -> ToolResult:
        return await runtime.aexecute("read", {"name": "a"}, ctx)

    with ToolRuntime() as runtime:
        runtime.register(read)
        with runtime.plan() as ctx:
            first = runtime.execute("read", {"name": "a"}, ctx)
            first.output["body"] = "[hidden]"  # the host scrubs its own copy in place
            blocked.add("launch codes")
            hit = runtime.execute("read", {"name": "a"}, ctx)
            awaited_hit = asyncio.run(awaited(runtime, ctx))
    for result in (hit, awaited_hit):
        assert not result.success and result.error == "blocked"


def test_an_output_guardrail_sees_a_rich_returns_value_and_its_content_parts() -> None:
    """A ToolReturn is judged by its value and the parts the model would see, not skipped."""
    seen: list[tuple[object, tuple[object, ...]]] = []

    def no_secret_text(call: GuardrailCall, ctx: ToolExecutionContext) -> GuardrailDecision:
        seen.append((call.output, call.content))
        texts = [part.text for part in call.content if isinstance(part, Text)]
        return reject("a secret in the content") if any("secret" in t for t in texts) else allow()

    @tool(writes=False, output_guardrails=[no_secret_text])
    def report(word: str) -> ToolReturn[int]:
        """Report on a word."""
        return ToolReturn(value=len(word), content=[Text(f"the word is {word}")])

    with ToolRuntime() as runtime:
        runtime.register(report)
        with runtime.plan() as ctx:
            shown = runtime.execute("report", {"word": "open"}, ctx)
            hidden = runtime.execute("report", {"word": "secret"}, ctx)
    assert shown.success and shown.output == 4 and shown.content == (Text("the word is open"),)
    assert not hidden.success and hidden.error == "a secret in the content"
    assert seen[0] == (4, (Text("the word is open"),))
