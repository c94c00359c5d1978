"""A skill's ``run_script`` tool against real script processes: paths, output, limits, ends."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import textwrap
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolcycle import CancellationToken, NullTracer, ToolCancelledError, ToolRuntime
from toolcycle.sources.skills import Skill, SkillDirectory, SkillLimits
from toolcycle.sources.skills._scripts import _GRACE_SECONDS

# A cancelled script ends when its reaper answers SIGTERM; only a reaper that did not
# would leave the call waiting out the grace period. Well under it, on a loaded machine.
PROMPT = _GRACE_SECONDS - 0.5

NAME = "tool-kit"
TOOL = f"{NAME}.run_script"
# What a script may see of the host's environment (and nothing else but `env`).
INHERITED = {"HOME", "LANG", "LC_ALL", "LC_CTYPE", "PATH", "SYSTEMROOT", "TEMP", "TMP", "TMPDIR"}

# Prints what it was given as JSON; `exit:<n>` as first argument sets its exit code.
REPORT = """\
import json, os, sys
data = sys.stdin.read()
print(json.dumps({"cwd": os.getcwd(), "args": sys.argv[1:], "stdin": data}))
print("to stderr", file=sys.stderr)
if sys.argv[1:] and sys.argv[1].startswith("exit:"):
    sys.exit(int(sys.argv[1][5:]))
"""
# Starts a grandchild sleeping 30 s, writes "<own pid> <child pid>" to argv[1]
# atomically, then sleeps 30 s itself (argv[2] == "sleep") or exits at once.
# With argv[3] == "quiet" the grandchild's output goes to /dev/null, otherwise
# it holds the script's stdout and stderr open.
SPAWN = """\
import os, subprocess, sys, time
quiet = sys.argv[3:] == ["quiet"]
out = subprocess.DEVNULL if quiet else None
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(30)"], stdout=out, stderr=out
)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as stream:
    stream.write(f"{os.getpid()} {child.pid}")
os.replace(tmp, sys.argv[1])
print("spawned", flush=True)
if sys.argv[2] == "sleep":
    time.sleep(30)
"""
# Writes a started marker (its pid) to argv[1], then sleeps 30 s.
SLEEPY = """\
import os, sys, time
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as stream:
    stream.write(str(os.getpid()))
os.replace(tmp, sys.argv[1])
time.sleep(30)
"""


def make_skill(
    root: Path,
    scripts: dict[str, str] | None = None,
    *,
    executable: Iterable[str] = (),
    files: dict[str, str] | None = None,
) -> Path:
    """Write the skill folder ``root/tool-kit`` with ``scripts/`` files and other files."""
    folder = root / NAME
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {NAME}\ndescription: Tools for the tests.\n---\nRun the scripts.\n"
    )
    for name, text in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if scripts is not None:
        (folder / "scripts").mkdir()
        for name, text in scripts.items():
            (folder / "scripts" / name).write_text(textwrap.dedent(text))
    for name in executable:
        path = folder / "scripts" / name
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def names(runtime: ToolRuntime, source: Any) -> list[str]:
    """Register ``source`` and return the names of its tools."""
    return [descriptor.name for descriptor in runtime.register_source(source)]


def run(
    runtime: ToolRuntime, script: str, *args: str, timeout: float | None = 10.0, **params: Any
) -> Any:
    """Run ``script`` in a plan of its own and return the result."""
    with runtime.plan() as ctx:
        return runtime.execute(
            TOOL, {"script": script, "args": list(args), **params}, ctx, timeout=timeout
        )


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` in short waits until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        pause.wait(0.01)
    return True


async def await_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Async twin of `wait_for`, leaving the loop free between polls."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def pids_in(path: Path) -> list[int]:
    """The pids a script wrote to ``path`` (written atomically, so complete once there)."""
    return [int(word) for word in path.read_text().split()]


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: Iterable[int], timeout: float = 3.0) -> list[int]:
    """Wait (bounded) until none of ``pids`` runs; return those still running."""
    alive = list(pids)
    wait_for(lambda: not [pid for pid in alive if running(pid)], timeout)
    return [pid for pid in alive if running(pid)]


def group(pgid: int) -> list[int]:
    """The live processes of the process group ``pgid``."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and running(process.pid):
                members.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def children() -> set[int]:
    """Every live descendant of this test process."""
    return {p.pid for p in psutil.Process().children(recursive=True) if running(p.pid)}


