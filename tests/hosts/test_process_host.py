"""ProcessHost: a plan's tool stages run in the plan's own worker process."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import hosts_toolbox as box
import pytest
from hosts_toolbox import lines

from toolcycle import ToolActivationError, ToolCancelledError, ToolRuntime, tool
from toolcycle.hosts import ProcessHost, ToolHostError

WAIT = 10.0
POSIX = pytest.mark.skipif(not hasattr(os, "setsid"), reason="sessions are POSIX")


def test_stages_run_in_the_plans_worker_in_lifecycle_order(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """Activate once per tool, execute there, deactivate in reverse order, then end the worker."""
    with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        first = runtime.execute("first", {"x": 1}, ctx)
        runtime.execute("second", {}, ctx)
        again = runtime.execute("first", {"x": 2}, ctx)
        pid = host.worker_pid(ctx)
    assert first.output["pid"] == again.output["pid"] == pid != os.getpid()
    assert again.output["x"] == 2
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "second"],
        ["execute", "second"],
        ["execute", "first"],
        ["deactivate", "second"],
        ["deactivate", "first"],
    ]
    assert {words[2] for words in lines(journal)} == {str(pid)}
    assert host.worker_pid(ctx) is None


def test_a_hosted_plan_runs_a_tool_registered_anew_beside_the_one_it_replaces(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """As without a host: the new tool is activated before its next call, both deactivated."""
    with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        runtime.execute("first", {}, ctx)
        runtime.unregister("first")
        runtime.register(box.Recorder("first", tag="-new"))
        again = runtime.execute("first", {}, ctx)
        assert again.success and again.output["pid"] == host.worker_pid(ctx)
        assert runtime.cache.active_tools(ctx.plan_id) == ("first", "first")
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "first-new"],
        ["execute", "first-new"],
        ["deactivate", "first-new"],
        ["deactivate", "first"],
    ]


async def test_an_async_hosted_plan_runs_a_tool_registered_anew(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """The same from async code, including a third registration under the name."""
    async with runtime.aplan(host=host, metadata={"journal": str(journal)}) as ctx:
        await runtime.aexecute("first", {}, ctx)
        runtime.unregister("first")
        runtime.register(box.Recorder("first", tag="-two"))
        await runtime.aexecute("first", {}, ctx)
        runtime.unregister("first")
        runtime.register(box.Recorder("first", tag="-three"))
        assert (await runtime.aexecute("first", {}, ctx)).success
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "first-two"],
        ["execute", "first-two"],
        ["activate", "first-three"],
        ["execute", "first-three"],
        ["deactivate", "first-three"],
        ["deactivate", "first-two"],
        ["deactivate", "first"],
    ]


def test_each_plan_has_a_worker_of_its_own(runtime: ToolRuntime, host: ProcessHost) -> None:
    """Two plans open at once on one host run in two processes."""
    with runtime.plan(host=host) as one, runtime.plan(host=host) as two:
        pids = {runtime.execute("where", {}, one).output, runtime.execute("where", {}, two).output}
    assert len(pids) == 2


def test_two_runtimes_plans_with_one_id_each_keep_a_worker_of_their_own(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """A host shared by runtimes tells plans apart by context, not by an id callers choose."""
    with ToolRuntime() as other:
        other.register(box.where)
        with runtime.plan("job-1", host=host) as mine:
            first = runtime.execute("where", {}, mine).output
            with other.plan("job-1", host=host, read_only=True) as theirs:
                assert other.execute("where", {}, theirs).output not in (first, os.getpid())
            again = runtime.execute("where", {}, mine)  # their end left my worker alone
    assert again.success and again.output == first


def test_a_trace_names_the_host_and_the_worker(runtime: ToolRuntime, host: ProcessHost) -> None:
    """The trace is the usual one, plus the host's name and its worker."""
    with runtime.plan(host=host) as ctx:
        result = runtime.execute("where", {}, ctx)
    assert result.trace.status == "ok"
    assert result.trace.host == "local"
    assert result.trace.host_id == f"pid {result.output}"


