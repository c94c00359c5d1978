"""The execute pipeline, step by step, and the runtime's registration and plan API."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolcycle import (
    Change,
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCancelledError,
    ToolCapability,
    ToolCheckpointRequiredError,
    ToolDeactivationError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionError,
    ToolNotActivatedError,
    ToolNotFoundError,
    ToolRegistrationError,
    ToolResult,
    ToolRuntime,
    ToolRuntimeError,
    ToolSchemaValidationError,
)
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0
INT_SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
}


class AsyncTool:
    """An async tool whose execute waits on an event when asked to."""

    def __init__(self, name: str = "async") -> None:
        self.name = name
        self.started = asyncio.Event()
        self.release: asyncio.Event | None = None
        self.cancelled = False
        self.stages: list[str] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            input_schema={"type": "object"},
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("activate")

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.stages.append("execute")
        if params.get("block"):
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return {"echo": params}

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")


def test_execute_returns_output_and_trace(runtime: ToolRuntime) -> None:
    """A successful call returns the tool's output and an ok trace of the output's size."""
    runtime.register(FakeTool(name="echo", output={"a": "é"}))
    with runtime.plan("p") as ctx:
        result = runtime.execute("echo", {}, ctx)
    assert result.success and result.output == {"a": "é"}
    assert result.trace is not None
    assert result.trace.status == "ok"
    assert result.trace.result_size_bytes == len('{"a":"é"}'.encode())
    assert result.trace.plan_id == "p" and result.trace.tool_name == "echo"


def test_unknown_tool_raises_not_found_after_a_trace(runtime: ToolRuntime) -> None:
    """An unknown name raises ToolNotFoundError, and the attempt is still traced."""
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        with pytest.raises(ToolNotFoundError) as info:
            runtime.execute("nope", {}, ctx)
    assert info.value.tool_name == "nope"
    assert [t.status for t in traces] == ["error"]


def test_cancelled_plan_activates_nothing(runtime: ToolRuntime) -> None:
    """A cancelled token raises ToolCancelledError before activation."""
    tool = FakeTool()
    runtime.register(tool)
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        ctx.cancellation_token.cancel("stop")
        with pytest.raises(ToolCancelledError) as info:
            runtime.execute("fake", {}, ctx)
    assert info.value.reason == "stop"
    assert tool.count("activate") == 0
    assert traces[0].status == "cancelled"


def test_read_only_denial_starts_nothing(runtime: ToolRuntime) -> None:
    """A writing tool in a read-only plan is denied before it is activated."""
    tool = FakeTool(writes=True)
    runtime.register(tool)
    with capture_traces(runtime) as traces, runtime.plan(read_only=True) as ctx:
        with pytest.raises(ToolAccessDeniedError):
            runtime.execute("fake", {}, ctx)
    assert tool.count("activate") == 0
    assert traces[0].status == "denied" and traces[0].error_type == "ToolAccessDeniedError"


def test_checkpoint_denial_starts_nothing(runtime: ToolRuntime) -> None:
    """A tool that writes and cannot be rolled back is denied in a checkpoint plan."""
    tool = FakeTool(writes=True, checkpointable=False)
    runtime.register(tool)
    with runtime.plan(requires_checkpoint=True) as ctx:
        with pytest.raises(ToolCheckpointRequiredError):
            runtime.execute("fake", {}, ctx)
    assert tool.count("activate") == 0


def test_activation_happens_once_per_plan(runtime: ToolRuntime) -> None:
    """Three calls in one plan activate once; a second plan activates again."""
    tool = FakeTool()
    runtime.register(tool)
    with runtime.plan("a") as ctx:
        for _ in range(3):
            runtime.execute("fake", {}, ctx)
        assert runtime.cache.active_tools("a") == ("fake",)
    with runtime.plan("b") as ctx:
        runtime.execute("fake", {}, ctx)
    assert tool.stages("a") == ["activate", "execute", "execute", "execute", "deactivate"]
    assert tool.stages("b") == ["activate", "execute", "deactivate"]


def test_failed_activation_is_not_cached(runtime: ToolRuntime) -> None:
    """A failed activation raises ToolActivationError and the next call tries again."""
    tool = FakeTool(activate_error=RuntimeError("boom"))
    runtime.register(tool)
    with runtime.plan() as ctx:
        with pytest.raises(ToolActivationError) as info:
            runtime.execute("fake", {}, ctx)
        assert isinstance(info.value.__cause__, RuntimeError)
        tool.activate_error = None
        assert runtime.execute("fake", {}, ctx).success
    assert tool.count("activate") == 2
    assert tool.count("deactivate") == 1


def test_concurrent_first_calls_activate_once() -> None:
    """Threads that make the first call together share one activation."""
    entered = threading.Event()
    release = threading.Event()
    activations: list[str] = []

    class SlowActivate(FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            activations.append(ctx.plan_id)
            entered.set()
            assert release.wait(WAIT)

    with ToolRuntime() as runtime:
        runtime.register(SlowActivate())
        results: list[bool] = []
        with runtime.plan() as ctx:
            first = threading.Thread(
                target=lambda: results.append(runtime.execute("fake", {}, ctx).success)
            )
            first.start()
            assert entered.wait(WAIT)
            others = [
                threading.Thread(
                    target=lambda: results.append(runtime.execute("fake", {}, ctx).success)
                )
                for _ in range(4)
            ]
            for thread in others:
                thread.start()
            release.set()
            for thread in [first, *others]:
                thread.join(WAIT)
                assert not thread.is_alive()
    assert activations == [ctx.plan_id]
    assert results == [True] * 5


def test_waiters_share_a_failed_activation() -> None:
    """Calls waiting on an activation that fails all raise ToolActivationError."""
    entered = threading.Event()
    release = threading.Event()

    class FailingActivate(FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            entered.set()
            assert release.wait(WAIT)
            raise OSError("no server")

    errors: list[BaseException] = []

    def call(runtime: ToolRuntime, ctx: ToolExecutionContext) -> None:
        try:
            runtime.execute("fake", {}, ctx)
        except ToolActivationError as exc:
            errors.append(exc)

    with ToolRuntime() as runtime:
        runtime.register(FailingActivate())
        with runtime.plan() as ctx:
            owner = threading.Thread(target=call, args=(runtime, ctx))
            owner.start()
            assert entered.wait(WAIT)
            waiter = threading.Thread(target=call, args=(runtime, ctx))
            waiter.start()
            release.set()
            owner.join(WAIT)
            waiter.join(WAIT)
    assert len(errors) == 2


def test_invalid_input_is_a_failed_result_and_the_tool_does_not_run(runtime: ToolRuntime) -> None:
    """Arguments that fail the schema give a failed result with the Validation."""
    tool = FakeTool(input_schema=INT_SCHEMA)
    runtime.register(tool)
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {"x": "one"}, ctx)
    assert not result.success
    assert result.validation is not None
    assert result.validation.issues[0].pointer == "/x"
    assert result.validation.issues[0].keyword == "type"
    assert result.trace is not None and result.trace.status == "invalid_input"
    assert tool.count("execute") == 0


@pytest.mark.parametrize("params", [["x"], None, 3, "text"])
def test_params_that_are_not_an_object_are_invalid_input(runtime: ToolRuntime, params: Any) -> None:
    """Arguments that are not a mapping are rejected as invalid input."""
    runtime.register(FakeTool())
    with runtime.plan() as ctx:
        result = runtime.execute("fake", params, ctx)
    assert result.validation is not None and result.validation.issues[0].keyword == "type"


def test_params_that_are_not_json_are_invalid_input(runtime: ToolRuntime) -> None:
    """A NaN or an object in the arguments is rejected with its pointer."""
    runtime.register(FakeTool())
    with runtime.plan() as ctx:
        nan = runtime.execute("fake", {"a": [1, float("nan")]}, ctx)
        obj = runtime.execute("fake", {"b": object()}, ctx)
    assert nan.validation is not None and nan.validation.issues[0].pointer == "/a/1"
    assert obj.validation is not None and obj.validation.issues[0].pointer == "/b"


def test_params_are_never_mutated(runtime: ToolRuntime) -> None:
    """The tool receives a copy; what it does to it never reaches the caller."""

    def mutate(params: dict[str, Any], ctx: ToolExecutionContext) -> None:
        params["items"].append(99)
        params["new"] = True

    runtime.register(FakeTool(output=mutate))
    params = {"items": [1, 2], "nested": ("a", "b")}
    with runtime.plan() as ctx:
        runtime.execute("fake", params, ctx)
    assert params == {"items": [1, 2], "nested": ("a", "b")}


def test_tool_exception_becomes_a_failed_result(runtime: ToolRuntime) -> None:
    """An exception from the tool body is a failed result that can be re-raised."""
    runtime.register(FakeTool(execute_error=KeyError("missing")))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert not result.success and result.error_type == "KeyError"
    assert isinstance(result.exception, KeyError)
    with pytest.raises(ToolExecutionError) as info:
        result.raise_for_error()
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.tool_name == "fake"


def test_tool_reporting_failure_with_a_result(runtime: ToolRuntime) -> None:
    """A tool that returns a failed ToolResult yields a failed result with its message."""
    runtime.register(FakeTool(output=ToolResult(success=False, error="disk full")))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert not result.success and result.error == "disk full"
    assert result.trace is not None and result.trace.status == "error"


def test_tool_raising_cancelled_propagates(runtime: ToolRuntime) -> None:
    """A ToolCancelledError raised mid-run propagates, with a cancelled trace."""
    runtime.register(FakeTool(execute_error=ToolCancelledError("stopped")))
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        with pytest.raises(ToolCancelledError) as info:
            runtime.execute("fake", {}, ctx)
    assert info.value.tool_name == "fake"
    assert traces[-1].status == "cancelled"


@pytest.mark.parametrize(
    ("output", "expected"),
    [((1, 2), [1, 2]), ({"t": (1,)}, {"t": [1]}), (None, None)],
)
def test_output_is_normalised(runtime: ToolRuntime, output: Any, expected: Any) -> None:
    """Tuples in the output become lists before validation and measuring."""
    runtime.register(FakeTool(output=output))
    with runtime.plan() as ctx:
        assert runtime.execute("fake", {}, ctx).output == expected


@pytest.mark.parametrize("output", [float("inf"), {1: "a"}, {"s": {1, 2}}])
def test_output_that_is_not_json_fails_the_call(runtime: ToolRuntime, output: Any) -> None:
    """Output that is not strict JSON is a failed result of type ToolOutputError."""
    runtime.register(FakeTool(output=output))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert not result.success and result.error_type == "ToolOutputError"


def test_output_mismatch_warns_and_is_recorded(runtime: ToolRuntime) -> None:
    """Output against the output schema is checked; a mismatch keeps success by default."""
    runtime.register(FakeTool(output="text", output_schema={"type": "integer"}))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert result.success
    assert result.trace is not None and result.trace.output_valid is False


def test_strict_output_fails_a_mismatch() -> None:
    """With strict_output, an output mismatch is a failed result."""
    with ToolRuntime(strict_output=True) as runtime:
        runtime.register(FakeTool(output="text", output_schema={"type": "integer"}))
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {}, ctx)
    assert not result.success and result.error_type == "ToolSchemaValidationError"


def test_output_valid_is_true_when_checked_and_none_without_schema(runtime: ToolRuntime) -> None:
    """output_valid is True for a matching output and None when there is no schema."""
    runtime.register(FakeTool(name="typed", output=3, output_schema={"type": "integer"}))
    runtime.register(FakeTool(name="untyped", output=3))
    with runtime.plan() as ctx:
        typed = runtime.execute("typed", {}, ctx).trace
        untyped = runtime.execute("untyped", {}, ctx).trace
    assert typed is not None and typed.output_valid is True
    assert untyped is not None and untyped.output_valid is None


def test_changes_land_in_order_in_context_and_result(runtime: ToolRuntime) -> None:
    """Recorded and returned changes reach ctx.changes and the call's result, in order."""
    first, second, third = (Change(kind="write", target=str(i)) for i in range(3))
    runtime.register(FakeTool(name="records", changes=(first, second)))
    runtime.register(FakeTool(name="returns", output=ToolResult(success=True, changes=(third,))))
    with runtime.plan() as ctx:
        recorded = runtime.execute("records", {}, ctx)
        returned = runtime.execute("returns", {}, ctx)
        stamped = tuple(c.model_copy(update={"recorded_at": None}) for c in ctx.changes)
    # Recorded and returned changes alike get the calling tool's name and a time.
    assert stamped == (
        first.model_copy(update={"tool_name": "records"}),
        second.model_copy(update={"tool_name": "records"}),
        third.model_copy(update={"tool_name": "returns"}),
    )
    assert all(change.recorded_at for change in ctx.changes)
    assert recorded.changes == ctx.changes[:2]
    assert returned.changes == ctx.changes[2:]


