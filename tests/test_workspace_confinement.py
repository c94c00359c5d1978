"""The workspace tools and rollback never read or write outside the workspace."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcycle import BoundResource, Change, ToolExecutionContext

from .workspace_plan import WorkspacePlan


@pytest.fixture
def plan(tmp_path: Path, outside: Path) -> Iterator[WorkspacePlan]:
    """A plan on a workspace holding one text file and one folder."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("original\n")
    (root / "src").mkdir()
    subject = WorkspacePlan(root)
    yield subject
    subject.runtime.close()


def _no_host_path(text: str, tmp_path: Path) -> bool:
    return str(tmp_path) not in text and str(tmp_path.resolve()) not in text


@pytest.mark.parametrize("name", ["a.txt", "new.txt"])
def test_write_file_ignores_a_symlink_planted_at_the_old_temporary_name(
    plan: WorkspacePlan, outside: Path, name: str
) -> None:
    """A link at `.NAME.toolcycle-tmp` pointing outside is neither followed nor moved."""
    os.symlink(outside / "victim.txt", plan.root / f".{name}.toolcycle-tmp")
    result = plan("write_file", path=name, content="from the model")
    assert result.success, result.error
    assert (outside / "victim.txt").read_text() == "precious"
    assert not (plan.root / name).is_symlink()
    assert (plan.root / name).read_text() == "from the model"


def test_edit_file_ignores_a_symlink_planted_at_the_old_temporary_name(
    plan: WorkspacePlan, outside: Path
) -> None:
    """edit_file writes the workspace file, not what a planted temporary link points to."""
    os.symlink(outside / "victim.txt", plan.root / ".a.txt.toolcycle-tmp")
    assert plan("edit_file", path="a.txt", old="original", new="edited").success
    assert (outside / "victim.txt").read_text() == "precious"
    assert not (plan.root / "a.txt").is_symlink()
    assert (plan.root / "a.txt").read_text() == "edited\n"


def test_rollback_ignores_a_symlink_planted_at_its_old_temporary_name(
    plan: WorkspacePlan, outside: Path
) -> None:
    """Restoring a file never writes through a link planted at `.NAME.toolcycle-rollback`."""
    os.symlink(outside / "victim.txt", plan.root / ".a.txt.toolcycle-rollback")
    assert plan("write_file", path="a.txt", content="changed").success
    report = plan.ctx.rollback()
    assert report.complete, report.not_undone
    assert (outside / "victim.txt").read_text() == "precious"
    assert not (plan.root / "a.txt").is_symlink()
    assert (plan.root / "a.txt").read_text() == "original\n"


def _forged(change: Change, **edits: Any) -> Change:
    """The change as JSON, edited the way someone with access to the stored record could."""
    raw = json.loads(change.model_dump_json())
    raw["data"].update(edits.pop("data", {}))
    raw.update(edits)
    return Change.model_validate_json(json.dumps(raw))


@pytest.mark.parametrize(
    "target", ["a.txt", "../outside/planted.txt", "{outside}/planted.txt", "src/../../x.txt"]
)
def test_rollback_never_writes_where_a_persisted_change_points(
    plan: WorkspacePlan, outside: Path, target: str
) -> None:
    """An edited absolute path (or an escaping target) in a stored change writes nothing."""
    assert plan("write_file", path="a.txt", content="changed").success
    (recorded,) = plan.ctx.changes
    planted = outside / "planted.txt"
    forged = _forged(
        recorded,
        target=target.format(outside=outside),
        data={"path": str(planted), "after_sha256": None},
    )
    replay = ToolExecutionContext("replay", resources=[plan.resource])
    replay.record_change(forged)
    report = replay.rollback()
    assert not planted.exists()
    assert (outside / "victim.txt").read_text() == "precious"
    (outcome,) = report.outcomes
    assert outcome.status != "undone"
    if target != "a.txt":
        assert outcome.status == "failed" and "refused" in outcome.message


def test_rollback_refuses_a_target_whose_folder_became_a_symlink(
    plan: WorkspacePlan, outside: Path
) -> None:
    """A folder swapped for a link to outside after the change: nothing outside is removed."""
    assert plan("write_file", path="d/f.txt", content="mine").success
    shutil.move(plan.root / "d", outside / "d")
    os.symlink(outside / "d", plan.root / "d")
    report = plan.ctx.rollback()
    assert (outside / "d" / "f.txt").read_text() == "mine"
    assert [o.status for o in report.outcomes] == ["failed", "failed"]
    assert all("symbolic link" in o.message for o in report.outcomes)
    assert all(_no_host_path(o.message, outside.parent) for o in report.outcomes)


