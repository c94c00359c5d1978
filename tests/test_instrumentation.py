"""The runtime keeps the instrumentation contract: one finish per call, in the caller's context."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolcycle import (
    NullTracer,
    ToolAccessDeniedError,
    ToolCancelledError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolNotFoundError,
    ToolRuntime,
    tool,
)
from toolcycle.instrumentation import Stage

current: contextvars.ContextVar[str | None] = contextvars.ContextVar("current", default=None)


@dataclass
class Observer:
    """Records how its call ended; makes its call 'current' while it runs."""

    name: str
    record_payloads: bool
    reset: contextvars.Token[str | None]
    thread: int = field(default_factory=threading.get_ident)
    finished: list[tuple[ToolExecutionTrace | None, Any, Any, int]] = field(default_factory=list)

    def finish(
        self, trace: ToolExecutionTrace | None, *, arguments: Any = None, output: Any = None
    ) -> None:
        self.finished.append((trace, arguments, output, threading.get_ident()))
        current.reset(self.reset)


@dataclass
class StageWatch:
    stage: Stage
    tool_name: str
    parent: str | None
    errors: list[BaseException | None] = field(default_factory=list)

    def finish(self, error: BaseException | None) -> None:
        self.errors.append(error)


@dataclass
class Recorder:
    """An Instrumentation that keeps everything it is told."""

    record_payloads: bool = False
    calls: list[Observer] = field(default_factory=list)
    stages: list[StageWatch] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)

    def call_started(
        self,
        *,
        tool_name: str,
        descriptor: ToolDescriptor | None,
        ctx: ToolExecutionContext,
        call_id: str,
        tool_call_id: str | None,
    ) -> Observer:
        self.seen.append(
            {"tool": tool_name, "descriptor": descriptor, "call_id": call_id, "id": tool_call_id}
        )
        observer = Observer(tool_name, self.record_payloads, current.set(f"call:{tool_name}"))
        self.calls.append(observer)
        return observer

    def stage_started(self, stage: Stage, *, tool_name: str, ctx: ToolExecutionContext) -> Any:
        watch = StageWatch(stage, tool_name, current.get())
        self.stages.append(watch)
        return watch


@tool(writes=False)
def echo(text: str, password: str = "") -> str:
    """Return the text, and note what was current while running."""
    return f"{text}|{current.get()}"


@tool(writes=False)
async def aecho(text: str) -> str:
    """Async twin of echo."""
    return f"{text}|{current.get()}"


@tool(writes=False)
def boom() -> None:
    """Raise."""
    raise RuntimeError("boom")


@tool
def writer() -> None:
    """A tool that writes."""


def _runtime(recorder: Recorder) -> ToolRuntime:
    runtime = ToolRuntime(tracer=NullTracer(), instrumentation=recorder)
    for each in (echo, aecho, boom, writer):
        runtime.register(each)
    return runtime


def test_a_call_is_observed_once_and_the_tool_runs_inside_its_window() -> None:
    """The tool sees the observer's context; finish comes once, with the trace."""
    recorder = Recorder()
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "hi"}, ctx)
    assert result.output == "hi|call:echo"
    (observer,) = recorder.calls
    ((trace, arguments, output, thread),) = observer.finished
    assert trace is result.trace
    assert (arguments, output) == (None, None)  # no payloads unless asked for
    assert thread == observer.thread == threading.get_ident()
    assert current.get() is None  # restored
    assert recorder.seen[0]["descriptor"].name == "echo"
    assert recorder.seen[0]["call_id"] == trace.call_id


def test_payloads_are_passed_only_when_asked_for_and_arguments_are_redacted() -> None:
    """With record_payloads the observer gets masked arguments and the output."""
    recorder = Recorder(record_payloads=True)
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        runtime.execute("echo", {"text": "hi", "password": "hunter2-marker"}, ctx)
    ((_, arguments, output, _),) = recorder.calls[0].finished
    assert arguments == {"text": "hi", "password": "[redacted]"}
    assert output == "hi|call:echo"


