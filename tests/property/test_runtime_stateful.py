"""A state machine drives a runtime through random lifecycles across plans and threads.

The machine registers recording tools (sync or async, reading or writing, some
whose activation fails a few times, whose ``execute`` raises or returns bad
output, or whose ``deactivate`` raises), opens plans (some read-only, some
requiring checkpoints), executes in them from the test thread, from ``aexecute``
and from a few worker threads at once, cancels plans, ends them, and finally
closes the runtime. A sequential call is checked against an exact model; a
concurrent step against the outcomes any interleaving may produce.

Invariants, checked after every step and at teardown:

- a tool is activated successfully at most once per plan while the plan is open;
- a tool is never deactivated while its plan is open, and once the plan has
  ended every activated tool has been deactivated exactly once, in the reverse
  of the cache's activation order;
- a denied, cancelled or refused call activates nothing (nothing is activated in
  a read-only plan by a writing tool, nor in a plan after its cancellation or end);
- every call of ``execute`` yields exactly one trace;
- after ``close()`` every plan has ended and nothing is left active.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from toolcycle import (
    NullTracer,
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCancelledError,
    ToolCapability,
    ToolCheckpointRequiredError,
    ToolDeactivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolNotFoundError,
    ToolResult,
    ToolRuntime,
    ToolRuntimeError,
)

from .strategies import (
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    CallArgs,
    PlanFlags,
    ToolSpec,
    call_args,
    plan_flags,
    tool_specs,
)

WAIT = 5.0
"""Seconds any wait on another thread may take before the test fails."""


@dataclass(frozen=True)
class Event:
    """One stage a tool ran: which stage, in which plan, of which tool, and whether it worked."""

    stage: str
    plan_id: str
    tool: str
    ok: bool = True


class Journal:
    """The ordered, thread-safe record of every stage every tool ran.

    It also lines up racing calls: during a concurrent step, an ``activate`` of a
    tool in a plan holds back (for at most `WAIT` seconds) until every worker that
    calls that tool in that plan has entered ``execute``, so that the others
    arrive while the activation is still in flight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._arrivals = threading.Condition()
        self._expected: Counter[tuple[str, str]] = Counter()
        self._entered: Counter[tuple[str, str]] = Counter()

    def expect(self, keys: list[tuple[str, str]]) -> None:
        """Start a concurrent step whose workers call these (plan id, tool) pairs."""
        with self._arrivals:
            self._expected = Counter(keys)
            self._entered = Counter()

    def enter(self, key: tuple[str, str]) -> None:
        """A worker is about to call ``execute`` for (plan id, tool)."""
        with self._arrivals:
            self._entered[key] += 1
            self._arrivals.notify_all()

    def await_peers(self, key: tuple[str, str]) -> None:
        """Hold an activation back until every worker for ``key`` has entered."""
        with self._arrivals:
            arrived = self._arrivals.wait_for(
                lambda: self._entered[key] >= self._expected[key], WAIT
            )
        assert arrived, f"the workers calling {key} never all arrived"

    def add(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self._events)


class RecordingTool:
    """A sync tool that journals each stage and behaves as its `ToolSpec` says."""

    def __init__(self, name: str, spec: ToolSpec, journal: Journal) -> None:
        self.name = name
        self.spec = spec
        self.journal = journal
        self._lock = threading.Lock()
        self.failures_left = spec.activation_failures

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            description=f"recording tool {self.name}",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            capability=ToolCapability(
                writes=self.spec.writes, checkpointable=self.spec.checkpointable
            ),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.journal.await_peers((ctx.plan_id, self.name))
        with self._lock:
            fail = self.failures_left > 0
            self.failures_left -= fail
        self.journal.add(Event("activate", ctx.plan_id, self.name, ok=not fail))
        if fail:
            raise ConnectionError(f"{self.name} is unreachable")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.journal.add(Event("execute", ctx.plan_id, self.name))
        if self.spec.execute_fails:
            raise RuntimeError(f"{self.name} broke")
        if self.spec.bad_output:
            return {"n": str(params["n"]), "tool": self.name}
        return {"n": params["n"], "tool": self.name}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.journal.add(Event("deactivate", ctx.plan_id, self.name))
        if self.spec.deactivate_fails:
            raise OSError(f"{self.name} would not let go")


