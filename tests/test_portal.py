"""The runtime's loop thread and the stage invoker."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from toolcycle import (
    ApprovalDecision,
    CancellationToken,
    ToolExecutionContext,
    ToolRuntime,
    ToolRuntimeError,
    tool,
)
from toolcycle.execution._invoke import Invoker
from toolcycle.execution._portal import Portal, PortalTimeoutError
from toolcycle.execution._threads import InvokeTimeoutError
from toolcycle.testing import FakeTool

WAIT = 5.0


@pytest.fixture
def portal() -> Any:
    """A portal closed after the test."""
    p = Portal()
    yield p
    p.close()


async def _value(x: int) -> int:
    await asyncio.sleep(0)
    return x


async def _raise() -> None:
    raise LookupError("inside")


async def _forever(started: threading.Event | None = None) -> None:
    if started is not None:
        started.set()
    await asyncio.Event().wait()


def test_call_returns_the_result_and_raises_the_exception(portal: Portal) -> None:
    """A coroutine's value comes back; its exception is raised in the caller."""
    assert portal.call(_value(7)) == 7
    with pytest.raises(LookupError, match="inside"):
        portal.call(_raise())


def test_call_runs_on_a_separate_daemon_thread(portal: Portal) -> None:
    """The loop runs on a daemon thread named toolcycle-portal."""

    async def where() -> tuple[str, bool]:
        thread = threading.current_thread()
        return thread.name, thread.daemon

    assert portal.call(where()) == ("toolcycle-portal", True)
    assert not portal.in_portal_thread()


def test_timeout_cancels_the_task(portal: Portal) -> None:
    """A coroutine over its timeout is cancelled and PortalTimeoutError raised."""
    with pytest.raises(PortalTimeoutError):
        portal.call(_forever(), timeout=0.02)


def test_a_task_that_finishes_after_cancellation_returns_its_value(portal: Portal) -> None:
    """If the cancelled task still returns a value, the caller gets it."""

    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "cleaned up"
        return "unreachable"  # pragma: no cover - the wait never ends on its own

    assert portal.call(stubborn(), timeout=0.02) == "cleaned up"


def test_cancellation_callback_cancels_the_task(portal: Portal) -> None:
    """A cancel registered through on_cancel stops the task with CancelledError."""
    token = CancellationToken()
    started = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            portal.call(_forever(started), on_cancel=token.on_cancel)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(WAIT)
    token.cancel()
    worker.join(WAIT)
    assert len(errors) == 1 and isinstance(errors[0], asyncio.CancelledError)


def test_call_from_the_portal_thread_is_refused(portal: Portal) -> None:
    """Blocking the loop thread on itself is refused with a clear error."""

    async def nested() -> None:
        portal.call(_value(1))

    with pytest.raises(ToolRuntimeError, match="wait on itself"):
        portal.call(nested())


def test_call_after_close_is_refused() -> None:
    """A closed portal runs nothing, and close() is idempotent."""
    portal = Portal()
    assert portal.call(_value(1)) == 1
    portal.close()
    portal.close()
    with pytest.raises(ToolRuntimeError, match="closed"):
        portal.call(_value(2))


def test_close_cancels_pending_tasks() -> None:
    """Tasks still running at close are cancelled so the thread can end."""
    portal = Portal()
    started = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            portal.call(_forever(started))
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(WAIT)
    portal.close()
    worker.join(WAIT)
    assert errors and isinstance(errors[0], asyncio.CancelledError)


def test_close_from_the_portal_thread_stops_the_loop() -> None:
    """Closing from inside the loop thread stops it without waiting on itself."""
    portal = Portal()

    async def close_inside() -> str:
        portal.close()
        return "closing"

    assert portal.call(close_inside()) == "closing"


def test_invoker_runs_awaitables_returned_by_sync_functions() -> None:
    """A plain function that returns an awaitable has it awaited, sync or async."""
    invoker = Invoker()
    try:
        assert invoker.call(lambda: _value(3)) == 3

        async def main() -> Any:
            return await invoker.acall(lambda: _value(4))

        assert asyncio.run(main()) == 4
    finally:
        invoker.close()


def test_acall_trusts_the_callers_coroutine_flag() -> None:
    """``coroutine=True`` calls ``fn`` in the caller's thread; unknown, a sync one goes to the pool.

    The runtime passes what it found at registration, so it does not look again.
    """
    called_in: list[str] = []

    def stage() -> Any:
        called_in.append(threading.current_thread().name)
        return _value(7)

    invoker = Invoker()

    async def main() -> tuple[int, int]:
        return await invoker.acall(stage, coroutine=True), await invoker.acall(stage)

    try:
        assert asyncio.run(main()) == (7, 7)
    finally:
        invoker.close()
    here = threading.current_thread().name
    assert called_in[0] == here
    assert called_in[1].startswith("toolcycle-worker")


