"""The write tools' bound on the previous bytes they keep to undo a change (max_undo_bytes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcycle._confined import ConfinedRoot
from toolcycle._nofollow import Parts
from toolcycle.builtins import DeleteFile, EditFile, WriteFile, workspace_tools
from toolcycle.rollback import file_change

from .workspace_plan import WorkspacePlan

CAP = 100


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with a file at the cap and three just over it."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "small.txt").write_text("s" * CAP)
    for name in ("big.txt", "old.txt"):
        (folder / name).write_text("b" * (CAP + 1))
    (folder / "doc.txt").write_text("x" + "b" * CAP)
    return folder


def _plan(root: Path, checkpoint: bool) -> Iterator[WorkspacePlan]:
    plan = WorkspacePlan(root, checkpoint=checkpoint, max_undo_bytes=CAP)
    try:
        yield plan
    finally:
        plan.runtime.close()


@pytest.fixture
def checkpointed(root: Path) -> Iterator[WorkspacePlan]:
    """A plan that requires checkpoints."""
    yield from _plan(root, True)


@pytest.fixture
def plain(root: Path) -> Iterator[WorkspacePlan]:
    """A plan that does not require checkpoints."""
    yield from _plan(root, False)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Parts]:
    """Every file the tools read, in full or up to a cap, by its parts."""
    seen: list[Parts] = []
    read, read_capped = ConfinedRoot.read_bytes, ConfinedRoot.read_capped

    def spy(self: ConfinedRoot, parts: Parts, max_bytes: int | None = None) -> bytes:
        seen.append(parts)
        return read(self, parts, max_bytes)

    def capped_spy(self: ConfinedRoot, parts: Parts, max_bytes: int) -> tuple[bytes | None, int]:
        seen.append(parts)
        return read_capped(self, parts, max_bytes)

    monkeypatch.setattr(ConfinedRoot, "read_bytes", spy)
    monkeypatch.setattr(ConfinedRoot, "read_capped", capped_spy)
    return seen


def test_the_default_keeps_up_to_64_mib_for_each_change() -> None:
    """Without max_undo_bytes, each undoable tool keeps up to 64 MiB of previous bytes."""
    undoable = [t for t in workspace_tools().tools() if isinstance(t, WriteFile | EditFile)]
    undoable += [t for t in workspace_tools().tools() if isinstance(t, DeleteFile)]
    assert [t.max_undo_bytes for t in undoable] == [64 * 1024 * 1024] * 3


@pytest.mark.parametrize("value", [-1, 1.5, True, "100", None])
def test_max_undo_bytes_must_be_a_whole_number_of_bytes(value: Any) -> None:
    """A negative, fractional, boolean or textual cap is refused where the tools are made."""
    with pytest.raises(ValueError, match="max_undo_bytes must be a whole number of bytes"):
        workspace_tools(max_undo_bytes=value)


def test_a_checkpoint_plan_refuses_to_change_a_file_over_the_cap_and_leaves_it(
    checkpointed: WorkspacePlan, root: Path
) -> None:
    """Write, edit and delete of a file over max_undo_bytes fail before touching it."""
    results = [
        checkpointed("write_file", path="big.txt", content="new"),
        checkpointed("edit_file", path="doc.txt", old="x", new="c"),
        checkpointed("delete_file", path="big.txt"),
    ]
    for result, name in zip(results, ("big.txt", "doc.txt", "big.txt"), strict=True):
        assert result.error_type == "WorkspaceError"
        assert f"{name} is 101 bytes, more than the 100 bytes kept" in result.error
        assert "requires checkpoints" in result.error
    assert (root / "big.txt").read_text() == "b" * (CAP + 1)
    assert (root / "doc.txt").read_text() == "x" + "b" * CAP
    assert checkpointed.ctx.changes == ()


def test_a_file_at_the_cap_is_kept_and_undone(checkpointed: WorkspacePlan, root: Path) -> None:
    """The cap is inclusive: a file of exactly max_undo_bytes is changed and restored."""
    assert checkpointed("write_file", path="small.txt", content="new").success
    assert checkpointed.ctx.rollback().complete
    assert (root / "small.txt").read_text() == "s" * CAP


def test_a_file_over_the_cap_is_never_read(
    checkpointed: WorkspacePlan, plain: WorkspacePlan, root: Path, reads: list[Parts]
) -> None:
    """Its size comes from stat: neither the refusal nor the unkept change reads it."""
    assert not checkpointed("write_file", path="big.txt", content="new").success
    assert not checkpointed("delete_file", path="big.txt").success
    assert plain("write_file", path="big.txt", content="new").success
    assert plain("delete_file", path="old.txt").success
    assert reads == []
    assert plain("delete_file", path="small.txt").success  # under the cap: read, and kept
    assert reads == [("small.txt",)]


def test_without_checkpoints_a_change_over_the_cap_is_made_and_reported_unsupported(
    plain: WorkspacePlan, root: Path
) -> None:
    """The change goes ahead, records only the old size, and rollback leaves it alone."""
    assert plain("write_file", path="big.txt", content="new").output["created"] is False
    assert plain("edit_file", path="doc.txt", old="x", new="c").success
    assert plain("delete_file", path="old.txt").success
    written, edited, deleted = plain.ctx.changes
    assert written.kind == "file.write" and edited.kind == "file.write"
    assert written.data == edited.data == {"before_not_kept": CAP + 1, "workspace": "ws"}
    assert deleted.kind == "file.delete"
    assert deleted.data["before_not_kept"] == CAP + 1 and "before" not in deleted.data
    report = plain.ctx.rollback()
    assert [o.status for o in report.outcomes] == ["unsupported"] * 3
    assert "old.txt: its previous content (101 bytes) was too large to keep" in (
        report.outcomes[0].message
    )
    assert (root / "big.txt").read_text() == "new" and not (root / "old.txt").exists()
    assert (root / "doc.txt").read_text() == "c" + "b" * CAP
    assert len(plain.ctx.changes) == 3  # kept in the record, like any change not undone


def test_a_file_over_the_cap_with_several_hard_links_is_still_refused(
    plain: WorkspacePlan, root: Path
) -> None:
    """Not reading it does not skip the check that it is a regular, singly linked file."""
    os.link(root / "big.txt", root / "twin.txt")
    result = plain("write_file", path="big.txt", content="new")
    assert result.error_type == "WorkspaceError" and "2 hard links" in result.error
    assert (root / "big.txt").read_text() == "b" * (CAP + 1)


def test_a_change_cannot_both_keep_and_not_keep_its_previous_bytes() -> None:
    """file_change refuses before= together with before_not_kept=."""
    with pytest.raises(ValueError, match="pass before=None with it"):
        file_change(
            "file.write", before=b"x", after=b"y", tool_name="t", target="a", before_not_kept=9
        )


@pytest.mark.parametrize("tool", ["write_file", "delete_file"])
def test_a_file_that_grows_past_the_cap_after_its_stat_is_changed_as_one_over_it(
    plain: WorkspacePlan, root: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """Stat saw it within the cap, the read finds more: the change is kept unundoable, not failed."""
    lstat = ConfinedRoot.lstat

    def grows_after_stat(self: ConfinedRoot, parts: Parts) -> os.stat_result | None:
        info = lstat(self, parts)
        if parts == ("small.txt",):
            with open(root / "small.txt", "a") as file:
                file.write("grown")
        return info

    monkeypatch.setattr(ConfinedRoot, "lstat", grows_after_stat)
    params = (
        {"path": "small.txt", "content": "new"} if tool == "write_file" else {"path": "small.txt"}
    )
    result = plain(tool, **params)
    assert result.success, result.error
    (change,) = plain.ctx.changes
    assert change.data["before_not_kept"] == CAP + len("grown")
    assert plain.ctx.rollback().outcomes[0].status == "unsupported"
