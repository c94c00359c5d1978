"""Edge paths of the pipeline: interrupted activations, plans ending mid-activation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from toolcycle import (
    ToolCancelledError,
    ToolCapability,
    ToolDescriptor,
    ToolExecutionContext,
    ToolNotActivatedError,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0


def test_keyboard_interrupt_during_activation_is_not_cached(runtime: ToolRuntime) -> None:
    """An interrupt in activate propagates, is traced, and the next call activates again."""
    tool = FakeTool(activate_error=KeyboardInterrupt())
    runtime.register(tool)
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        with pytest.raises(KeyboardInterrupt):
            runtime.execute("fake", {}, ctx)
        tool.activate_error = None
        assert runtime.execute("fake", {}, ctx).success
    assert [t.status for t in traces] == ["cancelled", "ok"]
    assert tool.count("activate") == 2


def test_activate_raising_cancelled_propagates_as_cancellation(runtime: ToolRuntime) -> None:
    """A ToolCancelledError from activate is a cancellation, not an activation failure."""
    runtime.register(FakeTool(activate_error=ToolCancelledError("stop")))
    with runtime.plan() as ctx, pytest.raises(ToolCancelledError):
        runtime.execute("fake", {}, ctx)


def test_activate_raising_a_runtime_error_is_re_raised_unchanged(runtime: ToolRuntime) -> None:
    """A toolcycle error from activate keeps its own type."""
    runtime.register(FakeTool(activate_error=ToolNotActivatedError("needs setup")))
    with runtime.plan() as ctx, pytest.raises(ToolNotActivatedError):
        runtime.execute("fake", {}, ctx)


def test_plan_ending_during_activation_deactivates_the_tool(
    draining: Callable[[str], bool],
) -> None:
    """If the plan ends while a tool activates, the call fails and the tool is undone."""
    entered = threading.Event()
    release = threading.Event()

    class Slow(FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            super().activate(ctx)
            entered.set()
            assert release.wait(WAIT)

    tool = Slow()
    errors: list[BaseException] = []
    with ToolRuntime() as runtime:
        runtime.register(tool)
        ctx = runtime.new_context()

        def call() -> None:
            try:
                runtime.execute("fake", {}, ctx)
            except ToolCancelledError as exc:
                errors.append(exc)

        worker = threading.Thread(target=call)
        worker.start()
        assert entered.wait(WAIT)
        ended: list[list[Any]] = []
        ender = threading.Thread(target=lambda: ended.append(runtime.end_plan(ctx)))
        ender.start()
        assert draining(ctx.plan_id)  # the end waits for the call in flight
        release.set()
        worker.join(WAIT)
        ender.join(WAIT)
    assert ended == [[]]
    assert len(errors) == 1 and "ended while" in str(errors[0])
    assert tool.stages(ctx.plan_id) == ["activate", "deactivate"]


def test_execute_requires_a_context(runtime: ToolRuntime) -> None:
    """Passing something other than a ToolExecutionContext is a TypeError."""
    runtime.register(FakeTool())
    with pytest.raises(TypeError, match="ToolExecutionContext"):
        runtime.execute("fake", {}, "plan-1")  # type: ignore[arg-type]


async def test_aexecute_requires_a_context(runtime: ToolRuntime) -> None:
    """The async path refuses something other than a ToolExecutionContext the same way."""
    runtime.register(FakeTool())
    with pytest.raises(TypeError, match="ToolExecutionContext"):
        await runtime.aexecute("fake", {}, "plan-1")  # type: ignore[arg-type]


def test_closed_runtime_refuses_calls() -> None:
    """Execute after close() raises ToolRuntimeError and says the runtime is closed."""
    runtime = ToolRuntime()
    runtime.register(FakeTool())
    ctx = ToolExecutionContext("p")
    runtime.close()
    assert runtime.closed
    with pytest.raises(ToolRuntimeError, match="closed"):
        runtime.execute("fake", {}, ctx)


class AsyncStages:
    """An async tool whose activate and execute can be held on events."""

    def __init__(self) -> None:
        self.activate_gate: asyncio.Event | None = None
        self.activations = 0
        self.entered = asyncio.Event()
        self.raise_cancelled = False
        self.deactivate_hangs = False

    def discover(self) -> Any:
        from toolcycle import ToolCapability, ToolDescriptor

        return ToolDescriptor(name="stages", capability=ToolCapability(writes=False))

    async def activate(self, ctx: ToolExecutionContext) -> None:
        self.activations += 1
        self.entered.set()
        if self.activate_gate is not None:
            await self.activate_gate.wait()

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        if self.raise_cancelled:
            raise ToolCancelledError("tool gave up")
        return "ok"

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        if self.deactivate_hangs:
            await asyncio.Event().wait()


async def test_caller_cancelled_during_async_activation_caches_nothing() -> None:
    """Cancelling the awaiting task mid-activation leaves the tool inactive."""
    tool = AsyncStages()
    tool.activate_gate = asyncio.Event()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("stages", {}, ctx))
            await asyncio.wait_for(tool.entered.wait(), WAIT)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert runtime.cache.active_tools(ctx.plan_id) == ()
            tool.activate_gate.set()
            assert (await runtime.aexecute("stages", {}, ctx)).success
    assert tool.activations == 2


async def test_token_cancelled_during_async_activation_raises_cancelled() -> None:
    """Cancelling the plan while an async activate is awaited raises ToolCancelledError."""
    tool = AsyncStages()
    tool.activate_gate = asyncio.Event()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            call = asyncio.ensure_future(runtime.aexecute("stages", {}, ctx))
            await asyncio.wait_for(tool.entered.wait(), WAIT)
            ctx.cancellation_token.cancel("abort")
            with pytest.raises(ToolCancelledError):
                await asyncio.wait_for(call, WAIT)


async def test_async_tool_raising_cancelled_propagates() -> None:
    """A ToolCancelledError raised inside an async tool reaches the aexecute caller."""
    tool = AsyncStages()
    tool.raise_cancelled = True
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            with pytest.raises(ToolCancelledError, match="gave up"):
                await runtime.aexecute("stages", {}, ctx)


async def test_hanging_async_deactivate_is_abandoned_by_aend_plan() -> None:
    """aend_plan reports an async deactivate that outlives the timeout."""
    tool = AsyncStages()
    tool.deactivate_hangs = True
    with ToolRuntime(deactivate_timeout=0.05) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context()
        await runtime.aexecute("stages", {}, ctx)
        errors = await runtime.aend_plan(ctx)
    assert [e.tool_name for e in errors] == ["stages"]


async def test_hanging_sync_deactivate_is_abandoned_by_aend_plan() -> None:
    """aend_plan reports a sync deactivate that outlives the timeout, without blocking."""
    never = threading.Event()

    class Hangs(FakeTool):
        def deactivate(self, ctx: ToolExecutionContext) -> None:
            never.wait(WAIT)

    try:
        with ToolRuntime(deactivate_timeout=0.05) as runtime:
            runtime.register(Hangs())
            ctx = runtime.new_context()
            await runtime.aexecute("fake", {}, ctx)
            errors = await runtime.aend_plan(ctx)
    finally:
        never.set()
    assert [e.tool_name for e in errors] == ["fake"]


def test_hanging_async_deactivate_is_abandoned_by_end_plan() -> None:
    """Sync end_plan also bounds an async deactivate."""
    tool = AsyncStages()
    tool.deactivate_hangs = True
    with ToolRuntime(deactivate_timeout=0.05) as runtime:
        runtime.register(tool)
        ctx = runtime.new_context()
        runtime.execute("stages", {}, ctx)
        errors = runtime.end_plan(ctx)
    assert [e.tool_name for e in errors] == ["stages"]


def test_explicit_activate_activates_once_without_a_trace(runtime: ToolRuntime) -> None:
    """activate() ahead of the first call activates once and records no trace."""
    tool = FakeTool()
    runtime.register(tool)
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        runtime.activate("fake", ctx)
        runtime.activate("fake", ctx)
        runtime.execute("fake", {}, ctx)
    assert tool.stages(ctx.plan_id) == ["activate", "execute", "deactivate"]
    assert [t.status for t in traces] == ["ok"]


def test_explicit_activate_is_capability_checked(runtime: ToolRuntime) -> None:
    """A plan cannot activate a tool it may not run."""
    from toolcycle import ToolAccessDeniedError

    tool = FakeTool(writes=True)
    runtime.register(tool)
    with runtime.plan(read_only=True) as ctx, pytest.raises(ToolAccessDeniedError):
        runtime.activate("fake", ctx)
    assert tool.count("activate") == 0


def test_without_auto_activation_a_call_needs_explicit_activation() -> None:
    """With auto_activate=False, calling an inactive tool raises ToolNotActivatedError."""
    tool = FakeTool()
    with ToolRuntime(auto_activate=False) as runtime, capture_traces(runtime) as traces:
        runtime.register(tool)
        with runtime.plan() as ctx:
            with pytest.raises(ToolNotActivatedError, match="runtime.activate"):
                runtime.execute("fake", {}, ctx)
            runtime.activate("fake", ctx)
            assert runtime.execute("fake", {}, ctx).success
    assert [t.status for t in traces] == ["error", "ok"]


async def test_async_explicit_activation() -> None:
    """aactivate() activates an async tool, and auto_activate=False is honoured by aexecute."""
    tool = AsyncStages()
    with ToolRuntime(auto_activate=False) as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            with pytest.raises(ToolNotActivatedError):
                await runtime.aexecute("stages", {}, ctx)
            await runtime.aactivate("stages", ctx)
            await runtime.aactivate("stages", ctx)
            assert (await runtime.aexecute("stages", {}, ctx)).success
    assert tool.activations == 1


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_raised_by_a_tool_is_traced_then_propagates(
    runtime: ToolRuntime, interrupt: type[BaseException]
) -> None:
    """KeyboardInterrupt or SystemExit from a tool still leaves exactly one trace."""
    runtime.register(FakeTool(execute_error=interrupt()))
    with capture_traces(runtime) as traces, runtime.plan() as ctx:
        with pytest.raises(interrupt):
            runtime.execute("fake", {}, ctx)
    assert [t.status for t in traces] == ["cancelled"]


async def test_an_interrupt_raised_by_a_sync_tool_under_aexecute_is_traced() -> None:
    """The async path traces an interrupt from a sync tool before re-raising it."""
    with ToolRuntime() as runtime, capture_traces(runtime) as traces:
        runtime.register(FakeTool(execute_error=SystemExit(3)))
        async with runtime.aplan() as ctx:
            with pytest.raises(SystemExit):
                await runtime.aexecute("fake", {}, ctx)
    assert [t.status for t in traces] == ["cancelled"]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_raised_by_an_async_tool_under_execute_reaches_the_caller(
    interrupt: type[BaseException],
) -> None:
    """The runtime's loop thread survives it: execute raises it, and later calls still run."""

    @tool(writes=False)
    async def stop(n: int) -> int:
        """Stop on zero."""
        if n == 0:
            raise interrupt()
        return n

    raised: list[BaseException] = []
    done = threading.Event()
    with ToolRuntime() as runtime, capture_traces(runtime) as traces:
        runtime.register(stop)
        with runtime.plan() as ctx:

            def call() -> None:
                try:
                    runtime.execute("stop", {"n": 0}, ctx)
                except BaseException as exc:
                    raised.append(exc)
                done.set()

            threading.Thread(target=call, daemon=True).start()
            assert done.wait(WAIT), "execute never returned: the loop thread died"
            assert runtime.execute("stop", {"n": 2}, ctx).output == 2
    assert [type(exc) for exc in raised] == [interrupt]
    assert [t.status for t in traces] == ["cancelled", "ok"]


