"""Model retries: ModelRetry and invalid inputs count against a tool's max_retries per plan."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import (
    ModelRetry,
    NullTracer,
    ToolCapability,
    ToolDefinitionError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolFailed,
    ToolResult,
    ToolRuntime,
    tool,
)


@tool(writes=False)
def divide(a: int, b: int) -> float:
    """Divide a by b; asks the model for another b when it is 0."""
    if b == 0:
        raise ModelRetry("b must not be 0; pick another divisor")
    return a / b


@tool(writes=False, max_retries=2)
def lookup(key: str) -> str:
    """Look a key up; only 'known' exists."""
    if key != "known":
        raise ModelRetry(f"no key {key!r}; the only key is 'known'")
    return "found"


@tool(writes=False)
def broken() -> None:
    """Report a failure on purpose."""
    raise ToolFailed("the backend says no")


def _call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def test_model_retry_gives_a_retryable_failure_that_says_what_to_fix(
    runtime: ToolRuntime,
) -> None:
    """The first ModelRetry of a tool (default max_retries=1) leaves one retry."""
    runtime.register(divide)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
    assert not result.success
    assert result.error_type == "ModelRetry"
    assert result.retryable and result.retries_left == 1
    assert result.error is not None
    assert result.error.startswith("b must not be 0; pick another divisor\n")
    assert "call 'divide' again (1 retry left)" in result.error
    assert result.trace is not None
    assert result.trace.retry == 0 and result.trace.error == result.error
    assert isinstance(result.exception, ModelRetry)
    assert result.exception.message == "b must not be 0; pick another divisor"


def test_past_the_limit_the_failure_is_not_retryable_and_says_so(runtime: ToolRuntime) -> None:
    """The second failure in a row with max_retries=1 reaches the limit."""
    runtime.register(divide)
    with runtime.plan(read_only=True) as ctx:
        runtime.execute("divide", {"a": 1, "b": 0}, ctx)
        result = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
        third = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
    assert not result.retryable and result.retries_left == 0
    assert result.error is not None
    assert "retry limit of tool 'divide' is reached (1 retry allowed)" in result.error
    assert result.trace is not None and result.trace.retry == 1
    assert third.trace is not None and third.trace.retry == 2 and not third.retryable


def test_an_invalid_input_counts_against_the_same_retries(runtime: ToolRuntime) -> None:
    """A schema failure and a ModelRetry of one tool share its count."""
    runtime.register(divide)
    with runtime.plan(read_only=True) as ctx:
        first = runtime.execute("divide", {"a": "one", "b": 2}, ctx)
        second = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
    assert first.trace is not None and first.trace.status == "invalid_input"
    assert first.retryable and first.retries_left == 1
    assert first.error is not None
    assert "Correct the arguments and call 'divide' again (1 retry left)." in first.error
    assert first.validation is not None
    assert not second.retryable and second.retries_left == 0


def test_a_call_that_returns_starts_the_count_anew_and_says_which_retry_it_was(
    runtime: ToolRuntime,
) -> None:
    """Consecutive failures count: a success resets them and its trace names its retry."""
    runtime.register(lookup)
    with runtime.plan(read_only=True) as ctx:
        runtime.execute("lookup", {"key": "a"}, ctx)
        runtime.execute("lookup", {"key": "b"}, ctx)
        found = runtime.execute("lookup", {"key": "known"}, ctx)
        again = runtime.execute("lookup", {"key": "c"}, ctx)
        plain = runtime.execute("lookup", {"key": "known"}, ctx)
    assert found.success and found.trace is not None and found.trace.retry == 2
    assert again.retryable and again.retries_left == 2
    assert plain.trace is not None and plain.trace.retry == 1


class _Shaky:
    """A hand-written tool (its output unchecked on the way out) that fails as told."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="shaky",
            capability=ToolCapability(writes=False),
            output_schema={"type": "integer"},
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        how = params["how"]
        if how == "retry":
            raise ModelRetry("try again")
        return {
            "off_schema": "not an int",
            "not_json": {1, 2},
            "reported": ToolResult(success=False, error="nope", error_type="Nope"),
        }[how]

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


@pytest.mark.parametrize("how", ["off_schema", "not_json", "reported"])
def test_a_call_that_returns_a_failure_leaves_the_count_alone(how: str) -> None:
    """Only a successful return starts the count anew; a failed one, like a raise, does not."""
    with ToolRuntime(tracer=NullTracer(), strict_output=True) as runtime:
        runtime.register(_Shaky())
        with runtime.plan(read_only=True) as ctx:
            first = runtime.execute("shaky", {"how": "retry"}, ctx)
            failed = runtime.execute("shaky", {"how": how}, ctx)
            again = runtime.execute("shaky", {"how": "retry"}, ctx)
    assert first.retries_left == 1
    assert not failed.success and failed.retries_left is None
    assert failed.trace is not None and failed.trace.retry == 1  # one failure came before it
    assert again.retries_left == 0 and not again.retryable


