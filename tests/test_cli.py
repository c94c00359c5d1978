"""The toolcycle command line and its demo."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from toolcycle.cli import main, run_demo


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
    """No subcommand exits with argparse's usage status."""
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "usage" in capsys.readouterr().err


def test_module_entry_point_runs() -> None:
    """Running the module as a process runs the demo."""
    done = subprocess.run(
        [sys.executable, "-m", "toolcycle.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "cancelled" in done.stdout