def test_reading_a_file_with_several_hard_links_is_refused(
    plan: WorkspacePlan, outside: Path
) -> None:
    """A hard link may share its bytes with a file outside, so it is not read."""
    os.link(outside / "victim.txt", plan.root / "linked.txt")
    read = plan("read_file", path="linked.txt")
    assert read.error_type == "WorkspaceError" and "hard links" in read.error
    assert plan("search_text", query="precious").output["matches"] == []
    edit = plan("edit_file", path="linked.txt", old="precious", new="x")
    assert edit.error_type == "WorkspaceError" and "hard links" in edit.error
    overwrite = plan("write_file", path="linked.txt", content="x")
    assert overwrite.error_type == "WorkspaceError" and plan.ctx.changes == ()
    assert (outside / "victim.txt").read_text() == "precious"


@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_dir", "search_text"])
@pytest.mark.parametrize("path", ["back/ws/a.txt", "back/ws/new.txt"])
def test_a_symlinked_folder_that_leaves_the_workspace_is_refused(
    plan: WorkspacePlan, outside: Path, tool: str, path: str
) -> None:
    """A link component that leads outside is refused, even when the path comes back in."""
    os.symlink(outside, plan.root / "out")
    os.symlink("..", plan.root / "back")
    params = {"path": path, "query": "x"} if tool == "search_text" else {"path": path}
    if tool == "write_file":
        params["content"] = "x"
    result = plan(tool, **params)
    assert result.error_type == "PathOutsideWorkspaceError", result.error
    assert _no_host_path(result.error, outside.parent)
    assert not (plan.root / "new.txt").exists()
    assert (outside / "victim.txt").read_text() == "precious"


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("write_file", {"path": "a.txt/x.txt", "content": "x"}),
        ("make_dir", {"path": "a.txt/sub"}),
    ],
)
def test_os_errors_name_the_workspace_path_not_the_host_path(
    plan: WorkspacePlan, tmp_path: Path, tool: str, params: dict[str, Any]
) -> None:
    """A failing file operation reports the path relative to the workspace."""
    result = plan(tool, **params)
    assert not result.success
    assert "a.txt" in result.error and _no_host_path(result.error, tmp_path)


def test_rollback_errors_name_the_workspace_path_not_the_host_path(
    plan: WorkspacePlan, tmp_path: Path
) -> None:
    """An undo that fails reports the path relative to the workspace."""
    assert plan("write_file", path="d/f.txt", content="mine").success
    shutil.rmtree(plan.root / "d")
    (plan.root / "d").write_text("now a file")
    report = plan.ctx.rollback()
    assert not report.complete
    assert all(_no_host_path(o.message, tmp_path) for o in report.outcomes)


def test_a_folder_swapped_for_a_symlink_after_resolution_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    """Resolving and opening are separate steps; a swap in between leads nowhere outside."""
    from toolcycle._confined import ConfinedRoot
    from toolcycle._nofollow import ConfinementError

    root_dir = tmp_path / "ws"
    (root_dir / "d").mkdir(parents=True)
    (root_dir / "d" / "victim.txt").write_text("inside")
    with ConfinedRoot(root_dir) as root:
        parts = root.resolve("d/victim.txt")
        (root_dir / "d" / "victim.txt").unlink()
        (root_dir / "d").rmdir()
        os.symlink(outside, root_dir / "d")
        with pytest.raises(ConfinementError, match="'?d'? is a symbolic link"):
            root.read_bytes(parts)
        with pytest.raises(ConfinementError, match="symbolic link"):
            root.write_atomic(parts, b"overwritten")
        os.symlink(outside / "victim.txt", root_dir / "last")
        with pytest.raises(ConfinementError, match="'?last'? is a symbolic link"):
            root.read_bytes(("last",))
        with pytest.raises(FileNotFoundError, match="'gone'"):
            root.read_bytes(("gone",))
        root.close()
    assert (outside / "victim.txt").read_text() == "precious"