# -- which tools there are -------------------------------------------------------------------


def test_scripts_are_off_by_default_so_no_run_script_tool_is_registered(runtime, tmp_path) -> None:
    """Without scripts=True a skill with a scripts/ folder registers only its reading tool."""
    make_skill(tmp_path, {"report.py": REPORT})
    assert names(runtime, SkillDirectory(tmp_path)) == [NAME]
    assert [tool.discover().name for tool in Skill(tmp_path / NAME).tools()] == [NAME]


def test_scripts_true_without_a_scripts_folder_registers_no_run_script_tool(
    runtime, tmp_path
) -> None:
    """A skill that bundles no scripts/ folder gets no run_script tool even when enabled."""
    make_skill(tmp_path, files={"references/guide.md": "read me"})
    assert names(runtime, SkillDirectory(tmp_path, scripts=True)) == [NAME]


def test_scripts_true_registers_a_writing_uncheckpointable_tool_with_the_script_timeout(
    runtime, tmp_path
) -> None:
    """The run_script descriptor writes, cannot be rolled back and times out at script_timeout."""
    make_skill(tmp_path, {"report.py": REPORT})
    source = Skill(tmp_path / NAME, scripts=True, limits=SkillLimits(script_timeout=7.5))
    descriptors = {d.name: d for d in runtime.register_source(source)}
    assert list(descriptors) == [NAME, TOOL]
    script = descriptors[TOOL]
    assert script.capability.writes is True
    assert script.capability.checkpointable is False
    assert script.timeout == 7.5


# -- running a script ------------------------------------------------------------------------


def test_a_python_script_runs_in_the_skill_folder_with_its_args_and_stdin(
    runtime, tmp_path
) -> None:
    """The script's working directory is the skill; args, stdin, stdout, stderr all pass."""
    folder = make_skill(tmp_path, {"report.py": REPORT})
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/report.py", "one", "two words", stdin="given input\n")
    assert result.success, result.error
    assert result.output["exit_code"] == 0
    assert json.loads(result.output["stdout"]) == {
        "cwd": str(folder.resolve()),
        "args": ["one", "two words"],
        "stdin": "given input\n",
    }
    assert result.output["stderr"] == "to stderr\n"
    assert result.output["stdout_truncated"] is False
    assert result.output["stderr_truncated"] is False


def test_a_script_without_stdin_reads_an_empty_input(runtime, tmp_path) -> None:
    """Without "stdin" the script's input is at its end at once, so reading it never blocks."""
    names(runtime, Skill(make_skill(tmp_path, {"report.py": REPORT}), scripts=True))
    result = run(runtime, "scripts/report.py")
    assert result.success, result.error
    assert json.loads(result.output["stdout"])["stdin"] == ""


def test_a_sh_script_runs_with_sh_without_being_executable(runtime, tmp_path) -> None:
    """A .sh file with neither shebang nor executable bit is run by sh."""
    script = 'printf "sh got %s\\n" "$1"\necho "in $(pwd)" >&2\n'
    folder = make_skill(tmp_path, {"greet.sh": script})
    assert not os.access(folder / "scripts" / "greet.sh", os.X_OK)
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/greet.sh", "hello")
    assert result.success, result.error
    assert result.output["stdout"] == "sh got hello\n"
    assert result.output["stderr"] == f"in {folder.resolve()}\n"


def test_an_executable_file_with_a_shebang_runs(runtime, tmp_path) -> None:
    """A file without a known extension runs directly when it is executable."""
    script = '#!/bin/sh\necho "shebang $1"\n'
    folder = make_skill(tmp_path, {"hello": script}, executable=["hello"])
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/hello", "world")
    assert result.success, result.error
    assert result.output["stdout"] == "shebang world\n"


