"""The built-in workspace tools: what they do, and what they refuse."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from toolcycle import BoundResource, ToolRuntime
from toolcycle.builtins import workspace_tools


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small workspace with text, a nested file and a binary file."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n# TODO: more\n")
    (root / "image.bin").write_bytes(b"\x89PNG\0\0data")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    return root


@pytest.fixture
def run(workspace: Path) -> Any:
    """Call a built-in in a plan that binds the workspace; returns the result."""
    runtime = ToolRuntime()
    runtime.register_source(workspace_tools(max_bytes=1000, max_entries=3))
    resource = BoundResource(kind="workspace", name="ws", location=str(workspace))
    ctx = runtime.new_context(resources=[resource])

    def call(name: str, **params: Any) -> Any:
        return runtime.execute(name, params, ctx)

    call.ctx = ctx  # type: ignore[attr-defined]
    call.runtime = runtime  # type: ignore[attr-defined]
    yield call
    runtime.close()


def test_read_tools_do_not_write_and_write_tools_are_checkpointable() -> None:
    """The capability flags follow the kind of tool."""
    for instance in workspace_tools().tools():
        descriptor = instance.discover()
        assert descriptor.source == "builtin"
        writes = descriptor.name in {"write_file", "edit_file", "delete_file", "make_dir"}
        assert descriptor.capability.writes is writes
        assert descriptor.capability.checkpointable


def test_read_file_returns_text_and_a_window_of_lines(run: Any) -> None:
    """read_file returns the whole text or the lines from offset to limit."""
    whole = run("read_file", path="notes.txt")
    assert whole.output == {
        "path": "notes.txt",
        "content": "alpha\nbeta\ngamma\n",
        "total_lines": 3,
        "truncated": False,
    }
    window = run("read_file", path="notes.txt", offset=1, limit=1).output
    assert window["content"] == "beta\n" and window["truncated"]


def test_lines_end_only_at_newlines_as_grep_counts_them(run: Any, workspace: Path) -> None:
    """A form feed or U+2028 inside a line neither shifts line numbers nor splits a line."""
    (workspace / "paged.py").write_bytes(
        "a = 1\n\f\nb = '\u2028'\r\nneedle one\nx\x1cy needle two\n".encode()
    )
    found = run("search_text", query="needle", path="paged.py").output["matches"]
    assert [(m["line"], m["text"]) for m in found] == [
        (4, "needle one"),
        (5, "x\x1cy needle two"),
    ]
    window = run("read_file", path="paged.py", offset=2, limit=1).output
    assert window["content"] == "b = '\u2028'\r\n" and window["total_lines"] == 5


@pytest.mark.parametrize(
    ("path", "error_type", "text"),
    [
        ("missing.txt", "FileNotFoundError", "does not exist"),
        ("image.bin", "NotTextError", "binary"),
        ("latin1.txt", "NotTextError", "not valid UTF-8"),
        ("src", "WorkspaceError", "not a file"),
    ],
)
def test_read_file_refuses_clearly(run: Any, path: str, error_type: str, text: str) -> None:
    """Missing, binary, non-UTF-8 and non-file paths give clear failed results."""
    result = run("read_file", path=path)
    assert not result.success and result.error_type == error_type
    assert text in result.error


def test_read_file_refuses_files_over_the_cap(run: Any, workspace: Path) -> None:
    """A file over max_bytes is refused with its size."""
    (workspace / "big.txt").write_text("x" * 2000)
    result = run("read_file", path="big.txt")
    assert "over the limit of 1000" in result.error


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x", "link/passwd"])
def test_paths_cannot_leave_the_workspace(run: Any, workspace: Path, path: str) -> None:
    """.., absolute paths elsewhere and escaping symlinks are refused."""
    os.symlink("/etc", workspace / "link")
    result = run("read_file", path=path)
    assert result.error_type == "PathOutsideWorkspaceError"


def test_absolute_paths_inside_the_workspace_are_allowed(run: Any, workspace: Path) -> None:
    """An absolute path that lies inside the workspace works."""
    assert run("read_file", path=str(workspace / "notes.txt")).success


def test_list_dir_sorts_filters_recurses_and_caps(run: Any) -> None:
    """list_dir lists sorted entries, honours a glob and the recursion flag, and caps."""
    top = run("list_dir").output
    assert [e["path"] for e in top["entries"]] == ["image.bin", "latin1.txt", "notes.txt"]
    assert top["truncated"]
    py = run("list_dir", pattern="*.py", recursive=True).output
    assert py["entries"] == [{"path": "src/main.py", "type": "file", "size": 25}]
    assert run("list_dir", path="notes.txt").error_type == "WorkspaceError"


def test_search_text_finds_literals_and_regexes(run: Any) -> None:
    """search_text reports file and line; a regex works; bad regexes are refused."""
    literal = run("search_text", query="TODO").output
    assert literal["matches"] == [{"path": "src/main.py", "line": 2, "text": "# TODO: more"}]
    regex = run("search_text", query="^(alpha|gamma)$", regex=True, pattern="*.txt").output
    assert [m["line"] for m in regex["matches"]] == [1, 3]
    capped = run("search_text", query="a", max_results=1).output
    assert capped["truncated"] and len(capped["matches"]) == 1
    assert run("search_text", query="(", regex=True).error_type == "WorkspaceError"


def test_search_text_runs_a_catastrophic_regex_in_linear_time(run: Any, workspace: Path) -> None:
    """^(a+)+$ on 31 a's and a '!' backtracks for minutes in Python's re; RE2 answers at once."""
    (workspace / "hostile.txt").write_text("a" * 31 + "!\n" + "a" * 31 + "\n")
    result = run.runtime.execute(
        "search_text",
        {"query": "^(a+)+$", "regex": True, "pattern": "hostile.txt"},
        run.ctx,
        timeout=2,
    )
    assert result.success, result.error
    assert [m["line"] for m in result.output["matches"]] == [2]


def test_search_text_refuses_a_regex_re2_cannot_run_clearly(run: Any) -> None:
    """A backreference or lookaround fails the call with a WorkspaceError naming RE2."""
    for query in ("(a)\\1", "a(?=b)", "(?<!x)a"):
        result = run("search_text", query=query, regex=True)
        assert result.error_type == "WorkspaceError"
        assert "RE2" in result.error and "backreferences" in result.error


def test_search_text_treats_a_literal_query_literally(run: Any) -> None:
    """Without regex, a query with regex syntax matches as plain text; a lone surrogate is invalid."""
    (Path(run.ctx.resources[0].location) / "syntax.txt").write_text("x = (a+)+ [y]\n")
    found = run("search_text", query="(a+)+ [y]").output
    assert [m["path"] for m in found["matches"]] == ["syntax.txt"]
    refused = run("search_text", query="\ud800")
    assert refused.validation is not None and refused.validation.issues[0].keyword == "unicode"


@pytest.mark.parametrize(
    ("tool", "params", "step"),
    [
        ("search_text", {"query": "needle"}, "read_text"),
        ("list_dir", {"recursive": True}, "_followed"),
    ],
)
def test_a_walk_of_the_tree_stops_once_its_call_is_given_up_on(
    run: Any,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    params: dict[str, Any],
    step: str,
) -> None:
    """A search or listing of a large tree ends with its call, not after the whole tree."""
    from toolcycle.builtins import _read

    for index in range(50):
        (workspace / "src" / f"f{index:02}.txt").write_text("needle\n")
    original = getattr(_read, step)
    steps: list[object] = []
    release = threading.Event()

    def held_on_first(*args: Any) -> Any:
        steps.append(args)
        if len(steps) == 1:
            release.wait(5)  # until the call has timed out
        return original(*args)

    monkeypatch.setattr(_read, step, held_on_first)
    result = run.runtime.execute(tool, params, run.ctx, timeout=0.2)
    release.set()
    run.runtime.end_plan(run.ctx)  # waits for the call's thread, had it gone on
    assert result.trace is not None and result.trace.status == "timed_out"
    assert len(steps) == 1


def test_write_file_creates_and_overwrites_and_records_changes(run: Any, workspace: Path) -> None:
    """write_file creates folders as needed and records one change per file and folder."""
    created = run("write_file", path="new/dir/file.txt", content="hé")
    assert created.output == {"path": "new/dir/file.txt", "bytes": 3, "created": True}
    assert (workspace / "new" / "dir" / "file.txt").read_text() == "hé"
    assert [c.kind for c in created.changes] == ["dir.create", "dir.create", "file.write"]
    overwritten = run("write_file", path="notes.txt", content="replaced")
    assert overwritten.output["created"] is False
    change = overwritten.changes[0]
    assert change.tool_name == "write_file" and change.target == "notes.txt"
    assert change.recorded_at is not None and change.data["before"] is not None


def test_edit_file_needs_one_exact_occurrence(run: Any, workspace: Path) -> None:
    """edit_file replaces a unique excerpt and refuses missing or repeated ones."""
    assert run("edit_file", path="notes.txt", old="beta", new="BETA").success
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert "does not occur" in run("edit_file", path="notes.txt", old="zeta", new="x").error
    (workspace / "twice.txt").write_text("a a")
    assert "occurs 2 times" in run("edit_file", path="twice.txt", old="a", new="b").error


def test_two_edits_of_one_file_at_once_both_land_and_roll_back(
    run: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits of one file that overlap take turns: neither is lost, and both are undone."""
    from toolcycle._confined import ConfinedRoot

    replace = ConfinedRoot.write_atomic
    first_writing, second_done = threading.Event(), threading.Event()
    writes: list[bytes] = []

    def first_waits(self: ConfinedRoot, parts: Any, data: bytes, mode: int | None = None) -> None:
        writes.append(data)
        if len(writes) == 1:
            first_writing.set()
            second_done.wait(1)  # an edit that does not wait its turn ends meanwhile
        replace(self, parts, data, mode)

    monkeypatch.setattr(ConfinedRoot, "write_atomic", first_waits)
    results: dict[str, Any] = {}

    def edit(old: str, done: threading.Event | None = None) -> None:
        results[old] = run("edit_file", path="notes.txt", old=old, new=old.upper())
        if done is not None:
            done.set()

    first = threading.Thread(target=edit, args=("alpha",))
    first.start()
    assert first_writing.wait(5)
    second = threading.Thread(target=edit, args=("gamma", second_done))
    second.start()
    first.join(5)
    second.join(5)
    assert results["alpha"].success and results["gamma"].success
    assert (workspace / "notes.txt").read_text() == "ALPHA\nbeta\nGAMMA\n"
    report = run.ctx.rollback()
    assert report.complete, report.not_undone
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_a_write_given_up_on_while_waiting_its_turn_changes_nothing(
    run: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that times out while another call writes its file never writes it later."""
    from toolcycle._confined import ConfinedRoot

    replace = ConfinedRoot.write_atomic
    first_writing, release = threading.Event(), threading.Event()

    def first_waits(self: ConfinedRoot, parts: Any, data: bytes, mode: int | None = None) -> None:
        if not first_writing.is_set():
            first_writing.set()
            release.wait(5)
        replace(self, parts, data, mode)

    monkeypatch.setattr(ConfinedRoot, "write_atomic", first_waits)
    first = threading.Thread(
        target=run, args=("write_file",), kwargs={"path": "notes.txt", "content": "first"}
    )
    first.start()
    assert first_writing.wait(5)
    late = run.runtime.execute(
        "write_file", {"path": "notes.txt", "content": "late"}, run.ctx, timeout=0.2
    )
    release.set()
    first.join(5)
    assert late.trace is not None and late.trace.status == "timed_out"
    run.runtime.end_plan(run.ctx)  # waits for the timed-out call to let go
    assert (workspace / "notes.txt").read_text() == "first"
    assert [c.tool_name for c in run.ctx.changes] == ["write_file"]


def test_delete_file_and_make_dir(run: Any, workspace: Path) -> None:
    """delete_file removes a file; make_dir creates folders; both refuse nonsense."""
    assert run("delete_file", path="notes.txt").output == {"path": "notes.txt", "deleted": True}
    assert not (workspace / "notes.txt").exists()
    assert run("delete_file", path="notes.txt").error_type == "FileNotFoundError"
    assert run("make_dir", path="a/b").output == {"path": "a/b", "created": True}
    assert run("make_dir", path="a/b").output["created"] is False
    assert run("make_dir", path="src/main.py").error_type == "WorkspaceError"
    assert run("write_file", path="a", content="x").error_type == "WorkspaceError"
    assert run("write_file", path=".", content="x").error_type == "WorkspaceError"


def test_a_read_only_workspace_refuses_writes(workspace: Path) -> None:
    """A workspace bound read_only refuses write tools even in a writing plan."""
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        resource = BoundResource(
            kind="workspace", name="ws", location=str(workspace), read_only=True
        )
        with runtime.plan(resources=[resource]) as ctx:
            result = runtime.execute("write_file", {"path": "x", "content": ""}, ctx)
            assert result.error_type == "WorkspaceReadOnlyError"
            assert runtime.execute("read_file", {"path": "notes.txt"}, ctx).success


def test_a_plan_without_a_workspace_gets_a_clear_error() -> None:
    """Calling a built-in without a bound workspace says how to bind one."""
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        with runtime.plan() as ctx:
            result = runtime.execute("list_dir", {}, ctx)
    assert result.error_type == "WorkspaceError" and "BoundResource" in result.error


def test_activation_checks_the_workspace_exists(tmp_path: Path) -> None:
    """A workspace that is not a directory fails activation."""
    from toolcycle import ToolActivationError

    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        missing = BoundResource(kind="workspace", name="ws", location=str(tmp_path / "none"))
        with runtime.plan(resources=[missing]) as ctx, pytest.raises(ToolActivationError):
            runtime.execute("list_dir", {}, ctx)


def test_activation_refuses_a_workspace_with_an_empty_location() -> None:
    """An empty location is not taken for the current folder: activation says what is wrong."""
    from toolcycle import ToolActivationError

    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        empty = BoundResource(kind="workspace", name="ws", location="")
        with runtime.plan(resources=[empty]) as ctx:
            with pytest.raises(ToolActivationError, match="empty location"):
                runtime.execute("list_dir", {}, ctx)


def test_two_workspaces_are_told_apart_by_name(tmp_path: Path) -> None:
    """With two workspaces bound, the workspace argument picks one."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.txt").write_text(name)
    resources = [
        BoundResource(kind="workspace", name=n, location=str(tmp_path / n)) for n in ("a", "b")
    ]
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        with runtime.plan(resources=resources) as ctx:
            listed = runtime.execute("list_dir", {"workspace": "b"}, ctx).output
            ambiguous = runtime.execute("list_dir", {}, ctx)
    assert [e["path"] for e in listed["entries"]] == ["b.txt"]
    assert "pass a name" in ambiguous.error
