"""Checkpoints and rollback of recorded changes."""

from __future__ import annotations

import hashlib
import stat
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcycle import BoundResource, Change, ToolExecutionContext, ToolRuntime
from toolcycle.builtins import workspace_tools

WAIT = 5.0


def _tree(root: Path) -> dict[str, str]:
    """Every file and folder under root, with a digest of each file's bytes."""
    return {
        p.relative_to(root).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        )
        for p in sorted(root.rglob("*"))
    }


class Workspace:
    """A runtime with the built-ins and a plan bound to one directory."""

    def __init__(self, root: Path, *, checkpoint: bool = True) -> None:
        self.root = root
        self.runtime = ToolRuntime()
        self.runtime.register_source(workspace_tools())
        resource = BoundResource(kind="workspace", name="ws", location=str(root))
        self.ctx = self.runtime.new_context(resources=[resource], requires_checkpoint=checkpoint)

    def __call__(self, name: str, **params: Any) -> Any:
        return self.runtime.execute(name, params, self.ctx)

    def close(self) -> None:
        self.runtime.close()


@pytest.fixture
def ws(tmp_path: Path) -> Any:
    """A workspace with two files."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "b.bin").write_bytes(bytes(range(256)))
    workspace = Workspace(root)
    yield workspace
    workspace.close()


def test_rollback_restores_the_tree_byte_for_byte(ws: Workspace) -> None:
    """Writes, edits, deletes and new folders after a checkpoint are all undone."""
    before = _tree(ws.root)
    marker = ws.ctx.checkpoint()
    assert ws("write_file", path="deep/new.txt", content="fresh").success
    assert ws("edit_file", path="a.txt", old="one", new="two").success
    assert ws("delete_file", path="b.bin").success
    assert ws("make_dir", path="empty/inner").success
    report = ws.ctx.rollback(to=marker)
    assert report.complete and len(report.undone) == 6
    assert _tree(ws.root) == before
    assert ws.ctx.changes == ()


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_a_deleted_file_comes_back_with_its_permissions(ws: Workspace, mode: int) -> None:
    """A private file is not restored readable by all (nor an executable one plain)."""
    secret = ws.root / "secret.env"
    secret.write_text("KEY=1\n")
    secret.chmod(mode)
    assert ws("delete_file", path="secret.env").success
    assert ws.ctx.rollback().complete
    assert stat.S_IMODE(secret.stat().st_mode) == mode
    assert secret.read_text() == "KEY=1\n"


def test_rollback_undoes_only_what_came_after_the_checkpoint(ws: Workspace) -> None:
    """Changes before the marker stay, in the tree and in the record."""
    ws("write_file", path="a.txt", content="first")
    marker = ws.ctx.checkpoint()
    ws("write_file", path="a.txt", content="second")
    report = ws.ctx.rollback(marker)
    assert report.checkpoint == marker
    assert (ws.root / "a.txt").read_text() == "first"
    assert len(ws.ctx.changes) == 1


def test_a_file_modified_after_the_change_is_reported_not_overwritten(ws: Workspace) -> None:
    """A conflicting change is left alone, reported, and kept in the record."""
    marker = ws.ctx.checkpoint()
    ws("write_file", path="a.txt", content="by the tool")
    (ws.root / "a.txt").write_text("by someone else")
    report = ws.ctx.rollback(marker)
    assert not report.complete
    (outcome,) = report.not_undone
    assert outcome.status == "conflict" and "modified" in outcome.message
    assert (ws.root / "a.txt").read_text() == "by someone else"
    assert len(ws.ctx.changes) == 1


def test_checking_a_file_that_grew_large_since_the_change_holds_little_memory(
    ws: Workspace,
) -> None:
    """Rollback hashes the file as it reads it, so a huge replacement is not loaded whole."""
    marker = ws.ctx.checkpoint()
    assert ws("write_file", path="log.txt", content="short").success
    with (ws.root / "log.txt").open("wb") as grown:
        for _ in range(32):
            grown.write(b"x" * (1 << 20))
    tracemalloc.start()
    try:
        report = ws.ctx.rollback(marker)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [o.status for o in report.outcomes] == ["conflict"]
    assert peak < 8 << 20, f"{peak} bytes held to check a 32 MiB file"


@pytest.mark.parametrize(
    ("tool", "params", "tamper", "message"),
    [
        (
            "delete_file",
            {"path": "a.txt"},
            lambda root: (root / "a.txt").write_text("x"),
            "created again",
        ),
        (
            "write_file",
            {"path": "a.txt", "content": "t"},
            lambda root: (root / "a.txt").unlink(),
            "deleted",
        ),
        (
            "make_dir",
            {"path": "d"},
            lambda root: (root / "d" / "f").write_text("x"),
            "no longer empty",
        ),
        (
            "delete_file",
            {"path": "a.txt"},
            lambda root: (root / "a.txt").mkdir(),
            "no longer a regular file",
        ),
        (
            "write_file",
            {"path": "a.txt", "content": "t"},
            lambda root: ((root / "a.txt").unlink(), (root / "a.txt").mkdir()),
            "no longer a regular file",
        ),
    ],
)
def test_other_conflicts_are_detected(
    ws: Workspace, tool: str, params: dict[str, Any], tamper: Any, message: str
) -> None:
    """Re-created, deleted and non-empty targets are conflicts."""
    marker = ws.ctx.checkpoint()
    assert ws(tool, **params).success
    tamper(ws.root)
    report = ws.ctx.rollback(marker)
    assert [o.status for o in report.outcomes] == ["conflict"]
    assert message in report.outcomes[0].message


def test_changes_without_a_handler_are_unsupported_unless_one_is_given() -> None:
    """A custom change kind needs a handler; with one it is undone."""
    ctx = ToolExecutionContext("p")
    ctx.record_change(Change(kind="ticket.create", target="T-1"))
    report = ctx.rollback()
    assert report.outcomes[0].status == "unsupported"
    undone: list[str] = []
    report = ctx.rollback(handlers={"ticket.create": lambda change: undone.append(change.target)})
    assert report.complete and undone == ["T-1"] and ctx.changes == ()


def test_a_failing_handler_is_reported_as_failed() -> None:
    """An exception in a handler is reported; the change stays recorded."""
    ctx = ToolExecutionContext("p")
    ctx.record_change(Change(kind="x", target="t"))

    def broken(change: Change) -> None:
        raise OSError("no access")

    report = ctx.rollback(handlers={"x": broken})
    assert report.outcomes[0].status == "failed" and "OSError" in report.outcomes[0].message
    assert len(ctx.changes) == 1


def test_a_handler_reports_a_change_it_cannot_undo_as_unsupported_or_conflict() -> None:
    """The two public exceptions choose the status; the change stays recorded for both."""
    from toolcycle import RollbackConflictError, RollbackUnsupportedError

    ctx = ToolExecutionContext("p")
    ctx.record_change(Change(kind="mail.send", target="m-1"))
    ctx.record_change(Change(kind="ticket.edit", target="T-2"))

    def unsendable(change: Change) -> None:
        raise RollbackUnsupportedError(f"{change.target} was sent; mail cannot be recalled")

    def edited(change: Change) -> None:
        raise RollbackConflictError(f"{change.target} was edited since")

    report = ctx.rollback(handlers={"mail.send": unsendable, "ticket.edit": edited})
    by_target = {outcome.change.target: outcome for outcome in report.outcomes}
    assert by_target["m-1"].status == "unsupported"
    assert by_target["m-1"].message == "m-1 was sent; mail cannot be recalled"
    assert by_target["T-2"].status == "conflict"
    assert not report.complete and len(ctx.changes) == 2


def _rolled_back_in_a_thread(ctx: ToolExecutionContext, **options: Any) -> Any:
    """``ctx.rollback(**options)`` on its own thread, waited for WAIT seconds at most."""
    reports: list[Any] = []
    worker = threading.Thread(target=lambda: reports.append(ctx.rollback(**options)), daemon=True)
    worker.start()
    worker.join(WAIT)
    assert not worker.is_alive(), "the rollback did not finish: a handler deadlocked it"
    return reports[0]


def test_an_undo_handler_may_record_and_read_its_plans_changes() -> None:
    """A compensating change recorded during the rollback is kept after what was not undone."""
    ctx = ToolExecutionContext("p")
    before = Change(kind="ticket.create", target="T-0")
    ctx.record_change(before)
    marker = ctx.checkpoint()
    opened = Change(kind="ticket.create", target="T-1")
    unknown = Change(kind="mail.send", target="ann")
    ctx.record_change(opened)
    ctx.record_change(unknown)
    seen: list[int] = []

    def close_ticket(change: Change) -> None:
        seen.append(len(ctx.changes))
        ctx.record_change(Change(kind="ticket.close", target=change.target))

    report = _rolled_back_in_a_thread(ctx, to=marker, handlers={"ticket.create": close_ticket})
    assert [o.status for o in report.outcomes] == ["unsupported", "undone"]
    assert seen == [3]
    closing = Change(kind="ticket.close", target="T-1")
    assert [(c.kind, c.target) for c in ctx.changes] == [
        (before.kind, before.target),
        (unknown.kind, unknown.target),
        (closing.kind, closing.target),
    ]


def test_an_undo_handler_cannot_roll_back_its_own_plan() -> None:
    """A nested rollback would undo the same changes twice: it fails that change instead."""
    ctx = ToolExecutionContext("p")
    ctx.record_change(Change(kind="x", target="t"))
    report = _rolled_back_in_a_thread(ctx, handlers={"x": lambda change: ctx.rollback()})
    assert report.outcomes[0].status == "failed"
    assert "undo handler" in report.outcomes[0].message
    assert len(ctx.changes) == 1
    assert ctx.rollback(handlers={"x": lambda change: None}).complete  # not left stuck


def test_checkpoints_belong_to_their_plan() -> None:
    """A marker from another plan, or beyond the record, is refused."""
    one, two = ToolExecutionContext("one"), ToolExecutionContext("two")
    with pytest.raises(ValueError, match="cannot roll back"):
        two.rollback(one.checkpoint())
    from toolcycle import Checkpoint

    with pytest.raises(ValueError, match="beyond"):
        one.rollback(Checkpoint(plan_id="one", index=5))


def test_changes_and_reports_are_json_serialisable(ws: Workspace) -> None:
    """A plan executor can persist changes and reports as JSON."""
    marker = ws.ctx.checkpoint()
    ws("write_file", path="a.txt", content="x")
    change = ws.ctx.changes[0]
    assert Change.model_validate_json(change.model_dump_json()) == change
    assert ws.ctx.rollback(marker).model_dump_json()


def test_a_checkpoint_plan_still_refuses_tools_that_cannot_roll_back(ws: Workspace) -> None:
    """The core's checkpoint rule holds next to the built-ins."""
    from toolcycle import ToolCheckpointRequiredError, tool

    @tool(writes=True, checkpointable=False)
    def send_email(to: str) -> None:
        """The send email tool of this test."""

    ws.runtime.register(send_email)
    with pytest.raises(ToolCheckpointRequiredError):
        ws("send_email", to="x@example.com")


operations = st.lists(
    st.tuples(
        st.sampled_from(["write", "edit", "delete", "mkdir"]),
        st.sampled_from(["a.txt", "b.bin", "n/c.txt", "n/m/d.txt", "e.txt"]),
        st.text(alphabet="xyz\n", max_size=8),
    ),
    max_size=12,
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=operations)
def test_any_sequence_of_changes_rolls_back_to_the_original_tree(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, str]]
) -> None:
    """Random writes, edits, deletes and folders, then rollback: the tree is as before."""
    root = tmp_path_factory.mktemp("ws")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "b.bin").write_bytes(b"\0\1\2")
    before = _tree(root)
    workspace = Workspace(root)
    try:
        marker = workspace.ctx.checkpoint()
        for op, path, text in steps:
            if op == "write":
                workspace("write_file", path=path, content=text)
            elif op == "edit":
                workspace("edit_file", path=path, old="one", new=text or "-")
            elif op == "delete":
                workspace("delete_file", path=path)
            else:
                workspace("make_dir", path=path.rsplit("/", 1)[0] if "/" in path else path + "_d")
        report = workspace.ctx.rollback(marker)
    finally:
        workspace.close()
    assert report.complete, report.not_undone
    assert _tree(root) == before