def test_counts_are_per_plan_and_per_tool(runtime: ToolRuntime) -> None:
    """Another plan, or another tool, starts with all its retries."""
    runtime.register(divide)
    runtime.register(lookup)
    with runtime.plan(read_only=True) as ctx:
        runtime.execute("divide", {"a": 1, "b": 0}, ctx)
        other_tool = runtime.execute("lookup", {"key": "x"}, ctx)
    with runtime.plan(read_only=True) as ctx:
        other_plan = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
    assert other_tool.retries_left == 2
    assert other_plan.retries_left == 1 and other_plan.retryable


def test_the_retry_hint_names_the_tool_as_the_model_was_offered_it() -> None:
    """A dotted name is offered renamed to OpenAI; the hint asks for that name, not ours."""
    save = tool(name="notes.save", writes=False)(lookup.fn)
    with ToolRuntime(tracer=NullTracer()) as runtime, runtime.plan() as ctx:
        runtime.register(save)
        [offered] = [d["function"]["name"] for d in runtime.tool_definitions(ctx)]
        first = runtime.call(_call(offered, '{"key": "nope"}'), ctx)
        last = runtime.call(_call(offered, '{"key": 1}'), ctx)
        direct = runtime.execute("notes.save", {"key": "nope"}, ctx)
    assert offered != "notes.save"
    assert first.error is not None and f"call {offered!r} again (1 retry left)" in first.error
    assert last.error is not None and f"The retry limit of tool {offered!r}" in last.error
    assert direct.error is not None and "The retry limit of tool 'notes.save'" in direct.error


def test_max_retries_zero_allows_no_retry(runtime: ToolRuntime) -> None:
    """With max_retries=0 the first model-fixable failure is final."""
    runtime.register(divide, max_retries=0)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
    assert not result.retryable and result.retries_left == 0
    assert result.error is not None and "(no retries allowed)" in result.error


def test_register_overrides_the_tool_which_overrides_the_runtime() -> None:
    """max_retries comes from register, else the tool, else the runtime."""
    with ToolRuntime(tracer=NullTracer(), max_retries=4) as runtime:
        runtime.register(divide)
        runtime.register(lookup)
        with runtime.plan(read_only=True) as ctx:
            assert runtime.execute("divide", {"a": 1, "b": 0}, ctx).retries_left == 4
            assert runtime.execute("lookup", {"key": "x"}, ctx).retries_left == 2
        runtime.unregister("lookup")
        runtime.register(lookup, max_retries=3)
        with runtime.plan(read_only=True) as ctx:
            failed = runtime.execute("lookup", {"key": "x"}, ctx)
    assert failed.retries_left == 3
    assert failed.error is not None and "(3 retries left)" in failed.error


def test_a_limit_that_is_not_a_whole_number_is_refused() -> None:
    """Negative, bool or non-int limits fail where they are given."""
    with pytest.raises(ValueError, match="max_retries must be a whole number"):
        ToolRuntime(max_retries=-1)
    with pytest.raises(ToolDefinitionError, match="max_retries must be a whole number"):
        tool(name="x", description="x", max_retries=True)(lambda: None)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        with pytest.raises(ValueError, match="max_retries must be a whole number"):
            runtime.register(divide, max_retries=-2)
        with pytest.raises(ValueError, match="the max_retries of tool 'custom'"):
            runtime.register(_Custom(max_retries="3"))


class _Custom:
    """A hand-written tool that gives its own retry settings as attributes."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="custom", capability=ToolCapability(writes=False))

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        raise ModelRetry("try again")

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


def test_a_hand_written_tool_gives_its_limit_as_an_attribute(runtime: ToolRuntime) -> None:
    """A ToolInstance's max_retries attribute is read at registration."""
    runtime.register(_Custom(max_retries=5))
    with runtime.plan(read_only=True) as ctx:
        assert runtime.execute("custom", {}, ctx).retries_left == 5


def test_tool_failed_is_a_failure_that_is_neither_counted_nor_retryable(
    runtime: ToolRuntime,
) -> None:
    """ToolFailed's message is the error; no retries are counted or offered."""
    runtime.register(broken)
    with runtime.plan(read_only=True) as ctx:
        results = [runtime.execute("broken", {}, ctx) for _ in range(3)]
    for result in results:
        assert result.error == "the backend says no" and result.error_type == "ToolFailed"
        assert not result.retryable and result.retries_left is None
        assert result.trace is not None and result.trace.retry == 0


