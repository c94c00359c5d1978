"""A model of a workspace tree and of the documented undo of each built-in file change.

`scan` reads a folder into a `Tree` (path to `File`, `Link` or `Dir`, links not
followed); `undo` applies to a tree what rolling back one `ModelChange` does, as
docs/concepts/rollback.md describes it, and says which outcome the report gives.
The rollback state machine (``test_rollback_stateful``) checks the runtime against it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Dir",
    "Entry",
    "File",
    "Link",
    "ModelChange",
    "Tree",
    "as_text",
    "differing",
    "parents",
    "permission_bits",
    "plain",
    "scan",
    "undo",
]


@dataclass(frozen=True)
class File:
    """A regular file: its bytes and permission bits."""

    data: bytes
    mode: int


@dataclass(frozen=True)
class Link:
    """A symbolic link and its text as written."""

    text: str


@dataclass(frozen=True)
class Dir:
    """A folder (its permission bits are not modelled)."""


Entry = File | Link | Dir
Tree = dict[str, Entry]


@dataclass(frozen=True)
class ModelChange:
    """A change the plan holds, as the model expects it."""

    index: int
    kind: str
    path: str
    before: Entry | None
    after: Entry | None


def scan(root: Path) -> Tree:
    """Every entry below ``root``, links not followed."""
    tree: Tree = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            key = path.relative_to(root).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                tree[key] = Link(os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                tree[key] = Dir()
            else:
                tree[key] = File(path.read_bytes(), stat.S_IMODE(info.st_mode))
    return tree


def parents(path: str) -> list[str]:
    """The folders above ``path``, outermost first."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def plain(tree: Tree, path: str) -> bool:
    """Whether every folder above ``path`` is a real folder or missing (no link on the way)."""
    return all(isinstance(tree.get(p, Dir()), Dir) for p in parents(path))


def undo(tree: Tree, change: ModelChange) -> str:
    """Undo ``change`` in ``tree`` as the documented rules say; return the outcome's status."""
    current = tree.get(change.path)
    if any(isinstance(tree.get(p), Link) for p in parents(change.path)):
        return "failed"
    if change.kind == "dir.create":
        if current is None:
            return "undone"
        if isinstance(current, Link):
            return "failed"
        if not isinstance(current, Dir) or any(k.startswith(change.path + "/") for k in tree):
            return "conflict"
        del tree[change.path]
        return "undone"
    if change.kind == "link.delete":
        if current is not None:
            return "conflict"
        assert isinstance(change.before, Link)
        tree.update({p: Dir() for p in parents(change.path) if p not in tree})
        tree[change.path] = change.before
        return "undone"
    if isinstance(current, Link):
        return "failed"
    after = change.after
    if current is not None and not isinstance(current, File):
        return "conflict"
    if (after is None) != (current is None):
        return "conflict"
    if isinstance(after, File) and isinstance(current, File) and after.data != current.data:
        return "conflict"
    before = change.before
    if before is None:
        del tree[change.path]
        return "undone"
    assert isinstance(before, File)
    # An overwritten file keeps the bits it has; a deleted one gets back its recorded
    # permission bits, set-id and sticky bits left out.
    mode = current.mode if isinstance(current, File) else before.mode & 0o777
    tree.update({p: Dir() for p in parents(change.path) if p not in tree})
    tree[change.path] = File(before.data, mode)
    return "undone"


def as_text(data: bytes) -> str | None:
    """The text the tools read from ``data``, or None when they take it for binary."""
    try:
        return None if b"\0" in data else data.decode()
    except UnicodeDecodeError:
        return None


def permission_bits(tree: Tree) -> Tree:
    """``tree`` with set-id and sticky bits left out, as a restored deleted file has them."""
    return {p: File(e.data, e.mode & 0o777) if isinstance(e, File) else e for p, e in tree.items()}


def differing(one: Tree, other: Tree) -> set[str]:
    """The paths where two trees disagree."""
    return {p for p in one.keys() | other.keys() if one.get(p) != other.get(p)}