def test_a_non_executable_file_without_a_known_extension_is_refused(runtime, tmp_path) -> None:
    """It fails with a SkillFileError that says why the file cannot be run."""
    folder = make_skill(tmp_path, {"tool": "#!/bin/sh\necho ran\n"})
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/tool")
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert "'scripts/tool' cannot be run" in (result.error or "")
    assert "neither a .py or .sh file nor executable" in (result.error or "")


@pytest.mark.parametrize(
    ("text", "reason"),
    [("echo no shebang\n", "Exec format error"), ("#!/no/such/shell\n", "No such file")],
)
def test_an_executable_that_cannot_be_started_is_refused_without_host_paths(
    runtime, tmp_path, text: str, reason: str
) -> None:
    """No "#!" line, or a missing interpreter: a SkillFileError naming the requested script."""
    folder = make_skill(tmp_path, {"broken": text}, executable=["broken"])
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/broken")
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert "'scripts/broken' could not be started" in (result.error or "")
    assert reason in (result.error or "")
    assert str(tmp_path) not in (result.error or "")


def test_arguments_too_long_to_start_say_so_and_point_at_stdin(runtime, tmp_path) -> None:
    """The system refuses the arguments' length: the error says that, not to add a '#!'."""
    names(runtime, Skill(make_skill(tmp_path, {"report.py": REPORT}), scripts=True))
    result = run(runtime, "scripts/report.py", "x" * 4_000_000)
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert "'scripts/report.py' could not be started" in (result.error or "")
    assert "longer than the system allows" in (result.error or "")
    assert "stdin" in (result.error or "")
    assert "#!" not in (result.error or "")


def test_an_argument_holding_a_nul_is_refused_before_anything_runs(runtime, tmp_path) -> None:
    """A NUL cannot reach a program's arguments: a SkillFileError naming the argument."""
    marker = tmp_path / "ran"
    names(runtime, Skill(make_skill(tmp_path, {"touch.py": _touching(marker)}), scripts=True))
    result = run(runtime, "scripts/touch.py", "fine", "a\x00b")
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert "argument 1" in (result.error or "") and "NUL" in (result.error or "")
    assert not marker.exists()


def test_a_missing_script_is_refused_with_its_name(runtime, tmp_path) -> None:
    """Asking for a script the skill does not bundle fails with a SkillFileError."""
    names(runtime, Skill(make_skill(tmp_path, {"report.py": REPORT}), scripts=True))
    result = run(runtime, "scripts/nothing.py")
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert "no script 'scripts/nothing.py'" in (result.error or "")


def _touching(marker: Path) -> str:
    """A Python script that creates ``marker`` when it runs."""
    return f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        ("SKILL.md", "not in the skill's scripts/ folder"),
        ("references/x.py", "not in the skill's scripts/ folder"),
        ("scripts", "not in the skill's scripts/ folder"),
        ("scripts/../references/x.py", "has a '..' part"),
        ("../outside.py", "has a '..' part"),
        ("{outside}", "is absolute"),
        ("scripts/link.py", "leads outside the skill's folder"),
        ("scripts/linked/outside.py", "leads outside the skill's folder"),
        ("scripts/to_references.py", "not in the skill's scripts/ folder"),
        ("scripts\\report.py", "not a usable relative path"),
    ],
)
def test_a_script_outside_the_scripts_folder_is_refused_and_never_runs(
    runtime, tmp_path, requested, message
) -> None:
    """Paths leaving scripts/ fail with a SkillFileError before anything is started."""
    marker = tmp_path / "ran"
    outside = tmp_path / "outside.py"
    outside.write_text(_touching(marker))
    folder = make_skill(
        tmp_path,
        {"report.py": REPORT},
        files={"references/x.py": _touching(marker)},
    )
    (folder / "scripts" / "link.py").symlink_to(outside)
    (folder / "scripts" / "linked").symlink_to(tmp_path, target_is_directory=True)
    (folder / "scripts" / "to_references.py").symlink_to(folder / "references" / "x.py")
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, requested.format(outside=outside))
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert message in (result.error or "")
    assert result.trace is not None and result.trace.status == "error"
    assert not marker.exists(), "the refused script ran"


