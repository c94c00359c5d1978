"""ToolLifecycleCache: single flight, exactly-once teardown, ended plans."""

from __future__ import annotations

import asyncio

import pytest

from toolcycle import (
    ToolCancelledError,
    ToolDeactivationError,
    ToolLifecycleCache,
    ToolRuntime,
    ToolRuntimeError,
)
from toolcycle.cache import Activation
from toolcycle.testing import FakeTool, make_context


def test_first_caller_owns_and_later_callers_wait() -> None:
    """begin() makes the first caller the owner; the second shares the activation."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    tool = FakeTool()
    first, owner = cache.begin(ctx, "fake", tool)
    second, second_owner = cache.begin(ctx, "fake", tool)
    assert owner and not second_owner and first is second
    assert cache.finish(ctx, first, None)
    assert first.done and first.error is None
    assert cache.is_active(ctx.plan_id, "fake")


def test_failed_activation_is_forgotten() -> None:
    """After a failure, the next begin() owns a fresh activation."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    activation, _ = cache.begin(ctx, "fake", FakeTool())
    assert not cache.finish(ctx, activation, OSError("x"))
    assert isinstance(activation.error, OSError)
    again, owner = cache.begin(ctx, "fake", FakeTool())
    assert owner and again is not activation
    assert not cache.is_active(ctx.plan_id, "fake")


def test_end_plan_tears_down_newest_first_exactly_once() -> None:
    """end_plan hands each active tool to the teardown once, in reverse order."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    for name in ("a", "b", "c"):
        activation, _ = cache.begin(ctx, name, FakeTool(name=name))
        cache.finish(ctx, activation, None)
    seen: list[str] = []
    assert cache.end_plan(ctx, lambda a, c: seen.append(a.name)) == []
    assert cache.end_plan(ctx, lambda a, c: seen.append(a.name)) == []
    assert seen == ["c", "b", "a"]
    assert ctx.ended and cache.open_plans() == ()


def test_teardown_errors_are_collected_and_interrupts_re_raised_after_the_rest() -> None:
    """Exceptions become ToolDeactivationErrors; an interrupt is raised after all ran."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    for name in ("a", "b", "c"):
        activation, _ = cache.begin(ctx, name, FakeTool(name=name))
        cache.finish(ctx, activation, None)
    seen: list[str] = []

    def teardown(activation: Activation, _: object) -> None:
        seen.append(activation.name)
        if activation.name == "c":
            raise KeyboardInterrupt
        if activation.name == "b":
            raise OSError("b failed")

    with pytest.raises(KeyboardInterrupt):
        cache.end_plan(ctx, teardown)
    assert seen == ["c", "b", "a"]


def test_teardown_error_message_names_tool_and_plan() -> None:
    """A teardown failure is wrapped with the tool, the plan and the cause."""
    cache = ToolLifecycleCache()
    ctx = make_context("plan-x")
    activation, _ = cache.begin(ctx, "t", FakeTool(name="t"))
    cache.finish(ctx, activation, None)

    def teardown(activation: Activation, _: object) -> None:
        raise ValueError("nope")

    (error,) = cache.end_plan(ctx, teardown)
    assert isinstance(error, ToolDeactivationError)
    assert (error.tool_name, error.plan_id) == ("t", "plan-x")
    assert isinstance(error.__cause__, ValueError)


def test_activation_finished_after_plan_end_is_not_cached() -> None:
    """An activation that completes after its plan ended is refused and reported."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    activation, _ = cache.begin(ctx, "late", FakeTool())
    assert cache.end_plan(ctx, lambda a, c: None) == []
    assert not cache.finish(ctx, activation, None)
    assert isinstance(activation.error, ToolCancelledError)


def test_begin_on_an_ended_plan_raises() -> None:
    """A plan that has ended accepts no activations."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    cache.track(ctx)
    cache.end_plan(ctx, lambda a, c: None)
    with pytest.raises(ToolRuntimeError, match="has ended"):
        cache.begin(ctx, "x", FakeTool())


def test_a_second_context_for_an_open_plan_id_is_refused() -> None:
    """Two contexts of one open plan id would share activations; the second is refused."""
    cache = ToolLifecycleCache()
    first, second = make_context(plan_id="p"), make_context(plan_id="p")
    activation, _ = cache.begin(first, "tool", FakeTool())
    cache.finish(first, activation, None)
    for attempt in (lambda: cache.track(second), lambda: cache.begin(second, "tool", FakeTool())):
        with pytest.raises(ToolRuntimeError, match="'p' is already open") as caught:
            attempt()
        assert caught.value.plan_id == "p"
    assert cache.is_active("p", "tool")
    cache.track(first)  # the plan's own context may come back as often as it likes
    assert cache.end_plan(first, lambda a, c: None) == []
    cache.track(second)  # the id is free once its plan has ended
    assert cache.open_plans() == (second,)