def test_a_failed_replace_leaves_no_temporary_behind(tmp_path: Path) -> None:
    """When the rename fails (here onto a folder), the temporary is removed again."""
    from toolcycle._confined import ConfinedRoot

    (tmp_path / "folder").mkdir()
    with ConfinedRoot(tmp_path) as root, pytest.raises(IsADirectoryError, match="'folder'"):
        root.write_atomic(("folder",), b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


def test_write_file_keeps_the_permission_bits_of_the_file_it_replaces(plan: WorkspacePlan) -> None:
    """Replacing a file through a temporary keeps its mode, as writing in place would."""
    script = plan.root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o751)
    assert plan("write_file", path="run.sh", content="#!/bin/sh\nexit 0\n").success
    assert script.stat().st_mode & 0o777 == 0o751


def test_the_temporary_for_a_private_file_is_never_readable_by_others(
    plan: WorkspacePlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From its creation on, the temporary of a private file is as private as the file."""
    opened = os.open
    born: list[int] = []

    def spy(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = opened(path, flags, mode, dir_fd=dir_fd)
        if str(path).endswith(".toolcycle-tmp"):
            born.append(os.fstat(fd).st_mode & 0o777)
        return fd

    secret = plan.root / "secret.env"
    secret.write_text("KEY=1\n")
    secret.chmod(0o600)
    monkeypatch.setattr(os, "open", spy)
    umask = os.umask(0o022)
    try:
        assert plan("edit_file", path="secret.env", old="1", new="2").success
        assert plan("delete_file", path="secret.env").success
        assert plan.ctx.rollback().complete  # restores the deleted file, then its text
    finally:
        os.umask(umask)
    assert born and all(mode & 0o077 == 0 for mode in born), [oct(m) for m in born]
    assert secret.read_text() == "KEY=1\n" and secret.stat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away"
)
def test_a_file_replaced_as_root_keeps_its_owner_and_group(plan: WorkspacePlan) -> None:
    """Editing (and undoing the edit of) a user's file as root leaves it the user's."""
    owned = plan.root / "owned.txt"
    owned.write_text("mine\n")
    os.chown(owned, 4321, 4322)
    owned.chmod(0o640)
    assert plan("edit_file", path="owned.txt", old="mine", new="edited").success
    edited = owned.stat()
    assert (edited.st_uid, edited.st_gid, edited.st_mode & 0o777) == (4321, 4322, 0o640)
    assert plan.ctx.rollback().complete
    restored = owned.stat()
    assert (restored.st_uid, restored.st_gid, restored.st_mode & 0o777) == (4321, 4322, 0o640)
    assert owned.read_text() == "mine\n"


def test_listing_and_search_follow_links_inside_and_leave_out_the_others(
    plan: WorkspacePlan, outside: Path
) -> None:
    """Links inside show their target's kind; links out, dangling links and loops are left out."""
    (plan.root / "src" / "code.py").write_text("needle\n")
    os.symlink("src", plan.root / "code")
    os.symlink(plan.root / "a.txt", plan.root / "abs.txt")
    os.symlink(outside, plan.root / "out")
    os.symlink("missing.txt", plan.root / "dangling")
    os.symlink("loop", plan.root / "loop")
    listed = plan("list_dir", recursive=True).output["entries"]
    assert [(e["path"], e["type"]) for e in listed] == [
        ("a.txt", "file"),
        ("abs.txt", "file"),
        ("code", "dir"),
        ("src", "dir"),
        ("src/code.py", "file"),
    ]
    found = plan("search_text", query="needle").output["matches"]
    assert [m["path"] for m in found] == ["src/code.py"]
    assert plan("search_text", query="original", pattern="abs*").output["matches"] == [
        {"path": "a.txt", "line": 1, "text": "original"}
    ]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("loop/x", "too many symbolic links"),
        ("a/" * 2100 + "x", "too long"),
        ("x" * 300, "File name too long: 'x"),
    ],
)
def test_unusable_paths_fail_clearly_and_name_no_host_path(
    plan: WorkspacePlan, tmp_path: Path, path: str, text: str
) -> None:
    """Link loops, over-long paths and names fail as results that name no host path."""
    os.symlink("loop", plan.root / "loop")
    for tool, extra in (("read_file", {}), ("write_file", {"content": "x"})):
        result = plan(tool, path=path, **extra)
        assert not result.success and text in result.error
        assert _no_host_path(result.error, tmp_path)