def test_a_tool_cancelled_from_within_says_so(runtime: ToolRuntime) -> None:
    """A CancelledError raised by a tool while the plan is not cancelled names the tool."""
    runtime.register(FakeTool(execute_error=asyncio.CancelledError()))
    with runtime.plan() as ctx, pytest.raises(ToolCancelledError, match="'fake' was cancelled"):
        runtime.execute("fake", {}, ctx)


def test_output_that_is_not_json_keeps_a_tool_output_error(runtime: ToolRuntime) -> None:
    """The failed result of a non-JSON output carries a ToolOutputError."""
    from toolcycle import ToolOutputError

    runtime.register(FakeTool(output={1: "x"}))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert isinstance(result.exception, ToolOutputError)
    assert result.exception.tool_name == "fake"


async def test_async_waiters_share_the_owner_activation() -> None:
    """A task arriving while another activates waits for it instead of activating."""
    tool = AsyncStages()
    tool.activate_gate = asyncio.Event()
    with ToolRuntime() as runtime:
        runtime.register(tool)
        async with runtime.aplan() as ctx:
            owner = asyncio.ensure_future(runtime.aexecute("stages", {}, ctx))
            await asyncio.wait_for(tool.entered.wait(), WAIT)
            waiter = asyncio.ensure_future(runtime.aexecute("stages", {}, ctx))
            for _ in range(5):
                await asyncio.sleep(0)  # let the waiter reach the pending activation
            assert not waiter.done()
            tool.activate_gate.set()
            results = await asyncio.wait_for(asyncio.gather(owner, waiter), WAIT)
    assert tool.activations == 1 and all(r.success for r in results)


