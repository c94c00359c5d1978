"""Steps that drive the toolcycle command line in a subprocess."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from behave import then, when

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{sys.executable} {ROOT / 'tests' / 'mcp' / 'servers.py'}"


def _run(context: Any, args: list[str]) -> None:
    context.cli = subprocess.run(
        [sys.executable, "-m", "toolcycle", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


@when('I run toolcycle with "{args}" and the test MCP server')
def run_with_server(context: Any, args: str) -> None:
    _run(context, [*shlex.split(args), SERVER])


@when('I run toolcycle with "{args}"')
def run_plain(context: Any, args: str) -> None:
    _run(context, shlex.split(args))


@then("it exits with {code:d}")
def exits_with(context: Any, code: int) -> None:
    assert context.cli.returncode == code, (context.cli.returncode, context.cli.stderr)


@then('its output lists the tool "{name:Name}" from "{source}"')
def lists_tool(context: Any, name: str, source: str) -> None:
    rows = [line.split() for line in context.cli.stdout.splitlines()]
    assert any(row[:2] == [name, source] for row in rows), context.cli.stdout


@then('its errors warn about the skill "{name:Name}"')
def warns_about(context: Any, name: str) -> None:
    assert f"toolcycle: warning: skill {name!r}" in context.cli.stderr, context.cli.stderr


@then('its errors say "{text}"')
def errors_say(context: Any, text: str) -> None:
    assert text in context.cli.stderr, context.cli.stderr


@then('its output is a result whose output is {output} and whose trace status is "{status}"')
def result_output(context: Any, output: str, status: str) -> None:
    report = json.loads(context.cli.stdout)
    assert report["output"] == json.loads(output), report
    assert report["trace"]["status"] == status, report
