"""A state machine checks checkpoints and rollback of the workspace tools against a model.

The machine binds a small workspace (a few names in three folders, some files with
their own permission bits, symbolic links to files, folders, outside and nowhere) to
a plan that requires checkpoints, then runs the built-in tools on it (writes of any
text, edits, deletes of files and of links, nested ``make_dir``, reads and listings),
takes checkpoints at random points, rolls back to a random earlier one, and now and
then changes the workspace behind the runtime's back (writes a file, makes a link).

The model keeps the workspace tree (path to file bytes and permission bits, link
text, or folder), the changes the plan still holds, and a snapshot of the tree at
each checkpoint. Invariants:

- a failed call changes nothing; a call that works changes only its target and the
  folders it creates, and records one change per path, as the docs list them;
- the plan's changes are always the model's, in order;
- a rollback reports, newest first, the outcome the documented rules give each
  change (``undone``; ``conflict`` when the target is no longer as the tool left
  it; ``failed`` when a link now stands there) and leaves the tree the model
  computes;
- after a rollback to a checkpoint, the tree equals that checkpoint's snapshot
  except at paths changed behind the runtime's back since (and the folders holding
  them), which stay as the test left them, and but for set-id and sticky bits,
  which a restored deleted file does not get back. A checkpoint that a rollback
  went past means, as documented, the tree that rollback left;
- nothing outside the workspace ever changes, and no temporary is left behind.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from toolcycle import BoundResource, Checkpoint, ToolExecutionContext, ToolResult, ToolRuntime
from toolcycle.builtins import workspace_tools

from .workspace_model import (
    Dir,
    File,
    Link,
    ModelChange,
    Tree,
    as_text,
    differing,
    parents,
    permission_bits,
    plain,
    scan,
    undo,
)

FOLDERS = ("", "a", "b/deep")
"""Where files go: the root, a folder that exists at first, and a nested one that may not."""
NAMES = ("x", "é.txt")
FILE_PATHS = tuple(f"{folder}/{name}".lstrip("/") for folder in FOLDERS for name in NAMES)
DIR_PATHS = ("a", "b", "b/deep", "c/d")
THROUGH_LINKS = ("x/x", "x/é.txt")
"""Paths that pass through the name ``x`` when a link to a folder stands there."""
TOOL_PATHS = FILE_PATHS + THROUGH_LINKS
LINK_PATHS = (*FILE_PATHS, "b", "b/deep")
"""Where the test makes links: at file names, and at folders that do not exist yet."""
MODES = (0o600, 0o640, 0o644, 0o666, 0o755, 0o400, 0o000, 0o4755)
LINK_KINDS = ("file", "folder", "outside", "outside-relative", "dangling")

texts = st.text(alphabet=st.sampled_from("ab \r\né€😀\u2028"), max_size=6)
"""File contents: empty, ASCII, non-ASCII and astral characters, several lines."""
contents = texts.map(str.encode) | st.sampled_from((b"\xff", b"a\x00b"))
"""What the test writes directly: text, or bytes the tools take for binary."""
excerpts = st.text(alphabet=st.sampled_from("ab é€"), min_size=1, max_size=2)


@dataclass
class Snapshot:
    """A checkpoint, the tree it stands for, and what the test changed since."""

    checkpoint: Checkpoint | None
    tree: Tree
    index: int
    touched: set[str] = field(default_factory=set)


class WorkspaceRollback(RuleBasedStateMachine):
    """Random tool calls, checkpoints, rollbacks and outside edits on one workspace."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.root = base / "ws"
        self.outside = base / "outside"
        self.root.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("host data")
        self.outside_tree = scan(self.outside)
        self.runtime = ToolRuntime()
        self.runtime.register_source(workspace_tools())
        self.ctx: ToolExecutionContext  # opened by ``start``, once the location is chosen
        self.tree: Tree = {}
        self.pending: list[ModelChange] = []
        self.recorded = 0
        self.snapshots: list[Snapshot] = []

    # -- building blocks ---------------------------------------------------------------

    def _make_link(self, path: str, kind: str, pick: int) -> None:
        """Make a link at ``path`` directly, pointing where ``kind`` (and ``pick``) say."""
        folder = os.path.dirname(path) or "."
        files = sorted(p for p, e in self.tree.items() if isinstance(e, File))
        dirs = sorted(p for p, e in self.tree.items() if isinstance(e, Dir) and p != path)
        if kind == "file" and files:
            text = os.path.relpath(files[pick % len(files)], folder)
        elif kind == "folder" and dirs:
            text = os.path.relpath(dirs[pick % len(dirs)], folder)
        elif kind == "outside":
            text = str(self.outside / "secret.txt")
        elif kind == "outside-relative":
            text = "../" * (path.count("/") + 1) + "outside"
        else:
            text = "nowhere"
        os.symlink(text, self.root / path)
        self.tree[path] = Link(text)

    def _inside(self, path: str) -> str | None:
        """The workspace path ``path`` leads to with every link followed; None if outside."""
        real = Path(os.path.realpath(self.root / path))
        if not real.is_relative_to(self.root.resolve()):
            return None
        inside = real.relative_to(self.root.resolve()).as_posix()
        return None if inside == "." else inside

    def _text_behind(self, path: str) -> str | None:
        """The text of the file ``path`` leads to, if it is a text file in the workspace."""
        target = self._inside(path)
        entry = self.tree.get(target) if target is not None else None
        return as_text(entry.data) if isinstance(entry, File) else None

    def _call(self, tool: str, params: dict[str, Any]) -> ToolResult:
        """Run a tool and check that a failure changed nothing."""
        before = dict(self.tree)
        result = self.runtime.execute(tool, params, self.ctx)
        after = scan(self.root)
        if not result.success:
            assert after == before, (tool, params, result.error, differing(before, after))
            assert len(self.ctx.changes) == len(self.pending), result.error
        return result

    def _record(self, result: ToolResult, target_kind: str | None) -> None:
        """Fold a working write call into the model: the folders it made, then its target."""
        before, after = self.tree, scan(self.root)
        path = result.output["path"]
        made = sorted(
            (p for p in differing(before, after) if p not in before and after[p] == Dir()),
            key=lambda p: p.count("/"),
        )
        changes = [("dir.create", p, None, Dir()) for p in made]
        if target_kind is not None:
            changes.append((target_kind, path, before.get(path), after.get(path)))
        expected = dict(before)
        for _, p, _, entry in changes:
            if entry is None:
                expected.pop(p, None)
            else:
                expected[p] = entry
        assert after == expected, differing(after, expected)
        new = self.ctx.changes[len(self.pending) :]
        assert [(c.kind, c.target) for c in new] == [(k, p) for k, p, _, _ in changes]
        for kind, p, old, entry in changes:
            self.pending.append(ModelChange(self.recorded, kind, p, old, entry))
            self.recorded += 1
        self.tree = after

    def _behind_the_back(self, path: str) -> None:
        """Note a change the runtime did not make, for every snapshot."""
        for snapshot in self.snapshots:
            snapshot.touched.add(path)

    # -- rules -------------------------------------------------------------------------

    @initialize(
        files=st.dictionaries(
            st.sampled_from(FILE_PATHS), st.tuples(texts, st.sampled_from(MODES))
        ),
        links=st.dictionaries(
            st.sampled_from(FILE_PATHS), st.tuples(st.sampled_from(LINK_KINDS), st.integers(0, 5))
        ),
        with_b=st.booleans(),
        bound_through_link=st.booleans(),
    )
    def start(
        self,
        files: dict[str, tuple[str, int]],
        links: dict[str, tuple[str, int]],
        with_b: bool,
        bound_through_link: bool,
    ) -> None:
        """Lay out the first tree, bind it (perhaps as a link to it) and take its snapshot.

        The first snapshot is the one ``rollback()`` without a checkpoint returns to.
        """
        location = self.root
        if bound_through_link:  # the host's choice, followed (as /tmp on macOS)
            location = self.root.with_name("ws-link")
            location.symlink_to(self.root)
        workspace = BoundResource(kind="workspace", name="ws", location=str(location))
        self.ctx = self.runtime.new_context(resources=[workspace], requires_checkpoint=True)
        (self.root / "a").mkdir()
        if with_b:
            (self.root / "b").mkdir()
        for path, (text, mode) in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode())
            target.chmod(mode)
        self.tree = scan(self.root)
        for path, (kind, pick) in links.items():
            if path not in self.tree and plain(self.tree, path):
                (self.root / path).parent.mkdir(parents=True, exist_ok=True)
                self.tree = scan(self.root)
                self._make_link(path, kind, pick)
        self.tree = scan(self.root)
        self.snapshots.append(Snapshot(None, dict(self.tree), 0))

    @rule(path=st.sampled_from(TOOL_PATHS), content=texts)
    def write_file(self, path: str, content: str) -> None:
        current = self.tree.get(path)
        result = self._call("write_file", {"path": path, "content": content})
        if plain(self.tree, path) and (current is None or isinstance(current, File)):
            assert result.success, result.error
            assert result.output["path"] == path
        if result.success:
            was = self.tree.get(result.output["path"])
            self._record(result, "file.write")
            now = self.tree[result.output["path"]]
            assert isinstance(now, File) and now.data == content.encode()
            if isinstance(was, File):
                assert now.mode == was.mode, "an overwritten file keeps its bits"

    @rule(data=st.data(), path=st.sampled_from(TOOL_PATHS), new=texts)
    def edit_file(self, data: st.DataObject, path: str, new: str) -> None:
        """Edit with an excerpt of the file (unique or not) or one drawn at random."""
        current = self.tree.get(path)
        text = self._text_behind(path) or ""
        slices = st.tuples(st.integers(0, len(text)), st.integers(1, 3)).map(
            lambda at: text[at[0] : at[0] + at[1]]
        )
        old = data.draw(slices.filter(bool) | excerpts if text else excerpts, label="old")
        result = self._call("edit_file", {"path": path, "old": old, "new": new})
        if not plain(self.tree, path):
            pass  # through a link: whatever happens is checked below and by the invariants
        elif current is None or isinstance(current, Dir):
            assert not result.success
        elif isinstance(current, File):
            one = as_text(current.data) is not None and text.count(old) == 1
            assert result.success is one, result.error
        if result.success:
            was = self.tree[result.output["path"]]
            assert isinstance(was, File)
            self._record(result, "file.write")
            now = File(was.data.decode().replace(old, new, 1).encode(), was.mode)
            assert result.output["path"] == self._inside(path)
            assert self.tree[result.output["path"]] == now

    @rule(path=st.sampled_from(TOOL_PATHS + DIR_PATHS), suffix=st.sampled_from(("", "", "/", "/.")))
    def delete_file(self, path: str, suffix: str) -> None:
        """Delete a file or a link (a trailing ``/`` still names the link itself)."""
        current = self.tree.get(path)
        result = self._call("delete_file", {"path": path + suffix})
        if plain(self.tree, path) and (not suffix or not isinstance(current, File)):
            assert result.success is isinstance(current, File | Link), (current, result.error)
            assert not result.success or result.output["path"] == path
        if result.success:
            removed = self.tree[result.output["path"]]
            self._record(result, "link.delete" if isinstance(removed, Link) else "file.delete")

    @rule(path=st.sampled_from(DIR_PATHS + TOOL_PATHS))
    def make_dir(self, path: str) -> None:
        chain = [*parents(path), path]
        result = self._call("make_dir", {"path": path})
        if all(isinstance(self.tree.get(p, Dir()), Dir) for p in chain):
            assert result.success, result.error
        if result.success:
            self._record(result, None)
            assert isinstance(self.tree[result.output["path"]], Dir)

    @rule(path=st.sampled_from(TOOL_PATHS), listing=st.booleans())
    def read(self, path: str, listing: bool) -> None:
        if listing:
            folder = os.path.dirname(path)
            result = self._call("list_dir", {"path": folder or ".", "recursive": True})
            if isinstance(self.tree.get(folder, Dir()), Dir) and (
                folder in self.tree or not folder
            ):
                assert result.success, result.error
            return
        current = self.tree.get(path)
        result = self._call("read_file", {"path": path})
        if isinstance(current, File) and as_text(current.data) is not None:
            assert result.success, result.error
            assert result.output["content"] == as_text(current.data)

    @rule(
        path=st.sampled_from(LINK_PATHS),
        kind=st.sampled_from(LINK_KINDS),
        pick=st.integers(0, 5),
    )
    def make_link_directly(self, path: str, kind: str, pick: int) -> None:
        """Put a link where nothing stands, behind the runtime's back."""
        if path in self.tree or not all(isinstance(self.tree.get(p), Dir) for p in parents(path)):
            return
        self._make_link(path, kind, pick)
        self._behind_the_back(path)

    @rule(path=st.sampled_from(TOOL_PATHS), content=contents, mode=st.sampled_from(MODES))
    def write_directly(self, path: str, content: bytes, mode: int) -> None:
        """Write a file behind the runtime's back (through a link too, as an editor would).

        A rollback must report the changes it would undo there as conflicts and leave
        the file as the test wrote it.
        """
        target = self._inside(path)
        if target is None:
            return
        current = self.tree.get(target)
        if not all(isinstance(self.tree.get(p), Dir) for p in parents(target)):
            return
        if current is not None and not isinstance(current, File):
            return
        (self.root / target).write_bytes(content)
        if current is None:
            (self.root / target).chmod(mode)
        self.tree = scan(self.root)
        self._behind_the_back(target)

    @rule()
    def checkpoint(self) -> None:
        marker = self.ctx.checkpoint()
        assert marker.index == self.recorded
        self.snapshots.append(Snapshot(marker, dict(self.tree), self.recorded))

    @precondition(lambda self: self.snapshots)
    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        """Roll back to a random earlier checkpoint (the first one means ``rollback()``)."""
        snapshot = data.draw(st.sampled_from(self.snapshots), label="to")
        chosen = [c for c in self.pending if c.index >= snapshot.index][::-1]
        expected = dict(self.tree)
        statuses = [(c.kind, c.path, undo(expected, c)) for c in chosen]
        report = self.ctx.rollback(to=snapshot.checkpoint)
        got = [(o.change.kind, o.change.target, o.status) for o in report.outcomes]
        assert got == statuses, [o.message for o in report.outcomes]
        undone = {
            c.index
            for c, (_, _, status) in zip(chosen, statuses, strict=True)
            if status == "undone"
        }
        self.pending = [c for c in self.pending if c.index not in undone]
        self.tree = scan(self.root)
        assert self.tree == expected, differing(self.tree, expected)
        # The checkpoint's snapshot, but for what the test changed behind the runtime's back.
        excused = set(snapshot.touched)
        excused |= {p for path in snapshot.touched for p in parents(path)}
        wrong = differing(permission_bits(self.tree), permission_bits(snapshot.tree)) - excused
        assert not wrong, wrong
        for later in self.snapshots:
            if later.index > snapshot.index:  # gone past: it now means this tree
                later.tree, later.touched = dict(self.tree), set()

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def the_plan_holds_the_models_changes(self) -> None:
        held = [(c.kind, c.target) for c in self.ctx.changes]
        assert held == [(c.kind, c.path) for c in self.pending]

    @invariant()
    def the_workspace_is_the_model_and_outside_is_untouched(self) -> None:
        assert scan(self.root) == self.tree
        assert scan(self.outside) == self.outside_tree

    def teardown(self) -> None:
        self.runtime.close()


def test_rollback_restores_each_checkpoint_but_what_changed_behind_the_runtime(
    tmp_path: Path,
) -> None:
    """Any sequence of workspace tool calls, checkpoints and rollbacks matches the model."""
    counter = itertools.count()

    def machine() -> WorkspaceRollback:
        base = tmp_path / str(next(counter))
        base.mkdir()
        return WorkspaceRollback(base)

    # Longer runs than the profile's: a rollback needs a checkpoint and changes before it.
    profile = settings.default
    longer = settings(
        profile,
        max_examples=2 * profile.max_examples,
        stateful_step_count=profile.stateful_step_count + 15,
    )
    run_state_machine_as_test(machine, settings=longer)
