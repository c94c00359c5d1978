"""Properties of ToolLifecycleCache under any interleaving of plans, names and threads."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from toolcycle import (
    ToolCancelledError,
    ToolDeactivationError,
    ToolLifecycleCache,
    ToolRuntimeError,
)
from toolcycle.cache import Activation
from toolcycle.testing import FakeTool, make_context

from .strategies import (
    PLAN_COUNT,
    TOOL_NAMES,
    Begin,
    End,
    Finish,
    sequential_ops,
    thread_schedules,
)

WAIT = 5.0
"""Seconds any wait on another thread may take before the test fails."""

FAILING_TEARDOWN = "c"
"""Teardown of this tool name raises, to check that errors are collected."""


@dataclass(frozen=True)
class Owned:
    """One owner's activation: its plan, whether it failed, and what ``finish`` returned."""

    plan: int
    activation: Activation
    error: BaseException | None
    cached: bool


@dataclass
class Ledger:
    """What the threads of one schedule did to the cache; appended under a lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    owned: list[Owned] = field(default_factory=list)
    waited: list[tuple[Activation, BaseException | None]] = field(default_factory=list)
    """(activation, the error it carried after the wait) per waiter."""
    torn_down: list[Activation] = field(default_factory=list)
    errors: list[ToolDeactivationError] = field(default_factory=list)
    refused: int = 0


def _teardown_into(ledger: Ledger):
    def teardown(activation: Activation, _ctx: object) -> None:
        with ledger.lock:
            ledger.torn_down.append(activation)
        if activation.name == FAILING_TEARDOWN:
            raise OSError("teardown failed")

    return teardown


def _run_schedule(
    cache: ToolLifecycleCache, contexts: list, schedule: list[list[Begin | End]]
) -> Ledger:
    ledger = Ledger()
    teardown = _teardown_into(ledger)
    start = threading.Barrier(len(schedule))
    crashes: list[BaseException] = []

    def worker(ops: list[Begin | End]) -> None:
        try:
            start.wait(WAIT)
            for op in ops:
                ctx = contexts[op.plan]
                if isinstance(op, End):
                    errors = cache.end_plan(ctx, teardown)
                    with ledger.lock:
                        ledger.errors.extend(errors)
                    continue
                try:
                    activation, owner = cache.begin(ctx, op.name, FakeTool(name=op.name))
                except ToolRuntimeError:
                    with ledger.lock:
                        ledger.refused += 1
                    continue
                if owner:
                    error = OSError(f"activating {op.name} failed") if op.fail else None
                    cached = cache.finish(ctx, activation, error)
                    with ledger.lock:
                        ledger.owned.append(Owned(op.plan, activation, error, cached))
                else:
                    activation.wait()
                    with ledger.lock:
                        ledger.waited.append((activation, activation.error))
        except BaseException as exc:  # reported by the test thread
            crashes.append(exc)

    threads = [threading.Thread(target=worker, args=(ops,)) for ops in schedule]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a worker is stuck"
    assert crashes == []
    return ledger


@given(schedule=thread_schedules())
def test_any_thread_interleaving_activates_at_most_once_and_tears_down_exactly_once(
    schedule: list[list[Begin | End]],
) -> None:
    """However threads interleave begin, finish and end_plan, each activation is torn down once."""
    cache = ToolLifecycleCache()
    contexts = [make_context(f"plan-{i}") for i in range(PLAN_COUNT)]
    ledger = _run_schedule(cache, contexts, schedule)
    teardown = _teardown_into(ledger)
    for ctx in contexts:
        ledger.errors.extend(cache.end_plan(ctx, teardown))

    cached = [o for o in ledger.owned if o.cached]
    per_key = Counter((o.plan, o.activation.name) for o in cached)
    assert all(count == 1 for count in per_key.values()), per_key
    torn = Counter(id(a) for a in ledger.torn_down)
    assert torn == Counter(id(o.activation) for o in cached), "not torn down exactly once"
    for o in ledger.owned:
        assert o.activation.done
        if o.error is not None:
            assert not o.cached, "a failed activation was cached"
            assert o.activation.error is o.error
        elif not o.cached:  # the plan ended while it was activating
            assert isinstance(o.activation.error, ToolCancelledError)
        else:
            assert o.activation.error is None
    outcome = {id(o.activation): o.activation.error for o in ledger.owned}
    for activation, error in ledger.waited:
        assert error is outcome[id(activation)], "a waiter saw another outcome than its owner"
    failing = [o for o in cached if o.activation.name == FAILING_TEARDOWN]
    assert len(ledger.errors) == len(failing)
    assert all(isinstance(e, ToolDeactivationError) for e in ledger.errors)
    assert cache.open_plans() == ()
    for ctx in contexts:
        assert ctx.ended and cache.active_tools(ctx.plan_id) == ()


@given(ops=sequential_ops())
def test_sequential_operations_follow_the_exact_model(ops: list[Begin | Finish | End]) -> None:
    """One thread interleaving plans: owners, cached outcomes and teardown order match a model."""
    cache = ToolLifecycleCache()
    contexts = [make_context(f"plan-{i}") for i in range(PLAN_COUNT)]
    pending: dict[tuple[int, str], Activation] = {}
    active: dict[int, list[Activation]] = {i: [] for i in range(PLAN_COUNT)}
    ended: set[int] = set()
    torn: list[Activation] = []

    def teardown(activation: Activation, _ctx: object) -> None:
        torn.append(activation)

    for op in ops:
        ctx = contexts[op.plan]
        if isinstance(op, Begin):
            if op.plan in ended:
                try:
                    cache.begin(ctx, op.name, FakeTool(name=op.name))
                except ToolRuntimeError:
                    continue
                raise AssertionError("begin in an ended plan was not refused")
            activation, owner = cache.begin(ctx, op.name, FakeTool(name=op.name))
            known = pending.get((op.plan, op.name)) or next(
                (a for a in active[op.plan] if a.name == op.name), None
            )
            if known is None:
                assert owner
                pending[(op.plan, op.name)] = activation
            else:
                assert not owner and activation is known
        elif isinstance(op, Finish):
            activation = pending.pop((op.plan, op.name), None)
            if activation is None:
                continue
            error = OSError("no") if op.fail else None
            cached = cache.finish(ctx, activation, error)
            assert cached is (not op.fail and op.plan not in ended)
            if cached:
                active[op.plan].append(activation)
            if op.fail:
                assert activation.error is error
                assert not cache.is_active(ctx.plan_id, op.name), "a failed activation was cached"
            elif not cached:
                assert isinstance(activation.error, ToolCancelledError)
        else:
            torn.clear()
            assert cache.end_plan(ctx, teardown) == []
            if op.plan in ended:
                assert torn == [], "a second end tore down again"
            else:
                assert torn == list(reversed(active[op.plan])), "not newest first"
                ended.add(op.plan)
        for i, plan_ctx in enumerate(contexts):
            names = () if i in ended else tuple(a.name for a in active[i])
            assert cache.active_tools(plan_ctx.plan_id) == names

    # Settle what is left: every cached activation is torn down exactly once in all.
    for (plan, _name), activation in pending.items():
        assert cache.finish(contexts[plan], activation, None) is (plan not in ended)
        if plan not in ended:
            active[plan].append(activation)
    torn.clear()
    for ctx in contexts:
        cache.end_plan(ctx, teardown)
    open_before = [i for i in range(PLAN_COUNT) if i not in ended]
    assert torn == [a for i in open_before for a in reversed(active[i])]
    assert cache.open_plans() == ()


@given(
    name=st.sampled_from(TOOL_NAMES),
    waiters=st.integers(1, 5),
    fail=st.booleans(),
)
def test_waiting_tasks_share_the_outcome_of_an_owner_in_another_thread(
    name: str, waiters: int, fail: bool
) -> None:
    """Tasks waiting on an activation owned by a thread all wake with the owner's outcome."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    activation, owner = cache.begin(ctx, name, FakeTool(name=name))
    assert owner
    go = threading.Event()
    error = OSError("refused") if fail else None
    results: list[bool] = []

    def owner_thread() -> None:
        if go.wait(WAIT):
            results.append(cache.finish(ctx, activation, error))

    async def waiter(ready: asyncio.Event) -> BaseException | None:
        shared, mine = cache.begin(ctx, name, FakeTool(name=name))
        assert shared is activation and not mine
        ready.set()
        await shared.wait_async()
        return shared.error

    async def main() -> list[BaseException | None]:
        readies = [asyncio.Event() for _ in range(waiters)]
        tasks = [asyncio.create_task(waiter(ready)) for ready in readies]
        for ready in readies:
            await asyncio.wait_for(ready.wait(), WAIT)
        go.set()
        return await asyncio.wait_for(asyncio.gather(*tasks), WAIT)

    thread = threading.Thread(target=owner_thread)
    thread.start()
    try:
        seen = asyncio.run(main())
    finally:
        go.set()
        thread.join(WAIT)
    assert not thread.is_alive()
    assert results == [not fail]
    assert seen == [error] * waiters
    assert cache.is_active(ctx.plan_id, name) is (not fail)
    torn: list[str] = []
    assert cache.end_plan(ctx, lambda a, _c: torn.append(a.name)) == []
    assert torn == ([] if fail else [name])


