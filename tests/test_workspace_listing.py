"""How list_dir and search_text show links, and names that are not valid UTF-8."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .workspace_plan import WorkspacePlan


@pytest.fixture
def plan(tmp_path: Path) -> Iterator[WorkspacePlan]:
    """A plan on a workspace holding ``a.txt`` and ``src/b.txt``, each with a needle."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("needle one\n")
    (root / "src").mkdir()
    (root / "src" / "b.txt").write_text("needle two\nneedle three\n")
    subject = WorkspacePlan(root, checkpoint=False)
    yield subject
    subject.runtime.close()


def _found(plan: WorkspacePlan, **params: Any) -> list[tuple[str, int]]:
    result = plan("search_text", query="needle", **params)
    assert result.success, result.error
    return [(m["path"], m["line"]) for m in result.output["matches"]]


def _raw_name(folder: Path, name: bytes) -> None:
    """Make a file whose name is ``name`` as bytes, or skip where the disk refuses it."""
    try:
        (Path(os.fsdecode(bytes(folder))) / os.fsdecode(name)).write_text("needle raw\n")
    except OSError as exc:  # APFS and some others take UTF-8 names only
        pytest.skip(f"this file system refuses names that are not UTF-8 ({exc.strerror})")


def test_search_text_reports_a_file_reached_directly_and_through_links_once(
    plan: WorkspacePlan,
) -> None:
    """A file and links to it (before and after it in the walk) are searched once, in place."""
    os.symlink("a.txt", plan.root / "0-first.txt")
    os.symlink("a.txt", plan.root / "alias.txt")
    os.symlink("../a.txt", plan.root / "src" / "up.txt")
    os.symlink("b.txt", plan.root / "src" / "c.txt")
    os.symlink("src", plan.root / "code")
    assert _found(plan) == [("a.txt", 1), ("src/b.txt", 1), ("src/b.txt", 2)]


def test_search_text_reports_a_file_reached_only_through_links_once(plan: WorkspacePlan) -> None:
    """Links to a file the walk does not meet by name stand in for it once, at the first link."""
    os.symlink("../a.txt", plan.root / "src" / "one.txt")
    os.symlink("../a.txt", plan.root / "src" / "two.txt")
    assert _found(plan, path="src") == [("src/b.txt", 1), ("src/b.txt", 2), ("a.txt", 1)]
    os.symlink("b.txt", plan.root / "src" / "b.md")
    os.symlink("b.txt", plan.root / "src" / "c.md")
    assert _found(plan, pattern="*.md") == [("src/b.txt", 1), ("src/b.txt", 2)]


def test_search_text_counts_each_match_once_towards_max_results(plan: WorkspacePlan) -> None:
    """With links to a file, max_results is reached by distinct matches only."""
    os.symlink("a.txt", plan.root / "alias.txt")
    os.symlink("a.txt", plan.root / "b-alias.txt")
    result = plan("search_text", query="needle", max_results=2)
    assert result.output["matches"] == [
        {"path": "a.txt", "line": 1, "text": "needle one"},
        {"path": "src/b.txt", "line": 1, "text": "needle two"},
    ]
    assert result.output["truncated"]


def test_list_dir_marks_each_link_and_names_its_target(plan: WorkspacePlan) -> None:
    """A link inside is listed with its target's kind and size, plus link and target."""
    os.symlink("a.txt", plan.root / "alias.txt")
    os.symlink("src", plan.root / "code")
    os.symlink("../a.txt", plan.root / "src" / "up.txt")
    listed = plan("list_dir", recursive=True).output["entries"]
    assert listed == [
        {"path": "a.txt", "type": "file", "size": 11},
        {"path": "alias.txt", "type": "file", "size": 11, "link": True, "target": "a.txt"},
        {"path": "code", "type": "dir", "size": 0, "link": True, "target": "src"},
        {"path": "src", "type": "dir", "size": 0},
        {"path": "src/b.txt", "type": "file", "size": 24},
        {"path": "src/up.txt", "type": "file", "size": 11, "link": True, "target": "a.txt"},
    ]


def _odd_names(plan: WorkspacePlan) -> None:
    """Add a file and a folder whose names are not UTF-8, and a link to that file."""
    _raw_name(plan.root, b"caf\xe9.txt")
    folder = plan.root / os.fsdecode(b"d\xe9j\xe0")
    folder.mkdir()
    _raw_name(folder, b"plain.txt")
    os.symlink(os.fsdecode(b"caf\xe9.txt"), plan.root / "alias.txt")


def test_list_dir_leaves_out_names_that_are_not_utf8(plan: WorkspacePlan) -> None:
    """A name no call could send back is left out, with all under it and links to it."""
    _odd_names(plan)
    listed = plan("list_dir", recursive=True)
    assert listed.success, listed.error
    assert [e["path"] for e in listed.output["entries"]] == ["a.txt", "src", "src/b.txt"]


def test_search_text_leaves_out_names_that_are_not_utf8(plan: WorkspacePlan) -> None:
    """A file named in bytes that are not UTF-8 is not searched, so the call still answers."""
    _odd_names(plan)
    assert _found(plan) == [("a.txt", 1), ("src/b.txt", 1), ("src/b.txt", 2)]
