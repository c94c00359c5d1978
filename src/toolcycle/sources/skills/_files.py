"""The files a skill bundles: listing them, and reading one without leaving the folder.

A model asks for a path; nothing it asks for may reach outside the skill's
folder. A request is refused before any file is opened if it is absolute, has a
``..`` part, a backslash or a NUL, or names a hidden file or folder (a leading
dot, as in ``.env`` or ``.git/config``), and refused after resolution if the real
path (every symlink followed) is not inside the real skill folder or is hidden
there. The files listed with the instructions are exactly the ones a call may
read (up to the listing's cap), so what is offered and what is served agree.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

__all__ = [
    "SkillFileError",
    "bundled_files",
    "inside",
    "open_regular",
    "read_capped",
    "read_text",
    "real_inside",
    "same_file",
]

# Opening never follows a symlink in the last part (the path given is already
# real), never waits on a FIFO, and never hands the descriptor to a child.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_LISTED = "the files it bundles are listed with its instructions"


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
            NUL, names a hidden file or folder, or leads (through symlinks)
            outside ``root`` or to a hidden file or folder inside it.
    """
    if not requested or "\x00" in requested or "\\" in requested:
        raise SkillFileError(
            f"the {what} {requested!r} is not a usable relative path; "
            "use forward slashes, as in 'references/guide.md'"
        )
    relative = PurePosixPath(requested)
    if relative.is_absolute() or _from_home(requested):
        raise SkillFileError(
            f"the {what} {requested!r} is absolute; give it relative to the skill's folder"
        )
    if ".." in relative.parts:
        raise SkillFileError(f"the {what} {requested!r} has a '..' part; paths stay in the skill")
    if _hidden(relative.parts):
        raise SkillFileError(
            f"the {what} {requested!r} names a hidden file or folder, which a skill does "
            f"not offer; {_LISTED}"
        )
    real = Path(os.path.realpath(root.joinpath(*relative.parts)))
    if real != root and root not in real.parents:
        raise SkillFileError(
            f"the {what} {requested!r} leads outside the skill's folder (through a symlink)"
        )
    if _hidden(real.relative_to(root).parts):
        raise SkillFileError(
            f"the {what} {requested!r} leads to a hidden file or folder (through a "
            f"symlink), which a skill does not offer; {_LISTED}"
        )
    return real


def real_inside(root: Path, path: Path) -> Path | None:
    """The real path of ``path`` if it is inside the real folder ``root``, else None."""
    real = Path(os.path.realpath(path))
    return real if root in real.parents else None


def _identity(path: Path, *, regular: bool = False) -> tuple[int, int] | None:
    """The device and inode of the file ``path`` leads to; None if missing (or not regular)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if regular and not stat.S_ISREG(found.st_mode):
        return None
    return found.st_dev, found.st_ino


def same_file(path: Path, other: Path) -> bool:
    """Whether two paths are one file, however named or linked; False if either is missing."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def _from_home(requested: str) -> bool:
    """Whether a path starts with ``~``, which a shell would read as a home folder."""
    return requested.startswith("~")


def _hidden(parts: tuple[str, ...]) -> bool:
    """Whether a part of a relative path starts with a dot (``.env``, ``.git/config``)."""
    return any(part.startswith(".") for part in parts)


