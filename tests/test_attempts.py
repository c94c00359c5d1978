"""RetryPolicy: attempts of an idempotent tool within one call, with interruptible waits."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import (
    ModelRetry,
    NullTracer,
    RetryPolicy,
    ToolCancelledError,
    ToolCapability,
    ToolDefinitionError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolFailed,
    ToolRegistrationError,
    ToolRuntime,
    tool,
)
from toolcycle.otel import OpenTelemetry

WAIT = 5.0
QUICK = RetryPolicy(attempts=3, backoff=0, jitter=0)
SLOW = RetryPolicy(attempts=3, backoff=60, max_backoff=60, jitter=0)


class Flaky:
    """An idempotent tool that raises each of ``errors`` in turn, then returns."""

    def __init__(
        self,
        *errors: BaseException,
        policy: RetryPolicy | None = None,
        idempotent: bool = True,
        on_fail: Any = None,
    ) -> None:
        self.errors = list(errors)
        self.runs = 0
        self.retry_policy = policy
        self.idempotent = idempotent
        self.on_fail = on_fail

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="flaky", capability=ToolCapability(writes=False, idempotent=self.idempotent)
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.runs += 1
        if self.errors:
            if self.on_fail is not None:
                self.on_fail()
            raise self.errors.pop(0)
        return "done"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


class AsyncFlaky(Flaky):
    """`Flaky` with an ``async def execute``."""

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return Flaky.execute(self, params, ctx)


def test_a_transient_fault_is_retried_and_each_attempt_is_traced(runtime: ToolRuntime) -> None:
    """Two ConnectionErrors, then a return: one successful call with three attempts."""
    flaky = Flaky(ConnectionError("reset"), TimeoutError("slow"), policy=QUICK)
    runtime.register(flaky)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("flaky", {}, ctx)
    assert result.success and result.output == "done" and flaky.runs == 3
    assert result.trace is not None
    assert [a.error_type for a in result.trace.attempts] == [
        "ConnectionError",
        "TimeoutError",
        None,
    ]
    assert all(a.duration_ms >= 0 for a in result.trace.attempts)


def test_the_last_error_is_the_result_once_attempts_run_out(runtime: ToolRuntime) -> None:
    """Three failures with attempts=3: the call fails with the third error."""
    flaky = Flaky(*(ConnectionError(f"reset {i}") for i in range(4)), policy=QUICK)
    runtime.register(flaky)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("flaky", {}, ctx)
    assert not result.success and result.error == "reset 2" and flaky.runs == 3
    assert result.trace is not None and len(result.trace.attempts) == 3
    assert not result.retryable and result.retries_left is None


@pytest.mark.parametrize(
    "error",
    [ValueError("not transient"), ModelRetry("fix it"), ToolFailed("no")],
    ids=["not-in-retry_on", "ModelRetry", "ToolFailed"],
)
def test_what_the_policy_does_not_call_transient_runs_once(
    runtime: ToolRuntime, error: Exception
) -> None:
    """Other errors, and ModelRetry and ToolFailed even under retry_on=(Exception,), run once."""
    policy = RetryPolicy(attempts=5, backoff=0, jitter=0, retry_on=(Exception,))
    if isinstance(error, ValueError):
        policy = QUICK
    flaky = Flaky(error, ConnectionError("never reached"), policy=policy)
    runtime.register(flaky)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("flaky", {}, ctx)
    assert not result.success and flaky.runs == 1
    assert result.error_type == type(error).__name__
    assert result.trace is not None and len(result.trace.attempts) == 1


def test_a_call_without_time_for_the_wait_does_not_start_another_attempt(
    runtime: ToolRuntime,
) -> None:
    """A 60 s backoff inside a 5 s call: the call fails at once with its first error."""
    flaky = Flaky(ConnectionError("reset"), policy=SLOW)
    runtime.register(flaky)
    with runtime.plan(read_only=True) as ctx:
        result = runtime.execute("flaky", {}, ctx, timeout=WAIT)
    assert not result.success and result.error == "reset" and flaky.runs == 1
    assert result.trace is not None and result.trace.duration_ms < WAIT * 1000


def test_cancelling_the_plan_wakes_the_wait_at_once(runtime: ToolRuntime) -> None:
    """A plan cancelled while the call waits 60 s to retry ends the call as cancelled."""
    failed = threading.Event()
    flaky = Flaky(ConnectionError("reset"), policy=SLOW, on_fail=failed.set)
    runtime.register(flaky)
    ctx = runtime.new_context(read_only=True)

    def cancel() -> None:
        assert failed.wait(WAIT)
        ctx.cancellation_token.cancel("user pressed stop")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    try:
        with pytest.raises(ToolCancelledError) as caught:
            runtime.execute("flaky", {}, ctx)
    finally:
        canceller.join(WAIT)
        runtime.end_plan(ctx)
    assert flaky.runs == 1
    assert caught.value.reason == "user pressed stop"
    assert caught.value.tool_name == "flaky"


def test_async_attempts_are_retried_and_traced(runtime: ToolRuntime) -> None:
    """Through aexecute, the same attempts run for an async tool and a sync one."""
    for kind in (AsyncFlaky, Flaky):
        flaky = kind(ConnectionError("reset"), policy=QUICK)
        runtime.register(flaky)

        async def main() -> Any:
            async with runtime.aplan(read_only=True) as ctx:
                return await runtime.aexecute("flaky", {}, ctx, timeout=WAIT)

        result = asyncio.run(main())
        runtime.unregister("flaky")
        assert result.success and flaky.runs == 2
        assert result.trace is not None and len(result.trace.attempts) == 2


def test_cancelling_the_plan_wakes_an_async_wait(runtime: ToolRuntime) -> None:
    """From async code too, the plan's cancellation ends the wait between attempts."""
    holder: dict[str, ToolExecutionContext] = {}
    flaky = AsyncFlaky(
        ConnectionError("reset"),
        policy=SLOW,
        on_fail=lambda: holder["ctx"].cancellation_token.cancel("stop"),
    )
    runtime.register(flaky)

    async def main() -> None:
        async with runtime.aplan(read_only=True) as ctx:
            holder["ctx"] = ctx
            await runtime.aexecute("flaky", {}, ctx)

    with pytest.raises(ToolCancelledError, match="was cancelled while it waited to retry: stop"):
        asyncio.run(asyncio.wait_for(main(), WAIT))


