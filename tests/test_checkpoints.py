"""Checkpoints name a point in a plan's history, whatever rollbacks did to the record since."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import (
    BoundResource,
    Change,
    Checkpoint,
    RollbackConflictError,
    ToolExecutionContext,
    ToolRuntime,
)
from toolcycle.builtins import workspace_tools

WAIT = 5.0


def _undo(change: Change) -> None:
    """Undoes a change of kind ``ok``."""


def _refuse(change: Change) -> None:
    """A change of kind ``stuck`` was modified since: it stays recorded."""
    raise RollbackConflictError(f"{change.target} was modified since")


HANDLERS = {"ok": _undo, "stuck": _refuse}


def _record(ctx: ToolExecutionContext, *names: str, kind: str = "ok") -> None:
    for name in names:
        ctx.record_change(Change(kind=kind, target=name))


def _targets(changes: Any) -> list[str]:
    return [change.target for change in changes]


def test_a_change_kept_by_a_conflict_does_not_hide_later_changes_from_a_later_checkpoint() -> None:
    """A; cp1; B (conflict), C; cp2; roll back to cp1; D: rolling back to cp2 undoes D."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A")
    first = ctx.checkpoint()
    _record(ctx, "B", kind="stuck")
    _record(ctx, "C")
    second = ctx.checkpoint()
    assert _targets(ctx.rollback(first, handlers=HANDLERS).undone) == ["C"]
    _record(ctx, "D")
    report = ctx.rollback(second, handlers=HANDLERS)
    assert _targets(report.undone) == ["D"] and report.complete
    assert _targets(ctx.changes) == ["A", "B"]


def test_a_checkpoint_taken_before_an_earlier_rollback_still_names_its_point() -> None:
    """A; cp1; B; C; cp2; roll back to cp1; D, E: rolling back to cp2 undoes D and E."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A")
    first = ctx.checkpoint()
    _record(ctx, "B", "C")
    second = ctx.checkpoint()
    assert _targets(ctx.rollback(first, handlers=HANDLERS).undone) == ["C", "B"]
    _record(ctx, "D")
    assert _targets(ctx.rollback(second, handlers=HANDLERS).undone) == ["D"]
    _record(ctx, "D", "E")
    assert _targets(ctx.rollback(second, handlers=HANDLERS).undone) == ["E", "D"]
    assert _targets(ctx.changes) == ["A"]


def test_rolling_back_to_a_checkpoint_after_a_full_rollback_undoes_only_what_came_since() -> None:
    """The checkpoint is still valid: nothing recorded since means nothing to undo."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A", "B")
    marker = ctx.checkpoint()
    assert ctx.rollback(handlers=HANDLERS).complete and ctx.changes == ()
    report = ctx.rollback(marker, handlers=HANDLERS)
    assert report.complete and report.outcomes == () and report.checkpoint == marker
    _record(ctx, "C")
    assert _targets(ctx.rollback(marker, handlers=HANDLERS).undone) == ["C"]


def test_a_checkpoint_the_plan_has_not_reached_is_refused() -> None:
    """An index past the changes ever recorded, or below zero, is beyond the record."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A", "B")
    ctx.rollback(handlers=HANDLERS)
    assert ctx.rollback(Checkpoint(plan_id="p", index=2), handlers=HANDLERS).complete
    for index in (3, -1):
        with pytest.raises(ValueError, match="beyond"):
            ctx.rollback(Checkpoint(plan_id="p", index=index))


def test_a_checkpoint_index_counts_every_change_ever_recorded() -> None:
    """Its index is the number of changes the plan had recorded, undone ones included."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A", "B")
    ctx.rollback(handlers=HANDLERS)
    assert ctx.checkpoint().index == 2