def test_end_plan_deactivates_in_reverse_order_once(runtime: ToolRuntime) -> None:
    """Plan end deactivates newest first, and a second end does nothing."""
    order: list[str] = []

    class Ordered(FakeTool):
        def deactivate(self, ctx: ToolExecutionContext) -> None:
            order.append(self.name)

    for name in ("a", "b", "c"):
        runtime.register(Ordered(name=name))
    ctx = runtime.new_context()
    for name in ("b", "a", "c"):
        runtime.execute(name, {}, ctx)
    assert runtime.end_plan(ctx) == []
    assert runtime.end_plan(ctx) == []
    assert order == ["c", "a", "b"]


def test_failing_deactivate_is_collected_and_others_still_run(runtime: ToolRuntime) -> None:
    """A deactivate that raises is returned as ToolDeactivationError; the rest still run."""
    bad = FakeTool(name="bad", deactivate_error=OSError("stuck"))
    good = FakeTool(name="good")
    runtime.register(good)
    runtime.register(bad)
    ctx = runtime.new_context()
    runtime.execute("good", {}, ctx)
    runtime.execute("bad", {}, ctx)
    errors = runtime.end_plan(ctx)
    assert [type(e) for e in errors] == [ToolDeactivationError]
    assert errors[0].tool_name == "bad" and isinstance(errors[0].__cause__, OSError)
    assert good.count("deactivate") == 1


