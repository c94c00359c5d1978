"""Approvals: who is asked, what each answer does, and resuming a deferred call exactly once."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import (
    ToolApprovalError,
    ToolCancelledError,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    FileApprovalLedger,
    MemoryApprovalLedger,
    fingerprint,
    needs_approval,
)
from toolcycle.testing import FakeTool

WAIT = 5.0

ran: list[dict[str, Any]] = []


@tool
def send(to: str, body: str = "", api_key: str = "") -> str:
    """Send a message (a tool that writes)."""
    ran.append({"to": to, "body": body})
    return f"sent to {to}"


@tool(writes=False)
def look(q: str) -> str:
    """Look something up (read-only)."""
    return q


@tool(writes=False, requires_approval=True)
def peek(q: str) -> str:
    """Read-only, but its author wants every call approved."""
    return q


@tool(requires_approval=False)
def log_line(text: str) -> str:
    """Writes, but its author says it needs no approval."""
    return text


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    ran.clear()


@pytest.fixture
def rt() -> Any:
    with ToolRuntime() as runtime:
        for each in (send, look, peek, log_line):
            runtime.register(each)
        yield runtime


class Approver:
    """A scripted approver that remembers every request."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        return self.answers.pop(0) if self.answers else True


# -- who is asked -----------------------------------------------------------------------


def test_by_default_calls_of_writing_tools_are_asked_and_read_only_ones_are_not(
    rt: ToolRuntime,
) -> None:
    """Rule 'writes': the approver sees send, not look; the approved call's trace says so."""
    approver = Approver()
    with rt.plan(approver=approver) as ctx:
        looked = rt.execute("look", {"q": "x"}, ctx)
        sent = rt.execute("send", {"to": "ann"}, ctx)
    assert [r.tool_name for r in approver.requests] == ["send"]
    assert looked.trace is not None and looked.trace.approval is None
    assert sent.success and sent.trace is not None and sent.trace.approval is not None
    assert sent.trace.approval.outcome == "approved"
    assert sent.trace.approval.fingerprint == fingerprint("send", {"to": "ann"})


def test_a_tools_own_flag_overrides_the_writes_rule(rt: ToolRuntime) -> None:
    """requires_approval=True asks for a read-only tool; False skips a writing one."""
    approver = Approver()
    with rt.plan(approver=approver) as ctx:
        rt.execute("peek", {"q": "x"}, ctx)
        rt.execute("log_line", {"text": "y"}, ctx)
    assert [r.tool_name for r in approver.requests] == ["peek"]


@pytest.mark.parametrize(
    ("rule", "asked"),
    [
        ("all", ["send", "look", "peek", "log_line"]),
        ("flagged", ["peek"]),
        (lambda descriptor: descriptor.name.startswith("l"), ["look", "log_line"]),
    ],
)
def test_a_plans_rule_selects_the_calls_that_are_asked(
    rt: ToolRuntime, rule: Any, asked: list[str]
) -> None:
    """'all', 'flagged' and a function of the descriptor each select their calls."""
    approver = Approver()
    with rt.plan(approver=approver, approval=rule) as ctx:
        for name, params in [
            ("send", {"to": "a"}),
            ("look", {"q": "b"}),
            ("peek", {"q": "c"}),
            ("log_line", {"text": "d"}),
        ]:
            assert rt.execute(name, params, ctx).success
    assert [r.tool_name for r in approver.requests] == asked


def test_needs_approval_honours_the_flag_except_under_a_function() -> None:
    """The named rules honour requires_approval; a function decides alone."""
    flagged = peek.discover()
    assert needs_approval(flagged, "flagged")
    assert needs_approval(flagged, "writes")
    assert not needs_approval(flagged, lambda _: False)
    assert not needs_approval(log_line.discover(), "writes")
    assert needs_approval(log_line.discover(), "all")


def test_without_an_approver_only_tools_that_demand_approval_are_refused(
    rt: ToolRuntime,
) -> None:
    """A plan with no approver runs writing tools as before but refuses flagged ones."""
    with rt.plan() as ctx:
        assert rt.execute("send", {"to": "a"}, ctx).success
        refused = rt.execute("peek", {"q": "x"}, ctx)
    assert not refused.success
    assert refused.error_type == "ApprovalDenied"
    assert "has no approver" in (refused.error or "")
    assert refused.trace is not None and refused.trace.status == "denied"


def test_a_rule_other_than_writes_without_an_approver_is_refused_at_plan_start(
    rt: ToolRuntime,
) -> None:
    """approval='all' with nobody to ask is a configuration error, said at once."""
    with pytest.raises(ValueError, match="needs an approver"):
        rt.new_context(approval="all")
    with pytest.raises(ValueError, match="approval must be"):
        ToolExecutionContext("p", approval="sometimes", approver=Approver())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="approver must be callable"):
        ToolExecutionContext("p", approver="yes")  # type: ignore[arg-type]


def _broken_rule(descriptor: Any) -> bool:
    raise KeyError("tier")


def _forgetful_rule(descriptor: Any) -> Any:
    """A rule whose author forgot to return its answer."""


async def _async_rule(descriptor: Any) -> bool:
    return False