def test_plan_ending_mid_activation_with_a_failing_deactivate_is_logged(
    draining: Callable[[str], bool],
) -> None:
    """If undoing a late activation fails, the call still fails cleanly."""
    entered = threading.Event()
    release = threading.Event()

    class Slow(FakeTool):
        def activate(self, ctx: ToolExecutionContext) -> None:
            entered.set()
            assert release.wait(WAIT)

    errors: list[BaseException] = []
    with ToolRuntime() as runtime:
        runtime.register(Slow(deactivate_error=OSError("cannot close")))
        ctx = runtime.new_context()

        def call() -> None:
            try:
                runtime.execute("fake", {}, ctx)
            except ToolCancelledError as exc:
                errors.append(exc)

        worker = threading.Thread(target=call)
        worker.start()
        assert entered.wait(WAIT)
        ender = threading.Thread(target=runtime.end_plan, args=(ctx,))
        ender.start()
        assert draining(ctx.plan_id)
        release.set()
        worker.join(WAIT)
        ender.join(WAIT)
    assert len(errors) == 1 and "ended while" in str(errors[0])


def test_output_over_max_result_bytes_is_cut_with_a_marker() -> None:
    """A large output becomes the start of its JSON text plus a marker, within the limit."""
    big = {"rows": ["é" * 50 for _ in range(100)]}
    with ToolRuntime(max_result_bytes=300) as runtime:
        runtime.register(FakeTool(output=big, output_schema={"type": "object"}))
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {}, ctx)
    trace = result.trace
    assert result.success and result.truncated
    assert isinstance(result.output, str) and result.output.startswith('{"rows":["é')
    assert "cut: output was" in result.output
    assert trace is not None and trace.result_size_bytes <= 300
    assert trace.original_size_bytes > 10_000
    assert trace.output_valid is True  # the whole output was validated before the cut


