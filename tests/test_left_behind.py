"""Nothing of a runtime is left behind: threads, and a process that cannot exit."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolcycle
from toolcycle import NullTracer, ToolExecutionContext, ToolRuntime, ToolRuntimeError
from toolcycle.execution._invoke import Invoker
from toolcycle.testing import FakeTool

# The scripts import the toolcycle this test imports.
SRC = Path(toolcycle.__file__).resolve().parent.parent
EXIT_LIMIT = 20.0
WAIT = 10.0


def _run_script(code: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``code`` in a fresh interpreter, killed after EXIT_LIMIT; its outcome and duration."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=EXIT_LIMIT,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    return done, time.monotonic() - started


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread not in before]


def test_a_sync_tool_left_running_by_a_cancelled_await_does_not_hold_up_exit() -> None:
    """The pool thread of a sync tool whose aexecute was cancelled does not block interpreter exit."""
    done, took = _run_script(
        """
        import asyncio, threading
        from toolcycle import NullTracer, ToolRuntime

        started = threading.Event()

        def stuck() -> str:
            '''Never returns.'''
            started.set()
            threading.Event().wait()
            return "never"

        runtime = ToolRuntime(tracer=NullTracer(), drain_timeout=0.1)
        runtime.register(stuck)

        async def main() -> None:
            ctx = runtime.new_context("stuck")
            call = asyncio.ensure_future(runtime.aexecute("stuck", {}, ctx))
            while not started.is_set():
                await asyncio.sleep(0.01)
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)

        asyncio.run(main())
        runtime.close()
        print("closed", flush=True)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "closed\n"
    assert took < EXIT_LIMIT


def test_an_unclosed_runtime_with_an_open_plan_and_async_calls_exits_promptly() -> None:
    """A script that never closes its runtime, its plan open, still exits at its end."""
    done, _ = _run_script(
        """
        import asyncio
        from toolcycle import NullTracer, ToolRuntime

        async def shout(text: str) -> str:
            '''Upper-cases text.'''
            await asyncio.sleep(0)
            return text.upper()

        def whisper(text: str) -> str:
            '''Lower-cases text.'''
            return text.lower()

        runtime = ToolRuntime(tracer=NullTracer())
        runtime.register(shout)
        runtime.register(whisper)
        ctx = runtime.new_context("left-open")
        assert runtime.execute("shout", {"text": "a"}, ctx).output == "A"

        async def main() -> None:
            assert (await runtime.aexecute("whisper", {"text": "B"}, ctx)).output == "b"
            assert (await runtime.aexecute("shout", {"text": "c"}, ctx)).output == "C"

        asyncio.run(main())
        print("leaving", flush=True)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "leaving\n"


def test_a_runtime_dropped_without_close_stops_its_threads() -> None:
    """Once an unclosed runtime is garbage-collected, its loop thread and pool workers end."""
    before = set(threading.enumerate())

    async def shout(text: str) -> str:
        """Upper-cases text."""
        return text.upper()

    def whisper(text: str) -> str:
        """Lower-cases text."""
        return text.lower()

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(shout)
    runtime.register(whisper)
    ctx = runtime.new_context("dropped")
    assert runtime.execute("shout", {"text": "a"}, ctx).output == "A"

    async def whisper_b(rt: ToolRuntime, plan: ToolExecutionContext) -> str:
        result = await rt.aexecute("whisper", {"text": "B"}, plan)
        return str(result.output)

    assert asyncio.run(whisper_b(runtime, ctx)) == "b"
    started = _new_threads(before)
    assert started, "the runtime started no thread of its own"
    del runtime, ctx
    gc.collect()
    for thread in started:
        thread.join(5.0)
    assert [thread.name for thread in started if thread.is_alive()] == []


def test_a_closed_invoker_starts_no_worker_thread_for_a_late_sync_call() -> None:
    """A sync stage reaching the pool after close is refused instead of starting a new pool."""
    invoker = Invoker()
    invoker.close()
    before = set(threading.enumerate())

    def stage() -> str:
        return "ran"

    with pytest.raises(ToolRuntimeError, match="closed"):
        asyncio.run(invoker.acall(stage))
    assert _new_threads(before) == []


class _SlowToLeave(FakeTool):
    """A tool whose deactivate waits for the test's release."""

    def __init__(self) -> None:
        super().__init__(name="slow_to_leave")
        self.leaving = threading.Event()
        self.release = threading.Event()
        self.left = threading.Event()

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.leaving.set()
        self.release.wait(WAIT)
        super().deactivate(ctx)
        self.left.set()


def test_a_close_racing_another_threads_close_returns_once_that_one_is_over(
    log_waiter: Callable[..., Any],
) -> None:
    """The second close() waits for the first's deactivations and thread stops, not just its start."""
    awaiting = log_waiter("toolcycle.lifecycle", "runtime.awaiting_close", logging.DEBUG)
    tool = _SlowToLeave()
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(tool)
    ctx = runtime.new_context("p")
    runtime.execute("slow_to_leave", {}, ctx)
    first = threading.Thread(target=runtime.close)
    first.start()
    assert tool.leaving.wait(WAIT)
    seen: list[bool] = []

    def second_close() -> None:
        runtime.close()
        seen.append(tool.left.is_set())

    second = threading.Thread(target=second_close)
    second.start()
    waited = awaiting.wait("")
    tool.release.set()
    second.join(WAIT)
    first.join(WAIT)
    assert seen == [True]
    assert waited


def test_close_from_a_deactivate_during_close_does_not_wait_on_itself() -> None:
    """A deactivate that closes the runtime, while close() ends its plan, returns at once."""

    class Closes(FakeTool):
        def deactivate(self, ctx: ToolExecutionContext) -> None:
            runtime.close()
            super().deactivate(ctx)

    runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=WAIT)
    runtime.register(Closes(name="closes"))
    ctx = runtime.new_context("p")
    runtime.execute("closes", {}, ctx)
    started = time.monotonic()
    runtime.close()
    assert time.monotonic() - started < WAIT
    assert ctx.ended and runtime.closed