def test_runtime_refuses_a_second_open_plan_with_the_same_id() -> None:
    """new_context and a hand-built context both refuse; the first plan is unharmed."""
    runtime = ToolRuntime()
    tool = FakeTool(name="echo")
    runtime.register(tool)
    first = runtime.new_context("nightly")
    assert runtime.execute("echo", {}, first).success
    with pytest.raises(ToolRuntimeError, match="already open"):
        runtime.new_context("nightly")
    with pytest.raises(ToolRuntimeError, match="already open"):
        runtime.execute("echo", {}, make_context(plan_id="nightly"))
    assert runtime.execute("echo", {}, first).success
    assert [call.stage for call in tool.calls].count("activate") == 1
    runtime.end_plan(first)
    with runtime.plan("nightly") as again:
        assert runtime.execute("echo", {}, again).success
    runtime.close()


def test_without_activation_on_demand_a_foreign_context_is_refused_too() -> None:
    """With auto_activate=False the call path checks the plan's context as well."""
    runtime = ToolRuntime(auto_activate=False)
    runtime.register(FakeTool(name="echo"))
    with runtime.plan("p") as ctx:
        runtime.activate("echo", ctx)
        assert runtime.execute("echo", {}, ctx).success
        with pytest.raises(ToolRuntimeError, match="already open"):
            runtime.execute("echo", {}, make_context(plan_id="p"))
    runtime.close()


async def test_async_waiters_wake_when_the_owner_finishes() -> None:
    """wait_async() returns once the owner calls finish, without blocking the loop."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    activation, _ = cache.begin(ctx, "fake", FakeTool())
    waiter = asyncio.ensure_future(activation.wait_async())
    await asyncio.sleep(0)
    assert not waiter.done()
    cache.finish(ctx, activation, None)
    await asyncio.wait_for(waiter, 5)
    await asyncio.wait_for(activation.wait_async(), 5)


async def test_async_teardown_runs_in_reverse_order() -> None:
    """aend_plan awaits each teardown, newest first, and collects failures."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    for name in ("a", "b"):
        activation, _ = cache.begin(ctx, name, FakeTool(name=name))
        cache.finish(ctx, activation, None)
    seen: list[str] = []

    async def teardown(activation: Activation, _: object) -> None:
        seen.append(activation.name)
        if activation.name == "b":
            raise OSError("b")

    errors = await cache.aend_plan(ctx, teardown)
    assert seen == ["b", "a"] and [e.tool_name for e in errors] == ["b"]
    assert await cache.aend_plan(ctx, teardown) == []


def test_an_ended_plan_leaves_nothing_behind() -> None:
    """After end_plan, the context, its activations and the tools' plan state can all go."""
    import gc
    import weakref

    from toolcycle import ToolExecutionContext, ToolRuntime
    from toolcycle.testing import FakeTool

    class PlanState:
        pass

    class Stateful(FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            super().activate(ctx)
            ctx.metadata["state"] = PlanState()

    with ToolRuntime() as runtime:
        runtime.register(Stateful(name="a"))
        runtime.register(FakeTool(name="b"))
        ctx = runtime.new_context()
        runtime.execute("a", {}, ctx)
        runtime.execute("b", {}, ctx)
        activations = [weakref.ref(a) for a in runtime.cache._plans[ctx.plan_id].order]
        state = weakref.ref(ctx.metadata["state"])
        context = weakref.ref(ctx)
        assert len(activations) == 2 and all(ref() is not None for ref in activations)
        runtime.end_plan(ctx)
        del ctx
        gc.collect()
        assert context() is None
        assert state() is None
        assert [ref() for ref in activations] == [None, None]
        assert runtime.cache.open_plans() == ()
        assert runtime.cache._plans == {}  # nothing kept for the ended plan id either


def test_an_async_waiter_gone_with_its_loop_does_not_break_the_activations_owner() -> None:
    """A cancelled waiter whose loop has closed leaves no wake-up behind for the owner."""
    import threading

    from toolcycle import ToolDescriptor, ToolExecutionContext

    class SlowActivate:
        def __init__(self) -> None:
            self.started, self.release = threading.Event(), threading.Event()

        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="slow")

        def activate(self, ctx: ToolExecutionContext) -> None:
            self.started.set()
            self.release.wait(5)

        def execute(self, params: dict[str, object], ctx: ToolExecutionContext) -> str:
            return "ran"

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            pass

    tool = SlowActivate()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        ctx = runtime.new_context("p")
        outcome: dict[str, object] = {}

        def owner() -> None:
            try:
                outcome["result"] = runtime.execute("slow", {}, ctx)
            except BaseException as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=owner)
        thread.start()
        assert tool.started.wait(5)

        async def impatient() -> None:
            waiter = asyncio.ensure_future(runtime.aexecute("slow", {}, ctx))
            await asyncio.sleep(0)  # it registers its wake-up, then waits
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter

        asyncio.run(impatient())  # and its loop closes
        tool.release.set()
        thread.join(5)
        runtime.end_plan(ctx)
    assert "error" not in outcome, outcome
    assert outcome["result"].success  # type: ignore[attr-defined]