@pytest.mark.parametrize(
    "rule", [_forgetful_rule, _async_rule, lambda descriptor: "no"], ids=["none", "async", "str"]
)
def test_an_approval_rule_that_answers_no_bool_stops_the_call_for_the_host(rule: Any) -> None:
    """Fail closed: None, a coroutine or a string is no answer, so nothing runs unasked."""
    import warnings

    fake = FakeTool("deploy", writes=True)
    approver = Approver()
    with ToolRuntime() as runtime:
        runtime.register(fake)
        with runtime.plan(approver=approver, approval=rule) as ctx, warnings.catch_warnings():
            warnings.simplefilter("error")  # an async rule's coroutine is closed, not left
            with pytest.raises(ToolApprovalError, match="must return a bool") as raised:
                runtime.execute("deploy", {}, ctx)
    assert isinstance(raised.value.__cause__, TypeError)
    assert approver.requests == []
    assert fake.stages() == ["discover"]  # nothing activated, nothing run


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "guarded"])
def test_an_approval_rule_that_raises_stops_every_call_for_the_host_with_a_trace(
    guarded: bool,
) -> None:
    """Fail closed, loudly: each entry point raises ToolApprovalError with one error trace."""
    from toolcycle.guardrails import allow
    from toolcycle.testing import capture_traces

    fake = FakeTool("deploy", writes=True)
    guards = [lambda call, ctx: allow()] if guarded else None
    approver = Approver()
    with ToolRuntime(input_guardrails=guards) as runtime:
        runtime.register(fake)
        with capture_traces(runtime) as traces:
            with runtime.plan(approver=approver, approval=_broken_rule) as ctx:
                with pytest.raises(ToolApprovalError, match="approval rule") as sync:
                    runtime.execute("deploy", {}, ctx)
                with pytest.raises(ToolApprovalError, match="KeyError"):
                    runtime.call({"id": "c1", "name": "deploy", "arguments": {}}, ctx)

                async def main() -> None:
                    with pytest.raises(ToolApprovalError, match="approval rule"):
                        await runtime.aexecute("deploy", {}, ctx)

                asyncio.run(main())
    assert isinstance(sync.value.__cause__, KeyError)
    assert [t.status for t in traces] == ["error", "error", "error"]
    assert all("KeyError" in (t.error or "") for t in traces)
    assert approver.requests == []
    assert fake.stages() == ["discover"]  # nothing activated, nothing run


def _look_up(q: str) -> str:
    """Look something up (read-only, so that its results may be cached)."""
    return q


def _kinds_of_tool(after_approval: bool) -> ToolRuntime:
    """A runtime with the same read-only tool as each kind the pipeline tells apart."""
    from toolcycle import CachePolicy, wrap
    from toolcycle.guardrails import allow

    runtime = ToolRuntime(guardrails_after_approval=after_approval)
    runtime.register(wrap(_look_up, name="plain", writes=False))
    runtime.register(wrap(_look_up, name="cached", writes=False), cache=CachePolicy(ttl=60))
    runtime.register(
        wrap(_look_up, name="guarded", writes=False),
        input_guardrails=[lambda call, ctx: allow()],
    )
    return runtime


def _call_once(runtime: ToolRuntime, way: str, name: str, ctx: ToolExecutionContext) -> Any:
    """One call of ``name`` with {"q": "x"}, made the given way; its result."""
    model_call = {"id": "c1", "name": name, "arguments": {"q": "x"}}
    if way == "execute":
        return runtime.execute(name, {"q": "x"}, ctx)
    if way == "call":
        return runtime.call(model_call, ctx)
    if way == "call_many":
        return runtime.call_many([model_call], ctx)[0]

    async def main() -> Any:
        if way == "aexecute":
            return await runtime.aexecute(name, {"q": "x"}, ctx)
        if way == "acall":
            return await runtime.acall(model_call, ctx)
        return (await runtime.acall_many([model_call], ctx))[0]

    return asyncio.run(main())


@pytest.mark.parametrize("way", ["execute", "aexecute", "call", "acall", "call_many", "acall_many"])
@pytest.mark.parametrize(
    ("name", "after_approval"),
    [("plain", False), ("cached", False), ("guarded", False), ("guarded", True)],
    ids=["plain", "cached", "guarded", "guarded-after-approval"],
)
def test_a_plans_approval_rule_is_asked_once_per_call(
    way: str, name: str, after_approval: bool
) -> None:
    """Every entry point asks the rule once per call, and acts on that one answer.

    The rule says yes on its first question and no on the next: asked twice about
    one call, it would have let the call skip its approver.
    """
    asked: list[str] = []

    def rule(descriptor: Any) -> bool:
        asked.append(descriptor.name)
        return len(asked) % 2 == 1

    approver = Approver()
    with _kinds_of_tool(after_approval) as runtime:
        with runtime.plan(approver=approver, approval=rule) as ctx:
            result = _call_once(runtime, way, name, ctx)
    assert result.success and result.output == "x"
    assert asked == [name]
    assert [r.tool_name for r in approver.requests] == [name]


# -- what each answer does --------------------------------------------------------------


def test_a_denied_call_fails_with_the_reason_and_starts_nothing() -> None:
    """Denial: a failed result naming the reason; the tool is neither activated nor run."""
    fake = FakeTool("deploy", writes=True)
    with ToolRuntime() as runtime:
        runtime.register(fake)
        approver = Approver(ApprovalDecision.deny("deploys are frozen today"))
        with runtime.plan(approver=approver) as ctx:
            result = runtime.execute("deploy", {}, ctx)
    assert not result.success
    assert result.error_type == "ApprovalDenied"
    assert "deploys are frozen today" in (result.error or "")
    assert result.trace is not None and result.trace.status == "denied"
    assert result.trace.approval is not None and result.trace.approval.outcome == "denied"
    assert result.trace.approval.reason == "deploys are frozen today"
    assert fake.stages() == ["discover"]


def test_false_denies_and_true_approves(rt: ToolRuntime) -> None:
    """A bool is a decision: False denies with a generic reason."""
    with rt.plan(approver=Approver(False, True)) as ctx:
        denied = rt.execute("send", {"to": "a"}, ctx)
        approved = rt.execute("send", {"to": "b"}, ctx)
    assert "the approver said no" in (denied.error or "")
    assert approved.success
    assert ran == [{"to": "b", "body": ""}]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("yes", "returned str, not an ApprovalDecision"),
        (ApprovalDecision.approve(fingerprint="sha256:other"), "bound to another call"),
    ],
)
def test_an_unclear_answer_fails_closed(rt: ToolRuntime, answer: Any, message: str) -> None:
    """An answer that is not a decision, or one bound to another call, denies the call."""
    with rt.plan(approver=Approver(answer)) as ctx:
        result = rt.execute("send", {"to": "a"}, ctx)
    assert result.error_type == "ApprovalDenied" and message in (result.error or "")
    assert ran == []


