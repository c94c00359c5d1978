"""Each call has its own cancellation token: the plan's, plus the call's own timeout."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from toolcycle import (
    CancellationToken,
    ToolCancelledError,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)

WAIT = 5.0  # the bound of every wait in this file


def test_outside_a_call_the_call_token_is_the_plans() -> None:
    """A context asked for its call token outside any call hands out the plan's token."""
    ctx = ToolExecutionContext("p")
    assert ctx.call_token is ctx.cancellation_token


def test_each_call_gets_its_own_token_and_it_is_stable_within_the_call(
    runtime: ToolRuntime,
) -> None:
    """Within a call, call_token is one token; the next call gets another."""
    seen: list[tuple[CancellationToken, CancellationToken]] = []

    @tool(writes=False)
    def probe(ctx: ToolExecutionContext) -> None:
        """The probe tool of this test."""
        seen.append((ctx.call_token, ctx.call_token))

    runtime.register(probe)
    with runtime.plan() as ctx:
        runtime.execute("probe", {}, ctx)
        runtime.execute("probe", {}, ctx)
    (first, again), (second, _) = seen
    assert first is again
    assert first is not second
    assert first is not ctx.cancellation_token
    assert not first.is_cancelled  # a call that ends normally does not cancel it


def test_cancelling_the_plan_cancels_a_running_calls_token(runtime: ToolRuntime) -> None:
    """A sync tool polling its call token sees the plan's cancellation, with its reason."""
    started = threading.Event()
    observed: list[str | None] = []

    @tool(writes=False)
    def waits(ctx: ToolExecutionContext) -> None:
        """The waits tool of this test."""
        token = ctx.call_token
        started.set()
        deadline = time.monotonic() + WAIT
        while not token.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.001)
        observed.append(token.reason)

    runtime.register(waits)
    ctx = runtime.new_context()
    worker = threading.Thread(target=lambda: _swallow(runtime.execute, "waits", {}, ctx))
    worker.start()
    assert started.wait(WAIT)
    ctx.cancellation_token.cancel("user pressed stop")
    worker.join(WAIT)
    assert observed == ["user pressed stop"]
    runtime.end_plan(ctx)


def test_a_timeout_cancels_the_calls_token_but_not_the_plans(runtime: ToolRuntime) -> None:
    """A sync tool that polls its call token stops at its timeout; the plan goes on."""
    stopped = threading.Event()
    reasons: list[str | None] = []

    @tool(writes=False)
    def slow(ctx: ToolExecutionContext) -> None:
        """The slow tool of this test."""
        token = ctx.call_token
        deadline = time.monotonic() + WAIT
        while not token.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.001)
        reasons.append(token.reason)
        stopped.set()

    runtime.register(slow)
    with runtime.plan() as ctx:
        result = runtime.execute("slow", {}, ctx, timeout=0.05)
        assert result.trace is not None and result.trace.status == "timed_out"
        assert stopped.wait(WAIT)  # the thread left running noticed and returned
        assert not ctx.cancellation_token.is_cancelled
    assert reasons and reasons[0] is not None and "0.05" in reasons[0]


def test_a_token_first_asked_for_after_the_timeout_is_already_cancelled(
    runtime: ToolRuntime,
) -> None:
    """A sync tool that looks at its token only after its timeout finds it cancelled."""
    release = threading.Event()
    states: list[bool] = []
    done = threading.Event()

    @tool(writes=False)
    def late(ctx: ToolExecutionContext) -> None:
        """The late tool of this test."""
        release.wait(WAIT)
        states.append(ctx.call_token.is_cancelled)
        done.set()

    runtime.register(late)
    with runtime.plan() as ctx:
        result = runtime.execute("late", {}, ctx, timeout=0.05)
        assert result.trace is not None and result.trace.status == "timed_out"
        release.set()
        assert done.wait(WAIT)
    assert states == [True]


def test_an_async_tools_call_token_is_cancelled_at_its_timeout(runtime: ToolRuntime) -> None:
    """The call token of a timed-out async call is cancelled as its task is."""
    tokens: list[CancellationToken] = []

    @tool(writes=False)
    async def hangs(ctx: ToolExecutionContext) -> None:
        """The hangs tool of this test."""
        tokens.append(ctx.call_token)
        await asyncio.sleep(WAIT)

    runtime.register(hangs)

    async def main() -> None:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("hangs", {}, ctx, timeout=0.05)
            assert result.trace is not None and result.trace.status == "timed_out"

    asyncio.run(main())
    assert tokens[0].is_cancelled


def test_concurrent_calls_each_see_their_own_token(runtime: ToolRuntime) -> None:
    """Overlapping async calls of one plan each get a token of their own."""
    both = asyncio.Event()
    arrived: list[CancellationToken] = []

    @tool(writes=False)
    async def meet(ctx: ToolExecutionContext) -> None:
        """The meet tool of this test."""
        arrived.append(ctx.call_token)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), WAIT)
        arrived.append(ctx.call_token)

    runtime.register(meet)

    async def main() -> None:
        async with runtime.aplan() as ctx:
            await asyncio.gather(
                runtime.aexecute("meet", {}, ctx), runtime.aexecute("meet", {}, ctx)
            )

    asyncio.run(main())
    first, second, *after = arrived
    assert first is not second
    assert set(map(id, after)) == {id(first), id(second)}


def test_finished_calls_leave_no_callback_on_the_plans_token(runtime: ToolRuntime) -> None:
    """A plan with many calls does not accumulate links from their tokens."""

    @tool(writes=False)
    def asks(ctx: ToolExecutionContext) -> bool:
        """The asks tool of this test."""
        return ctx.call_token.is_cancelled

    runtime.register(asks)
    with runtime.plan() as ctx:
        for _ in range(200):
            runtime.execute("asks", {}, ctx)
        # The link a call adds to the plan's token is removed when the call ends.
        assert ctx.cancellation_token._callbacks == {}


def test_a_call_token_of_a_cancelled_plan_is_born_cancelled() -> None:
    """Asking for the call token in a call of an already cancelled plan gives a cancelled one."""
    from toolcycle._scope import _start_collecting, _stop_collecting

    ctx = ToolExecutionContext("p")
    ctx.cancellation_token.cancel("gone")
    scope, reset = _start_collecting(ctx)
    try:
        token = ctx.call_token
        assert token.is_cancelled and token.reason == "gone"
    finally:
        _stop_collecting(scope, reset)


def _swallow(fn: Any, *args: Any) -> None:
    with contextlib.suppress(ToolCancelledError):
        fn(*args)


def test_after_a_call_ends_its_scope_hands_out_the_plans_token_and_links_nothing() -> None:
    """Work left behind by a finished call that asks for a token gets the plan's own."""
    from toolcycle._scope import _start_collecting, _stop_collecting

    ctx = ToolExecutionContext("p")
    scope, reset = _start_collecting(ctx)
    _stop_collecting(scope, reset)
    assert scope.token() is ctx.cancellation_token
    assert ctx.cancellation_token._callbacks == {}
