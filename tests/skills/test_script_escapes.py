"""A script's processes end with its call, even those that leave its process group or session."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolcycle import CancellationToken, ToolCancelledError, ToolRuntime
from toolcycle.sources.skills import Skill, SkillLimits, _tracker
from toolcycle.sources.skills._scripts import run_script
from toolcycle.sources.skills._tracker import ProcessTree

from .test_scripts import TOOL, make_skill, names, pids_in, running, wait_for, wait_gone

# Starts a process that escapes the script's group as argv[2] says, waits (bounded)
# until that process has written its pid to argv[1], then exits or sleeps (argv[3]).
#   setsid:      a child in a session of its own;
#   setpgrp:     a child in a process group of its own;
#   double-fork: a child that calls setsid, forks, and exits at once, leaving an
#                orphaned grandchild (the classic daemon).
# With argv[4] == "kill-parent", the script then kills its parent if that parent
# leads the script's session (the reaper does; the host never does).
ESCAPE = """\
import os, select, signal, sys, time
pidfile, how, then = sys.argv[1:4]
ready_r, ready_w = os.pipe()

def detached():
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(pidfile + ".tmp", "w") as stream:
        stream.write(str(os.getpid()))
    os.replace(pidfile + ".tmp", pidfile)
    os.write(ready_w, b"x")
    time.sleep(30)
    os._exit(0)

if os.fork() == 0:
    if how == "setsid":
        os.setsid()
        detached()
    if how == "setpgrp":
        os.setpgrp()
        detached()
    os.setsid()
    if os.fork() == 0:
        detached()
    os._exit(0)
os.close(ready_w)
if not select.select([ready_r], [], [], 10)[0]:
    sys.exit(3)
print("detached", flush=True)
if sys.argv[4:] == ["kill-parent"] and os.getsid(0) == os.getppid():
    os.kill(os.getppid(), signal.SIGKILL)
if then == "sleep":
    time.sleep(30)
"""
HOW = ["setsid", "setpgrp", "double-fork"]


@pytest.fixture
def escaping(runtime: ToolRuntime, tmp_path: Path) -> ToolRuntime:
    """The runtime with a skill whose script ``scripts/escape.py`` is ESCAPE."""
    folder = make_skill(tmp_path / "skills", {"escape.py": ESCAPE})
    names(runtime, Skill(folder, scripts=True, limits=SkillLimits(script_timeout=20)))
    return runtime


def params(pidfile: Path, how: str, then: str, *extra: str) -> dict[str, Any]:
    """The arguments of a call of ESCAPE."""
    return {"script": "scripts/escape.py", "args": [str(pidfile), how, then, *extra]}


def assert_gone(pidfile: Path) -> None:
    """The escaped process wrote its pid, and is gone (bounded wait)."""
    assert pidfile.exists(), "the escaping process never started"
    (pid,) = pids_in(pidfile)
    assert wait_gone([pid], 3) == [], f"process {pid} outlived the call"


@pytest.mark.parametrize("how", HOW)
def test_a_process_that_left_the_group_ends_when_the_script_exits(
    escaping: ToolRuntime, tmp_path: Path, how: str
) -> None:
    """A setsid, setpgrp or double-forked process is gone when a script that exited returns."""
    pidfile = tmp_path / "pid"
    with escaping.plan() as ctx:
        result = escaping.execute(TOOL, params(pidfile, how, "exit"), ctx, timeout=15)
    assert result.success, result.error
    assert result.output["stdout"] == "detached\n"
    assert_gone(pidfile)


@pytest.mark.parametrize("how", HOW)
def test_a_process_that_left_the_group_ends_when_the_call_times_out(
    escaping: ToolRuntime, tmp_path: Path, how: str
) -> None:
    """On a timeout, the script and whatever escaped its group are gone promptly."""
    pidfile = tmp_path / "pid"
    with escaping.plan() as ctx:
        started = time.monotonic()
        result = escaping.execute(TOOL, params(pidfile, how, "sleep"), ctx, timeout=2)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert time.monotonic() - started < 6
    assert_gone(pidfile)


@pytest.mark.parametrize("how", HOW)
def test_a_process_that_left_the_group_ends_when_the_plan_is_cancelled(
    escaping: ToolRuntime, tmp_path: Path, how: str
) -> None:
    """Cancelling the plan's token mid-call ends the script and what escaped its group."""
    pidfile = tmp_path / "pid"
    token = CancellationToken()
    outcome: list[BaseException] = []
    done = threading.Event()
    ctx = escaping.new_context(cancellation_token=token)

    def call() -> None:
        try:
            escaping.execute(TOOL, params(pidfile, how, "sleep"), ctx, timeout=20)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert wait_for(pidfile.exists, 10), "the escaping process never started"
        token.cancel("stop")
        assert done.wait(5), "the cancelled call did not return"
        thread.join(5)
    finally:
        escaping.end_plan(ctx)
    assert outcome and isinstance(outcome[0], ToolCancelledError), outcome
    assert_gone(pidfile)