def test_an_approver_that_raises_denies_the_call_and_is_logged(
    rt: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """Fail closed: an exception in the approver is a denial naming it."""

    def broken(request: ApprovalRequest) -> bool:
        raise ConnectionError("review service down")

    with rt.plan(approver=broken) as ctx:
        result = rt.execute("send", {"to": "a"}, ctx)
    assert result.error_type == "ApprovalDenied"
    assert "ConnectionError: review service down" in (result.error or "")
    assert ran == []
    assert any(r.getMessage() == "tool.approver_failed" for r in caplog.records)


def test_a_bound_decision_approves_its_own_call(rt: ToolRuntime) -> None:
    """A decision carrying the request's own fingerprint approves it."""

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.approve(reason="looks fine", fingerprint=request.fingerprint)

    with rt.plan(approver=approver) as ctx:
        result = rt.execute("send", {"to": "a"}, ctx)
    assert result.success
    assert result.trace is not None and result.trace.approval is not None
    assert result.trace.approval.reason == "looks fine"


def test_the_approver_sees_the_arguments_and_a_redacted_copy_to_show(rt: ToolRuntime) -> None:
    """Request.arguments are the real ones; display_arguments mask secrets."""
    approver = Approver()
    with rt.plan(approver=approver) as ctx:
        rt.execute("send", {"to": "a", "api_key": "sk-live-123"}, ctx)
    (request,) = approver.requests
    assert request.arguments["api_key"] == "sk-live-123"
    assert request.display_arguments["api_key"] == "[redacted]"
    assert "sk-live-123" not in repr(request)
    assert request.plan_id == ctx.plan_id and request.tool_call_id is None


def test_a_denial_reason_that_quotes_a_secret_is_redacted(rt: ToolRuntime) -> None:
    """An approver's reason goes through the same redaction as every error."""

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.deny(f"key {request.arguments['api_key']} is revoked")

    with rt.plan(approver=approver) as ctx:
        result = rt.execute("send", {"to": "a", "api_key": "sk-live-999"}, ctx)
    assert "sk-live-999" not in (result.error or "")
    assert result.trace is not None and "sk-live-999" not in result.trace.model_dump_json()


def test_a_resumed_denial_reason_that_quotes_a_secret_is_redacted(rt: ToolRuntime) -> None:
    """A denial given at resume hides the recorded arguments' secrets as a direct one does."""
    with rt.plan(approver=lambda request: ApprovalDecision.defer()) as ctx:
        waiting = rt.execute("send", {"to": "a", "api_key": "sk-live-777"}, ctx)
    assert waiting.pending is not None
    with rt.plan() as later:
        result = rt.resume(waiting.pending, ApprovalDecision.deny("key sk-live-777 leaked"), later)
    assert result.error_type == "ApprovalDenied" and "[redacted]" in (result.error or "")
    assert "sk-live-777" not in (result.error or "")
    assert result.trace is not None and "sk-live-777" not in result.trace.model_dump_json()


def _resumed_into_a_failed_activation(resume: Callable[..., Any]) -> list[Any]:
    """The traces of an approved resume whose reason quotes a secret and whose tool won't start.

    The tool fails to activate, which is before the arguments are validated.
    """
    from toolcycle import ToolActivationError
    from toolcycle.testing import capture_traces

    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}}
    deploy = FakeTool(name="deploy", writes=True, input_schema=schema)
    with ToolRuntime() as runtime:
        runtime.register(deploy)
        with runtime.plan(approver=lambda request: ApprovalDecision.defer()) as ctx:
            waiting = runtime.execute("deploy", {"api_key": "sk-live-555"}, ctx)
        assert waiting.pending is not None
        deploy.activate_error = ConnectionError("the backend is down")
        approve = ApprovalDecision.approve(reason="key sk-live-555 is fine")
        with capture_traces(runtime) as traces, runtime.plan() as later:
            with pytest.raises(ToolActivationError):
                resume(runtime, waiting.pending, approve, later)
    return traces


def test_an_approval_reason_is_redacted_when_the_resumed_call_fails_to_activate() -> None:
    """The reason given with a resume hides the arguments' secrets however early the call fails."""
    traces = _resumed_into_a_failed_activation(ToolRuntime.resume)
    assert [trace.status for trace in traces] == ["error"]
    assert traces[0].approval is not None and "[redacted]" in (traces[0].approval.reason or "")
    assert "sk-live-555" not in traces[0].model_dump_json()


def test_an_approval_reason_is_redacted_when_an_aresumed_call_fails_to_activate() -> None:
    """The async resume hides them as the sync one does."""

    def resume(runtime: ToolRuntime, *args: Any) -> Any:
        return asyncio.run(asyncio.wait_for(runtime.aresume(*args), WAIT))

    traces = _resumed_into_a_failed_activation(resume)
    assert [trace.status for trace in traces] == ["error"]
    assert "sk-live-555" not in traces[0].model_dump_json()


def test_invalid_arguments_are_refused_before_anyone_is_asked(rt: ToolRuntime) -> None:
    """Validation comes first: the approver never sees a call that could not run."""
    approver = Approver()
    with rt.plan(approver=approver) as ctx:
        result = rt.execute("send", {"to": 5}, ctx)
    assert result.trace is not None and result.trace.status == "invalid_input"
    assert approver.requests == []


def test_an_async_approver_is_awaited_from_sync_execute(rt: ToolRuntime) -> None:
    """A coroutine approver works from sync code (on the runtime's loop thread)."""

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(0)
        return ApprovalDecision.approve()

    with rt.plan(approver=approver) as ctx:
        assert rt.execute("send", {"to": "a"}, ctx).success


def test_a_sync_approver_does_not_block_the_event_loop(rt: ToolRuntime) -> None:
    """From aexecute, a blocking approver runs on a worker thread while the loop goes on."""
    loop_ran = threading.Event()

    def approver(request: ApprovalRequest) -> bool:
        # Returns only once the loop has run another task: impossible if it ran on the loop.
        return loop_ran.wait(WAIT)

    async def main() -> ToolResult:
        async with rt.aplan(approver=approver) as ctx:
            call = asyncio.ensure_future(rt.aexecute("send", {"to": "a"}, ctx))
            await asyncio.sleep(0)
            loop_ran.set()
            return await call

    assert asyncio.run(main()).success