def test_output_within_the_limit_is_untouched(runtime: ToolRuntime) -> None:
    """Below the limit nothing is cut and both sizes agree."""
    runtime.register(FakeTool(output={"a": 1}))
    with runtime.plan() as ctx:
        result = runtime.execute("fake", {}, ctx)
    assert not result.truncated and result.output == {"a": 1}
    assert result.trace is not None
    assert result.trace.result_size_bytes == result.trace.original_size_bytes == 7


def test_the_result_limit_can_be_switched_off() -> None:
    """max_result_bytes=None keeps every output whole."""
    with ToolRuntime(max_result_bytes=None) as runtime:
        runtime.register(FakeTool(output="x" * 5_000_000))
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {}, ctx)
    assert not result.truncated and len(result.output) == 5_000_000


@pytest.mark.parametrize("limit", [-1, 0, 10, 99, 1.5e3, "200", True])
def test_a_result_limit_with_no_room_for_the_marker_is_refused_where_it_is_given(
    limit: object,
) -> None:
    """Below 100 bytes a cut output could not hold its marker: refused, not exceeded."""
    with pytest.raises(ValueError, match="max_result_bytes must be None"):
        ToolRuntime(max_result_bytes=limit)  # type: ignore[arg-type]
    with ToolRuntime() as runtime:
        with pytest.raises(ValueError, match="at least 100 bytes"):
            runtime.max_result_bytes = limit  # type: ignore[assignment]
        assert runtime.max_result_bytes == 1_048_576