async def test_a_double_forked_process_ends_when_an_awaited_call_is_cancelled(
    escaping: ToolRuntime, tmp_path: Path
) -> None:
    """Cancelling the task awaiting aexecute ends a daemonised grandchild before it raises."""
    pidfile = tmp_path / "pid"
    async with escaping.aplan() as ctx:
        task = asyncio.ensure_future(
            escaping.aexecute(TOOL, params(pidfile, "double-fork", "sleep"), ctx, timeout=20)
        )
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises((asyncio.CancelledError, ToolCancelledError)):
            await asyncio.wait_for(task, 5)
    assert_gone(pidfile)


@pytest.mark.parametrize("then", ["exit", "sleep"])
def test_a_script_that_kills_its_reaper_still_leaves_no_process_behind(
    escaping: ToolRuntime, tmp_path: Path, then: str
) -> None:
    """If the script kills the process watching it, the host ends the script and its session."""
    pidfile = tmp_path / "pid"
    with escaping.plan() as ctx:
        call = params(pidfile, "setpgrp", then, "kill-parent")
        result = escaping.execute(TOOL, call, ctx, timeout=15)
    # Ended by the host (killed: -9) as soon as its reaper died, not by the call's limit.
    assert result.trace is not None and result.trace.status == "error"
    assert result.error_type == "SkillScriptError" and "code -9" in (result.error or "")
    assert_gone(pidfile)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_script_ended_by_a_signal_reports_that_signal_as_a_negative_exit_code(
    runtime: ToolRuntime, tmp_path: Path, number: int
) -> None:
    """The exit code is the script's own, even for a signal (SIGKILL too), not the reaper's."""
    script = f"import os\nos.kill(os.getpid(), {int(number)})\n"
    names(runtime, Skill(make_skill(tmp_path, {"die.py": script}), scripts=True))
    with runtime.plan() as ctx:
        result = runtime.execute(TOOL, {"script": "scripts/die.py"}, ctx, timeout=15)
    assert result.output["exit_code"] == -number


def test_the_host_kills_the_descendants_it_recorded_even_after_they_left_the_session(
    tmp_path: Path,
) -> None:
    """ProcessTree ends a setsid child it saw, once that child's parent is gone."""
    pidfile = tmp_path / "pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    child = 0
    try:
        assert wait_for(lambda: pidfile.exists() and pidfile.read_text() != "", 10)
        (child,) = pids_in(pidfile)
        tree = ProcessTree(parent.pid)
        tree.snapshot()
        assert len(tree) == 1
        parent.kill()
        parent.wait(5)
        assert running(child)  # orphaned, and in a session the parent's does not reach
        tree.kill(session=True)
        assert wait_gone([child], 3) == []
    finally:
        parent.kill()
        parent.wait(5)
        if child and running(child):
            psutil.Process(child).kill()


def test_a_tree_whose_top_has_ended_records_nothing_and_kills_nothing() -> None:
    """ProcessTree of a pid that is gone is empty, and ending it is a no-op."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(10)
    tree = ProcessTree(ended.pid)
    tree.snapshot()
    tree.kill(session=False)
    assert len(tree) == 0


def test_a_tree_over_its_record_cap_forgets_the_processes_that_are_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the cap, a snapshot keeps only the recorded processes that still run."""
    monkeypatch.setattr(_tracker, "_MAX_RECORDED", 0)
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    tree = ProcessTree(os.getpid())
    try:
        tree._seen[-1] = _GoneProcess()
        tree.snapshot()
        assert -1 not in tree._seen
        assert parent.pid in tree._seen
    finally:
        parent.kill()
        parent.wait(5)


class _GoneProcess:
    """A recorded process whose check fails as psutil's do for a vanished process."""

    def is_running(self) -> bool:
        raise psutil.NoSuchProcess(-1)


async def test_a_script_that_cannot_start_in_its_folder_raises_and_leaks_no_descriptor(
    tmp_path: Path,
) -> None:
    """A missing working folder raises OSError from run_script, with every pipe closed."""
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        await run_script(
            ["/bin/true"], cwd=tmp_path / "gone", stdin=None, env={}, max_output_bytes=10
        )
    assert len(os.listdir("/proc/self/fd")) == before