def test_cancelling_the_plan_while_the_approver_waits_cancels_the_call(rt: ToolRuntime) -> None:
    """An awaited approver is cancelled with the plan; the call raises ToolCancelledError."""
    asking = asyncio.Event()

    async def approver(request: ApprovalRequest) -> bool:
        asking.set()
        await asyncio.sleep(WAIT)
        return True

    async def main() -> None:
        async with rt.aplan(approver=approver) as ctx:
            call = asyncio.ensure_future(rt.aexecute("send", {"to": "a"}, ctx))
            await asyncio.wait_for(asking.wait(), WAIT)
            ctx.cancellation_token.cancel("user left")
            with pytest.raises(ToolCancelledError):
                await asyncio.wait_for(call, WAIT)

    asyncio.run(main())
    assert ran == []


# -- deferring and resuming -------------------------------------------------------------


def _defer(rt: ToolRuntime, params: dict[str, Any]) -> ToolResult:
    with rt.plan(approver=Approver(ApprovalDecision.defer("a person must look"))) as ctx:
        return rt.execute("send", params, ctx)


def test_a_deferred_call_returns_a_pending_result_and_runs_nothing(rt: ToolRuntime) -> None:
    """Defer: a pending result with the record to resume; the trace says pending."""
    result = _defer(rt, {"to": "ann", "body": "hi"})
    assert not result.success and result.error_type == "ApprovalPending"
    assert "has not run yet" in (result.error or "")
    pending = result.pending
    assert pending is not None
    assert pending.arguments == {"to": "ann", "body": "hi"}
    assert pending.fingerprint == fingerprint("send", pending.arguments)
    assert pending.reason == "a person must look"
    assert result.trace is not None and result.trace.status == "pending"
    assert result.trace.approval is not None
    assert result.trace.approval.approval_id == pending.approval_id
    assert "ann" not in repr(pending)  # the arguments stay out of its repr
    assert ran == []


def test_resume_runs_the_recorded_arguments_once_in_a_new_plan(rt: ToolRuntime) -> None:
    """A stored pending record, approved later, runs exactly its arguments, once."""
    stored = _defer(rt, {"to": "ann", "body": "hi"}).pending
    assert stored is not None
    text = stored.model_dump_json()
    with rt.plan() as later:
        result = rt.resume(text, ApprovalDecision.approve(fingerprint=stored.fingerprint), later)
        assert result.success and result.output == "sent to ann"
        assert result.trace is not None and result.trace.approval is not None
        assert result.trace.approval.resumed and result.trace.approval.outcome == "approved"
        assert result.trace.plan_id == later.plan_id
        with pytest.raises(ToolApprovalError, match="resumed before"):
            rt.resume(text, True, later)
        with pytest.raises(ToolApprovalError, match="resumed before"):
            rt.resume(stored, False, later)
    assert ran == [{"to": "ann", "body": "hi"}]


def test_a_resume_after_the_input_schema_changed_says_so_instead_of_asking_for_a_retry(
    rt: ToolRuntime,
) -> None:
    """Arguments that no longer validate: the message names the change and a new call."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    @tool(name="send")
    def send_to_number(to: int) -> str:
        """Send a message to a number."""
        return f"sent to {to}"  # pragma: no cover - its arguments never validate

    rt.unregister("send")
    rt.register(send_to_number)
    with rt.plan() as later:
        result = rt.resume(pending, ApprovalDecision.approve(), later)
    assert result.error_type == "ToolSchemaValidationError"
    assert result.trace is not None and result.trace.status == "invalid_input"
    assert "changed after this call was deferred" in (result.error or "")
    assert "Make a new call of 'send'" in (result.error or "")
    assert "Correct the arguments" not in (result.error or "")
    assert not result.retryable and result.retries_left is None
    assert ran == []


def test_resume_with_a_denial_answers_without_running(rt: ToolRuntime) -> None:
    """A resumed denial is a failed result with a denied trace."""
    pending = _defer(rt, {"to": "bob"}).pending
    assert pending is not None
    with rt.plan() as later:
        result = rt.resume(pending, ApprovalDecision.deny("not today"), later)
    assert result.error_type == "ApprovalDenied" and "not today" in (result.error or "")
    assert result.trace is not None and result.trace.status == "denied"
    assert result.trace.approval is not None and result.trace.approval.resumed
    assert ran == []


def test_a_pending_record_changed_after_deferral_is_refused(rt: ToolRuntime) -> None:
    """Editing the stored arguments breaks the fingerprint: resume refuses, runs nothing."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    data = json.loads(pending.model_dump_json())
    data["arguments"]["to"] = "mallory"
    with rt.plan() as later, pytest.raises(ToolApprovalError, match="was changed"):
        rt.resume(data, True, later)
    assert ran == []


def test_a_pending_record_that_cannot_be_read_is_refused_without_quoting_it(
    rt: ToolRuntime,
) -> None:
    """A record cut short or mangled in storage: ToolApprovalError naming no value."""
    import traceback

    pending = _defer(rt, {"to": "ann", "api_key": "sk-live-4242"}).pending
    assert pending is not None
    text = pending.model_dump_json()
    cut = text[: text.index("sk-live-4242") + len("sk-live-4242")]
    mangled = {**pending.model_dump(), "arguments": "sk-live-4242"}
    for record, problem in [(cut, "Invalid JSON"), (mangled, "arguments:"), ("", "Invalid JSON")]:
        with (
            rt.plan() as later,
            pytest.raises(ToolApprovalError, match="cannot be read") as refused,
        ):
            rt.resume(record, True, later)
        assert problem in str(refused.value)
        shown = "".join(traceback.format_exception(refused.value))
        assert "sk-live-4242" not in shown
    assert ran == []


def test_an_approval_bound_to_one_call_cannot_resume_another(rt: ToolRuntime) -> None:
    """The reviewer's decision for call A, given with call B's record, is refused."""
    first = _defer(rt, {"to": "ann"}).pending
    second = _defer(rt, {"to": "bob"}).pending
    assert first is not None and second is not None
    approval_of_first = ApprovalDecision.approve(fingerprint=first.fingerprint)
    with rt.plan() as later:
        with pytest.raises(ToolApprovalError, match="one call only"):
            rt.resume(second, approval_of_first, later)
        assert rt.resume(second, True, later).output == "sent to bob"  # still resumable
    assert ran == [{"to": "bob", "body": ""}]