def test_a_symlink_inside_scripts_to_a_script_inside_scripts_runs(runtime, tmp_path) -> None:
    """A link that stays in scripts/ is followed: only leaving the folder is refused."""
    folder = make_skill(tmp_path, {"report.py": REPORT})
    (folder / "scripts" / "alias.py").symlink_to("report.py")
    names(runtime, Skill(folder, scripts=True))
    result = run(runtime, "scripts/alias.py", "via link")
    assert result.success, result.error
    assert json.loads(result.output["stdout"])["args"] == ["via link"]


# -- failures and output ---------------------------------------------------------------------


def test_a_non_zero_exit_fails_the_call_but_keeps_the_output(runtime, tmp_path) -> None:
    """The failed result has the exit code and output, and the error the stderr tail."""
    names(runtime, Skill(make_skill(tmp_path, {"report.py": REPORT}), scripts=True))
    result = run(runtime, "scripts/report.py", "exit:3")
    assert not result.success
    assert result.error_type == "SkillScriptError"
    assert result.error == "the script 'scripts/report.py' exited with code 3: to stderr"
    assert result.output["exit_code"] == 3
    assert json.loads(result.output["stdout"])["args"] == ["exit:3"]
    assert result.output["stderr"] == "to stderr\n"
    assert result.trace is not None and result.trace.status == "error"


def test_the_error_of_a_failed_script_holds_only_the_end_of_a_long_stderr(
    runtime, tmp_path
) -> None:
    """A long stderr is cut to its last 500 characters in the error message."""
    script = "import sys\nsys.stderr.write('B' * 5000 + 'the real cause')\nsys.exit(1)\n"
    names(runtime, Skill(make_skill(tmp_path, {"fail.py": script}), scripts=True))
    result = run(runtime, "scripts/fail.py")
    assert not result.success
    error = result.error or ""
    assert error.startswith("the script 'scripts/fail.py' exited with code 1: B")
    assert error.endswith("the real cause")
    assert len(error) < 600
    assert len(result.output["stderr"]) == 5014


def test_a_failed_script_without_stderr_has_an_error_without_a_tail(runtime, tmp_path) -> None:
    """With nothing on stderr the error just names the script and the exit code."""
    names(runtime, Skill(make_skill(tmp_path, {"quiet.sh": "exit 4\n"}), scripts=True))
    result = run(runtime, "scripts/quiet.sh")
    assert not result.success
    assert result.error == "the script 'scripts/quiet.sh' exited with code 4"


def test_output_over_max_output_bytes_is_cut_and_marked_truncated(runtime, tmp_path) -> None:
    """Stdout and stderr each keep their first max_output_bytes bytes."""
    script = "import sys\nsys.stdout.write('o' * 5000)\nsys.stderr.write('e' * 3000)\n"
    folder = make_skill(tmp_path, {"loud.py": script, "exact.py": "print('x' * 999)\n"})
    names(runtime, Skill(folder, scripts=True, limits=SkillLimits(max_output_bytes=1000)))
    loud = run(runtime, "scripts/loud.py")
    assert loud.success, loud.error
    assert loud.output["stdout"] == "o" * 1000
    assert loud.output["stderr"] == "e" * 1000
    assert loud.output["stdout_truncated"] is True
    assert loud.output["stderr_truncated"] is True
    exact = run(runtime, "scripts/exact.py")
    assert exact.output["stdout"] == "x" * 999 + "\n"
    assert exact.output["stdout_truncated"] is False