def test_hanging_deactivate_is_abandoned_after_the_timeout() -> None:
    """A deactivate that never returns is reported, and the others still run."""
    never = threading.Event()

    class Hangs(FakeTool):
        def deactivate(self, ctx: ToolExecutionContext) -> None:
            never.wait(WAIT)

    good = FakeTool(name="good")
    try:
        with ToolRuntime(deactivate_timeout=0.05) as runtime:
            runtime.register(good)
            runtime.register(Hangs(name="hangs"))
            ctx = runtime.new_context()
            runtime.execute("good", {}, ctx)
            runtime.execute("hangs", {}, ctx)
            errors = runtime.end_plan(ctx)
    finally:
        never.set()
    assert [e.tool_name for e in errors] == ["hangs"]
    assert "did not finish" in str(errors[0])
    assert good.count("deactivate") == 1


def test_execute_on_an_ended_plan_is_an_error(runtime: ToolRuntime) -> None:
    """After end_plan, execute raises ToolRuntimeError and activates nothing."""
    tool = FakeTool()
    runtime.register(tool)
    with runtime.plan() as ctx:
        pass
    with pytest.raises(ToolRuntimeError, match="has ended"):
        runtime.execute("fake", {}, ctx)
    assert tool.count("activate") == 0


def test_close_ends_every_open_plan_and_refuses_more_work() -> None:
    """close() deactivates tools of all open plans and later calls raise."""
    tool = FakeTool()
    runtime = ToolRuntime()
    runtime.register(tool)
    one, two = runtime.new_context("one"), runtime.new_context("two")
    runtime.execute("fake", {}, one)
    runtime.execute("fake", {}, two)
    runtime.close()
    runtime.close()
    assert tool.count("deactivate") == 2
    assert one.ended and two.ended
    with pytest.raises(ToolRuntimeError):
        runtime.register(FakeTool(name="late"))


