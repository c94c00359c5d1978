"""The tools, schema and call commands, driven as a user drives them."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolcycle._cli_tools import _spinner
from toolcycle.cli import main

ROOT = Path(__file__).parent
SKILLS = ROOT / "data" / "agent-skills"
SERVER = f"{sys.executable} {ROOT / 'mcp' / 'servers.py'}"
MODULE = '''
from toolcycle import tool


@tool(writes=False)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


NOT_A_TOOL = 42
'''
CLASS_MODULE = """
from toolcycle import ToolCapability, ToolDescriptor


class Echo:
    def discover(self):
        return ToolDescriptor(
            name="echo",
            description="Echo the text back.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    def activate(self, ctx):
        pass

    def execute(self, params, ctx):
        return params.get("text")

    def deactivate(self, ctx):
        pass


echo = Echo()
"""


def toolcycle(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command line in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "toolcycle", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the command line in this process; return the exit code, stdout and stderr."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tools_lists_the_skills_of_a_folder_as_a_table() -> None:
    """One row per valid skill; the invalid one is a warning on stderr, not a traceback."""
    done = toolcycle("tools", "--skills", str(SKILLS))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SOURCE", "WRITES", "CHECKPOINTABLE", "DESCRIPTION"]
    assert len(lines) == 12
    assert lines[1].split()[:4] == ["algorithmic-art", "skill:algorithmic-art", "no", "yes"]
    assert "toolcycle: warning: skill 'claude-api'" in done.stderr
    assert "Traceback" not in done.stderr


def test_tools_json_lists_the_tools_of_an_mcp_server() -> None:
    """--json prints every descriptor; the server's skipped tools are warnings."""
    done = toolcycle("tools", "--json", "--mcp", SERVER)
    assert done.returncode == 0, done.stderr
    tools = {entry["name"]: entry for entry in json.loads(done.stdout)}
    assert tools["add"]["source"] == "mcp"
    assert tools["add"]["capability"]["writes"] is False
    assert "invalid_schema" not in tools
    assert "'invalid_schema' was skipped" in done.stderr


def test_schema_and_call_run_against_an_mcp_server_and_a_module(tmp_path: Path) -> None:
    """Schema prints both schemas; call prints the output and the trace, exit code 0."""
    (tmp_path / "my_tools.py").write_text(MODULE)
    env = {"PYTHONPATH": str(tmp_path)}
    schema = toolcycle("schema", "add", "--mcp", SERVER, env=env)
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout)["input_schema"]["required"] == ["a", "b"]
    called = toolcycle(
        "call", "shout", "--args", '{"text": "hi"}', "--module", "my_tools", "--read-only",
        env=env,
    )  # fmt: skip
    assert called.returncode == 0, called.stderr
    report = json.loads(called.stdout)
    assert report["output"] == "HI"
    assert report["trace"]["status"] == "ok"
    assert report["trace"]["tool_name"] == "shout"


def test_a_failed_call_exits_1_with_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """A timed-out call prints its trace (status timed_out) and exits 1."""
    code, out, _ = run(
        capsys, "call", "slow", "--args", '{"seconds": 30}', "--timeout", "0.3", "--mcp", SERVER
    )
    assert code == 1
    assert json.loads(out)["trace"]["status"] == "timed_out"


def test_a_refused_call_exits_1_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """A read-only plan refuses a tool that writes: the reason on stderr, exit code 1."""
    code, _, err = run(
        capsys, "call", "write", "--args", '{"path": "x"}', "--read-only", "--mcp", SERVER
    )
    assert code == 1
    assert "read-only" in err


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["tools"], 2, "name at least one source"),
        (["call", "nope", "--skills", str(SKILLS)], 2, "no tool named 'nope'"),
        (["call", "mcp-builder", "--args", "{", "--skills", str(SKILLS)], 2, "not valid JSON"),
        (["call", "mcp-builder", "--args", "[1]", "--skills", str(SKILLS)], 2, "JSON object"),
        (["tools", "--mcp", "'unclosed"], 2, "No closing quotation"),
        (["tools", "--skills", "/no/such/folder"], 3, "not a directory"),
        (["tools", "--mcp", "/no/such/server"], 3, "program '/no/such/server' does not exist"),
        (["tools", "--mcp", '""'], 2, "--mcp '\"\"' names no program to start"),
        (["tools", "--module", "no_such_module_here"], 3, "does not import"),
        (["tools", "--module", "json"], 3, "has no tools"),
    ],
)
def test_usage_and_source_errors_have_their_exit_codes(
    capsys: pytest.CaptureFixture[str], args: list[str], code: int, words: str
) -> None:
    """Usage errors exit 2, sources that cannot be loaded exit 3, each with a message."""
    result = run(capsys, *args)
    assert result[0] == code
    assert words in result[2]


