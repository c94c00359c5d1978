"""Descriptor-level steps below a directory that never follow a symbolic link.

The stateless pieces `ConfinedRoot` (``toolcycle._confined``) is built from:
opening the directories of a path one component at a time from a descriptor with
``O_NOFOLLOW``, opening a file in its folder the same way, looking at a name
without following it, reading a descriptor up to a cap, and renaming an OS error
so that it names a path relative to the root instead of the root itself. The
descriptor passed in is never closed here. With them live the words their callers
share: `Parts`, `shown` and the errors `ConfinementError` and `OutsideRootError`.
POSIX-only, like ``toolcycle._confined``.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "DIR_FLAGS",
    "ConfinementError",
    "OutsideRootError",
    "Parts",
    "lstat_at",
    "naming",
    "open_dirs",
    "open_file",
    "read_up_to",
    "renamed",
    "shown",
]

Parts = tuple[str, ...]
"""A path below the root as its components, without ``.``, ``..`` or empty parts."""

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a directory below the root is opened: never through a link."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class ConfinementError(Exception):
    """A path cannot be used safely under the root (a link, a hard link, a special file)."""


class OutsideRootError(ConfinementError):
    """A path leads out of the root, through ``..``, an absolute path or a symbolic link."""

    def __init__(self, path: str, link: str | None = None) -> None:
        self.path = path
        self.link = link
        via = f" through the symbolic link {link!r}" if link is not None else ""
        super().__init__(f"{path!r} leads outside the root{via}")


def shown(parts: Parts) -> str:
    """``parts`` as a POSIX path relative to the root (``.`` for the root itself)."""
    return "/".join(parts) or "."


def renamed(exc: OSError, where: str) -> OSError:
    """The same error (of the same class), naming ``where`` instead of the OS's path."""
    return OSError(exc.errno, exc.strerror, where)


@contextmanager
def naming(where: str) -> Iterator[None]:
    """Raise an `OSError` from within as the same error, naming ``where``."""
    try:
        yield
    except OSError as exc:
        raise renamed(exc, where) from None


@contextmanager
def open_dirs(root: int, parts: Parts) -> Iterator[int]:
    """A descriptor of the directory ``parts`` below ``root``, reached without following any link.

    Each descriptor opened on the way is closed; ``root`` itself never is.
    """
    fd = root
    try:
        for depth, name in enumerate(parts, start=1):
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(name, fd):
                    raise ConfinementError(
                        f"{shown(parts[:depth])} is a symbolic link; it is not followed here"
                    ) from None
                raise renamed(exc, shown(parts[:depth])) from None
            if fd != root:
                os.close(fd)
            fd = child
        yield fd
    finally:
        if fd != root:
            os.close(fd)


def open_file(parts: Parts, parent: int) -> int:
    """Open the last of ``parts`` in its folder ``parent`` for reading; a link is refused."""
    try:
        return os.open(parts[-1], _READ_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP and _is_link(parts[-1], parent):
            raise ConfinementError(
                f"{shown(parts)} is a symbolic link; it is not followed here"
            ) from None
        raise


def lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    """What ``name`` is in ``dir_fd`` (a link is not followed), or None if it is gone."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_up_to(fd: int, cap: int | None) -> bytes:
    """Read ``fd`` to its end, or until ``cap`` bytes have been read."""
    chunks: list[bytes] = []
    size = 0
    while cap is None or size < cap:
        chunk = os.read(fd, 1 << 20 if cap is None else min(1 << 20, cap - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _is_link(name: str, dir_fd: int) -> bool:
    info = lstat_at(name, dir_fd)
    return info is not None and stat.S_ISLNK(info.st_mode)
