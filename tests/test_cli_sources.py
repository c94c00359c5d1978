"""The sources of the command line: modules by name or file, workspaces, MCP programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcycle.cli import main

BIN = Path(sys.executable).parent
BASIC = '''
from toolcycle import tool

from mytools_helpers import EXCLAIM


@tool(writes=False)
def shout(text: str) -> str:
    """Upper-case a text and exclaim."""
    return text.upper() + EXCLAIM
'''


def installed_toolcycle() -> list[str]:
    """The console script beside this interpreter, or the module run without the script's path."""
    script = BIN / "toolcycle"
    return [str(script)] if script.exists() else [sys.executable, "-P", "-m", "toolcycle"]


def run_process(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command line as a user would, with a bounded wait."""
    return subprocess.run(
        command,
        cwd=cwd,
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


@pytest.fixture(autouse=True)
def forget_modules(tmp_path: Path) -> Iterator[None]:
    """Modules a test imports from its temporary folder are forgotten after it."""
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder holding a package ``mytools`` with a module ``basic`` and a helper beside it."""
    package = tmp_path / "mytools"
    package.mkdir()
    (package / "__init__.py").write_text('"""Tools of the project."""\n')
    (package / "basic.py").write_text(BASIC)
    (package / "mytools_helpers.py").write_text('EXCLAIM = "!"\n')
    (tmp_path / "mytools_helpers.py").write_text('EXCLAIM = "!"\n')
    return tmp_path


def test_the_installed_command_imports_a_module_from_the_current_folder(project: Path) -> None:
    """`toolcycle tools --module mytools.basic` works from the folder that holds mytools/."""
    done = run_process([*installed_toolcycle(), "tools", "--module", "mytools.basic"], project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[:2] == ["shout", "wrapped"]


def test_a_module_file_path_is_imported_with_its_folder_on_the_path(project: Path) -> None:
    """--module mytools/basic.py loads the file; its neighbours import as under `python FILE`."""
    done = run_process(
        [*installed_toolcycle(), "call", "shout", "--args", '{"text": "hi"}',
         "--module", "mytools/basic.py"],
        project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "HI!"


def test_a_module_that_is_not_found_says_where_it_was_looked_for(project: Path) -> None:
    """The message names the folders searched, the current one first, and suggests a file."""
    done = run_process([*installed_toolcycle(), "tools", "--module", "othertools.basic"], project)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    assert "no module named 'othertools'" in done.stderr
    assert f"searched: {project}" in done.stderr
    assert "--module othertools/basic.py" in done.stderr


def test_in_process_the_current_folder_is_on_the_path_only_while_the_command_runs(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """main() imports from the current folder and leaves sys.path as it found it."""
    monkeypatch.chdir(project)
    before = list(sys.path)
    code, out, err = run(
        capsys, "call", "shout", "--args", '{"text": "a"}', "--module", "mytools.basic"
    )
    assert code == 0, err
    assert json.loads(out)["output"] == "A!"
    assert sys.path == before


def test_in_process_a_module_file_loads_once_and_is_reused(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file named in two commands is imported once, then found again."""
    monkeypatch.chdir(project)
    code, out, err = run(capsys, "tools", "--module", "mytools/basic.py")
    assert code == 0, err
    first = sys.modules["basic"]
    code, out, err = run(capsys, "tools", "--module", "./mytools/basic.py")
    assert code == 0, err
    assert "shout" in out
    assert sys.modules["basic"] is first


@pytest.mark.parametrize(
    ("file", "text", "words"),
    [
        ("missing.py", None, "does not exist (looked for "),
        ("tools.txt", "x = 1\n", "is not a Python module"),
        ("broken.py", "x = 1\ny = 1 / 0\n", "ZeroDivisionError: division by zero (at "),
        ("json.py", "x = 1\n", "already imported from elsewhere"),
        ("empty.py", '"""No tools."""\n', "has no tools at its top level"),
    ],
)
def test_a_module_file_that_cannot_be_loaded_exits_3_and_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, file: str, text: str | None, words: str
) -> None:
    """A missing file, a non-Python file, a failing import or a clashing name is a source error."""
    if text is not None:
        (tmp_path / file).write_text(text)
    code, _, err = run(capsys, "tools", "--module", str(tmp_path / file))
    assert code == 3
    assert words in err
    assert "broken" not in sys.modules  # a module that failed to import is not left behind


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("import no_such_dependency_here\n", "ModuleNotFoundError: No module named"),
        ("raise RuntimeError('not today')\n", "RuntimeError: not today (at "),
    ],
)
def test_a_dotted_module_that_fails_inside_names_the_error_and_the_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    words: str,
) -> None:
    """A failure inside the module itself is told apart from a module that is not found."""
    (tmp_path / "cli_failing_tools.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "tools", "--module", "cli_failing_tools")
    assert code == 3
    assert words in err
    assert "searched:" not in err


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace folder holding one text file."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("first line\n")
    return folder


def test_workspace_lists_the_built_in_tools(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    """--workspace registers the seven built-in tools, read tools first."""
    code, out, err = run(capsys, "tools", "--workspace", str(workspace))
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert names[:3] == ["read_file", "list_dir", "search_text"]
    assert "write_file" in names and len(names) == 7


def test_workspace_tools_read_in_the_folder_given(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    """`call read_file --workspace DIR` reads a file of DIR by its path inside DIR."""
    code, out, err = run(
        capsys,
        "call",
        "read_file",
        "--args",
        '{"path": "notes.txt"}',
        "--workspace",
        str(workspace),
    )
    assert code == 0, err
    assert json.loads(out)["output"]["content"] == "first line\n"


def test_a_write_tool_on_a_workspace_without_writable_fails_and_says_why(workspace: Path) -> None:
    """The call fails (exit 1), nothing is written, and stderr says to add --writable."""
    done = run_process(
        [sys.executable, "-m", "toolcycle", "call", "write_file",
         "--args", '{"path": "new.txt", "content": "x"}', "--workspace", "."],
        workspace,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["trace"]["error_type"] == "WorkspaceReadOnlyError"
    assert "read-only unless --writable is given" in done.stderr
    assert not (workspace / "new.txt").exists()


def test_writable_lets_the_workspace_tools_change_the_folder(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    """With --writable, write_file creates the file."""
    code, out, err = run(
        capsys, "call", "write_file", "--args", '{"path": "new.txt", "content": "x"}',
        "--workspace", str(workspace), "--writable",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["success"] is True
    assert (workspace / "new.txt").read_text() == "x"
    code, out, err = run(
        capsys, "call", "edit_file", "--args", '{"path": "new.txt", "old": "x", "new": "y"}',
        "--workspace", str(workspace),
    )  # fmt: skip
    assert code == 1
    assert "read-only unless --writable is given" in err
    assert (workspace / "new.txt").read_text() == "x"


def test_two_workspaces_are_told_apart_by_the_name_given(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path
) -> None:
    """Each --workspace is bound under the text it was given; a call picks one by name."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("other\n")
    code, out, err = run(
        capsys, "call", "read_file", "--args", json.dumps({"path": "notes.txt", "workspace": str(other)}),
        "--workspace", str(workspace), "--workspace", str(other), "--workspace", str(other),
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["output"]["content"] == "other\n"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["tools", "--workspace", "/no/such/folder"], 3, "--workspace '/no/such/folder' is not a"),
        (["tools", "--writable", "--skills", "."], 2, "--writable applies to --workspace"),
    ],
)
def test_workspace_usage_and_source_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], code: int, words: str
) -> None:
    """A missing workspace folder exits 3; --writable without a workspace exits 2."""
    result = run(capsys, *args)
    assert result[0] == code
    assert words in result[2]


@pytest.mark.parametrize("value", ["", "   "])
@pytest.mark.parametrize(
    ("option", "wanted"),
    [
        ("--mcp", "give the server's command line"),
        ("--mcp-url", "give the server's URL"),
        ("--skills", "give a folder ('.' for the current one)"),
        ("--module", "give a dotted name or a file"),
        ("--workspace", "give a folder ('.' for the current one)"),
    ],
)
def test_a_blank_source_option_is_a_usage_error_reported_by_argparse(
    capsys: pytest.CaptureFixture[str], option: str, wanted: str, value: str
) -> None:
    """An empty or all-space source is refused before anything loads: exit 2, usage and reason."""
    code, out, err = run(capsys, "call", "read_file", option, value)
    assert (code, out) == (2, "")
    assert err.startswith("usage: toolcycle call ")
    assert f"toolcycle call: error: argument {option}: {value!r} is blank; {wanted}" in err


def test_an_empty_workspace_does_not_bind_the_current_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workspace '' --writable is refused, rather than read as the folder the command runs in."""
    monkeypatch.chdir(tmp_path)
    write = ["call", "write_file", "--args", '{"path": "a.txt", "content": "x"}', "--writable"]
    code, _, _ = run(capsys, *write, "--workspace", "")
    assert code == 2
    assert list(tmp_path.iterdir()) == []


def test_an_mcp_program_not_on_path_says_so_and_suggests_the_venv(tmp_path: Path) -> None:
    """Exit 3 and a one-line reason naming PATH and a virtual environment, no traceback."""
    done = run_process(
        [sys.executable, "-m", "toolcycle", "tools", "--mcp", "no-such-mcp-server --flag"],
        tmp_path,
    )
    assert done.returncode == 3
    assert done.stderr == (
        "toolcycle: program 'no-such-mcp-server' was not found on PATH; if it is installed "
        "in a virtual environment, give its path, e.g. /path/to/.venv/bin/no-such-mcp-server\n"
    )


def test_an_mcp_program_beside_this_python_is_named_with_its_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that is in this interpreter's bin folder but not on PATH: its path is given."""
    monkeypatch.setenv("PATH", "/no/such/folder")
    code, _, err = run(capsys, "tools", "--mcp", "mcp-server-time")
    assert code == 3
    assert f"it is installed beside this Python: give its path, {BIN / 'mcp-server-time'}" in err
    code, _, err = run(capsys, "tools", "--mcp", "no-such-mcp-server")
    assert code == 3
    assert "e.g. /path/to/.venv/bin/no-such-mcp-server" in err


def test_an_mcp_program_path_that_cannot_run_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A program given by path that is missing or not executable: said before anything starts."""
    script = tmp_path / "server"
    script.write_text("#!/bin/sh\n")
    code, _, err = run(capsys, "tools", "--mcp", str(tmp_path / "missing"))
    assert code == 3
    assert "does not exist" in err
    code, _, err = run(capsys, "tools", "--mcp", str(script))
    assert code == 3
    assert "is not executable" in err


def test_an_mcp_program_on_path_that_is_no_server_could_not_be_loaded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A program found on PATH that exits at once: the server failed to start, exit 3."""
    code, _, err = run(capsys, "tools", "--mcp", "true")
    assert code == 3
    assert "could not be loaded" in err


def test_an_mcp_url_that_does_not_answer_could_not_be_loaded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--mcp-url to a port where nothing listens: exit 3 with the URL named."""
    code, _, err = run(capsys, "tools", "--mcp-url", "http://127.0.0.1:9/mcp")
    assert code == 3
    assert "MCP server 'http://127.0.0.1:9/mcp' could not be loaded" in err


def test_a_missing_extra_is_a_source_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the MCP source cannot be imported, the import error is the message, exit 3."""
    monkeypatch.setitem(sys.modules, "toolcycle.sources.mcp", None)
    code, _, err = run(capsys, "tools", "--mcp", "true")
    assert code == 3
    assert "toolcycle.sources.mcp" in err