def test_recorded_outputs_are_redacted_by_key_too() -> None:
    """An output value under a sensitive key reaches the observer as [redacted]."""

    @tool(writes=False)
    def issue_token(user: str) -> dict[str, str]:
        """Issue a token."""
        return {"user": user, "access_token": "tok-marker-123"}

    recorder = Recorder(record_payloads=True)
    with ToolRuntime(tracer=NullTracer(), instrumentation=recorder) as runtime:
        runtime.register(issue_token)
        with runtime.plan() as ctx:
            result = runtime.execute("issue_token", {"user": "ann"}, ctx)
    assert result.output["access_token"] == "tok-marker-123"  # the caller gets the real one
    ((_, _, output, _),) = recorder.calls[0].finished
    assert output == {"user": "ann", "access_token": "[redacted]"}


def test_async_calls_and_async_tools_are_observed_in_the_callers_task() -> None:
    """An async tool through aexecute runs inside the window; finish comes in the same task."""
    recorder = Recorder()
    runtime = _runtime(recorder)

    async def run() -> str:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("aecho", {"text": "a"}, ctx)
            assert current.get() is None
            return str(result.output)

    try:
        assert asyncio.run(run()) == "a|call:aecho"
    finally:
        runtime.close()
    assert len(recorder.calls) == 1 and len(recorder.calls[0].finished) == 1


def test_a_sync_execute_of_an_async_tool_carries_the_window_to_the_loop_thread() -> None:
    """The coroutine runs on the runtime's loop thread in a copy of the caller's context."""
    recorder = Recorder()
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        assert runtime.execute("aecho", {"text": "b"}, ctx).output == "b|call:aecho"


@pytest.mark.parametrize(
    ("name", "params", "plan", "status"),
    [
        ("boom", {}, {}, "error"),
        ("echo", {"text": 5}, {}, "invalid_input"),
        ("writer", {}, {"read_only": True}, "denied"),
        ("missing", {}, {}, "error"),
    ],
)
def test_every_ending_finishes_the_observer_exactly_once(
    name: str, params: dict[str, Any], plan: dict[str, Any], status: str
) -> None:
    """Failures, refusals and unknown tools all reach finish once, with their trace."""
    recorder = Recorder()
    with _runtime(recorder) as runtime, runtime.plan(**plan) as ctx:
        try:
            runtime.execute(name, params, ctx)
        except (ToolAccessDeniedError, ToolNotFoundError):
            pass
    (observer,) = recorder.calls
    ((trace, *_),) = observer.finished
    assert trace is not None and trace.status == status
    assert current.get() is None


def test_a_models_call_of_an_unknown_tool_is_observed_once_with_its_trace() -> None:
    """runtime.call refuses it before any tool, and still opens and finishes one observer."""
    recorder = Recorder()
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        result = runtime.call({"id": "t1", "name": "nope"}, ctx)
    assert recorder.seen == [
        {"tool": "nope", "descriptor": None, "call_id": recorder.seen[0]["call_id"], "id": "t1"}
    ]
    ((trace, *_),) = recorder.calls[0].finished
    assert trace is result.trace
    assert trace is not None and trace.status == "error"
    assert current.get() is None


def test_a_cancelled_call_finishes_its_observer_before_raising() -> None:
    """A call of a cancelled plan raises, and its observer has been told first."""
    recorder = Recorder()
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        ctx.cancellation_token.cancel("stop")
        with pytest.raises(ToolCancelledError):
            runtime.execute("echo", {"text": "x"}, ctx)
    ((trace, *_),) = recorder.calls[0].finished
    assert trace is not None and trace.status == "cancelled"


def test_call_passes_the_models_call_id() -> None:
    """runtime.call hands the provider's tool-call id to call_started."""
    recorder = Recorder()
    openai_call = {
        "id": "call_abc",
        "type": "function",
        "function": {"name": "echo", "arguments": '{"text": "z"}'},
    }
    with _runtime(recorder) as runtime, runtime.plan() as ctx:
        runtime.call(openai_call, ctx)
        runtime.execute("echo", {"text": "z"}, ctx)
    assert [seen["id"] for seen in recorder.seen] == ["call_abc", None]