def test_plan_scope_ends_the_plan_when_the_block_raises(runtime: ToolRuntime) -> None:
    """Leaving a plan block by an exception still deactivates its tools."""
    tool = FakeTool()
    runtime.register(tool)
    with pytest.raises(ZeroDivisionError), runtime.plan() as ctx:
        runtime.execute("fake", {}, ctx)
        _ = 1 / 0
    assert tool.count("deactivate") == 1


def test_plan_scope_ends_the_plan_on_keyboard_interrupt(runtime: ToolRuntime) -> None:
    """A KeyboardInterrupt inside a plan block still deactivates its tools."""
    tool = FakeTool()
    runtime.register(tool)
    with pytest.raises(KeyboardInterrupt), runtime.plan() as ctx:
        runtime.execute("fake", {}, ctx)
        raise KeyboardInterrupt
    assert tool.count("deactivate") == 1


def test_register_rejects_duplicates_and_non_tools(runtime: ToolRuntime) -> None:
    """A taken name and an object without the four methods are refused."""
    runtime.register(FakeTool())
    with pytest.raises(ToolRegistrationError, match="already registered"):
        runtime.register(FakeTool())
    with pytest.raises(TypeError, match="not a tool"):
        runtime.register(object())  # type: ignore[arg-type]


def test_register_reports_a_discover_that_raises_or_returns_garbage(runtime: ToolRuntime) -> None:
    """discover() raising or returning a non-descriptor is a registration error."""

    class Raises(FakeTool):
        def discover(self) -> ToolDescriptor:
            raise ValueError("broken")

    class Garbage(FakeTool):
        def discover(self) -> ToolDescriptor:
            return {"name": "x"}  # type: ignore[return-value]

    with pytest.raises(ToolRegistrationError) as raised:
        runtime.register(Raises())
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(ToolRegistrationError, match="must return"):
        runtime.register(Garbage())
    assert runtime.descriptors() == ()