def test_the_caller_cancelling_its_task_stops_the_wait(runtime: ToolRuntime) -> None:
    """Cancelling the awaiting task during the backoff cancels the call."""
    failed = asyncio.Event()
    flaky = AsyncFlaky(ConnectionError("reset"), policy=SLOW, on_fail=failed.set)
    runtime.register(flaky)

    async def main() -> None:
        async with runtime.aplan(read_only=True) as ctx:
            task = asyncio.ensure_future(runtime.aexecute("flaky", {}, ctx))
            await asyncio.wait_for(failed.wait(), WAIT)
            await asyncio.sleep(0)  # let the call reach its wait (no timing involved)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, WAIT)

    asyncio.run(main())
    assert flaky.runs == 1


def test_the_runtime_policy_applies_to_idempotent_tools_only() -> None:
    """ToolRuntime(retry=...) retries idempotent tools that give no policy of their own."""
    with ToolRuntime(tracer=NullTracer(), retry=QUICK) as runtime:
        idem = Flaky(ConnectionError("a"))
        runtime.register(idem)
        with runtime.plan(read_only=True) as ctx:
            assert runtime.execute("flaky", {}, ctx).success
        runtime.unregister("flaky")
        plain = Flaky(ConnectionError("b"), idempotent=False)
        runtime.register(plain)
        with runtime.plan(read_only=True) as ctx:
            result = runtime.execute("flaky", {}, ctx)
    assert idem.runs == 2 and plain.runs == 1
    assert not result.success and result.trace is not None and result.trace.attempts == ()


def test_decorated_tools_take_idempotent_and_retry() -> None:
    """@tool(idempotent=True, retry=...) sets the capability and the tool's policy."""
    runs: list[int] = []

    @tool(writes=False, idempotent=True, retry=QUICK)
    def fetch() -> str:
        """Fetch something over a flaky network."""
        runs.append(1)
        if len(runs) == 1:
            raise ConnectionError("reset")
        return "page"

    assert fetch.discover().capability.idempotent
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(fetch)
        with runtime.plan(read_only=True) as ctx:
            assert runtime.execute("fetch", {}, ctx).output == "page"
    assert len(runs) == 2


def test_a_policy_for_a_tool_that_is_not_idempotent_is_refused(runtime: ToolRuntime) -> None:
    """At decoration and at registration, retry= needs idempotent=True."""
    with pytest.raises(ToolDefinitionError, match="is not idempotent"):

        @tool(writes=False, retry=QUICK)
        def fetch() -> str:
            """Fetch."""
            return "x"

    with pytest.raises(ToolRegistrationError, match="tool 'flaky' has a retry policy but"):
        runtime.register(Flaky(idempotent=False), retry=QUICK)


def test_a_policy_of_the_wrong_type_is_refused(runtime: ToolRuntime) -> None:
    """retry= takes a RetryPolicy, wherever it is given."""
    with pytest.raises(ToolDefinitionError, match="retry must be a toolcycle.RetryPolicy"):
        tool(name="t", description="t", idempotent=True, retry=3)(lambda: None)  # type: ignore[call-overload]
    flaky = Flaky()
    flaky.retry_policy = {"attempts": 3}  # type: ignore[assignment]
    with pytest.raises(ToolRegistrationError, match="is a dict; pass a toolcycle.RetryPolicy"):
        runtime.register(flaky)
    with pytest.raises(TypeError, match="retry must be a toolcycle.RetryPolicy or None"):
        ToolRuntime(retry=3)  # type: ignore[arg-type]


def test_register_gives_a_policy_that_overrides_the_tools(runtime: ToolRuntime) -> None:
    """register(retry=...) wins over the tool's own policy."""
    flaky = Flaky(ConnectionError("a"), ConnectionError("b"), policy=RetryPolicy(attempts=1))
    runtime.register(flaky, retry=QUICK)
    with runtime.plan(read_only=True) as ctx:
        assert runtime.execute("flaky", {}, ctx).success
    assert flaky.runs == 3