def test_invoker_timeout_of_a_sync_function_from_async_code() -> None:
    """A sync function over its timeout under acall raises InvokeTimeoutError."""
    invoker = Invoker()
    release = threading.Event()

    async def main() -> None:
        await invoker.acall(release.wait, WAIT, timeout=0.02)

    try:
        with pytest.raises(InvokeTimeoutError):
            asyncio.run(main())
    finally:
        release.set()
        invoker.close()


def test_call_many_from_the_runtimes_loop_thread_names_acall_many() -> None:
    """A blocking call_many made on the runtime's own loop thread says to await acall_many."""

    @tool(writes=False)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    with ToolRuntime() as runtime:
        runtime.register(add)

        @tool(writes=False)
        async def batch() -> str:
            """Run a batch with the blocking method, from the runtime's own loop."""
            runtime.call_many([{"name": "add", "arguments": {"a": 1, "b": 2}}], ctx)
            return "ran"

        runtime.register(batch)
        with runtime.plan() as ctx:
            refused = runtime.execute("batch", {}, ctx)
    assert not refused.success
    assert refused.error is not None
    assert "call_many was called from the runtime's own event-loop thread" in refused.error
    assert "await runtime.acall_many(...) instead" in refused.error


class Later(FakeTool):
    """A tool with async stages (but activate): a sync caller runs them on the loop thread."""

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Return the arguments."""
        return params

    async def deactivate(self, ctx: ToolExecutionContext) -> None:
        """Nothing to close."""


class Opens(Later):
    """A tool whose activation is async too."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        """Nothing to open."""


@tool(writes=True, requires_approval=True)
async def send(to: str) -> str:
    """An async tool whose calls wait for an approval."""
    return f"sent to {to}"


def _refusal_on_the_loop_thread(use: Callable[[ToolRuntime, Any], object]) -> str:
    """What ``use(runtime, ctx)`` refuses with when run inside an async tool on the loop thread."""
    with ToolRuntime() as runtime:
        runtime.register(Later(name="later"))
        runtime.register(Opens(name="opens"))
        runtime.register(send)

        @tool(writes=False)
        async def inside() -> str:
            """Make a blocking call from the runtime's own loop thread."""
            try:
                answer = use(runtime, ctx)
            except ToolRuntimeError as exc:
                return str(exc)
            return repr(answer)

        runtime.register(inside)
        with runtime.plan() as ctx:
            return str(runtime.execute("inside", {}, ctx).output)


def _end_another_plan(runtime: ToolRuntime, ctx: Any) -> object:
    other = runtime.new_context()
    runtime.activate("later", other)
    return runtime.end_plan(other)


def _resume(runtime: ToolRuntime, ctx: Any) -> object:
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("wait")) as other:
        pending = runtime.execute("send", {"to": "ann"}, other).pending
    return runtime.resume(pending, True, ctx).error  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("use", "advice"),
    [
        (lambda rt, ctx: rt.execute("later", {"a": 1}, ctx).error, "await runtime.aexecute(...)"),
        (
            lambda rt, ctx: rt.call({"name": "later", "arguments": {"a": 1}}, ctx).error,
            "await runtime.acall(...)",
        ),
        (lambda rt, ctx: rt.activate("opens", rt.new_context()), "await runtime.aactivate(...)"),
        (_end_another_plan, "await runtime.aend_plan(...)"),
        (_resume, "await runtime.aresume(...)"),
    ],
    ids=["execute", "call", "activate", "end_plan", "resume"],
)
def test_a_refused_sync_call_on_the_loop_thread_names_the_async_twin_of_the_method_called(
    use: Callable[[ToolRuntime, Any], object], advice: str
) -> None:
    """Each sync method refused on the runtime's loop thread says which async method to await."""
    refusal = _refusal_on_the_loop_thread(use)
    assert "from the runtime's own event-loop thread, where it would wait on itself" in refusal
    assert advice in refusal


def test_a_plan_scope_ended_on_the_loop_thread_logs_the_advice_to_use_aplan(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A ``with runtime.plan()`` whose end is refused on the loop thread says to use aplan."""

    def scope(runtime: ToolRuntime, ctx: Any) -> object:
        with runtime.plan() as other:
            runtime.activate("later", other)
        return None

    caplog.set_level("WARNING", logger="toolcycle.runtime")
    _refusal_on_the_loop_thread(scope)
    logged = [r for r in caplog.records if r.getMessage() == "tool.deactivate_failed"]
    assert logged, caplog.records
    error = str(vars(logged[0]).get("error"))
    assert "where it would wait on itself; async with runtime.aplan() instead" in error