def test_write_file_refuses_a_fifo_without_waiting_for_a_writer(plan: WorkspacePlan) -> None:
    """A named pipe in the workspace is not a regular file: refused at once, never read."""
    os.mkfifo(plan.root / "pipe")
    result = plan.runtime.execute(
        "write_file", {"path": "pipe", "content": "x"}, plan.ctx, timeout=5
    )
    assert result.error_type == "WorkspaceError" and "not a regular file" in result.error
    assert plan("delete_file", path="pipe").error_type == "FileNotFoundError"


def test_a_workspace_removed_during_the_plan_fails_clearly(
    plan: WorkspacePlan, tmp_path: Path
) -> None:
    """After activation, a workspace that is gone gives a WorkspaceError naming it by name."""
    assert plan("read_file", path="a.txt").success
    shutil.rmtree(plan.root)
    result = plan("read_file", path="a.txt")
    assert result.error_type == "WorkspaceError" and "'ws' cannot be opened" in result.error
    assert _no_host_path(result.error, tmp_path)


def _legacy_change(plan: WorkspacePlan, target: str) -> Change:
    """A write change in the shape older versions stored: an absolute path, no workspace."""
    assert plan("write_file", path=target, content="changed").success
    recorded = plan.ctx.changes[-1]
    raw = json.loads(recorded.model_dump_json())
    del raw["data"]["workspace"]
    raw["data"]["path"] = str(plan.root / target)
    return Change.model_validate_json(json.dumps(raw))


def test_a_change_without_a_workspace_name_is_undone_only_when_one_workspace_is_bound(
    plan: WorkspacePlan, tmp_path: Path
) -> None:
    """Older changes are re-derived from the single bound workspace; with two, refused."""
    change = _legacy_change(plan, "a.txt")
    other = BoundResource(kind="workspace", name="other", location=str(tmp_path / "outside"))
    two = ToolExecutionContext("two", resources=[plan.resource, other])
    two.record_change(change)
    (outcome,) = two.rollback().outcomes
    assert outcome.status == "failed" and "names no workspace" in outcome.message
    one = ToolExecutionContext("one", resources=[plan.resource])
    one.record_change(change)
    assert one.rollback().complete
    assert (plan.root / "a.txt").read_text() == "original\n"


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ("renamed", "no workspace named 'ws'"),
        ("read_only", "bound read-only"),
        ("none", "no workspace named 'ws'"),
    ],
)
def test_rollback_refuses_changes_of_workspaces_the_plan_cannot_write(
    plan: WorkspacePlan, resources: str, message: str
) -> None:
    """A change is undone only in a writable workspace of the same name bound by the plan."""
    from toolcycle.rollback import undo_changes

    assert plan("write_file", path="a.txt", content="changed").success
    (change,) = plan.ctx.changes
    bound = {
        "renamed": [plan.resource.model_copy(update={"name": "elsewhere"})],
        "read_only": [plan.resource.model_copy(update={"read_only": True})],
        "none": [],
    }[resources]
    (outcome,) = undo_changes([change], resources=bound)
    assert outcome.status == "failed" and message in outcome.message
    assert (plan.root / "a.txt").read_text() == "changed"


def test_rollback_refuses_a_file_that_became_a_symbolic_link(
    plan: WorkspacePlan, outside: Path
) -> None:
    """A target replaced by a link (even to identical bytes) is not touched."""
    assert plan("write_file", path="a.txt", content="precious").success
    (plan.root / "a.txt").unlink()
    os.symlink(outside / "victim.txt", plan.root / "a.txt")
    (outcome,) = plan.ctx.rollback().outcomes
    assert outcome.status == "failed" and "a.txt is now a symbolic link" in outcome.message
    assert (plan.root / "a.txt").is_symlink()


def test_a_file_change_records_no_absolute_path() -> None:
    """file_change still accepts a path, but the change keeps only the relative target."""
    from toolcycle.rollback import file_change

    change = file_change(
        "file.write", "/srv/ws/a.txt", before=None, after=b"x", tool_name=None, target="a.txt"
    )
    assert change.target == "a.txt" and "/srv" not in change.model_dump_json()
    assert "workspace" not in change.data