class AsyncRecordingTool(RecordingTool):
    """The same tool with ``async def`` stages."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().activate(ctx)

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().execute(params, ctx)

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().deactivate(ctx)


@dataclass(eq=False)
class ToolHandle:
    """A registered tool as the machine sees it."""

    name: str
    spec: ToolSpec
    instance: RecordingTool

    def __repr__(self) -> str:
        return f"<tool {self.name}>"


@dataclass(eq=False)
class PlanHandle:
    """An opened plan and the machine's model of it."""

    ctx: ToolExecutionContext
    flags: PlanFlags
    active: list[str] = field(default_factory=list)
    """Tools active in the plan, in the cache's order."""
    cancelled_at: int | None = None
    """Journal length when the plan was cancelled."""
    ended_at: int | None = None
    """Journal length when the plan ended."""

    @property
    def plan_id(self) -> str:
        return self.ctx.plan_id

    def __repr__(self) -> str:
        return f"<plan {self.plan_id}>"


@dataclass(frozen=True)
class Expected:
    """What one call should do, given the model before it."""

    refusal: type[BaseException] | None = None
    """The exception the call raises before anything runs, if any."""
    activates: bool = False
    """The call starts an activation of the tool."""
    activation_fails: bool = False
    runs: bool = False
    """The tool's ``execute`` runs."""
    status: str = "ok"


_REFUSAL_STATUS = {
    ToolRuntimeError: "error",
    ToolCancelledError: "cancelled",
    ToolAccessDeniedError: "denied",
    ToolCheckpointRequiredError: "denied",
    ToolActivationError: "error",
    ToolNotFoundError: "error",
}


def _status_of(outcome: ToolResult | BaseException) -> str:
    """The trace status a call's outcome implies."""
    if isinstance(outcome, ToolResult):
        return outcome.trace.status if outcome.trace else "missing"
    return _REFUSAL_STATUS[type(outcome)]


