"""Steps for the built-in workspace tools and for checkpoints and rollback."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from behave import given, then, when

from toolcycle import BoundResource
from toolcycle.builtins import workspace_tools


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        )
        for p in sorted(root.rglob("*"))
    }


@given("a workspace holding")
def workspace_holding(context: Any) -> None:
    folder = tempfile.TemporaryDirectory(prefix="toolcycle-feature-")
    context.add_cleanup(folder.cleanup)
    root = Path(folder.name)
    for row in context.table:
        path = root / row["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(row["content"].replace("\\n", "\n"))
    context.workspace_root = root
    context.runtime.register_source(workspace_tools())


@given('a symlink "{link}" in the workspace pointing outside it')
def symlink_outside(context: Any, link: str) -> None:
    os.symlink(tempfile.gettempdir(), context.workspace_root / link)


@given('a {kind} plan "{plan_id:Name}" bound to the workspace')
def plan_bound(context: Any, kind: str, plan_id: str) -> None:
    flags = {
        "writing": {},
        "read-only": {"read_only": True},
        "checkpoint": {"requires_checkpoint": True},
    }[kind]
    resource = BoundResource(kind="workspace", name="ws", location=str(context.workspace_root))
    context.plans[plan_id] = context.runtime.new_context(plan_id, resources=[resource], **flags)
    context.plan = context.plans[plan_id]


@given('a plan "{plan_id:Name}" bound to the workspace read-only')
def plan_bound_read_only(context: Any, plan_id: str) -> None:
    resource = BoundResource(
        kind="workspace", name="ws", location=str(context.workspace_root), read_only=True
    )
    context.plans[plan_id] = context.runtime.new_context(plan_id, resources=[resource])
    context.plan = context.plans[plan_id]


@when("I take a checkpoint")
def take_checkpoint(context: Any) -> None:
    context.workspace_before = _tree(context.workspace_root)
    context.checkpoint = context.plan.checkpoint()


@when("I roll back to the checkpoint")
def roll_back(context: Any) -> None:
    context.report = context.plan.rollback(context.checkpoint)


@when('someone else writes "{text}" to "{path}"')
def someone_else_writes(context: Any, text: str, path: str) -> None:
    (context.workspace_root / path).write_text(text)


@then("the workspace is exactly as it was at the checkpoint")
def workspace_restored(context: Any) -> None:
    assert _tree(context.workspace_root) == context.workspace_before
    assert context.report.complete


@then('file "{path}" contains "{text}"')
def file_contains(context: Any, path: str, text: str) -> None:
    assert (context.workspace_root / path).read_text() == text.replace("\\n", "\n")


@then('file "{path}" does not exist')
def file_missing(context: Any, path: str) -> None:
    assert not (context.workspace_root / path).exists()


@then('the rollback reports a conflict on "{target}" and leaves it alone')
def rollback_conflict(context: Any, target: str) -> None:
    conflicts = [o for o in context.report.not_undone if o.status == "conflict"]
    assert [o.change.target for o in conflicts] == [target], context.report
    assert not context.report.complete


@then('the plan still records the change to "{target}"')
def change_kept(context: Any, target: str) -> None:
    assert [c.target for c in context.plan.changes] == [target]


@then('the call output lists the entries "{paths}"')
def listed_entries(context: Any, paths: str) -> None:
    expected = [p.strip() for p in paths.split(",")]
    assert [e["path"] for e in context.result.output["entries"]] == expected


@then('the call output has {key} "{value}"')
def output_key(context: Any, key: str, value: str) -> None:
    assert str(context.result.output[key]) == value.replace("\\n", "\n"), context.result.output


@then("every change records the tool that made it and when")
def changes_attributed(context: Any) -> None:
    changes = context.plan.changes
    assert changes and all(c.tool_name and c.recorded_at for c in changes)
    assert all(c.model_dump_json() for c in changes)