def test_a_checkpoint_taken_while_a_rollback_runs_follows_the_changes_recorded_before_it() -> None:
    """Changes recorded during a rollback keep their place relative to a checkpoint taken then."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A")
    first = ctx.checkpoint()
    _record(ctx, "B")
    undoing, go_on = threading.Event(), threading.Event()

    def slow(change: Change) -> None:
        undoing.set()
        assert go_on.wait(WAIT)

    reports: list[Any] = []
    worker = threading.Thread(
        target=lambda: reports.append(ctx.rollback(first, handlers={"ok": slow})), daemon=True
    )
    worker.start()
    try:
        assert undoing.wait(WAIT)
        _record(ctx, "D")  # from this thread, while B is being undone
        during = ctx.checkpoint()
    finally:
        go_on.set()
        worker.join(WAIT)
    assert not worker.is_alive()
    assert _targets(reports[0].undone) == ["B"]
    assert _targets(ctx.changes) == ["A", "D"]
    _record(ctx, "E")
    assert _targets(ctx.rollback(during, handlers=HANDLERS).undone) == ["E"]
    assert _targets(ctx.changes) == ["A", "D"]


def test_a_compensating_change_of_a_rollback_comes_after_checkpoints_taken_before_it() -> None:
    """What a handler records during a rollback is undone by rolling back to a later checkpoint."""
    ctx = ToolExecutionContext("p")
    first = ctx.checkpoint()
    _record(ctx, "T-1", kind="ticket.open")
    second = ctx.checkpoint()

    def close(change: Change) -> None:
        ctx.record_change(Change(kind="ok", target=f"close {change.target}"))

    assert ctx.rollback(first, handlers={"ticket.open": close}).complete
    assert _targets(ctx.changes) == ["close T-1"]
    assert _targets(ctx.rollback(second, handlers=HANDLERS).undone) == ["close T-1"]


def test_files_written_after_a_checkpoint_are_removed_after_an_earlier_partial_rollback(
    tmp_path: Path,
) -> None:
    """With the built-in tools: a conflict kept by one rollback does not hide later writes."""
    root = tmp_path / "ws"
    root.mkdir()
    workspace = BoundResource(kind="workspace", name="ws", location=str(root))
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        with runtime.plan(requires_checkpoint=True, resources=[workspace]) as ctx:

            def write(path: str) -> None:
                runtime.execute("write_file", {"path": path, "content": path}, ctx)

            write("a.txt")
            first = ctx.checkpoint()
            write("b.txt")
            write("c.txt")
            second = ctx.checkpoint()
            (root / "b.txt").write_text("edited by hand")
            report = ctx.rollback(first)
            assert [o.status for o in report.outcomes] == ["undone", "conflict"]
            write("d.txt")
            assert ctx.rollback(second).complete
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt"]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("record"), st.sampled_from(["ok", "stuck"])),
        st.tuples(st.just("checkpoint"), st.just("")),
        st.tuples(st.just("rollback"), st.integers(min_value=0, max_value=20)),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None, database=None)
@given(plan=steps)
def test_a_rollback_undoes_exactly_what_was_recorded_after_its_checkpoint(
    plan: list[tuple[str, Any]],
) -> None:
    """Against a model that remembers when each change and checkpoint happened."""
    ctx = ToolExecutionContext("p")
    clock = 0
    kept: list[tuple[int, Change]] = []  # the model: (when recorded, change)
    markers: list[tuple[int, Checkpoint]] = []
    for step, value in plan:
        if step == "record":
            change = Change(kind=value, target=f"c{clock}")
            ctx.record_change(change)
            kept.append((clock, change))
            clock += 1
        elif step == "checkpoint":
            markers.append((clock, ctx.checkpoint()))
        elif markers:
            when, marker = markers[value % len(markers)]
            expected = [c for at, c in reversed(kept) if at >= when and c.kind == "ok"]
            assert list(ctx.rollback(marker, handlers=HANDLERS).undone) == expected
            kept = [(at, c) for at, c in kept if at < when or c.kind != "ok"]
        assert list(ctx.changes) == [c for _, c in kept]


class _Interrupt(BaseException):
    """Stands for a KeyboardInterrupt arriving while a handler runs."""


def test_an_interrupted_rollback_forgets_the_changes_it_had_undone() -> None:
    """A change undone before the interruption is not undone a second time by the next rollback."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A", "B", "C")
    undone: list[str] = []

    def undo(change: Change) -> None:
        if change.target == "B" and not undone[1:]:
            undone.append("interrupted")
            raise _Interrupt
        undone.append(change.target)

    with pytest.raises(_Interrupt):
        ctx.rollback(handlers={"ok": undo})
    assert _targets(ctx.changes) == ["A", "B"]
    assert ctx.rollback(handlers={"ok": undo}).complete
    assert undone == ["C", "interrupted", "B", "A"] and ctx.changes == ()


def test_an_async_undo_handler_is_refused_before_anything_is_undone() -> None:
    """Its coroutine would never run, so reporting the change undone would be false."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A")
    _record(ctx, "T-1", kind="ticket.open")

    async def close(change: Change) -> None:
        """Never awaited by a synchronous rollback."""

    with pytest.raises(TypeError, match="ticket.open.*coroutine function"):
        ctx.rollback(handlers={"ok": _undo, "ticket.open": close})
    assert _targets(ctx.changes) == ["A", "T-1"]


def test_an_undo_handler_that_returns_an_awaitable_has_undone_nothing() -> None:
    """A callable object whose call makes a coroutine is reported failed, and the coroutine closed."""
    made: list[Any] = []

    async def close(change: Change) -> None:
        """Never awaited by a synchronous rollback."""

    def handler(change: Change) -> Any:
        made.append(close(change))
        return made[-1]

    class Later:
        def __await__(self) -> Any:
            yield

    ctx = ToolExecutionContext("p")
    _record(ctx, "T-1", kind="ticket.open")
    _record(ctx, "T-2", kind="ticket.later")
    report = ctx.rollback(handlers={"ticket.open": handler, "ticket.later": lambda c: Later()})
    assert [o.status for o in report.outcomes] == ["failed", "failed"]
    assert all("awaitable" in o.message for o in report.outcomes)
    assert made[0].cr_frame is None  # closed: no "never awaited" warning
    assert _targets(ctx.changes) == ["T-1", "T-2"]


def test_rolling_back_to_something_other_than_a_checkpoint_is_a_clear_type_error() -> None:
    """A bare index or a dict read back from JSON is refused with what to pass instead."""
    ctx = ToolExecutionContext("p")
    _record(ctx, "A")
    for wrong in (0, {"plan_id": "p", "index": 0}):
        with pytest.raises(TypeError, match="Checkpoint"):
            ctx.rollback(wrong, handlers=HANDLERS)  # type: ignore[arg-type]
    assert _targets(ctx.changes) == ["A"]


def test_a_tool_that_rolls_back_its_own_changes_does_not_list_them_in_its_result() -> None:
    """The result lists only what the call recorded and did not undo, as ctx.changes does."""
    from toolcycle import tool

    @tool(writes=True)
    def attempt(ctx: ToolExecutionContext) -> str:
        """Records three changes, then undoes those it can."""
        marker = ctx.checkpoint()
        _record(ctx, "x")
        _record(ctx, "y", kind="stuck")
        _record(ctx, "z")
        ctx.rollback(marker, handlers=HANDLERS)
        return "gave up"

    with ToolRuntime() as runtime:
        runtime.register(attempt)
        with runtime.plan() as ctx:
            _record(ctx, "before")
            result = runtime.execute("attempt", {}, ctx)
            assert _targets(result.changes) == ["y"]
            assert _targets(ctx.changes) == ["before", "y"]
