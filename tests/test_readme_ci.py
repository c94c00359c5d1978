"""CI runs exactly the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quickstart = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quickstart, flags=re.DOTALL)


def test_quickstart_has_exactly_two_commands() -> None:
    """The Quickstart holds one demo command and one test command."""
    commands = _quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith("toolcycle demo")
    assert "pytest" in commands[1] and "behave" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    """.ci/run contains the README's second command as one line."""
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _quickstart_commands()[1] in script