def test_a_script_writing_a_lot_on_both_pipes_and_reading_a_lot_does_not_deadlock(
    runtime, tmp_path
) -> None:
    """Megabytes on stderr before stdin is read, then on stdout, all finish well in time."""
    script = """\
    import sys
    for _ in range(64):
        sys.stderr.write("e" * 65536)
    data = sys.stdin.read()
    for _ in range(4):
        sys.stdout.write(data)
    """
    names(runtime, Skill(make_skill(tmp_path, {"flood.py": script}), scripts=True))
    started = time.monotonic()
    result = run(runtime, "scripts/flood.py", stdin="i" * 1_000_000, timeout=15)
    assert result.success, result.error
    assert time.monotonic() - started < 10
    assert result.output["stdout"] == "i" * 256 * 1024
    assert result.output["stderr"] == "e" * 256 * 1024
    assert result.output["stdout_truncated"] is True
    assert result.output["stderr_truncated"] is True


def test_a_script_that_ignores_its_stdin_still_succeeds(runtime, tmp_path) -> None:
    """Input the script never reads (a broken pipe) does not fail the call."""
    names(runtime, Skill(make_skill(tmp_path, {"skip.sh": "echo skipped\n"}), scripts=True))
    result = run(runtime, "scripts/skip.sh", stdin="x" * 2_000_000)
    assert result.success, result.error
    assert result.output["stdout"] == "skipped\n"


def test_the_environment_is_minimal_plus_the_env_given(runtime, tmp_path, monkeypatch) -> None:
    """The test's secret stays out, env is added, PATH is kept, nothing else comes in."""
    monkeypatch.setenv("TOOLCYCLE_SECRET", "do-not-leak")
    script = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    make_skill(tmp_path, {"env.py": script})
    names(runtime, SkillDirectory(tmp_path, scripts=True, env={"X": "1"}))
    result = run(runtime, "scripts/env.py")
    assert result.success, result.error
    env = json.loads(result.output["stdout"])
    assert "TOOLCYCLE_SECRET" not in env
    assert env["X"] == "1"
    assert env["PATH"] == os.environ["PATH"]
    assert set(env) - {"X"} <= INHERITED


@pytest.mark.parametrize(
    ("env", "error", "message"),
    [
        ({"X": 1}, TypeError, "must be text"),
        ({2: "x"}, TypeError, "must be text"),
        ({"": "x"}, ValueError, "non-empty"),
        ({"A=B": "x"}, ValueError, "without '='"),
        ({"X\x00": "x"}, ValueError, "NUL"),
        ({"X": "a\x00b"}, ValueError, "NUL"),
    ],
)
def test_an_env_no_process_could_receive_is_refused_when_the_source_is_made(
    tmp_path, env: Any, error: type[Exception], message: str
) -> None:
    """Both sources check env at once, naming the variable, instead of failing every call."""
    folder = make_skill(tmp_path, {"report.py": REPORT})
    with pytest.raises(error, match=message):
        SkillDirectory(tmp_path, scripts=True, env=env)
    with pytest.raises(error, match=message):
        Skill(folder, scripts=True, env=env)


# -- timeouts ----------------------------------------------------------------------------------


def _timed_out_script_is_gone(result: Any, pidfile: Path, started: float) -> None:
    """Assert the call timed out promptly and the script and its grandchild are gone."""
    assert time.monotonic() - started < 5
    assert not result.success
    assert result.trace is not None and result.trace.status == "timed_out"
    assert wait_for(pidfile.exists, 1), "the script never wrote its pids"
    pids = pids_in(pidfile)
    assert wait_gone(pids) == []
    assert group(pids[0]) == []


def test_script_timeout_ends_a_sleeping_script_and_its_grandchild(runtime, tmp_path) -> None:
    """SkillLimits(script_timeout=...) times the call out and kills its whole group."""
    folder = make_skill(tmp_path, {"spawn.py": SPAWN})
    names(runtime, Skill(folder, scripts=True, limits=SkillLimits(script_timeout=0.5)))
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result = run(runtime, "scripts/spawn.py", str(pidfile), "sleep", timeout=None)
    _timed_out_script_is_gone(result, pidfile, started)