def test_rollback_in_a_workspace_that_is_gone_fails_clearly(
    plan: WorkspacePlan, tmp_path: Path
) -> None:
    """Nothing can be undone in a removed workspace; the report says so by name."""
    assert plan("write_file", path="a.txt", content="changed").success
    shutil.rmtree(plan.root)
    (outcome,) = plan.ctx.rollback().outcomes
    assert outcome.status == "failed" and "'ws' cannot be opened" in outcome.message
    assert _no_host_path(outcome.message, tmp_path)


# Behaviour kept through the rewrite onto descriptors. Unlike the tests above, these
# also pass on the code before it: they guard what must not change.


@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_dir", "search_text"])
def test_a_symlinked_folder_pointing_outside_is_refused_by_every_tool(
    plan: WorkspacePlan, outside: Path, tool: str
) -> None:
    """A link component to a folder outside is refused for reading, writing and listing."""
    os.symlink(outside, plan.root / "out")
    params: dict[str, Any] = {"path": "out/victim.txt"}
    params.update({"write_file": {"content": "x"}, "search_text": {"query": "x"}}.get(tool, {}))
    result = plan(tool, **params)
    assert result.error_type == "PathOutsideWorkspaceError", result.error
    assert (outside / "victim.txt").read_text() == "precious"


def test_symlinks_that_stay_inside_are_followed(plan: WorkspacePlan) -> None:
    """A link to a file or folder inside the workspace works like its target."""
    os.symlink("src", plan.root / "code")
    os.symlink("../a.txt", plan.root / "src" / "alias.txt")
    assert plan("write_file", path="code/new.txt", content="n").success
    assert (plan.root / "src" / "new.txt").read_text() == "n"
    read = plan("read_file", path="code/alias.txt").output
    assert read["path"] == "a.txt" and read["content"] == "original\n"


@pytest.mark.parametrize(
    ("params", "found"),
    [
        ({"path": "a.txt"}, 1),
        ({"path": "a.txt", "pattern": "*.md"}, 0),
        ({"path": "missing"}, 0),
        ({"path": "src/../a.txt"}, 1),
    ],
)
def test_search_text_on_one_file_or_nothing(
    plan: WorkspacePlan, params: dict[str, Any], found: int
) -> None:
    """A file path searches that file (if the glob allows it); a missing path finds nothing."""
    result = plan("search_text", query="original", **params)
    assert len(result.output["matches"]) == found


def test_paths_through_links_inside_resolve_like_the_os_would(plan: WorkspacePlan) -> None:
    """`..` after a real folder, an absolute link inside and the root's own path all work."""
    os.symlink(plan.root / "src", plan.root / "abs-src")
    (plan.root / "src" / "deeper").mkdir()
    for path in ("src/../a.txt", "src/deeper/../../a.txt", "missing/../a.txt"):
        assert plan("read_file", path=path).output["path"] == "a.txt"
    assert plan("write_file", path="abs-src/x.txt", content="x").output["path"] == "src/x.txt"
    listed = plan("list_dir", path=str(plan.root)).output["entries"]
    assert [e["path"] for e in listed] == ["a.txt", "abs-src", "src"]


def test_workspace_tool_resolve_returns_a_path_inside_or_refuses(plan: WorkspacePlan) -> None:
    """The public resolve helper follows links inside and refuses links out."""
    from toolcycle.builtins import PathOutsideWorkspaceError, ReadFile

    os.symlink("src", plan.root / "code")
    tool = ReadFile()
    inside = tool.resolve(plan.resource, "code/x.py")
    assert inside == plan.root.resolve() / "src" / "x.py"
    assert tool.relative(plan.resource, inside) == "src/x.py"
    with pytest.raises(PathOutsideWorkspaceError):
        tool.resolve(plan.resource, "../x")


def test_rollback_remakes_folders_removed_since_and_skips_ones_already_gone(
    plan: WorkspacePlan,
) -> None:
    """A deleted file comes back with its folder; a created folder already gone is done."""
    assert plan("make_dir", path="made").success
    (plan.root / "src" / "kept.txt").write_text("kept")
    assert plan("delete_file", path="src/kept.txt").success
    shutil.rmtree(plan.root / "src")
    (plan.root / "made").rmdir()
    report = plan.ctx.rollback()
    assert report.complete, report.not_undone
    assert (plan.root / "src" / "kept.txt").read_text() == "kept"
