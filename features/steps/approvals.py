"""Steps for approvals: asking, denying, deferring and resuming one exact call."""

from __future__ import annotations

from typing import Any

from behave import given, then, when

import toolcycle
from toolcycle.approvals import ApprovalDecision


def _runtime(context: Any, answer: Any) -> None:
    context.sent = []
    context.asked = []

    @toolcycle.tool
    def send(to: str, text: str) -> str:
        """Send a message."""
        context.sent.append((to, text))
        return f"sent to {to}"

    @toolcycle.tool(writes=False)
    def lookup(topic: str) -> str:
        """Look a topic up."""
        return f"all about {topic}"

    def approver(request: toolcycle.ApprovalRequest) -> Any:
        context.asked.append(request.tool_name)
        return answer

    context.runtime.register(send)
    context.runtime.register(lookup)
    context.plan = context.runtime.new_context(approver=approver)
    context.results = []


@given("an approval plan whose approver approves everything")
def approves(context: Any) -> None:
    _runtime(context, ApprovalDecision.approve())


@given('an approval plan whose approver denies with "{reason}"')
def denies(context: Any, reason: str) -> None:
    _runtime(context, ApprovalDecision.deny(reason))


@given("an approval plan whose approver defers every call")
def defers(context: Any) -> None:
    _runtime(context, ApprovalDecision.defer("a person decides"))


@when('the plan looks up "{topic}" and sends "{text}" to "{to}"')
def look_and_send(context: Any, topic: str, text: str, to: str) -> None:
    context.runtime.execute("lookup", {"topic": topic}, context.plan)
    send_it(context, text, to)


@when('the plan sends "{text}" to "{to}"')
def send_it(context: Any, text: str, to: str) -> None:
    context.results.append(context.runtime.execute("send", {"to": to, "text": text}, context.plan))


@then('the approver was asked about "{name}" only')
def asked_only(context: Any, name: str) -> None:
    assert context.asked == [name], context.asked


@then("the trace of the send says it was approved")
def approved_trace(context: Any) -> None:
    trace = context.results[-1].trace
    assert trace.approval is not None and trace.approval.outcome == "approved", trace


@then('the send failed with "{reason}"')
def send_failed(context: Any, reason: str) -> None:
    result = context.results[-1]
    assert not result.success and result.error_type == "ApprovalDenied", result
    assert reason in result.error, result.error
    assert result.trace.status == "denied"


@then("nothing was sent")
def nothing_sent(context: Any) -> None:
    assert context.sent == [], context.sent


@when("the pending call is stored as JSON")
def store(context: Any) -> None:
    pending = context.results[-1].pending
    assert pending is not None, context.results[-1]
    context.stored = pending.model_dump_json()
    context.fingerprint = pending.fingerprint


@when("a new plan resumes the stored call with an approval bound to its fingerprint")
def resume_stored(context: Any) -> None:
    context.runtime.end_plan(context.plan)
    later = context.runtime.new_context()
    decision = ApprovalDecision.approve(fingerprint=context.fingerprint)
    context.resumed = context.runtime.resume(context.stored, decision, later)
    context.later = later


@then('"{text}" was sent to "{to}" once')
def sent_once(context: Any, text: str, to: str) -> None:
    assert context.sent == [(to, text)], context.sent
    assert context.resumed.trace.approval.resumed


@then("resuming the stored call again is refused as resumed before")
def refused_again(context: Any) -> None:
    try:
        context.runtime.resume(context.stored, True, context.later)
    except toolcycle.ToolApprovalError as exc:
        assert "resumed before" in str(exc), exc
    else:
        raise AssertionError("a second resume ran the call")
    assert len(context.sent) == 1


@when("a new plan resumes the second call with the approval of the first")
def resume_with_other(context: Any) -> None:
    first, second = (result.pending for result in context.results)
    later = context.runtime.new_context()
    decision = ApprovalDecision.approve(fingerprint=first.fingerprint)
    context.error = None
    try:
        context.runtime.resume(second, decision, later)
    except toolcycle.ToolApprovalError as exc:
        context.error = exc


@then("the resume is refused as bound to another call")
def refused_other(context: Any) -> None:
    assert context.error is not None and "one call only" in str(context.error), context.error