@given(names=st.lists(st.sampled_from(TOOL_NAMES), unique=True), cancel_at=st.integers(0, 3))
def test_async_end_tears_down_newest_first_and_reraises_a_cancellation_after_the_rest(
    names: list[str], cancel_at: int
) -> None:
    """aend_plan awaits every teardown once, newest first, even when one is cancelled."""
    cache = ToolLifecycleCache()
    ctx = make_context()
    for name in names:
        activation, _ = cache.begin(ctx, name, FakeTool(name=name))
        assert cache.finish(ctx, activation, None)
    torn: list[str] = []

    async def teardown(activation: Activation, _ctx: object) -> None:
        torn.append(activation.name)
        if activation.name == FAILING_TEARDOWN:
            raise OSError("teardown failed")
        if len(torn) == cancel_at:
            raise asyncio.CancelledError

    async def main() -> list[ToolDeactivationError] | str:
        try:
            return await cache.aend_plan(ctx, teardown)
        except asyncio.CancelledError:
            return "cancelled"

    outcome = asyncio.run(main())
    assert torn == list(reversed(names))
    cancelled = 1 <= cancel_at <= len(names) and names[-cancel_at] != FAILING_TEARDOWN
    if cancelled:
        assert outcome == "cancelled"
    else:
        assert [e.tool_name for e in outcome] == [
            n for n in reversed(names) if n == FAILING_TEARDOWN
        ]
    assert ctx.ended and cache.open_plans() == ()