def test_activation_and_deactivation_are_observed_as_stages() -> None:
    """Activate runs inside the first call's window; deactivate is observed at plan end."""
    recorder = Recorder()
    with _runtime(recorder) as runtime:
        with runtime.plan() as ctx:
            runtime.execute("echo", {"text": "x"}, ctx)
            runtime.execute("echo", {"text": "y"}, ctx)
        stages = [(w.stage, w.tool_name, w.parent, w.errors) for w in recorder.stages]
    assert stages == [
        ("activate", "echo", "call:echo", [None]),
        ("deactivate", "echo", None, [None]),
    ]


def test_a_failing_activation_is_reported_to_its_stage_observer() -> None:
    """The stage observer receives the exception activate raised."""

    class Broken:
        def discover(self) -> ToolDescriptor:
            return ToolDescriptor(name="broken")

        def activate(self, ctx: ToolExecutionContext) -> None:
            raise OSError("no socket")

        def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> None:
            raise AssertionError("never runs")

        def deactivate(self, ctx: ToolExecutionContext) -> None:
            raise AssertionError("never runs")

    recorder = Recorder()
    with ToolRuntime(tracer=NullTracer(), instrumentation=recorder) as runtime:
        runtime.register(Broken())
        with runtime.plan() as ctx:
            with pytest.raises(Exception, match="no socket"):
                runtime.execute("broken", {}, ctx)
    (watch,) = recorder.stages
    assert isinstance(watch.errors[0], OSError)


def test_hooks_that_raise_never_fail_a_call(caplog: pytest.LogCaptureFixture) -> None:
    """An instrumentation whose every hook raises is logged and ignored."""
    caplog.set_level(logging.WARNING, logger="toolcycle")

    class Raising:
        def call_started(self, **_: Any) -> Any:
            raise RuntimeError("start hook")

        def stage_started(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError("stage hook")

    class FinishRaises(Recorder):
        def call_started(self, **kwargs: Any) -> Any:
            observer = super().call_started(**kwargs)
            observer.finish = _raise  # type: ignore[method-assign]
            return observer

    for instrumentation in (Raising(), FinishRaises()):
        with ToolRuntime(tracer=NullTracer(), instrumentation=instrumentation) as runtime:
            runtime.register(echo)
            with runtime.plan() as ctx:
                assert runtime.execute("echo", {"text": "ok"}, ctx).success
        current.set(None)
    hooks = [
        r.__dict__.get("hook") for r in caplog.records if r.getMessage() == "instrumentation.failed"
    ]
    # Raising: call_started, then activate and deactivate; FinishRaises: finish.
    assert hooks == ["call_started", "stage_started", "stage_started", "finish"]


def _raise(*_: Any, **__: Any) -> None:
    raise RuntimeError("finish hook")


class _Unprintable(Exception):
    """An error whose repr and str both raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


class _UnprintableHooks:
    """Every hook and observer raises an error that cannot be printed."""

    def call_started(self, **_: Any) -> Any:
        return self

    def stage_started(self, *_: Any, **__: Any) -> Any:
        return self

    @property
    def record_payloads(self) -> bool:
        return False

    def finish(self, *_: Any, **__: Any) -> None:
        raise _Unprintable()


class _UnprintableStarts:
    """Both start hooks raise an error that cannot be printed."""

    def call_started(self, **_: Any) -> Any:
        raise _Unprintable()

    def stage_started(self, *_: Any, **__: Any) -> Any:
        raise _Unprintable()


@pytest.mark.parametrize("hooks", [_UnprintableHooks, _UnprintableStarts])
def test_a_hook_raising_an_error_that_cannot_be_printed_is_logged_and_ignored(
    hooks: type, caplog: pytest.LogCaptureFixture
) -> None:
    """The log record names the error's class; the call and the plan's end are unaffected."""
    with (
        caplog.at_level(logging.WARNING, logger="toolcycle"),
        ToolRuntime(tracer=NullTracer(), instrumentation=hooks()) as runtime,
    ):
        runtime.register(echo)
        with runtime.plan() as ctx:
            assert runtime.execute("echo", {"text": "ok"}, ctx).success
    errors = [
        r.__dict__["error"] for r in caplog.records if r.getMessage() == "instrumentation.failed"
    ]
    assert len(errors) == 3  # the call's hook and both stages'
    assert all(error.startswith("_Unprintable: <the message of") for error in errors)
