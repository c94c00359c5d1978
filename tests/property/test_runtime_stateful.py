"""A state machine drives random register/execute/cancel/end sequences over several plans.

Invariants, checked after every step and at the end:
- a tool is activated successfully at most once per plan;
- a tool is never deactivated in a plan that is still open;
- when a plan ends, each tool it activated is deactivated exactly once, in the reverse
  of the order in which the activations completed (the cache's order);
- a denied or cancelled call activates nothing;
- every call that reaches execute yields exactly one trace;
- after close(), nothing is left active.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from toolcycle import (
    NullTracer,
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCancelledError,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolRuntime,
    ToolRuntimeError,
)

from .strategies import plan_flags, thread_counts, tool_kinds

WAIT = 5.0


class Log:
    """A thread-safe record of (stage, plan id, tool name) events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, str]] = []

    def add(self, stage: str, plan_id: str, name: str) -> None:
        with self.lock:
            self.events.append((stage, plan_id, name))

    def snapshot(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return list(self.events)


class RecordingTool:
    """A sync tool that logs its stages; it may fail every activation."""

    def __init__(self, name: str, kind: str, log: Log) -> None:
        self.name = name
        self.kind = kind
        self.log = log

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            capability=ToolCapability(writes=self.kind == "writes", checkpointable=True),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        if self.kind == "fails_activation":
            self.log.add("failed_activation", ctx.plan_id, self.name)
            raise ConnectionError("unreachable")
        self.log.add("activate", ctx.plan_id, self.name)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return {"tool": self.name}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.log.add("deactivate", ctx.plan_id, self.name)


class AsyncRecordingTool(RecordingTool):
    """The same tool with async stages."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().activate(ctx)

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return {"tool": self.name}

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        super().deactivate(ctx)


class LifecycleMachine(RuleBasedStateMachine):
    """Random sequences of runtime operations across plans and threads."""

    tools = Bundle("tools")
    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
        self.log = Log()
        self.traces = 0
        self.calls = 0
        self.calls_lock = threading.Lock()
        self.runtime.add_trace_listener(self._count_trace)
        self.ids = itertools.count()
        self.open: dict[str, ToolExecutionContext] = {}
        self.ended: set[str] = set()
        self.kinds: dict[str, str] = {}

    def _count_trace(self, trace: Any) -> None:
        with self.calls_lock:
            self.traces += 1

    @rule(target=tools, kind=tool_kinds)
    def register(self, kind: str) -> str:
        name = f"tool{next(self.ids)}"
        cls = AsyncRecordingTool if kind == "async" else RecordingTool
        self.runtime.register(cls(name, kind, self.log))
        self.kinds[name] = kind
        return name

    @rule(target=plans, flags=plan_flags)
    def open_plan(self, flags: dict[str, bool]) -> str:
        plan_id = f"plan{next(self.ids)}"
        self.open[plan_id] = self.runtime.new_context(plan_id, **flags)
        return plan_id

    def _call(self, plan_id: str, name: str) -> None:
        ctx = self.open.get(plan_id)
        if ctx is None:
            return
        before = self._activations(plan_id, name)
        with self.calls_lock:
            self.calls += 1
        try:
            self.runtime.execute(name, {}, ctx)
        except (ToolAccessDeniedError, ToolCancelledError):
            assert self._activations(plan_id, name) == before, "a refused call activated"
        except (ToolActivationError, ToolRuntimeError):
            pass

    def _activations(self, plan_id: str, name: str) -> int:
        return sum(
            1
            for stage, plan, tool in self.log.snapshot()
            if stage in {"activate", "failed_activation"} and plan == plan_id and tool == name
        )

    @rule(plan_id=plans, name=tools)
    def execute(self, plan_id: str, name: str) -> None:
        self._call(plan_id, name)

    @rule(plan_id=plans, names=st.lists(tools, min_size=1, max_size=3), count=thread_counts)
    def execute_concurrently(self, plan_id: str, names: list[str], count: int) -> None:
        start = threading.Barrier(count)

        def worker(index: int) -> None:
            start.wait(WAIT)
            self._call(plan_id, names[index % len(names)])

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
            assert not thread.is_alive(), "a call did not finish"

    @rule(plan_id=plans)
    def cancel(self, plan_id: str) -> None:
        ctx = self.open.get(plan_id)
        if ctx is not None:
            ctx.cancellation_token.cancel("random cancel")

    @precondition(lambda self: bool(self.open))
    @rule(plan_id=plans)
    def end(self, plan_id: str) -> None:
        ctx = self.open.pop(plan_id, None)
        if ctx is None:
            return
        order = self.runtime.cache.active_tools(plan_id)
        assert self.runtime.end_plan(ctx) == []
        self.ended.add(plan_id)
        self._check_ended(plan_id, order)

    def _check_ended(self, plan_id: str, order: tuple[str, ...]) -> None:
        events = [(stage, tool) for stage, plan, tool in self.log.snapshot() if plan == plan_id]
        activated = [tool for stage, tool in events if stage == "activate"]
        deactivated = [tool for stage, tool in events if stage == "deactivate"]
        assert sorted(order) == sorted(activated), (order, activated)
        assert deactivated == list(reversed(order)), (order, deactivated)

    @invariant()
    def at_most_one_activation_per_plan_and_tool(self) -> None:
        counts = Counter(
            (plan, tool) for stage, plan, tool in self.log.snapshot() if stage == "activate"
        )
        assert all(count == 1 for count in counts.values()), counts

    @invariant()
    def open_plans_deactivate_nothing(self) -> None:
        for stage, plan, _ in self.log.snapshot():
            if stage == "deactivate":
                assert plan in self.ended, f"{plan} deactivated while open"

    @invariant()
    def one_trace_per_call(self) -> None:
        with self.calls_lock:
            assert self.traces == self.calls

    def teardown(self) -> None:
        orders = {plan_id: self.runtime.cache.active_tools(plan_id) for plan_id in self.open}
        self.runtime.close()
        self.ended |= set(self.open)
        for plan_id, order in orders.items():
            self._check_ended(plan_id, order)
        for plan_id in self.ended:
            assert self.runtime.cache.active_tools(plan_id) == ()
        activations = Counter(
            (plan, tool) for stage, plan, tool in self.log.snapshot() if stage == "activate"
        )
        deactivations = Counter(
            (plan, tool) for stage, plan, tool in self.log.snapshot() if stage == "deactivate"
        )
        assert activations == deactivations


LifecycleMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None, database=None
)
TestLifecycle = LifecycleMachine.TestCase