def test_resume_refuses_to_defer_again_and_bad_inputs(rt: ToolRuntime) -> None:
    """Defer is not an answer to a resume; wrong kinds are TypeErrors."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    with rt.plan() as later:
        with pytest.raises(ToolApprovalError, match="approves or denies"):
            rt.resume(pending, ApprovalDecision.defer(), later)
        with pytest.raises(TypeError, match="decision must be"):
            rt.resume(pending, "yes", later)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="pending must be"):
            rt.resume(42, True, later)  # type: ignore[arg-type]
        assert rt.resume(pending, True, later).success  # the refusals claimed nothing


def test_resume_refuses_a_plan_that_may_not_run_it_without_spending_the_approval(
    rt: ToolRuntime,
) -> None:
    """A write resumed in a read-only plan is refused there and stays resumable elsewhere."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    from toolcycle import ToolAccessDeniedError, ToolNotFoundError, ToolRuntimeError

    with rt.plan(read_only=True) as later, pytest.raises(ToolAccessDeniedError):
        rt.resume(pending, True, later)
    ended = rt.new_context()
    rt.end_plan(ended)
    with pytest.raises(ToolRuntimeError, match="has ended"):
        rt.resume(pending, True, ended)
    with rt.plan() as later, pytest.raises(TypeError, match="ctx must be"):
        rt.resume(pending, True, "not a context")  # type: ignore[arg-type]
    rt.unregister("send")
    with rt.plan() as later, pytest.raises(ToolNotFoundError):
        rt.resume(pending, True, later)
    rt.register(send)
    assert ran == []
    with rt.plan() as later:
        assert rt.resume(pending, True, later).output == "sent to ann"  # not spent above


def test_resume_refuses_bad_limits_without_spending_the_approval(rt: ToolRuntime) -> None:
    """A timeout that is not seconds is the host's mistake: the corrected resume still runs."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    with rt.plan() as later:
        with pytest.raises(ValueError, match="timeout must be"):
            rt.resume(pending, True, later, timeout=0)
        with pytest.raises(ValueError, match="idle_timeout must be"):
            rt.resume(pending, True, later, idle_timeout=math.nan)
        assert ran == []
        assert rt.resume(pending, True, later, timeout=WAIT).output == "sent to ann"


def test_resume_refuses_a_cancelled_plan_without_spending_the_approval(
    rt: ToolRuntime,
) -> None:
    """A plan cancelled before the resume raises ToolCancelledError; another plan may run it."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    with rt.plan() as cancelled:
        cancelled.cancellation_token.cancel("user left")
        with pytest.raises(ToolCancelledError, match="user left"):
            rt.resume(pending, True, cancelled)
    assert ran == []
    with rt.plan() as later:
        assert rt.resume(pending, True, later).output == "sent to ann"


def test_resume_refuses_a_second_context_of_an_open_plan_without_spending_the_approval(
    rt: ToolRuntime,
) -> None:
    """A context whose plan id another open context holds is refused; the right one runs it."""
    from toolcycle import ToolRuntimeError

    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    with rt.plan("shared") as first:
        with pytest.raises(ToolRuntimeError, match="already open"):
            rt.resume(pending, True, ToolExecutionContext("shared"))
        assert ran == []
        assert rt.resume(pending, True, first).output == "sent to ann"


def test_aresume_refuses_like_resume_without_spending_the_approval(rt: ToolRuntime) -> None:
    """The async twin checks the limits and the plan before the claim too."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    async def main() -> ToolResult:
        async with rt.aplan() as cancelled:
            cancelled.cancellation_token.cancel()
            with pytest.raises(ToolCancelledError):
                await rt.aresume(pending, True, cancelled)
        async with rt.aplan() as later:
            with pytest.raises(ValueError, match="timeout must be"):
                await rt.aresume(pending, True, later, timeout=-1)
            return await rt.aresume(pending, True, later)

    assert asyncio.run(main()).output == "sent to ann"
    assert ran == [{"to": "ann", "body": ""}]


class MeddlingLedger(MemoryApprovalLedger):
    """A ledger that runs ``meddle`` once, just before a claim: in a resume's window."""

    def __init__(self, meddle: Callable[[], object] | None = None) -> None:
        super().__init__()
        self.meddle = meddle

    def claim(self, approval_id: str) -> bool:
        meddle, self.meddle = self.meddle, None
        if meddle is not None:
            meddle()
        return super().claim(approval_id)


def _resume(runtime: ToolRuntime, pending: Any, ctx: Any, use_async: bool) -> ToolResult:
    if not use_async:
        return runtime.resume(pending, True, ctx)

    async def main() -> ToolResult:
        return await runtime.aresume(pending, True, ctx)

    return asyncio.run(main())


