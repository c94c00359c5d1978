"""The files a skill bundles: listing them, and reading one without leaving the folder.

A model asks for a path; nothing it asks for may reach outside the skill's
folder. A request is refused before any file is opened if it is absolute, has a
``..`` part, a backslash or a NUL, and refused after resolution if the real path
(every symlink followed) is not inside the real skill folder.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

__all__ = ["SkillFileError", "bundled_files", "inside", "read_text"]


class SkillFileError(Exception):
    """A bundled file cannot be given out: its path, kind, size or encoding is refused."""


def inside(root: Path, requested: str, *, what: str = "path") -> Path:
    """The real path of ``requested`` (relative to ``root``), confined to ``root``.

    Args:
        root: the skill's folder, already resolved.
        requested: a relative POSIX path such as ``references/guide.md``.
        what: how to call the argument in messages.

    Raises:
        SkillFileError: the path is empty, absolute, has ``..``, a backslash or a
            NUL, or leads (through symlinks) outside ``root``.
    """
    if not requested or "\x00" in requested or "\\" in requested:
        raise SkillFileError(
            f"the {what} {requested!r} is not a usable relative path; "
            "use forward slashes, as in 'references/guide.md'"
        )
    relative = PurePosixPath(requested)
    if relative.is_absolute() or requested.startswith("~"):
        raise SkillFileError(
            f"the {what} {requested!r} is absolute; give it relative to the skill's folder"
        )
    if ".." in relative.parts:
        raise SkillFileError(f"the {what} {requested!r} has a '..' part; paths stay in the skill")
    real = Path(os.path.realpath(root.joinpath(*relative.parts)))
    if real != root and root not in real.parents:
        raise SkillFileError(
            f"the {what} {requested!r} leads outside the skill's folder (through a symlink)"
        )
    return real


def read_text(path: Path, requested: str, *, max_bytes: int) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long.

    Messages name ``requested``, never the host's path.

    Raises:
        SkillFileError: it is missing (or a part of its path is a file), not a
            regular file, in a loop of symlinks, unreadable, too large, or not text.
    """
    try:
        info = path.stat()
    except OSError as exc:
        raise _unreadable(exc, requested) from None
    if not stat.S_ISREG(info.st_mode):
        raise SkillFileError(f"{requested!r} is not a regular file")
    if info.st_size > max_bytes:
        raise SkillFileError(
            f"{requested!r} is {info.st_size} bytes, over the limit of {max_bytes} bytes"
        )
    try:
        with path.open("rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as exc:  # it changed since the stat
        raise _unreadable(exc, requested) from None
    if len(data) > max_bytes:  # it grew since the stat
        raise SkillFileError(f"{requested!r} is over the limit of {max_bytes} bytes")
    if b"\x00" in data:
        raise SkillFileError(f"{requested!r} is a binary file; only text files can be read")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillFileError(
            f"{requested!r} is not UTF-8 text (at byte {exc.start}); only text files can be read"
        ) from None
    return text.replace("\r\n", "\n")


def _unreadable(exc: OSError, requested: str) -> SkillFileError:
    """The error for ``requested`` that the system refused, without the host's path."""
    listed = "the files it bundles are listed with its instructions"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return SkillFileError(f"the skill has no file {requested!r}; {listed}")
    if isinstance(exc, IsADirectoryError):
        return SkillFileError(f"{requested!r} is a folder, not a file; {listed}")
    if exc.errno == errno.ELOOP:
        return SkillFileError(f"{requested!r} leads into a loop of symlinks; {listed}")
    return SkillFileError(f"{requested!r} cannot be read ({exc.strerror}); {listed}")


def bundled_files(root: Path, *, limit: int, skill_file: str) -> tuple[list[str], bool]:
    """The regular files under ``root`` (relative, sorted), and whether the list was cut.

    ``skill_file``, the ``SKILL.md`` at the top, is not listed: its body is the
    instructions the list goes with.

    Hidden files and folders (a leading dot) are left out, as are symlinks whose
    target is outside ``root``; symlinked folders are not descended into, so a
    loop of links cannot trap the walk.
    """
    found: list[str] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        base = Path(folder)
        for name in sorted(files):
            if name.startswith(".") or (base == root and name == skill_file):
                continue
            path = base / name
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if root not in real.parents or not real.is_file():
                    continue
            elif not path.is_file():
                continue
            found.append(path.relative_to(root).as_posix())
            if len(found) > limit:
                return sorted(found)[:limit], True
    return sorted(found), False
