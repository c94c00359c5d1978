"""A real crash: a process running a durable plan is killed with SIGKILL, and another resumes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("dbos")

SCRIPT = Path(__file__).with_name("crash_plan.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def _start_and_kill(folder: Path, idempotent: bool) -> None:
    """Start the plan, wait (bounded) until ``ship`` is running, then SIGKILL the process."""
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), str(folder), "start", "1" if idempotent else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    ) as child:
        running = threading.Event()

        def read() -> None:
            assert child.stdout is not None
            for line in child.stdout:
                if line.strip() == "RUNNING":
                    running.set()
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert running.wait(60), "the plan never reached the call to interrupt"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(30)
            reader.join(5)
    assert child.returncode == -signal.SIGKILL


def _resume(folder: Path, version: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(folder), "resume", version],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _runs(folder: Path) -> list[str]:
    return (folder / "runs").read_text().split()


def test_a_killed_plan_resumes_without_rerunning_completed_calls(tmp_path: Path) -> None:
    """pay ran once; ship, not idempotent, is reported interrupted; notify runs on resume."""
    _start_and_kill(tmp_path, idempotent=False)
    assert _runs(tmp_path) == ["pay", "ship"]
    # Another application version does not recover the plan: it stays pending.
    assert _resume(tmp_path, "v2") == {"status": "PENDING"}
    assert _runs(tmp_path) == ["pay", "ship"]
    report = _resume(tmp_path, "v1")
    assert report == {
        "status": "SUCCESS",
        "result": [["paid 3", None], [None, "ToolInterruptedError"], ["told", None]],
    }
    assert _runs(tmp_path) == ["pay", "ship", "notify"]


def test_a_killed_call_of_an_idempotent_tool_runs_again_on_resume(tmp_path: Path) -> None:
    """ship, idempotent, is run again; pay still does not."""
    _start_and_kill(tmp_path, idempotent=True)
    report = _resume(tmp_path, "v1")
    assert report["result"] == [["paid 3", None], ["shipped", None], ["told", None]]
    assert _runs(tmp_path) == ["pay", "ship", "ship", "notify"]