def test_the_model_reads_what_to_fix_in_its_tool_message(runtime: ToolRuntime) -> None:
    """Through call, the result message carries the tool's words and the retries left."""
    runtime.register(divide)
    with runtime.plan(read_only=True) as ctx:
        answer = runtime.call(_call("divide", '{"a": 1, "b": 0}'), ctx)
        final = runtime.call(_call("divide", '{"a": 1, "b": 0}', "c2"), ctx)
    message = answer.to_message()
    assert message["tool_call_id"] == "c1"
    assert "pick another divisor" in message["content"] and "1 retry left" in message["content"]
    assert answer.retryable
    assert "retry limit" in final.to_message("anthropic")["content"]
    assert final.to_message("anthropic")["is_error"] is True


def test_a_batch_counts_each_failure_of_a_tool(runtime: ToolRuntime) -> None:
    """Two failing calls of one tool in call_many use up its retries together."""
    runtime.register(lookup)
    calls = [_call("lookup", '{"key": "x"}', f"c{i}") for i in range(3)]
    with runtime.plan(read_only=True) as ctx:
        results = runtime.call_many(calls, ctx)
    assert sorted(result.retries_left or 0 for result in results) == [0, 1, 2]
    assert [result.retryable for result in results].count(False) == 1


def test_async_calls_count_the_same_way(runtime: ToolRuntime) -> None:
    """Through aexecute and acall, calls count against the same per-plan retries."""

    @tool(writes=False)
    async def adivide(a: int, b: int) -> float:
        """Divide a by b, asynchronously."""
        if b == 0:
            raise ModelRetry("b must not be 0")
        return a / b

    runtime.register(adivide)

    async def main() -> tuple[Any, Any, Any]:
        async with runtime.aplan(read_only=True) as ctx:
            first = await runtime.aexecute("adivide", {"a": 1, "b": 0}, ctx)
            second = await runtime.acall(_call("adivide", '{"a": 1, "b": "x"}'), ctx)
            third = await runtime.aexecute("adivide", {"a": 1, "b": 1}, ctx)
            return first, second, third

    first, second, third = asyncio.run(main())
    assert first.retryable and not second.retryable
    assert second.trace is not None and second.trace.status == "invalid_input"
    assert third.trace is not None and third.trace.retry == 2


def test_concurrent_failures_of_one_tool_are_each_counted_once(runtime: ToolRuntime) -> None:
    """Threads failing together never lose a count (the counter is locked)."""
    runtime.register(lookup, max_retries=100)
    barrier = threading.Barrier(4, timeout=5)
    lefts: list[int] = []
    with runtime.plan(read_only=True) as ctx:

        def work() -> None:
            barrier.wait()
            results = [runtime.execute("lookup", {"key": "x"}, ctx) for _ in range(10)]
            lefts.extend(result.retries_left or 0 for result in results)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
    assert sorted(lefts) == list(range(61, 101))


def test_an_observed_call_records_its_arguments_and_its_retry(runtime: ToolRuntime) -> None:
    """With instrumentation, a valid call still hands its arguments to the observer."""
    seen: list[Any] = []

    class Observer:
        record_payloads = True

        def finish(self, trace: Any, *, arguments: Any, output: Any) -> None:
            seen.append((trace.retry, arguments))

    class Watch:
        def call_started(self, **_: Any) -> Observer:
            return Observer()

        def stage_started(self, **_: Any) -> None:
            return None

    with ToolRuntime(tracer=NullTracer(), instrumentation=Watch()) as watched:  # type: ignore[arg-type]
        watched.register(divide)
        with watched.plan(read_only=True) as ctx:
            watched.execute("divide", {"a": 1, "b": "x"}, ctx)
            watched.execute("divide", {"a": 4, "b": 2}, ctx)
    assert seen == [(0, None), (1, {"a": 4, "b": 2})]


@settings(max_examples=30, deadline=None)
@given(limit=st.integers(0, 4), failures=st.integers(1, 8))
def test_retries_left_falls_by_one_per_failure_until_zero(limit: int, failures: int) -> None:
    """For any limit, the n-th failure in a row leaves max(0, limit - n + 1) retries."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(divide, max_retries=limit)
        with runtime.plan(read_only=True) as ctx:
            for n in range(1, failures + 1):
                result = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
                assert result.retries_left == max(0, limit - n + 1)
                assert result.retryable == (n <= limit)
