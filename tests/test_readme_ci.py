"""CI runs exactly the README's test command and its check commands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quickstart, flags=re.DOTALL)


def test_quickstart_has_the_demo_the_tests_and_the_checks() -> None:
    """The Quickstart holds the demo command, the test command, then the lint and type checks."""
    commands = _quickstart_commands()
    assert len(commands) == 3
    assert commands[0].endswith("toolcycle demo")
    assert "pytest" in commands[1] and "behave" in commands[1]
    assert "ruff check" in commands[2] and "mypy --strict" in commands[2]


def test_ci_runs_the_readme_commands_verbatim() -> None:
    """.ci/run contains the README's test command as one line, then each check line."""
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    _, tests, checks = _quickstart_commands()
    assert tests in script
    lines = checks.splitlines()
    assert all(line in script for line in lines)
    assert script.index(tests) < min(script.index(line) for line in lines)