class RuntimeLifecycle(RuleBasedStateMachine):
    """Random sequences of register, execute, cancel, end and (at the end) close."""

    tools = Bundle("tools")
    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
        self.journal = Journal()
        self.traces: list[ToolExecutionTrace] = []
        self._traces_lock = threading.Lock()
        self.runtime.add_trace_listener(self._on_trace)
        self.calls = 0
        self.ids = itertools.count()
        self.all_tools: list[ToolHandle] = []
        self.all_plans: list[PlanHandle] = []

    def _on_trace(self, trace: ToolExecutionTrace) -> None:
        with self._traces_lock:
            self.traces.append(trace)

    def _trace_snapshot(self) -> list[ToolExecutionTrace]:
        with self._traces_lock:
            return list(self.traces)

    # -- building blocks ---------------------------------------------------------------

    def _register(self, spec: ToolSpec) -> ToolHandle:
        name = f"t{next(self.ids)}"
        cls = AsyncRecordingTool if spec.is_async else RecordingTool
        instance = cls(name, spec, self.journal)
        descriptor = self.runtime.register(instance)
        assert descriptor.name == name
        assert descriptor.capability.writes is spec.writes
        handle = ToolHandle(name, spec, instance)
        self.all_tools.append(handle)
        return handle

    def _open(self, flags: PlanFlags) -> PlanHandle:
        ctx = self.runtime.new_context(
            f"p{next(self.ids)}",
            read_only=flags.read_only,
            requires_checkpoint=flags.requires_checkpoint,
        )
        plan = PlanHandle(ctx, flags)
        self.all_plans.append(plan)
        return plan

    def _expect(self, plan: PlanHandle, tool: ToolHandle, args: CallArgs) -> Expected:
        """The exact outcome of a call made with nothing else running."""
        if plan.ended_at is not None:
            return Expected(refusal=ToolRuntimeError, status="error")
        if plan.cancelled_at is not None:
            return Expected(refusal=ToolCancelledError, status="cancelled")
        if plan.flags.read_only and tool.spec.writes:
            return Expected(refusal=ToolAccessDeniedError, status="denied")
        if plan.flags.requires_checkpoint and tool.spec.writes and not tool.spec.checkpointable:
            return Expected(refusal=ToolCheckpointRequiredError, status="denied")
        activates = tool.name not in plan.active
        if activates and tool.instance.failures_left > 0:
            return Expected(
                refusal=ToolActivationError, activates=True, activation_fails=True, status="error"
            )
        if not args.valid:
            return Expected(activates=activates, status="invalid_input")
        return Expected(
            activates=activates, runs=True, status="error" if tool.spec.execute_fails else "ok"
        )

    def _call(self, plan: PlanHandle, tool: ToolHandle, args: CallArgs) -> ToolResult | Exception:
        try:
            return self.runtime.execute(tool.name, args.params, plan.ctx)
        except (ToolRuntimeError, ToolCancelledError) as exc:
            return exc

    def _check_result(self, tool: ToolHandle, args: CallArgs, result: ToolResult) -> None:
        assert result.trace is not None
        assert result.trace.tool_name == tool.name
        if result.trace.status == "invalid_input":
            assert not args.valid and not result.success
            assert result.validation is not None and not result.validation.valid
        elif tool.spec.execute_fails:
            assert not result.success and result.error_type == "RuntimeError"
        else:
            assert result.success, result.error
            assert result.trace.output_valid is (not tool.spec.bad_output)
            assert result.output["tool"] == tool.name

    def _check_sequential(
        self,
        plan: PlanHandle,
        tool: ToolHandle,
        args: CallArgs,
        expected: Expected,
        outcome: ToolResult | Exception,
        new_events: list[Event],
        new_traces: list[ToolExecutionTrace],
    ) -> None:
        if expected.refusal is not None:
            assert type(outcome) is expected.refusal, (expected, outcome)
        else:
            assert isinstance(outcome, ToolResult), (expected, outcome)
            self._check_result(tool, args, outcome)
        wanted: list[Event] = []
        if expected.activates:
            wanted.append(
                Event("activate", plan.plan_id, tool.name, ok=not expected.activation_fails)
            )
        if expected.runs:
            wanted.append(Event("execute", plan.plan_id, tool.name))
        assert new_events == wanted, (new_events, wanted)
        assert len(new_traces) == 1, new_traces
        (trace,) = new_traces
        assert trace.status == expected.status, (trace, expected)
        assert (trace.tool_name, trace.plan_id) == (tool.name, plan.plan_id)
        if isinstance(outcome, ToolResult):
            assert outcome.trace == trace

    def _check_end(
        self, plan: PlanHandle, errors: list[ToolDeactivationError], order: tuple[str, ...]
    ) -> None:
        """Check the deactivations one end of an open plan produced."""
        assert plan.ctx.ended
        start = plan.ended_at
        assert start is not None
        ours = [e for e in self.journal.snapshot()[start:] if e.plan_id == plan.plan_id]
        assert ours == [Event("deactivate", plan.plan_id, name) for name in reversed(order)]
        failing = {t.name for t in self.all_tools if t.spec.deactivate_fails}
        assert sorted(e.tool_name or "" for e in errors) == sorted(n for n in order if n in failing)
        assert all(e.plan_id == plan.plan_id for e in errors)

    # -- rules -------------------------------------------------------------------------

    @initialize(target=tools, spec=tool_specs())
    def first_tool(self, spec: ToolSpec) -> ToolHandle:
        return self._register(spec)

    @initialize(target=tools, spec=tool_specs())
    def second_tool(self, spec: ToolSpec) -> ToolHandle:
        return self._register(spec)

    @initialize(target=plans, flags=plan_flags())
    def first_plan(self, flags: PlanFlags) -> PlanHandle:
        return self._open(flags)

    @initialize(target=plans, flags=plan_flags())
    def second_plan(self, flags: PlanFlags) -> PlanHandle:
        return self._open(flags)

    @rule(target=tools, spec=tool_specs())
    def register_tool(self, spec: ToolSpec) -> ToolHandle:
        return self._register(spec)

    @rule(target=plans, flags=plan_flags())
    def open_plan(self, flags: PlanFlags) -> PlanHandle:
        return self._open(flags)

    def _sequential(
        self, plan: PlanHandle, tool: ToolHandle, args: CallArgs, *, use_async: bool
    ) -> None:
        """One call with nothing else running, checked against the exact model."""
        expected = self._expect(plan, tool, args)
        events, traces = len(self.journal.snapshot()), len(self._trace_snapshot())
        self.calls += 1
        if use_async:

            async def call() -> ToolResult | Exception:
                try:
                    return await asyncio.wait_for(
                        self.runtime.aexecute(tool.name, args.params, plan.ctx), WAIT
                    )
                except (ToolRuntimeError, ToolCancelledError) as exc:
                    return exc

            outcome = asyncio.run(call())
        else:
            outcome = self._call(plan, tool, args)
        self._check_sequential(
            plan,
            tool,
            args,
            expected,
            outcome,
            self.journal.snapshot()[events:],
            self._trace_snapshot()[traces:],
        )
        if expected.activates and not expected.activation_fails:
            plan.active.append(tool.name)

    @rule(plan=plans, tool=tools, args=call_args(), use_async=st.booleans())
    def execute(self, plan: PlanHandle, tool: ToolHandle, args: CallArgs, use_async: bool) -> None:
        self._sequential(plan, tool, args, use_async=use_async)

    @precondition(lambda self: any(p.ended_at is None for p in self.all_plans))
    @rule(data=st.data(), tool=tools, args=call_args(), use_async=st.booleans())
    def execute_in_open_plan(
        self, data: st.DataObject, tool: ToolHandle, args: CallArgs, use_async: bool
    ) -> None:
        """The same, biased towards plans that can still run something."""
        open_plans = [p for p in self.all_plans if p.ended_at is None]
        plan = data.draw(st.sampled_from(open_plans), label="plan")
        self._sequential(plan, tool, args, use_async=use_async)

    @rule(
        data=st.data(),
        calls=st.lists(st.tuples(plans, tools, call_args()), min_size=2, max_size=4),
        same_plan=st.booleans(),
    )
    def execute_from_threads(
        self,
        data: st.DataObject,
        calls: list[tuple[PlanHandle, ToolHandle, CallArgs]],
        same_plan: bool,
    ) -> None:
        """Each call on its own worker thread, all released together.

        With ``same_plan`` every call goes to one plan, an open one if there is
        any, so that the threads race for the same activations.
        """
        if same_plan:
            open_plans = [p for p in self.all_plans if p.ended_at is None] or self.all_plans
            plan = data.draw(st.sampled_from(open_plans), label="plan")
            calls = [(plan, tool, args) for _, tool, args in calls]
        active_before = {id(plan): list(plan.active) for plan, _, _ in calls}
        failures_before = {id(tool): tool.instance.failures_left for _, tool, _ in calls}
        events, traces = len(self.journal.snapshot()), len(self._trace_snapshot())
        outcomes: list[ToolResult | BaseException | None] = [None] * len(calls)
        start = threading.Barrier(len(calls))

        def worker(index: int) -> None:
            plan, tool, args = calls[index]
            try:
                start.wait(WAIT)
                self.journal.enter((plan.plan_id, tool.name))
                outcomes[index] = self._call(plan, tool, args)
            except BaseException as exc:  # surfaced by the checks below
                outcomes[index] = exc

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
        self.calls += len(calls)
        self.journal.expect([(plan.plan_id, tool.name) for plan, tool, _ in calls])
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(2 * WAIT)
                assert not thread.is_alive(), "a concurrent call did not finish in time"
        finally:
            self.journal.expect([])

        new_events = self.journal.snapshot()[events:]
        new_traces = self._trace_snapshot()[traces:]
        for (plan, tool, args), outcome in zip(calls, outcomes, strict=True):
            assert outcome is not None
            model = PlanHandle(plan.ctx, plan.flags, active_before[id(plan)])
            model.cancelled_at, model.ended_at = plan.cancelled_at, plan.ended_at
            expected = self._expect(model, tool, args)
            if expected.refusal is not None and not expected.activation_fails:
                assert type(outcome) is expected.refusal, (expected, outcome)
            elif isinstance(outcome, ToolActivationError):
                assert expected.activates and failures_before[id(tool)] > 0, (expected, outcome)
            else:
                assert isinstance(outcome, ToolResult), (expected, outcome)
                self._check_result(tool, args, outcome)
                assert outcome.trace in new_traces
        # One trace per call, with the statuses the outcomes imply.
        assert len(new_traces) == len(calls)
        statuses = Counter(_status_of(o) for o in outcomes if o is not None)
        assert Counter(t.status for t in new_traces) == statuses
        # The tool ran once per result that got past input validation.
        runs = sum(
            isinstance(o, ToolResult) and o.trace is not None and o.trace.status != "invalid_input"
            for o in outcomes
        )
        assert sum(e.stage == "execute" for e in new_events) == runs
        # Every activation failure was reported to at least its owner, and only those.
        for plan, tool, _ in calls:
            failed = [
                e
                for e in new_events
                if (e.stage, e.plan_id, e.tool, e.ok)
                == ("activate", plan.plan_id, tool.name, False)
            ]
            reported = [
                o
                for (p, t, _), o in zip(calls, outcomes, strict=True)
                if p is plan and t is tool and isinstance(o, ToolActivationError)
            ]
            assert bool(failed) == bool(reported), (failed, reported)
        # Bring the model up to date with the cache's order.
        for plan, _, _ in calls:
            if plan.ended_at is None:
                order = self.runtime.cache.active_tools(plan.plan_id)
                assert list(order[: len(active_before[id(plan)])]) == active_before[id(plan)]
                plan.active = list(order)

    @rule(plan=plans, how=st.sampled_from(("cancel", "end", "aend", "cancel_and_end")))
    def stop_plan(self, plan: PlanHandle, how: str) -> None:
        """Cancel the plan's token, end the plan (sync or async), or both."""
        if how.startswith("cancel"):
            self._cancel(plan)
        if how.endswith("end"):
            self._end_plan(plan, use_async=how == "aend")

    def _cancel(self, plan: PlanHandle) -> None:
        first = plan.ctx.cancellation_token.cancel("cancelled by the machine")
        assert first is (plan.cancelled_at is None)
        if plan.cancelled_at is None:
            plan.cancelled_at = len(self.journal.snapshot())

    def _end_plan(self, plan: PlanHandle, *, use_async: bool) -> None:
        def end() -> list[ToolDeactivationError]:
            if use_async:
                return asyncio.run(self.runtime.aend_plan(plan.ctx))
            return self.runtime.end_plan(plan.ctx)

        events = len(self.journal.snapshot())
        if plan.ended_at is not None:
            assert end() == []
            assert self.journal.snapshot()[events:] == [], "a second end deactivated again"
            return
        order = self.runtime.cache.active_tools(plan.plan_id)
        assert list(order) == plan.active
        plan.ended_at = events
        self._check_end(plan, end(), order)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def activated_at_most_once_per_open_plan_and_never_deactivated_early(self) -> None:
        events = self.journal.snapshot()
        activations = Counter((e.plan_id, e.tool) for e in events if e.stage == "activate" and e.ok)
        deactivations = Counter((e.plan_id, e.tool) for e in events if e.stage == "deactivate")
        for plan in self.all_plans:
            for tool in self.all_tools:
                key = (plan.plan_id, tool.name)
                assert activations[key] <= 1, key
                if plan.ended_at is None:
                    assert deactivations[key] == 0, f"{key} deactivated while its plan is open"
                else:
                    assert deactivations[key] == activations[key], key

    @invariant()
    def refused_plans_activate_nothing(self) -> None:
        events = self.journal.snapshot()
        writers = {t.name for t in self.all_tools if t.spec.writes}
        for plan in self.all_plans:
            ours = [(i, e) for i, e in enumerate(events) if e.plan_id == plan.plan_id]
            if plan.flags.read_only:
                assert not any(e.tool in writers for _, e in ours), "a read-only plan ran a writer"
            for mark in (plan.cancelled_at, plan.ended_at):
                if mark is not None:
                    assert not any(i >= mark and e.stage != "deactivate" for i, e in ours)

    @invariant()
    def model_matches_the_cache(self) -> None:
        for plan in self.all_plans:
            expected = tuple(plan.active) if plan.ended_at is None else ()
            assert self.runtime.cache.active_tools(plan.plan_id) == expected

    @invariant()
    def one_trace_per_call(self) -> None:
        assert len(self._trace_snapshot()) == self.calls

    def teardown(self) -> None:
        try:
            still_open = [p for p in self.all_plans if p.ended_at is None]
            orders = {id(p): self.runtime.cache.active_tools(p.plan_id) for p in still_open}
            events = len(self.journal.snapshot())
            self.runtime.close()
            closing = self.journal.snapshot()[events:]
            for plan in still_open:
                ours = [e for e in closing if e.plan_id == plan.plan_id]
                want = [Event("deactivate", plan.plan_id, n) for n in reversed(orders[id(plan)])]
                assert ours == want, (ours, want)
                plan.ended_at = events
            assert all(p.ctx.ended for p in self.all_plans)
            assert self.runtime.cache.open_plans() == ()
            self.activated_at_most_once_per_open_plan_and_never_deactivated_early()
            self.model_matches_the_cache()
            if self.all_tools and self.all_plans:
                traces = len(self._trace_snapshot())
                self.calls += 1
                outcome = self._call(self.all_plans[0], self.all_tools[0], CallArgs({"n": 1}, True))
                assert type(outcome) is ToolRuntimeError, outcome
                assert len(self._trace_snapshot()) == traces + 1
            self.one_trace_per_call()
        finally:
            self.runtime.close()


def test_random_lifecycles_keep_activation_deactivation_and_trace_invariants() -> None:
    """Any sequence of lifecycle operations, across plans and threads, keeps the invariants."""
    run_state_machine_as_test(RuntimeLifecycle)
