"""The MCP loop thread: hopping to it from sync code, other loops and itself."""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolcycle.sources.mcp import _loop


async def _where() -> str:
    return threading.current_thread().name


async def _boom() -> None:
    raise ValueError("from the loop")


def test_run_executes_on_the_mcp_thread_and_passes_errors_back() -> None:
    """Sync callers get the coroutine's result, or its exception, from the toolcycle-mcp thread."""
    assert _loop.run(_where()) == "toolcycle-mcp"
    with pytest.raises(ValueError, match="from the loop"):
        _loop.run(_boom())


async def test_hop_from_another_loop_and_from_the_mcp_loop_itself() -> None:
    """A hop switches threads once from a foreign loop, and awaits in place on its own loop."""
    assert await _loop.hop(_where()) == "toolcycle-mcp"

    async def nested() -> tuple[str, bool]:
        return await _loop.hop(_where()), _loop.on_loop()

    assert await _loop.hop(nested()) == ("toolcycle-mcp", True)


def test_a_blocking_run_on_the_mcp_thread_is_refused() -> None:
    """run() from the loop's own thread would wait on itself, so it raises instead."""

    async def blocking() -> None:
        _loop.run(_where())

    with pytest.raises(RuntimeError, match="from the MCP loop's own thread"):
        _loop.run(blocking())


def test_submit_starts_work_without_waiting_from_any_thread() -> None:
    """submit() from outside and from inside the loop both run the coroutine."""
    done = threading.Event()

    async def mark() -> None:
        done.set()

    async def submit_inside() -> None:
        _loop.submit(mark())

    _loop.submit(submit_inside())
    assert done.wait(5)
    assert not _loop.on_loop()


async def test_hop_passes_errors_back_to_the_caller() -> None:
    """An exception raised on the MCP loop is raised from the caller's await."""
    with pytest.raises(ValueError, match="from the loop"):
        await _loop.hop(_boom())


async def test_cancelling_the_caller_cancels_the_task_on_the_mcp_loop() -> None:
    """The caller's cancellation reaches the coroutine running on the other thread."""
    started = threading.Event()
    cancelled = threading.Event()

    async def park() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    caller = asyncio.ensure_future(_loop.hop(park()))
    assert await asyncio.to_thread(started.wait, 5)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert await asyncio.to_thread(cancelled.wait, 5)


async def test_a_task_cancelled_on_the_mcp_loop_cancels_the_callers_await() -> None:
    """A coroutine that ends cancelled over there is a CancelledError here."""

    async def cancel_self() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)

    caller = asyncio.ensure_future(_loop.hop(cancel_self()))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)


async def test_hop_can_target_any_running_loop() -> None:
    """hop(coro, loop) runs on that loop's thread, and in place when it is the caller's."""
    assert await _loop.hop(_where(), asyncio.get_running_loop()) == threading.current_thread().name
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, name="other-loop")
    thread.start()
    try:
        assert await asyncio.wait_for(_loop.hop(_where(), other), 5) == "other-loop"
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()


def test_start_on_runs_detached_and_refuses_a_closed_loop() -> None:
    """start_on hands a coroutine to a loop without waiting; a closed loop gets nothing."""
    loop = asyncio.new_event_loop()
    ran = threading.Event()

    async def mark() -> None:
        ran.set()

    assert _loop.start_on(loop, mark())
    loop.run_until_complete(asyncio.sleep(0))
    assert ran.is_set()
    loop.close()
    never = mark()
    assert not _loop.start_on(loop, never)
    assert never.cr_frame is None  # closed, so no "never awaited" warning


async def test_a_result_the_cancelled_caller_never_saw_is_handed_to_undo() -> None:
    """Cancelled just as the work on the MCP loop finished, the caller's undo gets its result."""
    go, finished, undone = threading.Event(), threading.Event(), threading.Event()
    handed: list[str] = []

    async def work() -> str:
        await asyncio.to_thread(go.wait, 5)
        # Runs after this step, once the task is done, before the caller hears of it.
        asyncio.get_running_loop().call_soon(finished.set)
        return "held"

    async def undo(value: str) -> None:
        handed.append(value)
        undone.set()

    caller = asyncio.ensure_future(_loop.hop(work(), undo=undo))
    await asyncio.sleep(0)  # the hop is under way
    go.set()
    assert finished.wait(5)  # blocks this loop: the caller cannot see the result yet
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert await asyncio.to_thread(undone.wait, 5)
    assert handed == ["held"]


async def test_undo_is_not_run_for_work_that_the_cancellation_stopped() -> None:
    """Work cancelled before it finished has nothing to undo."""
    started = threading.Event()
    handed: list[object] = []

    async def work() -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    async def undo(value: str) -> None:
        handed.append(value)

    caller = asyncio.ensure_future(_loop.hop(work(), undo=undo))
    assert await asyncio.to_thread(started.wait, 5)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    done = asyncio.run_coroutine_threadsafe(asyncio.sleep(0), _loop.event_loop())
    await asyncio.wrap_future(done)  # the MCP loop has handled the cancellation
    assert handed == []