def test_skills_dot_is_the_skill_of_the_current_folder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--skills . run inside a skill's folder calls that skill."""
    monkeypatch.chdir(SKILLS / "mcp-builder")
    code, out, err = run(capsys, "call", "mcp-builder", "--read-only", "--skills", ".")
    assert code == 0, err
    assert json.loads(out)["success"] is True


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_not_positive_seconds_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    """--timeout must be a finite number above zero; argparse refuses it before anything runs."""
    assert main(["call", "mcp-builder", "--timeout", seconds, "--skills", str(SKILLS)]) == 2
    err = capsys.readouterr().err
    assert "argument --timeout" in err
    assert repr(seconds) in err


def test_a_tool_class_in_a_module_is_not_taken_for_a_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--module registers a tool instance and passes over the class it was made from."""
    (tmp_path / "cli_class_tools.py").write_text(CLASS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cli_class_tools", raising=False)
    code, out, err = run(capsys, "tools", "--module", "cli_class_tools")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["echo"]


def test_the_spinner_turns_only_on_a_terminal() -> None:
    """On a terminal it draws frames and clears its line; elsewhere it writes nothing."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    with _spinner(terminal, "starting"):
        pass
    assert "starting" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")
    plain = io.StringIO()
    with _spinner(plain, "starting"):
        pass
    assert plain.getvalue() == ""