@pytest.mark.parametrize("use_async", [False, True], ids=["resume", "aresume"])
@pytest.mark.parametrize(
    ("window", "refusal"),
    [
        ("cancelled", ToolCancelledError),
        ("ended", ToolRuntimeError),
        ("taken", ToolRuntimeError),
        ("closed", ToolRuntimeError),
    ],
)
def test_a_plan_made_unusable_between_the_check_and_the_claim_leaves_the_call_resumable(
    rt: ToolRuntime, window: str, refusal: type[Exception], use_async: bool
) -> None:
    """The resume is checked again after its claim; refused then, it gives the claim back."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    ledger = MeddlingLedger()
    other = ToolRuntime(approval_ledger=ledger)
    other.register(send)
    ctx = ToolExecutionContext("p") if window == "taken" else other.new_context("p")
    ledger.meddle = {
        "cancelled": lambda: ctx.cancellation_token.cancel("user left"),
        "ended": lambda: other.end_plan(ctx),
        "taken": lambda: other.new_context("p"),  # another context opens plan "p"
        "closed": other.close,
    }[window]
    with pytest.raises(refusal):
        _resume(other, pending, ctx, use_async)
    assert ran == []
    with ToolRuntime(approval_ledger=ledger) as again:  # the same ledger, in a usable plan
        again.register(send)
        with again.plan() as later:
            assert _resume(again, pending, later, use_async).output == "sent to ann"
    other.close()
    assert ran == [{"to": "ann", "body": ""}]


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_ledger_forgets_a_released_claim(tmp_path: Path, kind: str) -> None:
    """release() lets the id be claimed again; releasing an id never claimed does nothing."""
    ledger = MemoryApprovalLedger() if kind == "memory" else FileApprovalLedger(tmp_path)
    assert ledger.claim("ab12")
    assert not ledger.claim("ab12")
    ledger.release("ab12")
    ledger.release("cd34")
    assert ledger.claim("ab12")
    assert ledger.claim("cd34")


def test_a_file_ledger_refuses_to_release_what_is_not_an_approval_id(tmp_path: Path) -> None:
    """An id that could name another file is refused, as claim refuses it."""
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an approval id"):
        FileApprovalLedger(tmp_path).release("notes.txt")
    assert (tmp_path / "notes.txt").exists()


class ClaimOnlyLedger:
    """A ledger of a third party: claims, and no release."""

    def __init__(self, meddle: Callable[[], object]) -> None:
        self.inner = MeddlingLedger(meddle)

    def claim(self, approval_id: str) -> bool:
        return self.inner.claim(approval_id)


class RefusingRelease(MeddlingLedger):
    """A ledger whose release fails (a shared folder gone read-only, say)."""

    def release(self, approval_id: str) -> None:
        raise PermissionError("read-only folder")


class ClaimRecorder:
    """A durable plan engine that runs each call as it comes and records claims (in name)."""

    def open(self, plan_id: str | None) -> str:
        return plan_id or "durable"

    def run(self, ctx: Any, tool_name: str, idempotent: bool, call: Any, interrupted: Any) -> Any:
        return call()

    async def arun(
        self, ctx: Any, tool_name: str, idempotent: bool, call: Any, interrupted: Any
    ) -> Any:
        return await call()

    def claim_once(self, ctx: Any, tool_name: str, claim: Callable[[], bool]) -> bool:
        return claim()


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("no release", "the ledger has no release method"),
        ("durable", "its durable plan recorded the claim"),
        ("release fails", "the ledger's release raised PermissionError: read-only folder"),
    ],
)
def test_a_claim_that_cannot_be_given_back_is_kept_and_logged(
    rt: ToolRuntime, caplog: pytest.LogCaptureFixture, case: str, reason: str
) -> None:
    """The refusal still reaches the caller; the call cannot be resumed again, and the log says why."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None
    holder: list[ToolExecutionContext] = []

    def cancel() -> None:
        holder[0].cancellation_token.cancel("user left")

    ledger: Any = {
        "no release": ClaimOnlyLedger(cancel),
        "durable": MeddlingLedger(cancel),
        "release fails": RefusingRelease(cancel),
    }[case]
    caplog.set_level("WARNING", logger="toolcycle.runtime")
    with ToolRuntime(approval_ledger=ledger) as other:
        other.register(send)
        durable = ClaimRecorder() if case == "durable" else None
        with other.plan(durable=durable) as ctx:
            holder.append(ctx)
            with pytest.raises(ToolCancelledError, match="user left"):
                other.resume(pending, True, ctx)
        with other.plan() as later, pytest.raises(ToolApprovalError, match="resumed before"):
            other.resume(pending, True, later)
    [record] = [r for r in caplog.records if r.getMessage() == "approval.claim_kept"]
    assert record.approval_id == pending.approval_id  # type: ignore[attr-defined]
    assert record.reason == reason  # type: ignore[attr-defined]
    assert ran == []


def test_a_call_from_a_model_keeps_its_tool_call_through_defer_and_resume(
    rt: ToolRuntime,
) -> None:
    """runtime.call: the pending record carries the model's call; the resumed result answers it."""
    openai_call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "send", "arguments": '{"to": "ann", "api_key": "sk-9"}'},
    }
    with rt.plan(approver=Approver(ApprovalDecision.defer())) as ctx:
        waiting = rt.call(openai_call, ctx)
    assert waiting.pending is not None and waiting.pending.call is not None
    assert waiting.pending.call.id == "call_7"
    assert waiting.pending.call.arguments["api_key"] == "[redacted]"
    assert waiting.to_message()["tool_call_id"] == "call_7"
    stored = waiting.pending.model_dump_json()
    with rt.plan() as later:
        done = rt.resume(stored, True, later)
    assert done.to_message() == {"role": "tool", "tool_call_id": "call_7", "content": "sent to ann"}


def test_a_batch_with_a_deferred_call_answers_every_call(rt: ToolRuntime) -> None:
    """call_many: one deferred call does not hold up or lose its siblings."""
    calls = [
        {"name": "look", "arguments": {"q": "a"}},
        {"name": "send", "arguments": {"to": "ann"}},
        {"name": "send", "arguments": {"to": "bob"}},
    ]

    def approver(request: ApprovalRequest) -> ApprovalDecision:
        if request.arguments["to"] == "bob":
            return ApprovalDecision.defer()
        return ApprovalDecision.approve()

    with rt.plan(approver=approver) as ctx:
        results = rt.call_many(calls, ctx)
    assert [r.success for r in results] == [True, True, False]
    assert results[2].pending is not None and results[2].call is not None


def test_aresume_runs_an_approved_call_from_async_code(rt: ToolRuntime) -> None:
    """The async twin resumes the same way."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    async def main() -> ToolResult:
        async with rt.aplan() as later:
            return await rt.aresume(pending, True, later)

    assert asyncio.run(main()).output == "sent to ann"


def test_a_denied_resume_from_async_code_answers_without_running(rt: ToolRuntime) -> None:
    """The async twin answers a denial without running the tool."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    async def main() -> ToolResult:
        async with rt.aplan() as later:
            return await rt.aresume(pending, False, later)

    assert asyncio.run(main()).error_type == "ApprovalDenied"
    assert ran == []


# -- across processes -------------------------------------------------------------------


def _resumed_by_four_threads(resume: Callable[[], Any]) -> list[Any]:
    """Run ``resume`` on four threads that start together: each one's output, or error name."""
    start = threading.Barrier(4, timeout=WAIT)
    results: list[Any] = []

    def run() -> None:
        start.wait()
        try:
            results.append(resume())
        except ToolApprovalError as exc:
            results.append(type(exc).__name__)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    return results