def test_register_rejects_a_bad_schema_at_registration(runtime: ToolRuntime) -> None:
    """A schema that is not valid 2020-12 fails registration, naming the tool."""
    with pytest.raises(ToolSchemaValidationError) as info:
        runtime.register(FakeTool(input_schema={"type": "strin"}))
    assert info.value.tool_name == "fake" and info.value.schema_kind == "input"
    with pytest.raises(ToolSchemaValidationError) as out:
        runtime.register(FakeTool(output_schema={"$ref": "https://example.com/s.json"}))
    assert out.value.schema_kind == "output"


def test_registered_schema_is_a_private_copy(runtime: ToolRuntime) -> None:
    """Editing the tool's schema dict after registration changes nothing."""
    tool = FakeTool(input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    runtime.register(tool)
    tool.input_schema["properties"]["x"]["type"] = "string"
    with runtime.plan() as ctx:
        assert not runtime.execute("fake", {"x": "s"}, ctx).success


def test_unregister_and_descriptors(runtime: ToolRuntime) -> None:
    """Descriptors list tools in registration order; unregister removes one."""
    runtime.register(FakeTool(name="b"))
    runtime.register(FakeTool(name="a"))
    assert [d.name for d in runtime.descriptors()] == ["b", "a"]
    assert runtime.descriptor("a").name == "a"
    assert runtime.unregister("b").name == "b"
    with pytest.raises(ToolNotFoundError):
        runtime.unregister("b")
    with pytest.raises(ToolNotFoundError):
        runtime.descriptor("b")


def test_a_tool_registered_anew_under_an_active_name_is_activated_before_it_runs(
    runtime: ToolRuntime,
) -> None:
    """An open plan activates the new tool at its first call and deactivates both at its end."""
    old, new = FakeTool(name="t", output="old"), FakeTool(name="t", output="new")
    runtime.register(old)
    with runtime.plan("idle"), runtime.plan("p") as ctx:  # "idle" never activates it
        assert runtime.execute("t", {}, ctx).output == "old"
        runtime.unregister("t")
        runtime.register(new)
        assert runtime.execute("t", {}, ctx).output == "new"
        assert runtime.execute("t", {}, ctx).output == "new"
    assert old.stages("p") == ["activate", "execute", "deactivate"]
    assert new.stages("p") == ["activate", "execute", "execute", "deactivate"]


def test_without_auto_activate_a_tool_registered_anew_must_be_activated_again() -> None:
    """The activation of the tool unregistered does not count for the one registered now."""
    old, new = FakeTool(name="t"), FakeTool(name="t")
    with ToolRuntime(auto_activate=False) as runtime:
        runtime.register(old)
        with runtime.plan("p") as ctx:
            runtime.activate("t", ctx)
            runtime.unregister("t")
            runtime.register(new)
            with pytest.raises(ToolNotActivatedError):
                runtime.execute("t", {}, ctx)
            runtime.activate("t", ctx)
            assert runtime.execute("t", {}, ctx).success
    assert old.stages("p") == ["activate", "deactivate"]
    assert new.stages("p") == ["activate", "execute", "deactivate"]


@pytest.mark.parametrize("old_done_first", [False, True])
def test_a_tool_replaced_while_it_activates_keeps_both_activations_apart(
    runtime: ToolRuntime, old_done_first: bool
) -> None:
    """The new tool is activated for itself, before or after the old activate ends; both undone."""
    started, release = threading.Event(), threading.Event()

    def slow_activate(ctx: ToolExecutionContext) -> None:
        started.set()
        assert release.wait(WAIT)

    old, new = FakeTool(name="t", output="old"), FakeTool(name="t", output="new")
    old.activate = slow_activate  # type: ignore[method-assign]
    runtime.register(old)
    ctx = runtime.new_context("p")
    outputs: list[Any] = []

    def run() -> None:
        outputs.append(runtime.execute("t", {}, ctx).output)

    first = threading.Thread(target=run)
    first.start()
    try:
        assert started.wait(WAIT)
        runtime.unregister("t")
        runtime.register(new)
        if old_done_first:
            release.set()
            first.join(WAIT)
        second = threading.Thread(target=run)  # must not wait for the old activate
        second.start()
        second.join(WAIT)
        assert not second.is_alive()
    finally:
        release.set()
        first.join(WAIT)
    assert sorted(outputs) == ["new", "old"]
    assert runtime.end_plan(ctx) == []
    assert old.stages("p") == ["execute", "deactivate"]  # its activate was replaced above
    assert new.stages("p") == ["activate", "execute", "deactivate"]


def test_register_source_is_all_or_nothing(runtime: ToolRuntime) -> None:
    """A source whose second tool is bad registers none of its tools."""

    class Source:
        def __init__(self, *tools: FakeTool) -> None:
            self._tools = tools

        def tools(self) -> tuple[FakeTool, ...]:
            return self._tools

    good = runtime.register_source(Source(FakeTool(name="one"), FakeTool(name="two")))
    assert [d.name for d in good] == ["one", "two"]
    with pytest.raises(ToolRegistrationError):
        runtime.register_source(Source(FakeTool(name="three"), FakeTool(name="one")))
    assert [d.name for d in runtime.descriptors()] == ["one", "two"]


def test_listener_that_raises_never_breaks_a_call(runtime: ToolRuntime) -> None:
    """A failing trace listener is logged; the call and other listeners go on."""
    seen: list[str] = []

    def broken(trace: object) -> None:
        raise RuntimeError("listener bug")

    runtime.add_trace_listener(broken)
    remove = runtime.add_trace_listener(lambda trace: seen.append(trace.status))
    runtime.register(FakeTool())
    with runtime.plan() as ctx:
        assert runtime.execute("fake", {}, ctx).success
        remove()
        runtime.execute("fake", {}, ctx)
    assert seen == ["ok"]


def test_each_remover_takes_back_its_own_registration_once(runtime: ToolRuntime) -> None:
    """A listener added twice hears twice; one remover, even run again, removes one."""
    seen: list[str] = []

    def listen(trace: Any) -> None:
        seen.append(trace.status)

    first = runtime.add_trace_listener(listen)
    second = runtime.add_trace_listener(listen)
    runtime.register(FakeTool())
    with runtime.plan() as ctx:
        runtime.execute("fake", {}, ctx)
        assert len(seen) == 2
        first()
        first()  # already taken back: the other registration stays
        runtime.execute("fake", {}, ctx)
        assert len(seen) == 3
        second()
        runtime.execute("fake", {}, ctx)
    assert len(seen) == 3


def test_trace_timestamps_use_the_injected_clock() -> None:
    """started_at and ended_at come from the clock, durations from the timer."""
    ticks = iter([1_700_000_000.0, 1_700_000_000.5])
    timer = iter([10.0, 10.25])
    with ToolRuntime(clock=lambda: next(ticks), timer=lambda: next(timer)) as runtime:
        runtime.register(FakeTool())
        ctx = runtime.new_context()
        trace = runtime.execute("fake", {}, ctx).trace
        ctx.cancellation_token.cancel()
    assert trace is not None
    assert trace.started_at == "2023-11-14T22:13:20.000000+00:00"
    assert trace.ended_at == "2023-11-14T22:13:20.500000+00:00"
    assert trace.duration_ms == 250.0


def test_sync_execute_runs_async_tools(runtime: ToolRuntime) -> None:
    """execute() drives an async tool's stages on the runtime's loop thread."""
    tool = AsyncTool()
    runtime.register(tool)
    with runtime.plan() as ctx:
        assert runtime.execute("async", {"a": 1}, ctx).output == {"echo": {"a": 1}}
    assert tool.stages == ["activate", "execute", "deactivate"]


def test_sync_execute_of_async_tool_works_inside_a_running_loop(runtime: ToolRuntime) -> None:
    """Calling sync execute from a coroutine does not hit 'loop already running'."""
    runtime.register(AsyncTool())

    async def main() -> Any:
        with runtime.plan() as ctx:
            return runtime.execute("async", {}, ctx).output

    assert asyncio.run(main()) == {"echo": {}}


def test_timeout_cancels_an_async_tool(runtime: ToolRuntime) -> None:
    """A timed-out async tool is cancelled and reported as timed_out."""
    tool = AsyncTool()
    runtime.register(tool)
    with runtime.plan() as ctx:
        result = runtime.execute("async", {"block": True}, ctx, timeout=0.05)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert tool.cancelled


def test_timeout_abandons_a_sync_tool(runtime: ToolRuntime) -> None:
    """A sync tool over its timeout is reported timed_out without waiting for it."""
    release = threading.Event()

    def slow(params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        release.wait(WAIT)
        return "late"

    runtime.register(FakeTool(output=slow))
    try:
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {}, ctx, timeout=0.05)
    finally:
        release.set()
    assert result.error_type == "TimeoutError"


def test_sync_execute_cancels_a_running_async_tool(runtime: ToolRuntime) -> None:
    """Cancelling the token interrupts an async tool run by sync execute."""
    tool = AsyncTool()
    runtime.register(tool)
    ctx = runtime.new_context()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            runtime.execute("async", {"block": True}, ctx)
        except ToolCancelledError as exc:
            errors.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    # The tool's started event lives on the portal loop; poll it with a bound.
    for _ in range(500):
        if tool.started.is_set():
            break
        threading.Event().wait(0.01)
    ctx.cancellation_token.cancel("user")
    worker.join(WAIT)
    assert not worker.is_alive()
    assert tool.cancelled and len(errors) == 1
    runtime.end_plan(ctx)


async def test_aexecute_cancels_async_tool_when_token_cancels() -> None:
    """An async tool awaited by aexecute is cancelled the moment the token is."""
    tool = AsyncTool()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("async", {"block": True}, ctx))
            await asyncio.wait_for(tool.started.wait(), WAIT)
            ctx.cancellation_token.cancel("stop")
            with pytest.raises(ToolCancelledError):
                await asyncio.wait_for(call, WAIT)
    assert tool.cancelled
    assert tool.stages[-1] == "deactivate"