def test_the_execute_timeout_ends_a_sleeping_script_and_its_grandchild(runtime, tmp_path) -> None:
    """A timeout= of the call, smaller than script_timeout, wins and kills the group."""
    names(runtime, Skill(make_skill(tmp_path, {"spawn.py": SPAWN}), scripts=True))
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result = run(runtime, "scripts/spawn.py", str(pidfile), "sleep", timeout=0.5)
    _timed_out_script_is_gone(result, pidfile, started)


async def test_the_aexecute_timeout_ends_a_sleeping_script_and_its_grandchild(
    runtime, tmp_path
) -> None:
    """Awaited with aexecute, a timed-out script and its grandchild are gone when it returns."""
    names(runtime, Skill(make_skill(tmp_path, {"spawn.py": SPAWN}), scripts=True))
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    async with runtime.aplan() as ctx:
        params = {"script": "scripts/spawn.py", "args": [str(pidfile), "sleep"]}
        result = await runtime.aexecute(TOOL, params, ctx, timeout=0.5)
    _timed_out_script_is_gone(result, pidfile, started)


# -- cancellation ------------------------------------------------------------------------------


def test_cancelling_the_plan_ends_a_script_run_with_execute_at_once(runtime, tmp_path) -> None:
    """ToolCancelledError comes well under a second after cancel, the group already gone."""
    names(runtime, Skill(make_skill(tmp_path, {"spawn.py": SPAWN}), scripts=True))
    pidfile = tmp_path / "pids"
    token = CancellationToken()
    ctx = runtime.new_context(cancellation_token=token)
    outcome: list[tuple[BaseException, float]] = []
    done = threading.Event()

    def call() -> None:
        try:
            params = {"script": "scripts/spawn.py", "args": [str(pidfile), "sleep"]}
            runtime.execute(TOOL, params, ctx, timeout=20)
        except BaseException as exc:
            outcome.append((exc, time.monotonic()))
        finally:
            done.set()

    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert wait_for(pidfile.exists, 10), "the script never started"
        pids = pids_in(pidfile)
        cancelled_at = time.monotonic()
        token.cancel("stop now")
        assert done.wait(5), "the cancelled call did not return"
        thread.join(5)
        assert outcome, "the cancelled call returned instead of raising"
        error, raised_at = outcome[0]
        assert isinstance(error, ToolCancelledError), repr(error)
        assert "stop now" in str(error)
        assert raised_at - cancelled_at < PROMPT
        # The script is reaped before the call returns; its grandchild has been
        # sent SIGKILL with the group and is gone a moment later.
        script, grandchild = pids
        assert not running(script)
        assert wait_gone([grandchild], 1) == []
        assert group(script) == []
    finally:
        runtime.end_plan(ctx)


async def test_cancelling_the_plan_ends_a_script_awaited_with_aexecute_at_once(
    runtime, tmp_path
) -> None:
    """The awaiting task raises ToolCancelledError promptly and the script's group is gone."""
    names(runtime, Skill(make_skill(tmp_path, {"sleepy.py": SLEEPY}), scripts=True))
    marker = tmp_path / "started"
    token = CancellationToken()
    async with runtime.aplan(cancellation_token=token) as ctx:
        params = {"script": "scripts/sleepy.py", "args": [str(marker)]}
        task = asyncio.ensure_future(runtime.aexecute(TOOL, params, ctx, timeout=20))
        assert await await_for(marker.exists, 10), "the script never started"
        (pid,) = pids_in(marker)
        cancelled_at = time.monotonic()
        token.cancel("stop now")
        with pytest.raises(ToolCancelledError, match="stop now"):
            await asyncio.wait_for(task, 5)
        assert time.monotonic() - cancelled_at < PROMPT
        assert not running(pid)
        assert group(pid) == []


def test_a_script_started_on_a_cancelled_plan_never_runs(runtime, tmp_path) -> None:
    """A plan cancelled before the call raises ToolCancelledError and starts nothing."""
    marker = tmp_path / "started"
    names(runtime, Skill(make_skill(tmp_path, {"sleepy.py": SLEEPY}), scripts=True))
    token = CancellationToken()
    token.cancel("too late")
    with runtime.plan(cancellation_token=token) as ctx:
        with pytest.raises(ToolCancelledError):
            runtime.execute(TOOL, {"script": "scripts/sleepy.py", "args": [str(marker)]}, ctx)
    assert not marker.exists()