def test_the_commands_in_process_print_what_the_subprocess_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Table, JSON, schema and call from main(), with a module and a skills folder."""
    (tmp_path / "cli_module_tools.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sources = ["--skills", str(SKILLS), "--module", "cli_module_tools"]
    code, out, err = run(capsys, "tools", *sources)
    assert code == 0
    assert out.splitlines()[-1].split()[:4] == ["shout", "wrapped", "no", "no"]
    assert "claude-api" in err
    code, out, _ = run(capsys, "tools", "--json", *sources)
    assert [entry["name"] for entry in json.loads(out)][-1] == "shout"
    code, out, _ = run(capsys, "schema", "shout", *sources)
    assert json.loads(out)["output_schema"] is not None
    code, out, _ = run(capsys, "call", "mcp-builder", "--args", '{"path": "LICENSE.txt"}', *sources)
    assert code == 0
    assert "Apache License" in json.loads(out)["output"]["text"]
    code, out, _ = run(capsys, "call", "mcp-builder", "--args", '{"path": "../x"}', *sources)
    assert code == 1
    assert json.loads(out)["success"] is False


def _page_commands() -> list[str]:
    """The command lines of the first shell block of docs/cli.md's Commands section."""
    page = (ROOT.parent / "docs" / "cli.md").read_text()
    section = page.split("## Commands", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def test_the_page_commands_run_after_the_quickstart_install() -> None:
    """Each `toolcycle` line of docs/cli.md exits 0, run with the programs the install line adds.

    The page runs them from the clone with its `.venv`; here `.venv/bin/` is the folder of
    the Python running the tests, where the dev extra installed the same programs.
    """
    lines = _page_commands()
    installs = [line.split("  #")[0] for line in lines if " -m pip install " in line]
    assert installs == [
        ".venv/bin/python -m pip install -e '.[mcp]'",
        ".venv/bin/python -m pip install mcp-server-time",
    ]
    commands = lines[len(installs) :]
    bin_folder = f"{Path(sys.executable).parent}/"
    assert commands and all(line.startswith(".venv/bin/toolcycle ") for line in commands)
    for line in commands:
        words = [word.replace(".venv/bin/", bin_folder) for word in shlex.split(line)]
        done = subprocess.run(
            words, cwd=ROOT.parent, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        assert done.stdout.strip(), line


def test_the_spinner_turns_while_the_sources_start() -> None:
    """A block that outlasts a frame sees the next frames drawn, then the line cleared."""

    class Terminal(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.frames = 0
            self.turned = threading.Event()

        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            self.frames += text.startswith("\r") and "starting" in text
            if self.frames >= 3:
                self.turned.set()
            return super().write(text)

    terminal = Terminal()
    with _spinner(terminal, "starting"):
        assert terminal.turned.wait(10)
    assert "\r/ starting" in terminal.getvalue() and terminal.getvalue().endswith("\r")


def test_control_characters_from_a_source_are_printed_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A description or folder name holding an escape sequence never reaches the terminal raw."""
    module = tmp_path / "sneaky.py"
    module.write_text(
        "from toolcycle import tool\n\n\n"
        "@tool(writes=False)\n"
        "def sneaky(text: str) -> str:\n"
        '    """Clears \\x1b[2Jthe screen\\x07 and sets the \\x9b title."""\n'
        "    return text\n"
    )
    skills = tmp_path / "skills"
    (skills / "evil\x1b]0;owned\x07").mkdir(parents=True)
    (skills / "evil\x1b]0;owned\x07" / "SKILL.md").write_text(
        "---\nname: evil\ndescription: Bad folder name.\n---\nBody.\n"
    )
    (skills / "plain").mkdir()  # a folder with no valid skill at all would exit 3
    (skills / "plain" / "SKILL.md").write_text("---\nname: plain\ndescription: Fine.\n---\nBody.\n")
    code, out, err = run(capsys, "tools", "--module", str(module), "--skills", str(skills))
    assert code == 0
    assert "Clears \\x1b[2Jthe screen\\x07 and sets the \\x9b title." in out
    assert "evil\\x1b]0;owned\\x07" in err
    for control in ("\x1b", "\x07", "\x9b"):
        assert control not in out + err


def test_tools_prints_a_table_on_an_ascii_only_output(tmp_path: Path) -> None:
    """Text the locale cannot encode is escaped, not a UnicodeEncodeError traceback."""
    (tmp_path / "cv").mkdir()
    (tmp_path / "cv" / "SKILL.md").write_text(
        "---\nname: cv\ndescription: Write a résumé from notes, in the style the person "
        "asks for, with sections.\n---\nBody.\n",
        encoding="utf-8",
    )
    result = toolcycle("tools", "--skills", str(tmp_path), env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    [row] = result.stdout.splitlines()[1:]
    assert row.endswith("Write a r\\xe9sum\\xe9 from notes, in the style the person asks f...")


def test_a_skills_folder_whose_only_skill_is_broken_exits_3_after_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a module without tools: no table, the skill's report, then the source error."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "SKILL.md").write_text("---\nname: notes\ndescription: [oops\n---\n")
    code, out, err = run(capsys, "tools", "--skills", str(tmp_path))
    assert (code, out) == (3, "")
    report, error = err.strip().splitlines()
    assert report.startswith("toolcycle: warning: skill 'notes'") and "[yaml-syntax]" in report
    assert error == f"toolcycle: skills folder {str(tmp_path)!r} holds no valid skill: " + (
        "neither it nor a folder in it has a SKILL.md that could be registered"
    )


def test_a_skill_script_asked_for_by_name_says_the_command_line_runs_no_scripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``<skill>.run_script`` exists only with scripts=True, which --skills never sets."""
    (tmp_path / "shout" / "scripts").mkdir(parents=True)
    (tmp_path / "shout" / "SKILL.md").write_text("---\nname: shout\ndescription: Up.\n---\n")
    (tmp_path / "shout" / "scripts" / "up.py").write_text("print('UP')\n")
    code, _, err = run(capsys, "call", "shout.run_script", "--skills", str(tmp_path))
    assert code == 2
    assert "--skills registers skills without their scripts" in err
    assert "SkillDirectory(folder, scripts=True)" in err


def test_args_nested_too_deeply_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON deeper than the decoder can follow exits 2 with a message, not a traceback."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "SKILL.md").write_text(
        "---\nname: notes\ndescription: Keeps notes.\n---\nBody.\n"
    )
    deep = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
    code, out, err = run(capsys, "call", "notes", "--args", deep, "--skills", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.strip() == "toolcycle: --args nests lists or objects too deeply to read"