def test_the_smallest_result_limit_holds_for_any_output() -> None:
    """At 100 bytes, an output of 10 MB is cut to fit, marker and all."""
    with ToolRuntime(max_result_bytes=100) as runtime:
        runtime.register(FakeTool(output="é" * 5_000_000))
        with runtime.plan() as ctx:
            result = runtime.execute("fake", {}, ctx)
    assert result.truncated and result.trace is not None
    assert result.trace.result_size_bytes <= 100 < result.trace.original_size_bytes


def test_redaction_takes_a_policy_or_none() -> None:
    """A wrong value is refused where it is given, not at the first call."""
    with pytest.raises(TypeError, match="RedactionPolicy or None"):
        ToolRuntime(redaction="off")  # type: ignore[arg-type]
    with ToolRuntime() as runtime, pytest.raises(TypeError, match="RedactionPolicy"):
        runtime.redaction = {"key_pattern": "pw"}  # type: ignore[assignment]


@pytest.mark.parametrize("limit", [0, 10, 60, 61, 62, 100, 1000])
def test_cut_output_fits_the_limit_or_keeps_only_the_marker(limit: int) -> None:
    """The cut text fits the limit whenever the marker does; otherwise it is the marker alone."""
    from toolcycle.runtime._results import cut_output
    from toolcycle.validation._json import encode

    payload = b'"' + "é".encode() * 500 + b'"'
    text, size = cut_output(payload, limit)
    marker = f" ...[cut: output was {len(payload)} bytes, limit {limit}]"
    assert text.endswith(marker) and size == len(encode(text))
    if len(encode(marker)) <= limit:
        assert size <= limit
    else:
        assert text == marker


def test_register_source_can_skip_tools_with_unusable_schemas(runtime: ToolRuntime) -> None:
    """With skip_invalid_schemas, a bad schema is a warning naming the tool; the rest register."""
    from toolcycle import ToolSkippedWarning

    class Source:
        def tools(self) -> list[FakeTool]:
            return [
                FakeTool(name="good"),
                FakeTool(name="bad", input_schema={"type": "strin"}),
                FakeTool(name="odd", input_schema={"$schema": "https://example.com/dialect"}),
                FakeTool(name="also_good"),
            ]

    with pytest.warns(ToolSkippedWarning) as caught:
        registered = runtime.register_source(Source(), skip_invalid_schemas=True)
    assert [d.name for d in registered] == ["good", "also_good"]
    assert {w.filename for w in caught} == {__file__}  # the line that registered the source
    messages = [str(w.message) for w in caught]
    assert any("'bad'" in m for m in messages) and any("'odd'" in m for m in messages)
    from toolcycle import ToolSchemaValidationError

    with ToolRuntime() as strict, pytest.raises(ToolSchemaValidationError):
        strict.register_source(Source())  # the default stays all or nothing
    assert strict.descriptors() == ()


def test_output_with_a_lone_surrogate_fails_the_call_as_not_json() -> None:
    """No UTF-8 text can hold it: the call fails, nothing raises."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="out", output={"text": "bad \udc80 byte"}))
        with runtime.plan() as ctx:
            result = runtime.execute("out", {}, ctx)
    assert not result.success
    assert result.error_type == "ToolOutputError"
    assert result.trace is not None and result.trace.status == "error"


class _HandsBackACoroutine:
    """A tool whose plain ``def execute`` returns a coroutine for the runtime to await."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="deferred",
            output_schema={"type": "object", "required": ["n"]},
            capability=ToolCapability(writes=False),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        async def work() -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"n": params["n"] * 2}

        return work()

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_sync_execute_that_returns_a_coroutine_has_it_awaited(
    runtime: ToolRuntime, timeout: float | None
) -> None:
    """With or without a limit, the coroutine's value is the output, checked against the schema."""
    runtime.register(_HandsBackACoroutine())
    with runtime.plan() as ctx:
        result = runtime.execute("deferred", {"n": 21}, ctx, timeout=timeout)
    assert result.success, result.error
    assert result.output == {"n": 42}
    assert result.trace is not None and result.trace.output_valid is True