def test_two_runtimes_sharing_a_file_ledger_resume_a_call_once(
    tmp_path: Path, rt: ToolRuntime
) -> None:
    """Another process (here another runtime) sharing the ledger cannot run it again."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    def resume_in_own_runtime() -> Any:
        with ToolRuntime(approval_ledger=FileApprovalLedger(tmp_path)) as other:
            other.register(send)
            with other.plan() as ctx:
                return other.resume(pending, True, ctx).output

    results = _resumed_by_four_threads(resume_in_own_runtime)
    assert sorted(results) == ["ToolApprovalError"] * 3 + ["sent to ann"]
    assert len(ran) == 1


def test_first_resumes_racing_on_the_default_ledger_run_the_call_once(rt: ToolRuntime) -> None:
    """The default ledger is made by the first resume; racing first resumes share it."""
    pending = _defer(rt, {"to": "ann"}).pending
    assert pending is not None

    def resume() -> Any:
        with rt.plan() as ctx:
            return rt.resume(pending, True, ctx).output

    results = _resumed_by_four_threads(resume)
    assert sorted(results) == ["ToolApprovalError"] * 3 + ["sent to ann"]
    assert len(ran) == 1


def test_a_call_deferred_here_is_resumed_in_another_process(
    tmp_path: Path, rt: ToolRuntime
) -> None:
    """The pending JSON crosses a process boundary; the ledger stops a second run here."""
    pending = _defer(rt, {"to": "ann", "body": "from afar"}).pending
    assert pending is not None
    record = tmp_path / "pending.json"
    record.write_text(pending.model_dump_json())
    ledger = tmp_path / "ledger"
    script = f"""
import sys
from pathlib import Path
from toolcycle import ToolRuntime, tool
from toolcycle.approvals import FileApprovalLedger

@tool
def send(to: str, body: str = "", api_key: str = "") -> str:
    \"\"\"Send.\"\"\"
    return f"sent to {{to}}: {{body}}"

with ToolRuntime(approval_ledger=FileApprovalLedger({str(ledger)!r})) as runtime:
    runtime.register(send)
    with runtime.plan() as ctx:
        print(runtime.resume(Path({str(record)!r}).read_text(), True, ctx).output)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "sent to ann: from afar"
    with ToolRuntime(approval_ledger=FileApprovalLedger(ledger)) as here:
        here.register(send)
        with here.plan() as ctx, pytest.raises(ToolApprovalError, match="resumed before"):
            here.resume(record.read_text(), True, ctx)
    assert ran == []


def test_the_file_ledger_refuses_ids_it_did_not_make(tmp_path: Path) -> None:
    """Only runtime-made ids (hex and dashes) are accepted: no paths sneak in."""
    ledger = FileApprovalLedger(tmp_path / "claims")
    with pytest.raises(ValueError, match="not an approval id"):
        ledger.claim("../escape")
    with pytest.raises(ValueError, match="not an approval id"):
        ledger.claim("")
    assert ledger.claim("abc123") and not ledger.claim("abc123")


@pytest.mark.skipif(not hasattr(os, "O_DIRECTORY"), reason="no directory to sync on Windows")
def test_a_file_ledger_claim_is_synced_to_disk_before_it_is_granted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A granted claim survives a crash of the machine: its directory entry is flushed first."""
    ledger = FileApprovalLedger(tmp_path / "claims")
    synced: list[tuple[int, bool]] = []
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        claimed = (tmp_path / "claims" / "abc123").exists()
        synced.append((os.fstat(descriptor).st_ino, claimed))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    assert ledger.claim("abc123")
    assert synced == [((tmp_path / "claims").stat().st_ino, True)]
    assert not ledger.claim("abc123") and len(synced) == 1  # a refusal writes nothing


# -- fingerprints and the once-only property --------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_a_fingerprint_ignores_key_order_only(arguments: dict[str, Any]) -> None:
    """Equal arguments in any key order share a fingerprint; another tool's differs."""
    reordered = dict(reversed(list(arguments.items())))
    assert fingerprint("t", arguments) == fingerprint("t", reordered)
    assert fingerprint("t", arguments) != fingerprint("u", arguments)
    assert fingerprint("t", arguments) != fingerprint("t", {**arguments, "\x00extra": 1})


def _dumped_fingerprint(tool_name: str, arguments: Any) -> str:
    """The fingerprint as the canonical json.dumps form defines it."""
    text = json.dumps(
        [tool_name, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@given(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=3), inner, max_size=3)
            | st.dictionaries(st.integers(), inner, max_size=3)
        ),
        max_leaves=12,
    ),
)
def test_a_fingerprint_is_the_hash_of_the_canonical_json_dumps_text(
    tool_name: str, arguments: Any
) -> None:
    """Fingerprints of stored pending calls keep their value: the text is json.dumps's."""
    try:
        expected = _dumped_fingerprint(tool_name, arguments)
    except UnicodeEncodeError:  # a lone surrogate: json.dumps's text is no UTF-8
        return
    assert fingerprint(tool_name, arguments) == expected


def test_a_fingerprint_of_hostile_arguments_is_computed_not_raised() -> None:
    """Any depth, an integer past the digit limit and a lone surrogate each get a fingerprint."""
    deep: Any = 1
    for _ in range(20_000):
        deep = [deep]
    big = 10**6000 + 7
    values = [deep, {"n": big}, {"n": big + 1}, {"k\ud800": "\udc00"}, {"k\ud800": "\udc01"}]
    prints = [fingerprint("t", value) for value in values]
    assert len(set(prints)) == len(prints)
    assert all(print_.startswith("sha256:") for print_ in prints)
    assert fingerprint("t", {"n": big}) == prints[1]


def test_a_fingerprint_refuses_what_is_not_json_data() -> None:
    """A set, or an object key json.dumps could not write, is a TypeError as before."""
    with pytest.raises(TypeError):
        fingerprint("t", {"s": {1, 2}})
    with pytest.raises(TypeError):
        fingerprint("t", {(1, 2): 1})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=12))