def read_text(path: Path, requested: str, *, max_bytes: int) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long.

    Messages name ``requested``, never the host's path.

    Raises:
        SkillFileError: it is missing (or a part of its path is a file), not a
            regular file, in a loop of symlinks, unreadable, too large, or not text.
    """
    data = read_capped(path, requested, max_bytes=max_bytes, limit="max_file_bytes")
    if b"\x00" in data:
        raise SkillFileError(f"{requested!r} is a binary file; only text files can be read")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillFileError(
            f"{requested!r} is not UTF-8 text (at byte {exc.start}); only text files can be read"
        ) from None
    return text.replace("\r\n", "\n")


def read_capped(
    path: Path, requested: str, *, max_bytes: int, limit: str, hint: str = _LISTED
) -> bytes:
    """The bytes of the regular file ``path``, refused if there are more than ``max_bytes``.

    The file is opened once, without following a symlink in its last part and
    without waiting on a FIFO, and its kind and size are those of what was
    opened, so a file swapped after the path was checked is not read blindly.

    Args:
        path: the real path to read.
        requested: the path as asked for, the only one messages name.
        max_bytes: the cap.
        limit: the `SkillLimits` field that sets the cap, named in the message.
        hint: what to do when the system refuses to read it (it is missing, say).

    Raises:
        SkillFileError: it is missing, not a regular file, unreadable or too large.
    """
    over = f"over the limit of {max_bytes} bytes; raise SkillLimits({limit}=...) to allow it"
    try:
        stream = open_regular(path)
    except OSError as exc:
        raise _unreadable(exc, requested, hint) from None
    if stream is None:
        raise SkillFileError(f"{requested!r} is not a regular file")
    with stream:
        size = os.fstat(stream.fileno()).st_size
        if size > max_bytes:
            raise SkillFileError(f"{requested!r} is {size} bytes, {over}")
        try:
            data = stream.read(max_bytes + 1)
        except OSError as exc:
            raise _unreadable(exc, requested, hint) from None
    if len(data) > max_bytes:  # it grew since it was opened
        raise SkillFileError(f"{requested!r} is {over}")
    return data


def open_regular(path: Path) -> BinaryIO | None:
    """``path`` opened for reading, or None if what is there is not a regular file.

    A symlink as the last part is not followed (give a real path), and a FIFO
    is not waited on.

    Raises:
        OSError: it cannot be opened.
    """
    descriptor = os.open(path, _OPEN_FLAGS)
    if stat.S_ISREG(os.fstat(descriptor).st_mode):
        return open(descriptor, "rb")  # the caller closes it
    os.close(descriptor)
    return None


def _unreadable(exc: OSError, requested: str, listed: str) -> SkillFileError:
    """The error for ``requested`` that the system refused, without the host's path."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return SkillFileError(f"the skill has no file {requested!r}; {listed}")
    if isinstance(exc, IsADirectoryError):
        return SkillFileError(f"{requested!r} is a folder, not a file; {listed}")
    if exc.errno == errno.ELOOP:
        return SkillFileError(f"{requested!r} leads into a loop of symlinks; {listed}")
    return SkillFileError(f"{requested!r} cannot be read ({exc.strerror}); {listed}")


def _listable(name: str, *, at_top: bool) -> bool:
    """Whether a call could ask for a file or folder of this name (``at_top``: in ``root``)."""
    if name.startswith(".") or "\\" in name:
        return False
    return not (at_top and _from_home(name))


def bundled_files(root: Path, *, limit: int, skill_file: str) -> tuple[list[str], bool]:
    """The regular files under ``root`` (relative, sorted), and whether the list was cut.

    ``skill_file``, the ``SKILL.md`` at the top, is not listed, nor is any other
    name for it (a link): its body is the instructions the list goes with, and
    its front matter is not offered.

    Hidden files and folders (a leading dot) are left out, as are names a call
    cannot ask for (a backslash, or a ``~`` starting the path) and symlinks whose
    target is outside ``root`` or hidden inside it: what `inside` refuses is not
    listed. Symlinked folders are not descended into, so a loop of links cannot
    trap the walk.
    """
    skill = _identity(root / skill_file)
    found: list[str] = []
    for folder, subfolders, files in os.walk(root):
        base = Path(folder)
        top = base == root
        subfolders[:] = sorted(name for name in subfolders if _listable(name, at_top=top))
        for name in sorted(files):
            if not _listable(name, at_top=top) or (top and name == skill_file):
                continue
            path = base / name
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if root not in real.parents or _hidden(real.relative_to(root).parts):
                    continue
            identity = _identity(path, regular=True)
            if identity is None or identity == skill:
                continue
            found.append(path.relative_to(root).as_posix())
            if len(found) > limit:
                return sorted(found)[:limit], True
    return sorted(found), False