# -- nothing is left behind -------------------------------------------------------------------


@pytest.mark.parametrize("output", ["inherited", "quiet"])
def test_a_grandchild_left_running_by_a_script_that_exits_is_killed_when_the_call_returns(
    runtime, tmp_path, output
) -> None:
    """The call returns at once, whether or not the grandchild holds the pipes, and kills it."""
    names(runtime, Skill(make_skill(tmp_path, {"spawn.py": SPAWN}), scripts=True))
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result = run(runtime, "scripts/spawn.py", str(pidfile), "exit", output, timeout=10)
    assert result.success, result.error
    assert time.monotonic() - started < 5
    assert result.output["stdout"] == "spawned\n"
    script, grandchild = pids_in(pidfile)
    assert not running(script)
    assert wait_gone([grandchild]) == []
    assert group(script) == []


def test_a_background_job_of_a_shell_script_is_killed_when_the_call_returns(
    runtime, tmp_path
) -> None:
    """A `sleep &` left by a .sh script (holding its stdout) ends with the call."""
    script = 'sleep 30 &\necho "$$ $!" > "$1.tmp" && mv "$1.tmp" "$1"\necho done\n'
    names(runtime, Skill(make_skill(tmp_path, {"job.sh": script}), scripts=True))
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    result = run(runtime, "scripts/job.sh", str(pidfile), timeout=10)
    assert result.success, result.error
    assert time.monotonic() - started < 5
    assert result.output["stdout"] == "done\n"
    assert wait_gone(pids_in(pidfile)) == []


def test_ending_the_plan_leaves_no_process_behind(runtime, tmp_path) -> None:
    """After a plan of passing, failing, spawning and timed-out scripts no descendant runs."""
    folder = make_skill(tmp_path, {"report.py": REPORT, "spawn.py": SPAWN})
    names(runtime, Skill(folder, scripts=True))
    before = children()
    with runtime.plan() as ctx:
        ok = runtime.execute(TOOL, {"script": "scripts/report.py"}, ctx, timeout=10)
        failed = runtime.execute(TOOL, {"script": "scripts/report.py", "args": ["exit:2"]}, ctx)
        quiet = {"script": "scripts/spawn.py", "args": [str(tmp_path / "a"), "exit", "quiet"]}
        spawned = runtime.execute(TOOL, quiet, ctx, timeout=10)
        sleeping = {"script": "scripts/spawn.py", "args": [str(tmp_path / "b"), "sleep"]}
        timed_out = runtime.execute(TOOL, sleeping, ctx, timeout=0.5)
    assert ok.success and not failed.success and spawned.success
    assert timed_out.trace is not None and timed_out.trace.status == "timed_out"
    assert wait_gone(children() - before) == []
    pids = pids_in(tmp_path / "a") + (pids_in(tmp_path / "b") if (tmp_path / "b").exists() else [])
    assert wait_gone(pids) == []


def test_closing_the_runtime_ends_a_script_still_running(tmp_path) -> None:
    """Closing the runtime during a call kills the script, so the call does not hang."""
    runtime = ToolRuntime(tracer=NullTracer())
    names(runtime, Skill(make_skill(tmp_path, {"sleepy.py": SLEEPY}), scripts=True))
    marker = tmp_path / "started"
    done = threading.Event()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            run(runtime, "scripts/sleepy.py", str(marker), timeout=20)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    try:
        assert wait_for(marker.exists, 10), "the script never started"
        (pid,) = pids_in(marker)
    finally:
        runtime.close()
    assert done.wait(5), "the call did not return after close"
    assert outcome, "the call returned instead of raising"
    assert isinstance(outcome[0], ToolCancelledError), repr(outcome[0])
    assert wait_gone([pid]) == []
