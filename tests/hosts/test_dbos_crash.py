"""A real crash: a process running a durable plan is killed with SIGKILL, and another resumes it.

The second process resumes the plan with `DBOSPlan.resume`: as the same DBOS
executor, whose pending plans ``DBOS.launch()`` recovers already (the resume
waits for that run, and starts no second one), or as another executor, for
which the resume itself starts the plan again.

On SQLite, then on PostgreSQL, the system database for real deployments: the
PostgreSQL test starts a throwaway server of its own (Debian's ``postgresql``
package: ``initdb`` and ``pg_ctl`` in a temporary folder, on a free local port),
and is skipped, saying why, only when no server can be started here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

SCRIPT = Path(__file__).with_name("crash_plan.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def _env(database_url: str | None = None, executor: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DBOS__VMID", None)
    if executor is not None:  # DBOS's executor id, as it reads it
        env["DBOS__VMID"] = executor
    if database_url is not None:
        env["CRASH_PLAN_DATABASE_URL"] = database_url
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def _start_and_kill(folder: Path, idempotent: bool, database_url: str | None = None) -> None:
    """Start the plan, wait (bounded) until ``ship`` is running, then SIGKILL the process."""
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), str(folder), "start", "1" if idempotent else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(database_url),
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


def _resume(
    folder: Path, version: str, database_url: str | None = None, executor: str | None = None
) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(folder), "resume", version],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(database_url, executor),
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _runs(folder: Path) -> list[str]:
    return (folder / "runs").read_text().split()


INTERRUPTED = {
    "calls": [["paid 3", None], [None, "ToolInterruptedError"], ["told", None]],
    "approved": [True, False, False],
    "changes": ["card/3"],
}


def test_a_killed_plan_resumes_without_rerunning_completed_calls(tmp_path: Path) -> None:
    """Pay ran once; ship, not idempotent, is reported interrupted; notify runs on resume."""
    _start_and_kill(tmp_path, idempotent=False)
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship"]
    report = _resume(tmp_path, "v1")
    assert report == {"status": "SUCCESS", "result": INTERRUPTED}
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship", "notify"]


def test_recorded_changes_and_approvals_survive_the_crash(tmp_path: Path) -> None:
    """The resumed plan has pay's change and approval, and nobody is asked again."""
    _start_and_kill(tmp_path, idempotent=False)
    report = _resume(tmp_path, "v1")
    assert report["result"] == INTERRUPTED
    assert _runs(tmp_path).count("asked:pay") == 1


def test_another_executor_resumes_a_plan_that_launch_does_not_recover(tmp_path: Path) -> None:
    """DBOS.launch() recovers only its own executor's plans; DBOSPlan.resume starts this one."""
    _start_and_kill(tmp_path, idempotent=False)
    report = _resume(tmp_path, "v1", executor="resumer")
    assert report == {"status": "SUCCESS", "result": INTERRUPTED}
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship", "notify"]


def test_another_application_version_refuses_to_resume_the_plan(tmp_path: Path) -> None:
    """A process of another version gets PlanResumeError, and the plan stays pending."""
    _start_and_kill(tmp_path, idempotent=False)
    assert _resume(tmp_path, "v2") == {"error": "PlanResumeError", "status": "PENDING"}
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship"]


def test_a_killed_call_of_an_idempotent_tool_runs_again_on_resume(tmp_path: Path) -> None:
    """ship, idempotent, is run again; pay still does not."""
    _start_and_kill(tmp_path, idempotent=True)
    report = _resume(tmp_path, "v1", executor="resumer")
    assert report["result"] == {
        "calls": [["paid 3", None], ["shipped", None], ["told", None]],
        "approved": [True, False, False],
        "changes": ["card/3"],
    }
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship", "ship", "notify"]


BIN = Path("/usr/lib/postgresql")


def _tool(name: str) -> str | None:
    """The newest installed PostgreSQL's ``name`` program, or one on PATH."""
    versions = sorted(BIN.glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    for folder in versions:
        if (folder / name).exists():
            return str(folder / name)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A private PostgreSQL server for this module, stopped at its end."""
    initdb, pg_ctl = _tool("initdb"), _tool("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    # Not under pytest's temporary root, which only its owner may enter.
    folder = Path(tempfile.mkdtemp(prefix="toolcycle-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        runuser = shutil.which("runuser")
        if (
            runuser is None
            or subprocess.run(["id", "postgres"], capture_output=True, check=False).returncode
        ):
            pytest.skip("running as root, with no postgres user to start PostgreSQL as")
        shutil.chown(folder, "postgres")
        as_user = [runuser, "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    started = subprocess.run(
        [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    if started.returncode == 0:
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off"
        command = [pg_ctl, "-D", str(data), "-o", options, "-w", "-t", "60"]
        started = subprocess.run(
            [*as_user, *command, "-l", str(folder / "log"), "start"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    if started.returncode != 0:
        pytest.skip(f"could not start PostgreSQL here: {started.stderr.decode()[-300:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/toolcycle_crash"
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)


def test_a_killed_plan_resumes_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """The same crash and resume as on SQLite: pay ran once, ship is interrupted."""
    _start_and_kill(tmp_path, idempotent=False, database_url=postgres_url)
    report = _resume(tmp_path, "v1", database_url=postgres_url, executor="resumer")
    assert report == {"status": "SUCCESS", "result": INTERRUPTED}
    assert _runs(tmp_path) == ["asked:pay", "pay", "ship", "notify"]
