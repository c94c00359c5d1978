"""Steps for model retries and the attempts of a RetryPolicy.

No ``from __future__ import annotations`` here: behave runs step files without
registering them as modules, so pydantic could not resolve string annotations.
"""

import json
from typing import Any

from behave import given, then, when

from toolcycle import (
    ModelRetry,
    RetryPolicy,
    ToolCancelledError,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolFailed,
    ToolRegistrationError,
    tool,
)


class _Flaky:
    """An idempotent tool that raises ConnectionError ``failures`` times, then returns."""

    def __init__(self, failures: int, cancel: bool = False) -> None:
        self.failures = failures
        self.cancel = cancel
        self.runs = 0

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="flaky",
            description="Fetch over a flaky network.",
            capability=ToolCapability(writes=False, idempotent=True),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict, ctx: ToolExecutionContext) -> Any:
        self.runs += 1
        if self.runs <= self.failures:
            if self.cancel:
                ctx.cancellation_token.cancel("the user pressed stop")
            raise ConnectionError("connection reset")
        return "fetched"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@given("a plan for retries")
def step_plan(context: Any) -> None:
    context.retry_ctx = context.runtime.new_context("retries", read_only=True)


@given("a division tool that asks for another divisor than 0, allowing {limit:d} retry")
def step_divide(context: Any, limit: int) -> None:
    @tool(writes=False, max_retries=limit)
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        if b == 0:
            raise ModelRetry("b must not be 0; pick another divisor")
        return a / b

    context.runtime.register(divide)


@given('a tool that reports "{message}" with ToolFailed')
def step_reporting(context: Any, message: str) -> None:
    @tool(writes=False)
    def report() -> None:
        """Ask a backend that refuses."""
        raise ToolFailed(message)

    context.runtime.register(report)


@given(
    "an idempotent tool that drops its connection {failures:d} times, with {attempts:d} attempts"
)
def step_flaky(context: Any, failures: int, attempts: int) -> None:
    context.flaky = _Flaky(failures)
    policy = RetryPolicy(attempts=attempts, backoff=0, jitter=0)
    context.runtime.register(context.flaky, retry=policy)


@given(
    "an idempotent tool that drops its connection and cancels its plan, "
    "waiting {seconds:d} seconds to retry"
)
def step_flaky_cancel(context: Any, seconds: int) -> None:
    context.flaky = _Flaky(1, cancel=True)
    policy = RetryPolicy(backoff=seconds, max_backoff=seconds, jitter=0)
    context.runtime.register(context.flaky, retry=policy)


class _Source:
    """A source of the given tools."""

    def __init__(self, *tools: Any) -> None:
        self._tools = list(tools)

    def tools(self) -> list:
        return list(self._tools)


@given(
    "a source of the flaky tool dropping its connection {failures:d} times and a division "
    "tool, registered with {attempts:d} attempts and {limit:d} retries"
)
def step_source(context: Any, failures: int, attempts: int, limit: int) -> None:
    @tool(writes=False)
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        if b == 0:
            raise ModelRetry("b must not be 0; pick another divisor")
        return a / b

    context.flaky = _Flaky(failures)
    policy = RetryPolicy(attempts=attempts, backoff=0, jitter=0)
    source = _Source(context.flaky, divide)
    context.runtime.register_source(source, retry=policy, max_retries=limit)


def _model_call(context: Any, name: str, arguments: dict) -> Any:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return context.runtime.call(call, context.retry_ctx)


@when("the model divides {a:d} by {b:d}")
def step_model_divides(context: Any, a: int, b: int) -> None:
    context.result = _model_call(context, "divide", {"a": a, "b": b})


@when('the model divides "{a}" by {b:d}')
def step_model_divides_text(context: Any, a: str, b: int) -> None:
    context.result = _model_call(context, "divide", {"a": a, "b": b})


@when("the model calls the reporting tool twice")
def step_report_twice(context: Any) -> None:
    context.results = [_model_call(context, "report", {}) for _ in range(2)]


@when("the host runs the flaky tool")
def step_host_runs(context: Any) -> None:
    try:
        context.result = context.runtime.execute("flaky", {}, context.retry_ctx)
    except ToolCancelledError as error:
        context.error = error


@when("a tool that is not idempotent is registered with a retry policy")
def step_register_not_idempotent(context: Any) -> None:
    @tool(writes=False)
    def fetch() -> str:
        """Fetch something."""
        return "page"

    try:
        context.runtime.register(fetch, retry=RetryPolicy())
    except ToolRegistrationError as error:
        context.error = error


@then("the answer is a retryable failure with {left:d} retry left")
def step_retryable(context: Any, left: int) -> None:
    result = context.result
    assert not result.success and result.retryable, result
    assert result.retries_left == left, result.retries_left


@then("the answer is a failure the model may not retry")
def step_not_retryable(context: Any) -> None:
    result = context.result
    assert not result.success and not result.retryable and result.retries_left == 0, result


@then('the model reads "{text}" in the answer')
def step_reads(context: Any, text: str) -> None:
    content = context.result.to_message()["content"]
    assert text in content, content


@then("the answer is a success whose trace says it was retry {number:d}")
def step_success_retry(context: Any, number: int) -> None:
    assert context.result.success, context.result.error
    assert context.result.trace.retry == number, context.result.trace


@then('both answers fail with "{message}" and offer no retry')
def step_both_fail(context: Any, message: str) -> None:
    for result in context.results:
        assert result.error == message and result.error_type == "ToolFailed", result
        assert not result.retryable and result.retries_left is None


@then("the result succeeds after {count:d} attempts")
def step_succeeds_after(context: Any, count: int) -> None:
    assert context.result.success, context.result.error
    assert len(context.result.trace.attempts) == count == context.flaky.runs


@then('the trace lists the attempts "{kinds}"')
def step_attempt_kinds(context: Any, kinds: str) -> None:
    seen = [a.error_type or "ok" for a in context.result.trace.attempts]
    assert seen == kinds.split(", "), seen


@then('the result fails with "{kind}" after {count:d} attempts')
def step_fails_after(context: Any, kind: str, count: int) -> None:
    result = context.result
    assert not result.success and result.error_type == kind, result
    assert len(result.trace.attempts) == count == context.flaky.runs


@then("registration is refused because the tool is not idempotent")
def step_refused(context: Any) -> None:
    assert isinstance(context.error, ToolRegistrationError), context.error
    assert "is not idempotent" in str(context.error)


@then("the call was cancelled while it waited to retry")
def step_cancelled(context: Any) -> None:
    assert isinstance(context.error, ToolCancelledError), context.error
    assert "while it waited to retry: the user pressed stop" in str(context.error)
    assert context.flaky.runs == 1