def test_no_sequence_of_resumes_runs_a_call_twice(attempts: list[tuple[int, bool]]) -> None:
    """Whatever order of approvals and denials arrives, each deferred call runs at most once."""
    runs: list[str] = []

    @tool
    def act(n: int) -> int:
        """Act."""
        runs.append(str(n))
        return n

    with ToolRuntime(approval_ledger=MemoryApprovalLedger()) as runtime:
        runtime.register(act)
        with runtime.plan(approver=lambda request: ApprovalDecision.defer()) as ctx:
            pending = [runtime.execute("act", {"n": n}, ctx).pending for n in range(3)]
        decided: dict[int, bool] = {}
        with runtime.plan() as later:
            for index, approve in attempts:
                record = pending[index]
                assert record is not None
                try:
                    runtime.resume(record, approve, later)
                except ToolApprovalError:
                    assert index in decided
                else:
                    assert index not in decided
                    decided[index] = approve
    assert sorted(runs) == sorted(str(i) for i, approve in decided.items() if approve)


# -- the async pipeline's refusals and cancellations --------------------------------------


def test_from_async_code_a_flagged_tool_without_an_approver_is_refused(rt: ToolRuntime) -> None:
    """From async code, a tool that demands approval is refused in a plan with nobody to ask."""

    async def main() -> ToolResult:
        async with rt.aplan() as ctx:
            return await rt.aexecute("peek", {"q": "x"}, ctx)

    result = asyncio.run(main())
    assert result.error_type == "ApprovalDenied" and "has no approver" in (result.error or "")


def test_from_async_code_an_approver_that_raises_denies_the_call(rt: ToolRuntime) -> None:
    """Fail closed in aexecute too."""

    async def broken(request: ApprovalRequest) -> bool:
        raise LookupError("no reviewer on duty")

    async def main() -> ToolResult:
        async with rt.aplan(approver=broken) as ctx:
            return await rt.aexecute("send", {"to": "a"}, ctx)

    result = asyncio.run(main())
    assert "LookupError: no reviewer on duty" in (result.error or "")
    assert ran == []


@pytest.mark.parametrize("use_async", [False, True])
def test_an_approver_that_finds_the_plan_cancelled_cancels_the_call(
    rt: ToolRuntime, use_async: bool
) -> None:
    """ToolCancelledError from the approver is a cancellation, not a denial."""

    def approver(request: ApprovalRequest) -> bool:
        raise ToolCancelledError("the reviewer closed the plan")

    traces: list[Any] = []
    rt.add_trace_listener(traces.append)
    if use_async:

        async def main() -> None:
            async with rt.aplan(approver=approver) as ctx:
                await rt.aexecute("send", {"to": "a"}, ctx)

        with pytest.raises(ToolCancelledError):
            asyncio.run(main())
    else:
        with rt.plan(approver=approver) as ctx, pytest.raises(ToolCancelledError):
            rt.execute("send", {"to": "a"}, ctx)
    assert [t.status for t in traces] == ["cancelled"]
    assert ran == []


def test_cancelling_the_task_that_awaits_the_approver_propagates(rt: ToolRuntime) -> None:
    """The caller cancelling aexecute while the approver waits gets CancelledError back."""
    asking = asyncio.Event()
    traces: list[Any] = []
    rt.add_trace_listener(traces.append)

    async def approver(request: ApprovalRequest) -> bool:
        asking.set()
        await asyncio.sleep(WAIT)
        return True

    async def main() -> None:
        async with rt.aplan(approver=approver) as ctx:
            call = asyncio.ensure_future(rt.aexecute("send", {"to": "a"}, ctx))
            await asyncio.wait_for(asking.wait(), WAIT)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert not ctx.cancellation_token.is_cancelled

    asyncio.run(main())
    assert [t.status for t in traces] == ["cancelled"]
    assert ran == []


async def test_a_sync_approver_left_running_by_a_cancelled_caller_holds_the_plan_end(
    draining: Callable[[str], bool],
) -> None:
    """Its thread runs on after the awaiting task is cancelled; the plan's end waits for it."""
    fake = FakeTool("deploy", writes=True)
    asking, release = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def approver(request: ApprovalRequest) -> bool:
        asking.set()
        release.wait(WAIT)
        seen.append(fake.stages())  # what had happened to the tool when it returned
        return True

    with ToolRuntime(abandon_timeout=WAIT) as runtime:
        runtime.register(fake)
        ctx = runtime.new_context("p", approver=approver)
        await runtime.aactivate("deploy", ctx)
        call = asyncio.ensure_future(runtime.aexecute("deploy", {}, ctx))
        assert await asyncio.to_thread(asking.wait, WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, WAIT)
        ender = asyncio.ensure_future(runtime.aend_plan(ctx))
        try:
            assert await asyncio.to_thread(draining, "p")  # it waits for the approver's call
            assert "deactivate" not in fake.stages()
        finally:
            release.set()
        assert await asyncio.wait_for(ender, WAIT) == []
    assert seen == [["discover", "activate"]]  # not deactivated under the approver
    assert fake.stages() == ["discover", "activate", "deactivate"]  # and the call never ran


def test_an_approver_failure_quoting_a_secret_is_logged_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-live-123456"

    def broken(request: ApprovalRequest) -> bool:
        raise ValueError(f"cannot check key {request.arguments['api_key']}")

    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}}
    caplog.set_level("WARNING", logger="toolcycle.runtime")
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="w", writes=True, input_schema=schema))
        with runtime.plan(approver=broken) as ctx:
            result = runtime.execute("w", {"api_key": secret}, ctx)
    assert result.error_type == "ApprovalDenied"
    [record] = [r for r in caplog.records if r.getMessage() == "tool.approver_failed"]
    assert record.error == "ValueError: cannot check key [redacted]"  # type: ignore[attr-defined]
    assert record.tool == "w"  # type: ignore[attr-defined]
    assert secret not in (result.error or "")


@pytest.mark.parametrize(
    "arguments",
    [{None: 1}, {True: 1, False: 2}, {1.5: "x", -0.5: "y"}, [math.inf, -math.inf, math.nan]],
)
def test_a_fingerprint_writes_keys_and_floats_as_json_dumps_does(arguments: Any) -> None:
    """Keys json.dumps converts to text, and the non-finite floats, give its text."""
    assert fingerprint("t", arguments) == _dumped_fingerprint("t", arguments)
