"""delete_file takes a final symbolic link as `rm` does; the other tools take its target."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcycle import Change

from .workspace_plan import WorkspacePlan


@pytest.fixture
def plan(tmp_path: Path) -> Iterator[WorkspacePlan]:
    """A plan on a workspace holding ``a.txt`` and ``src/b.txt``."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("original\n")
    (root / "src").mkdir()
    (root / "src" / "b.txt").write_text("bee\n")
    subject = WorkspacePlan(root)
    yield subject
    subject.runtime.close()


def test_delete_file_removes_a_link_to_a_file_inside_and_keeps_the_file(
    plan: WorkspacePlan,
) -> None:
    """Deleting a link to a file inside removes the link; the file stays as it was."""
    os.symlink("a.txt", plan.root / "alias.txt")
    result = plan("delete_file", path="alias.txt")
    assert result.success, result.error
    assert result.output == {"path": "alias.txt", "deleted": True}
    assert not (plan.root / "alias.txt").is_symlink()
    assert (plan.root / "a.txt").read_text() == "original\n"
    (change,) = plan.ctx.changes
    assert (change.kind, change.target) == ("link.delete", "alias.txt")
    assert change.data == {"link": "a.txt", "workspace": "ws"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("to-folder", "src"),
        ("to-outside-file", "{outside}/victim.txt"),
        ("to-outside-folder", "{outside}"),
        ("up-and-out", "../outside/victim.txt"),
        ("dangling", "missing.txt"),
        ("loop", "loop"),
    ],
)
def test_delete_file_removes_a_link_wherever_it_points(
    plan: WorkspacePlan, outside: Path, name: str, text: str
) -> None:
    """A link to a folder, outside the workspace, to nothing or to itself is removed as a name."""
    link_text = text.format(outside=outside)
    os.symlink(link_text, plan.root / name)
    result = plan("delete_file", path=name)
    assert result.success, result.error
    assert not os.path.lexists(plan.root / name)
    assert (outside / "victim.txt").read_text() == "precious"
    assert (plan.root / "src" / "b.txt").read_text() == "bee\n"
    assert plan.ctx.changes[-1].data["link"] == link_text


@pytest.mark.parametrize("path", ["alias.txt/", "alias.txt/.", "./alias.txt"])
def test_a_trailing_slash_or_dot_still_names_the_link_for_delete_file(
    plan: WorkspacePlan, path: str
) -> None:
    """``alias.txt/`` removes the link too: delete_file never deletes through a final link."""
    os.symlink("a.txt", plan.root / "alias.txt")
    assert plan("delete_file", path=path).output == {"path": "alias.txt", "deleted": True}
    assert not os.path.lexists(plan.root / "alias.txt")
    assert (plan.root / "a.txt").read_text() == "original\n"


def test_delete_file_follows_links_before_the_last_name(plan: WorkspacePlan) -> None:
    """A linked folder on the way is followed; a link at the end of that path is removed itself."""
    os.symlink("src", plan.root / "code")
    os.symlink("b.txt", plan.root / "src" / "bee-link")
    removed_link = plan("delete_file", path="code/bee-link")
    assert removed_link.output == {"path": "src/bee-link", "deleted": True}
    assert (plan.root / "src" / "b.txt").read_text() == "bee\n"
    removed_file = plan("delete_file", path="code/b.txt")
    assert removed_file.output == {"path": "src/b.txt", "deleted": True}
    assert not (plan.root / "src" / "b.txt").exists()
    assert (plan.root / "code").is_symlink()


@pytest.mark.parametrize("text", ["a.txt", "src/../a.txt", "{root}/a.txt", "{outside}"])
def test_rollback_makes_a_deleted_link_again_with_the_same_text(
    plan: WorkspacePlan, outside: Path, text: str
) -> None:
    """A rollback restores the link as a link, its text as written, and leaves its target alone."""
    link_text = text.format(root=plan.root, outside=outside)
    os.symlink(link_text, plan.root / "src" / "alias")
    assert plan("delete_file", path="src/alias").success
    assert not os.path.lexists(plan.root / "src" / "alias")
    report = plan.ctx.rollback()
    assert report.complete, report.not_undone
    assert os.readlink(plan.root / "src" / "alias") == link_text
    assert (plan.root / "a.txt").read_text() == "original\n"
    assert plan.ctx.changes == ()


def test_rollback_makes_the_folder_of_a_deleted_link_again(plan: WorkspacePlan) -> None:
    """A link whose folder was removed since comes back with its folder."""
    os.symlink("../a.txt", plan.root / "src" / "alias")
    assert plan("delete_file", path="src/alias").success
    (plan.root / "src" / "b.txt").unlink()
    (plan.root / "src").rmdir()
    assert plan.ctx.rollback().complete
    assert os.readlink(plan.root / "src" / "alias") == "../a.txt"


def test_rollback_leaves_a_name_taken_since_a_link_was_deleted(plan: WorkspacePlan) -> None:
    """Something put where the link was is a conflict, left as it is."""
    os.symlink("a.txt", plan.root / "alias.txt")
    assert plan("delete_file", path="alias.txt").success
    assert (plan.root / "a.txt").read_text() == "original\n"
    (plan.root / "alias.txt").write_text("someone else's")
    (outcome,) = plan.ctx.rollback().outcomes
    assert outcome.status == "conflict"
    assert (plan.root / "alias.txt").read_text() == "someone else's"


@pytest.mark.parametrize("data", [{}, {"link": ""}, {"link": 7}, {"link": "a\0b"}])
def test_rollback_refuses_a_link_change_without_usable_text(
    plan: WorkspacePlan, data: dict[str, object]
) -> None:
    """A stored link change without a link text is reported failed and makes nothing."""
    plan.ctx.record_change(Change(kind="link.delete", target="made", data=data))
    (outcome,) = plan.ctx.rollback().outcomes
    assert outcome.status == "failed" and outcome.message.startswith("refused, not undone:")
    assert not os.path.lexists(plan.root / "made")


def test_write_edit_and_read_through_a_final_link_inside_act_on_its_target(
    plan: WorkspacePlan,
) -> None:
    """As documented, the other tools take a final link inside as the file it points to."""
    os.symlink("a.txt", plan.root / "alias.txt")
    assert plan("write_file", path="alias.txt", content="one\n").output["path"] == "a.txt"
    assert plan("edit_file", path="alias.txt", old="one", new="two").output["path"] == "a.txt"
    assert plan("read_file", path="alias.txt").output["content"] == "two\n"
    assert os.readlink(plan.root / "alias.txt") == "a.txt"


def test_listing_after_deleting_a_link_shows_its_target_and_not_the_link(
    plan: WorkspacePlan,
) -> None:
    """list_dir and search_text see the target still there and the link gone."""
    os.symlink("a.txt", plan.root / "alias.txt")
    before = [e["path"] for e in plan("list_dir").output["entries"]]
    assert before == ["a.txt", "alias.txt", "src"]
    assert plan("delete_file", path="alias.txt").success
    after = [e["path"] for e in plan("list_dir").output["entries"]]
    assert after == ["a.txt", "src"]
    found = plan("search_text", query="original").output["matches"]
    assert [m["path"] for m in found] == ["a.txt"]