async def test_cancelling_the_awaiting_task_propagates_cancelled_error() -> None:
    """Cancelling the task awaiting aexecute raises CancelledError, not a result."""
    tool = AsyncTool()
    with ToolRuntime() as runtime, capture_traces(runtime) as traces:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("async", {"block": True}, ctx))
            await asyncio.wait_for(tool.started.wait(), WAIT)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
    assert tool.cancelled
    assert traces[-1].status == "cancelled"


async def test_aexecute_runs_sync_tools_off_the_loop() -> None:
    """A sync tool called through aexecute runs on a worker thread."""
    threads: list[str] = []

    def where(params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        threads.append(threading.current_thread().name)
        return "done"

    with ToolRuntime() as runtime:
        runtime.register(FakeTool(output=where))
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("fake", {}, ctx)
    assert result.output == "done"
    assert threads[0].startswith("toolcycle-worker")


async def test_aexecute_timeout_of_async_tool(runtime: ToolRuntime) -> None:
    """A timeout under aexecute reports timed_out and cancels the tool."""
    tool = AsyncTool()
    runtime.register(tool)
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("async", {"block": True}, ctx, timeout=0.05)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert tool.cancelled


async def test_aexecute_single_flight_across_tasks() -> None:
    """Tasks making the first call together share one async activation."""
    gate = asyncio.Event()
    count = 0

    class Gated(AsyncTool):
        async def activate(self, ctx: ToolExecutionContext) -> None:
            nonlocal count
            count += 1
            await gate.wait()

    with ToolRuntime() as runtime:
        runtime.register(Gated())
        async with runtime.aplan() as ctx:
            calls = [asyncio.ensure_future(runtime.aexecute("async", {}, ctx)) for _ in range(5)]
            await asyncio.sleep(0)
            gate.set()
            results = await asyncio.wait_for(asyncio.gather(*calls), WAIT)
    assert count == 1
    assert all(r.success for r in results)


async def test_aend_plan_awaits_async_deactivate() -> None:
    """aend_plan deactivates async tools on the caller's loop."""
    tool = AsyncTool()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        ctx = runtime.new_context()
        await runtime.aexecute("async", {}, ctx)
        assert await runtime.aend_plan(ctx) == []
        assert await runtime.aend_plan(ctx) == []
    assert tool.stages == ["activate", "execute", "deactivate"]


def test_library_prints_nothing(runtime: ToolRuntime, capsys: pytest.CaptureFixture[str]) -> None:
    """Warnings and failures are logged through logging, silently by default."""
    runtime.register(FakeTool(output="x", output_schema={"type": "integer"}))
    runtime.register(FakeTool(name="bad", deactivate_error=OSError("x")))
    with runtime.plan() as ctx:
        runtime.execute("fake", {}, ctx)
        runtime.execute("bad", {}, ctx)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def _current_task_cancelling() -> int:
    task = asyncio.current_task()
    assert task is not None
    return task.cancelling()


class AsyncBody(AsyncTool):
    """An async tool whose execute is the coroutine function it is given."""

    def __init__(self, name: str, body: Any) -> None:
        super().__init__(name)
        self.body = body

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return await self.body(params, ctx)


async def test_a_token_cancel_in_the_caller_s_own_task_leaves_that_task_usable() -> None:
    """Awaited in the caller's own task, a token cancel raises and the task goes on."""
    tool = AsyncTool()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:

            async def cancel_once_started() -> None:
                await tool.started.wait()
                ctx.cancellation_token.cancel("stop")

            canceller = asyncio.ensure_future(cancel_once_started())
            async with asyncio.timeout(WAIT):
                with pytest.raises(ToolCancelledError, match="stop"):
                    await runtime.aexecute("async", {"block": True}, ctx)
            await asyncio.wait_for(canceller, WAIT)
            assert _current_task_cancelling() == 0
            await asyncio.sleep(0)  # no cancellation is left pending on this task
    assert tool.cancelled


async def test_a_token_cancelled_as_an_async_tool_returns_does_not_reach_the_caller() -> None:
    """A cancel that lands after the tool is done is dropped, not delivered to the caller later."""
    cancelled_from_a_thread = threading.Event()

    async def cancel_then_return(params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        def cancel() -> None:
            ctx.cancellation_token.cancel("late")
            cancelled_from_a_thread.set()

        threading.Thread(target=cancel).start()
        return "done"

    with ToolRuntime() as runtime:
        runtime.register(AsyncBody("late", cancel_then_return))
        ctx = runtime.new_context()
        async with asyncio.timeout(WAIT):
            result = await runtime.aexecute("late", {}, ctx)
        assert cancelled_from_a_thread.wait(WAIT)
        for _ in range(3):
            await asyncio.sleep(0)  # let any callback the cancel scheduled run on this loop
        assert _current_task_cancelling() == 0
        await runtime.aend_plan(ctx)
    assert result.success and result.output == "done"


async def test_a_tool_that_swallows_the_cancellation_leaves_the_caller_uncancelled() -> None:
    """Even when the tool catches the CancelledError and returns, the caller is not cancelled."""
    started = asyncio.Event()

    async def stubborn(params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "ignored the cancel"
        return "unreachable"

    with ToolRuntime() as runtime:
        runtime.register(AsyncBody("stubborn", stubborn))
        ctx = runtime.new_context()

        async def cancel_once_started() -> None:
            await started.wait()
            ctx.cancellation_token.cancel("stop")

        canceller = asyncio.ensure_future(cancel_once_started())
        async with asyncio.timeout(WAIT):
            result = await runtime.aexecute("stubborn", {}, ctx)
        await asyncio.wait_for(canceller, WAIT)
        assert _current_task_cancelling() == 0
        await asyncio.sleep(0)
        await runtime.aend_plan(ctx)
    assert result.output == "ignored the cancel"


async def test_the_caller_s_own_cancellation_still_reaches_it() -> None:
    """A timeout of the caller's (asyncio.timeout) cancels the tool and surfaces as TimeoutError."""
    tool = AsyncTool()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await runtime.aexecute("async", {"block": True}, ctx)
            assert _current_task_cancelling() == 0
    assert tool.cancelled
