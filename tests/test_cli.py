"""The toolcycle command line and its demo."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolcycle import ToolActivationError
from toolcycle._version import __version__
from toolcycle.cli import EXIT_BROKEN_PIPE, _from_broken_pipe, main, run_demo

MANY_TOOLS = """
from toolcycle import ToolCapability, ToolDescriptor


class Numbered:
    \"\"\"A tool that returns the number it was made with.\"\"\"

    def __init__(self, number):
        self.number = number

    def discover(self):
        return ToolDescriptor(
            name=f"tool_{self.number:05d}",
            description="Return the number this tool was made with; one of many in a long list.",
            input_schema={"type": "object"},
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    def activate(self, ctx):
        pass

    def execute(self, params, ctx):
        return self.number

    def deactivate(self, ctx):
        pass


for number in range(2000):
    globals()[f"tool_{number}"] = Numbered(number)
"""


def toolcycle(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m toolcycle`` in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "toolcycle", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_demo_shows_each_outcome_and_the_deactivations() -> None:
    """The demo prints a line per call, with each of the five cases."""
    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    statuses = [
        line.split()[2]
        for line in text.splitlines()
        if line.startswith(("write_note", "read_note"))
    ]
    assert statuses == ["ok", "ok", "invalid_input", "denied", "cancelled"]
    workspace_lines = [
        line.split()[:3]
        for line in text.splitlines()
        if line.startswith(("write_file", "edit_file", "read_file", "count_words", "delete_file"))
    ]
    assert workspace_lines == [
        ["write_file", "ok", "ok"],
        ["edit_file", "ok", "ok"],
        ["read_file", "ok", "ok"],
        ["count_words", "ok", "ok"],
        ["delete_file", "error", "error"],
    ]
    assert "rolled back 3 changes; complete: True" in text
    assert "README.txt is again: 'Tools run in plans. Plans end.'" in text
    assert "notes/ exists after rollback: False" in text
    assert "deactivate write_note for plan-1" in text
    assert "deactivate read_note for plan-2" in text
    assert "store open after the plans: False" in text


def test_main_runs_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    """`toolcycle demo` exits 0 and prints the demo."""
    assert main(["demo"]) == 0
    assert "plan 1" in capsys.readouterr().out


def test_main_without_a_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """No subcommand returns argparse's usage status (2), as the command exits with it."""
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "usage" in capsys.readouterr().out
    assert main(["no-such-command"]) == 2
    assert "usage" in capsys.readouterr().err


def test_python_dash_m_toolcycle_runs_the_demo() -> None:
    """`python -m toolcycle demo` runs the demo, as the console script does."""
    done = toolcycle("demo")
    assert done.returncode == 0, done.stderr
    assert "cancelled" in done.stdout


def test_version_prints_the_package_version() -> None:
    """`toolcycle --version` prints `toolcycle <version>` and exits 0."""
    done = toolcycle("--version")
    assert done.returncode == 0
    assert done.stdout == f"toolcycle {__version__}\n"


def test_the_top_help_is_written_for_users() -> None:
    """--help describes the tool, lists the commands, examples and exit codes; no module docs."""
    done = toolcycle("--help")
    assert done.returncode == 0
    text = done.stdout
    assert "Look at and run agent tools from the command line" in text
    assert "_cli_tools" not in text and "``" not in text
    for command in ("demo", "tools", "schema", "call"):
        assert f"\n    {command} " in text
    assert "exit codes:" in text and "141" in text


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("demo", "Run small plans that show"),
        ("tools", "List the tools of the sources"),
        ("schema", "Print the input and output JSON Schemas"),
        ("call", "Run one call of a tool in a plan of its own"),
    ],
)
def test_each_command_help_describes_the_command(command: str, words: str) -> None:
    """`toolcycle COMMAND --help` opens with what the command does."""
    done = toolcycle(command, "--help")
    assert done.returncode == 0
    assert words in done.stdout
    if command != "demo":
        assert "--workspace DIR" in done.stdout and "--writable" in done.stdout


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """Reading one line of a long listing and closing the pipe: exit 141, nothing on stderr."""
    module = tmp_path / "many_tools.py"
    module.write_text(MANY_TOOLS)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolcycle", "tools", "--module", str(module)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    guard = threading.Timer(60, process.kill)  # bounds the blocking read below
    guard.start()
    try:
        first = process.stdout.readline()
        process.stdout.close()
        code = process.wait(timeout=60)
        err = process.stderr.read()
    finally:
        guard.cancel()
        process.kill()
        process.wait(5)
        process.stderr.close()
    assert first.split() == ["NAME", "SOURCE", "WRITES", "CHECKPOINTABLE", "DESCRIPTION"]
    assert code == EXIT_BROKEN_PIPE
    assert err == ""


class _ClosedPipe(io.StringIO):
    """Standard output whose reader goes away after ``writes`` writes: then every write fails."""

    def __init__(self, descriptor: int | None, writes: int = 0) -> None:
        super().__init__()
        self.descriptor = descriptor
        self.writes = writes

    def write(self, text: str) -> int:
        if self.writes <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.writes -= 1
        return super().write(text)

    def fileno(self) -> int:
        if self.descriptor is None:
            return super().fileno()
        return self.descriptor


def test_a_broken_pipe_points_stdout_at_the_null_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() returns 141 and leaves the descriptor on /dev/null, so the final flush is quiet."""
    reading, writing = os.pipe()
    try:
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(writing))
        assert main(["demo"]) == EXIT_BROKEN_PIPE
        assert os.fstat(writing).st_rdev == os.stat(os.devnull).st_rdev
    finally:
        os.close(reading)
        os.close(writing)


def test_a_broken_pipe_on_an_output_without_a_descriptor_returns_141(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An in-memory stdout has no descriptor to redirect; main() still ends quietly."""
    monkeypatch.setattr(sys, "stdout", _ClosedPipe(None))
    assert main(["tools", "--skills", str(Path(__file__).parent / "data" / "agent-skills")]) == 141


def test_a_pipe_closed_while_a_demo_tool_prints_also_ends_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The demo's tools print; the runtime wraps their broken pipe, and main() still sees it."""
    monkeypatch.setattr(sys, "stdout", _ClosedPipe(None, writes=2))  # "plan 1" and its newline
    assert main(["demo"]) == EXIT_BROKEN_PIPE


def test_a_broken_pipe_is_found_through_causes_and_a_cycle_ends_the_search() -> None:
    """A BrokenPipeError anywhere in the chain counts; a chain that loops is not followed forever."""
    wrapped = ToolActivationError("activating failed", tool_name="t", plan_id="p")
    wrapped.__cause__ = BrokenPipeError(32, "Broken pipe")
    assert _from_broken_pipe(wrapped)
    first, second = ValueError("a"), ValueError("b")
    first.__cause__, second.__cause__ = second, first
    assert not _from_broken_pipe(first)


def test_an_error_that_is_not_a_closed_pipe_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a closed pipe ends quietly; any other error still propagates out of main()."""

    def fail(out: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr("toolcycle.cli.run_demo", fail)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["demo"])