def test_a_plan_without_a_host_has_no_host_in_its_traces(runtime: ToolRuntime) -> None:
    """Without a host, the body runs here and the trace says nothing of hosts."""
    with runtime.plan() as ctx:
        result = runtime.execute("where", {}, ctx)
    assert result.output == os.getpid()
    assert result.trace.host is None and result.trace.host_id is None


def test_changes_and_progress_come_back_with_the_result(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """What the tool recorded and reported in the worker reaches the caller's plan."""
    events = []
    with runtime.plan(host=host, on_progress=events.append) as ctx:
        result = runtime.execute("change_something", {"target": "a.txt"}, ctx)
        assert [change.target for change in ctx.changes] == ["a.txt"]
    assert [change.target for change in result.changes] == ["a.txt"]
    assert result.changes[0].tool_name == "change_something"
    assert [event.message for event in events] == ["half", "done"]
    assert result.trace.progress_count == 2


def test_changes_recorded_before_a_failure_come_back_with_the_error(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """A body that records a change and then raises leaves the change in the plan's record."""
    with runtime.plan(host=host) as ctx:
        result = runtime.execute("change_then_fail", {"target": "a.txt"}, ctx)
        assert [change.target for change in ctx.changes] == ["a.txt"]
    assert not result.success
    assert isinstance(result.exception, ValueError)
    assert [change.target for change in result.changes] == ["a.txt"]
    assert result.changes[0].tool_name == "change_then_fail"


async def test_changes_recorded_before_a_failure_come_back_to_async_callers_too(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """From aexecute, the failed call's result and the plan's record hold the change."""
    async with runtime.aplan(host=host) as ctx:
        result = await runtime.aexecute("change_then_fail", {"target": "b.txt"}, ctx)
        assert [change.target for change in ctx.changes] == ["b.txt"]
    assert isinstance(result.exception, ValueError)
    assert [change.target for change in result.changes] == ["b.txt"]


async def test_a_tool_in_the_worker_reads_its_call_id_and_its_plans_limits_and_reveals(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """The worker's context says what the caller's would: call id, limits, revealed tools."""
    async with runtime.aplan(host=host, timeout=30.0, idle_timeout=20) as ctx:
        ctx.reveal_tools(["earlier"])
        sync = runtime.execute("call_info", {}, ctx)
        asynchronous = await runtime.aexecute("call_info", {}, ctx)
    for result in (sync, asynchronous):
        assert result.success and result.trace is not None
        assert result.output == {
            "call_id": result.trace.call_id,
            "timeout": 30.0,
            "idle_timeout": 20,
            "revealed": ["earlier"],
        }
    assert sync.trace.call_id != asynchronous.trace.call_id


async def test_tools_a_hosted_tool_reveals_reach_the_callers_plan(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """ctx.reveal_tools in the worker reveals the tools in the plan, even if the call then fails."""
    async with runtime.aplan(host=host) as ctx:
        assert runtime.execute("reveal", {"names": ["one"]}, ctx).success
        assert ctx.revealed_tools == {"one"}
        failed = runtime.execute("reveal", {"names": ["two"], "then_fail": True}, ctx)
        assert not failed.success and ctx.revealed_tools == {"one", "two"}
        assert (await runtime.aexecute("areveal", {"names": ["three"]}, ctx)).success
        assert ctx.revealed_tools == {"one", "two", "three"}


def test_cancelling_the_plan_cancels_the_body_in_the_worker(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """The body's call token in the worker mirrors the caller's: it stops the body."""
    started = threading.Event()
    outcome: list[BaseException] = []
    with runtime.plan(
        host=host, metadata={"journal": str(journal)}, on_progress=lambda _: started.set()
    ) as ctx:

        def run() -> None:
            try:
                runtime.execute("wait_for_cancel", {}, ctx)
            except BaseException as exc:
                outcome.append(exc)

        caller = threading.Thread(target=run)
        caller.start()
        assert started.wait(WAIT)
        ctx.cancellation_token.cancel("stop now")
        caller.join(WAIT)
    assert isinstance(outcome[0], ToolCancelledError)
    assert [words[0] for words in lines(journal)] == ["cancelled"]


async def test_cancelling_an_async_call_cancels_the_coroutine_in_the_worker(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """From async code, the token cancels the awaiting task and the worker's task with it."""
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    async with runtime.aplan(
        host=host,
        metadata={"journal": str(journal)},
        on_progress=lambda _: loop.call_soon_threadsafe(started.set),
    ) as ctx:
        call = asyncio.ensure_future(runtime.aexecute("await_cancel", {}, ctx))
        await asyncio.wait_for(started.wait(), WAIT)
        ctx.cancellation_token.cancel("stop now")
        with pytest.raises(ToolCancelledError):
            await asyncio.wait_for(call, WAIT)
    assert [words[0] for words in lines(journal)] == ["cancelled"]


@pytest.mark.parametrize(
    ("name", "left_running"),
    [("wait_for_cancel", True), ("await_cancel", False)],
    ids=["sync-body", "coroutine-body"],
)
def test_a_timeout_gives_up_on_the_call_and_cancels_its_body(
    runtime: ToolRuntime, host: ProcessHost, journal: Path, name: str, left_running: bool
) -> None:
    """The caller stops waiting at the limit; only a sync body is said to be left running."""
    with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        runtime.activate(name, ctx)  # starting the worker is not the call's time
        result = runtime.execute(name, {}, ctx, timeout=0.5)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert result.trace.abandoned is left_running
    assert ("left running" in (result.error or "")) is left_running
    assert [words[0] for words in lines(journal)] == ["cancelled"]  # its token, or its task


def test_a_timed_out_call_says_its_own_body_was_left_running_when_its_tool_was_replaced(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """A coroutine tool registered under the name while the sync call ran changes nothing."""
    started = threading.Event()

    @tool(name="wait_for_cancel")
    async def replacement() -> str:
        """Answer at once."""
        return "new"

    with runtime.plan(
        host=host, metadata={"journal": str(journal)}, on_progress=lambda _: started.set()
    ) as ctx:
        runtime.activate("wait_for_cancel", ctx)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            running = pool.submit(runtime.execute, "wait_for_cancel", {}, ctx, timeout=2.0)
            assert started.wait(WAIT)
            runtime.unregister("wait_for_cancel")
            runtime.register(replacement)
            result = running.result(WAIT)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert result.trace.abandoned
    assert "left running" in (result.error or "")


@pytest.mark.parametrize(
    ("name", "left_running"),
    [("wait_for_cancel", True), ("await_cancel", False)],
    ids=["sync-body", "coroutine-body"],
)
async def test_an_async_call_past_its_limit_says_whether_its_body_was_left_running(
    runtime: ToolRuntime, host: ProcessHost, journal: Path, name: str, left_running: bool
) -> None:
    """From aexecute, a sync body runs on in the worker (abandoned); a coroutine is cancelled."""
    async with runtime.aplan(host=host, metadata={"journal": str(journal)}) as ctx:
        await runtime.aactivate(name, ctx)
        result = await runtime.aexecute(name, {}, ctx, timeout=0.5)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert result.trace.abandoned is left_running
    assert ("left running" in (result.error or "")) is left_running
    assert [words[0] for words in lines(journal)] == ["cancelled"]  # its token, or its task


async def test_async_plans_run_every_stage_in_the_worker(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """Async calls and aend_plan drive the same lifecycle, sync and coroutine tools alike."""
    async with runtime.aplan(host=host, metadata={"journal": str(journal)}) as ctx:
        coro = await runtime.aexecute("coro", {"x": 3}, ctx)
        plain = await runtime.aexecute("first", {}, ctx)
        await runtime.aactivate("second", ctx)
    assert coro.output["pid"] == plain.output["pid"] != os.getpid()
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "coro"],
        ["execute", "coro"],
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "second"],
        ["deactivate", "second"],
        ["deactivate", "first"],
        ["deactivate", "coro"],
    ]


def test_a_killed_worker_fails_its_call_and_the_plan_goes_on_in_a_fresh_one(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """The running call fails naming the host; the next call activates again in a new worker."""
    with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        runtime.execute("first", {}, ctx)
        killed = host.worker_pid(ctx)
        assert killed is not None
        ctx.on_progress = lambda _: os.kill(killed, signal.SIGKILL)
        failed = runtime.execute("wait_for_cancel", {}, ctx)
        ctx.on_progress = None
        again = runtime.execute("first", {}, ctx)
    assert not failed.success
    assert failed.trace.error_type == "ToolHostError"
    assert "'local'" in (failed.error or "") and "SIGKILL" in (failed.error or "")
    assert again.output["pid"] not in (killed, os.getpid())
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "first"],
        ["execute", "first"],
        ["deactivate", "first"],
    ]


def test_a_plan_end_does_not_wait_for_a_re_activation_that_hangs_in_a_fresh_worker(
    journal: Path, tmp_path: Path
) -> None:
    """The end stops the fresh worker, which fails the re-activation, rather than wait for it."""
    metadata = {"journal": str(journal), "gate": str(tmp_path / "never-opened")}
    results: list[object] = []
    host = ProcessHost(name="local", stop_timeout=0.5)  # the end's own limits stay short
    with contextlib.closing(host), ToolRuntime(drain_timeout=0.2) as runtime:
        runtime.register(box.HangsAgain("hangs"))
        ctx = runtime.new_context(host=host, metadata=metadata)
        assert runtime.execute("hangs", {}, ctx).success
        pid = host.worker_pid(ctx)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait_dead(host, ctx)
        caller = threading.Thread(target=lambda: results.append(runtime.execute("hangs", {}, ctx)))
        caller.start()
        _wait_for_lines(journal, 2)  # the fresh worker is re-activating, held at the gate
        ender = threading.Thread(target=runtime.end_plan, args=(ctx,))
        ender.start()
        ender.join(WAIT / 2)  # the gate is never opened: the re-activation alone lasts WAIT
        assert not ender.is_alive(), "the plan end waited for the hanging re-activation"
        caller.join(WAIT)
    (result,) = results
    assert not result.success and result.error_type == "ToolHostError"  # type: ignore[attr-defined]
    assert host.worker_pid(ctx) is None


def _wait_for_lines(journal: Path, count: int) -> None:
    """Wait (bounded) until the tools have written ``count`` lines to the journal."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if journal.exists() and len(lines(journal)) >= count:
            return
        time.sleep(0.01)  # written by another process: nothing to wait on but the file
    raise AssertionError(f"the journal never reached {count} lines: {lines(journal)}")


def test_a_second_death_fails_the_plans_later_calls(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """Only one fresh worker per plan: after a second death, calls fail and say what to do."""
    with runtime.plan(host=host) as ctx:
        for _ in range(2):
            runtime.execute("where", {}, ctx)
            pid = host.worker_pid(ctx)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            _wait_dead(host, ctx)
        result = runtime.execute("where", {}, ctx)
    assert not result.success
    assert "died twice" in (result.error or "")


def _wait_dead(host: ProcessHost, ctx: object) -> None:
    """Wait (bounded) until the host's reader has seen its worker's pipe close."""
    plan = host.plan_of(ctx)
    assert plan.child is not None
    plan.child._reader.join(WAIT)
    assert plan.child.dead


def test_a_tool_that_does_not_pickle_fails_its_activation_saying_what_to_do(
    host: ProcessHost,
) -> None:
    """The error names the tool and the way out (ToolImport)."""
    import hosts_toolbox as box

    with ToolRuntime() as runtime:
        runtime.register(box.Locked("locked"))
        with runtime.plan(host=host) as ctx, pytest.raises(ToolHostError) as caught:
            runtime.execute("locked", {}, ctx)
    assert "'locked'" in str(caught.value) and "ToolImport" in str(caught.value)


def test_a_fresh_worker_activates_each_tool_again_when_it_is_next_called(
    runtime: ToolRuntime, host: ProcessHost, journal: Path
) -> None:
    """Tools active before the death come back one by one, in the order they are used."""
    with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        runtime.execute("first", {}, ctx)
        runtime.execute("second", {}, ctx)
        died = runtime.execute("exit_now", {"code": 1}, ctx)
        runtime.execute("second", {}, ctx)
        runtime.execute("first", {}, ctx)
    assert not died.success
    assert [words[:2] for words in lines(journal)][4:] == [
        ["activate", "second"],
        ["execute", "second"],
        ["activate", "first"],
        ["execute", "first"],
        ["deactivate", "second"],  # the plan's order of activation, reversed
        ["deactivate", "first"],
    ]


def test_a_tool_that_fails_to_activate_again_fails_its_call_clearly(
    host: ProcessHost, journal: Path
) -> None:
    """The call after a death fails naming the tool when its second activate raises."""
    import hosts_toolbox as box

    with ToolRuntime() as runtime:
        runtime.register(box.OnceOnly("once"))
        runtime.register(box.exit_now)
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            runtime.execute("once", {}, ctx)
            runtime.execute("exit_now", {"code": 1}, ctx)
            result = runtime.execute("once", {}, ctx)
    assert result.trace.error_type == "ToolHostError"
    assert "'once' could not be activated again" in (result.error or "")
    assert "activated before" in (result.error or "")
    assert isinstance(result.exception.__cause__, RuntimeError)  # the tool's own error


def test_a_worker_that_dies_while_activating_again_fails_the_call_naming_the_host(
    host: ProcessHost, journal: Path
) -> None:
    """A death during the re-activation is the call's failure, and the plan's last worker."""
    import hosts_toolbox as box

    with ToolRuntime() as runtime:
        runtime.register(box.DiesAgain("again"))
        runtime.register(box.exit_now)
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            runtime.execute("again", {}, ctx)
            runtime.execute("exit_now", {"code": 1}, ctx)
            result = runtime.execute("again", {}, ctx)
    assert "died (exit code 7)" in (result.error or "")


def test_an_activation_that_fails_in_the_worker_is_an_activation_error(
    host: ProcessHost, journal: Path
) -> None:
    """The tool's own activate raising in the worker fails the call as it would here."""
    import hosts_toolbox as box

    journal.write_text("activate once 0\n")
    with ToolRuntime() as runtime:
        runtime.register(box.OnceOnly("once"))
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            with pytest.raises(ToolActivationError, match="activated before") as raised:
                runtime.execute("once", {}, ctx)
    assert isinstance(raised.value.__cause__, RuntimeError)  # the tool's own error


def test_progress_from_the_worker_keeps_a_call_alive_past_its_idle_limit(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """Six reports 0.3 s apart outlast an idle limit of 1 s: each comes over the pipe as sent."""
    with runtime.plan(host=host) as ctx:
        runtime.activate("ticker", ctx)  # starting the worker is no part of the quiet tested
        result = runtime.execute("ticker", {"steps": 6, "gap": 0.3}, ctx, idle_timeout=1.0)
    assert result.output == 6, result.error
    assert result.trace is not None and result.trace.progress_count == 6


@POSIX
def test_a_worker_leads_a_session_of_its_own_and_ends_with_its_plan(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """The worker is not in the caller's process group (a terminal's signals miss it)."""
    with runtime.plan(host=host) as ctx:
        pid = runtime.execute("where", {}, ctx).output
        assert os.getsid(pid) == pid and os.getpgid(pid) == pid
        assert os.getpgid(pid) != os.getpgrp()
    assert host.worker_pid(ctx) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped: no process is left


@POSIX
def test_a_ctrl_c_in_the_callers_terminal_leaves_the_worker_to_its_plan() -> None:
    """SIGINT to the caller's whole process group: the caller stops gracefully in the same worker."""
    script = Path(__file__).with_name("ctrl_c_plan.py")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # its Ctrl-C reaches its own group, not this test's
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["interrupted"] and report["error"] is None
    assert report["after"] == report["before"]


@POSIX
def test_a_worker_killed_at_its_plans_end_takes_the_processes_it_started_along(
    runtime: ToolRuntime,
) -> None:
    """A worker killed at the plan's end (stop_timeout=0) leaves no process it started running."""
    host = ProcessHost(stop_timeout=0)
    try:
        with runtime.plan(host=host) as ctx:
            sleeper = runtime.execute("start_sleeper", {}, ctx).output
            ended = os.pidfd_open(sleeper)  # readable once the process has ended
    finally:
        host.close()
    try:
        readable, _, _ = select.select([ended], [], [], WAIT)
    finally:
        os.close(ended)
    assert readable, f"process {sleeper}, started by the worker, still runs"