def test_without_tenacity_a_policy_is_refused_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, runtime: ToolRuntime
) -> None:
    """The retry extra is optional: a policy without it fails at registration."""
    monkeypatch.setitem(sys.modules, "tenacity", None)
    with pytest.raises(ToolRegistrationError) as caught:
        runtime.register(Flaky(), retry=QUICK)
    assert "pip install -e '.[retry]' from a clone (toolcycle[retry] once published)" in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("options", "kind", "match"),
    [
        ({"attempts": 0}, ValueError, "attempts must be 1 or more"),
        ({"attempts": True}, TypeError, "attempts must be a whole number"),
        ({"backoff": -1}, ValueError, "backoff must be seconds"),
        ({"jitter": float("nan")}, ValueError, "jitter must be seconds"),
        ({"max_backoff": "5"}, ValueError, "max_backoff must be seconds"),
        ({"retry_on": (KeyboardInterrupt,)}, ValueError, "retry_on must be a tuple"),
        ({"retry_on": [OSError]}, ValueError, "retry_on must be a tuple"),
    ],
)
def test_a_policy_out_of_range_is_refused(
    options: dict[str, Any], kind: type[Exception], match: str
) -> None:
    """Each number and retry_on are checked when the policy is made."""
    with pytest.raises(kind, match=match):
        RetryPolicy(**options)


def test_one_exception_class_alone_is_taken_as_a_tuple() -> None:
    """retry_on=OSError means (OSError,)."""
    assert RetryPolicy(retry_on=OSError).retry_on == (OSError,)  # type: ignore[arg-type]


def test_jitter_adds_a_random_share_to_the_wait(runtime: ToolRuntime) -> None:
    """A policy with jitter still retries (its wait is small here)."""
    flaky = Flaky(ConnectionError("a"), policy=RetryPolicy(backoff=0, jitter=0.001))
    runtime.register(flaky)
    with runtime.plan(read_only=True) as ctx:
        assert runtime.execute("flaky", {}, ctx).success


def test_the_span_counts_the_attempts_and_names_the_retry() -> None:
    """OTel: toolcycle.attempts and toolcycle.retry are set when they say something."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    @tool(writes=False)
    def pick(n: int) -> int:
        """Pick a positive number."""
        if n <= 0:
            raise ModelRetry("n must be positive")
        return n

    try:
        with ToolRuntime(
            tracer=NullTracer(), instrumentation=OpenTelemetry(tracer_provider=provider)
        ) as runtime:
            runtime.register(pick)
            runtime.register(Flaky(ConnectionError("a"), policy=QUICK))
            with runtime.plan(read_only=True) as ctx:
                runtime.execute("pick", {"n": 0}, ctx)
                runtime.execute("pick", {"n": 1}, ctx)
                runtime.execute("flaky", {}, ctx)
    finally:
        provider.shutdown()
    spans = [dict(span.attributes or {}) for span in exporter.get_finished_spans()]
    calls = [s for s in spans if "toolcycle.status" in s]
    assert [s.get("toolcycle.retry") for s in calls] == [None, 1, None]
    assert [s.get("toolcycle.attempts") for s in calls] == [None, None, 2]


def test_a_wake_after_the_wait_ended_changes_nothing() -> None:
    """A cancellation that lands after the wait was given up finds the future settled."""
    from toolcycle.runtime._retries import _settle

    async def main() -> bool:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        _settle(future)
        return future.cancelled()

    assert asyncio.run(main())


def test_ending_the_plan_wakes_the_wait_too(runtime: ToolRuntime) -> None:
    """A plan that ends while its call waits to retry stops the call at once."""
    failed = threading.Event()
    flaky = Flaky(ConnectionError("reset"), policy=SLOW, on_fail=failed.set)
    runtime.register(flaky)
    ctx = runtime.new_context(read_only=True)
    caught: list[BaseException] = []

    def run() -> None:
        try:
            runtime.execute("flaky", {}, ctx)
        except BaseException as exc:
            caught.append(exc)

    caller = threading.Thread(target=run)
    caller.start()
    assert failed.wait(WAIT)
    runtime.end_plan(ctx)
    caller.join(WAIT)
    assert not caller.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], ToolCancelledError)
    assert flaky.runs == 1


def test_a_policy_is_an_immutable_value() -> None:
    """Equal fields make equal policies with one hash; no field can be changed or deleted."""
    policy = RetryPolicy(attempts=2, retry_on=(OSError,))
    assert policy == RetryPolicy(attempts=2, retry_on=(OSError,)) != RetryPolicy()
    assert hash(policy) == hash(RetryPolicy(attempts=2, retry_on=(OSError,)))
    assert policy != "policy"
    assert repr(policy) == (
        "RetryPolicy(attempts=2, backoff=0.1, max_backoff=5.0, jitter=0.1, retry_on=(OSError))"
    )
    with pytest.raises(AttributeError, match="cannot be changed"):
        policy.attempts = 5
    with pytest.raises(AttributeError, match="cannot be changed"):
        del policy.jitter
