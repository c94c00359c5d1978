"""Paths under a root directory, opened so that nothing outside it is ever touched.

`ConfinedRoot` holds a descriptor of the root and opens everything relative to it,
one path component at a time, with ``O_NOFOLLOW``:

- `ConfinedRoot.resolve` turns a path (relative, or absolute inside the root) into
  its components below the root. A symbolic link is replaced by what it points to
  when that stays inside the root; a link or a ``..`` that leads out of the root
  raises `OutsideRootError`, even when a later component would come back in.
- Every other method takes such components and follows no link at all: a link
  found there (the tree changed since it was resolved, or the caller, like
  rollback, follows none) is refused with `ConfinementError`.
- A file is read only if it is a regular file with one link: a file with several
  hard links may share its bytes with a file outside the root.
- A file is replaced through a temporary created with ``O_CREAT | O_EXCL |
  O_NOFOLLOW`` under a random name in the same folder and renamed over it, so a
  link planted at any name is neither followed nor moved into place.
- Errors name paths relative to the root, never the root itself.
- `ConfinedRoot.exclusive` holds a lock of one file for this process, so that the
  writers of one file (and rollback) take turns instead of losing each other's work.

The module is POSIX-only (``dir_fd`` and ``O_NOFOLLOW``), as the built-in tools are.
The descriptor-level steps it is built from, with `Parts`, `shown` and the two
errors, live in ``toolcycle._nofollow``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import threading
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING, Self

from toolcycle._nofollow import (
    DIR_FLAGS,
    ConfinementError,
    OutsideRootError,
    Parts,
    lstat_at,
    naming,
    open_dirs,
    open_file,
    read_up_to,
    renamed,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["ConfinedRoot"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_PATH = 4096
_MAX_LINKS = 40

# Each file in use: its lock and how many hold or wait for it (the entry goes with the last).
_file_locks: dict[tuple[int, int, Parts], tuple[threading.Lock, list[int]]] = {}
_file_locks_guard = threading.Lock()
_TURN_CHECK_SECONDS = 0.05


class ConfinedRoot:
    """A root directory, opened once; every path under it is opened relative to it.

    Use it as a context manager so that the root's descriptor is closed.
    """

    def __init__(self, location: str | os.PathLike[str]) -> None:
        """Open ``location`` (which the host chose, so links in it are followed).

        Raises:
            OSError: the root cannot be opened as a directory; the error names ``.``.
        """
        place = os.fspath(location)
        self._prefixes = tuple(dict.fromkeys((os.path.realpath(place), os.path.abspath(place))))
        with naming("."):
            self._fd = os.open(place, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the root's descriptor; idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def resolve(self, path: str, *, follow_last: bool = True) -> Parts:
        """The components below the root that ``path`` names, links inside replaced.

        A component that does not exist ends the resolution of links: the rest is
        taken as written (``..`` still may not leave the root). With ``follow_last``
        false, a link that is the path's last name (trailing ``/`` or ``.`` aside)
        is kept as the link itself, wherever it points, as ``rm`` takes it.

        Raises:
            OutsideRootError: ``path`` or a link on it leads out of the root.
            ConfinementError: the path is too long or has too many links.
        """
        if len(path) > _MAX_PATH:
            raise ConfinementError(f"a path of {len(path)} characters is too long")
        pending = self._below(path, path)[::-1]
        done: list[str] = []
        real = 0  # how many leading parts of done are existing, real directories
        fd = self._fd  # a descriptor of done[:real]
        hops = 0
        name = ""
        try:
            while pending:
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not done:
                        raise OutsideRootError(path)
                    done.pop()
                    if real > len(done):
                        real = len(done)
                        fd = self._reopen(fd, tuple(done))
                    continue
                info = None if real < len(done) else lstat_at(name, fd)
                last = not follow_last and all(p in ("", ".") for p in pending)
                if info is not None and stat.S_ISLNK(info.st_mode) and not last:
                    hops += 1
                    if hops > _MAX_LINKS:
                        raise ConfinementError(f"{path!r} passes through too many symbolic links")
                    link = shown((*done, name))
                    target = os.readlink(name, dir_fd=fd)
                    if os.path.isabs(target):
                        parts = self._below(target, path, link)
                        done, real, fd = [], 0, self._reopen(fd, ())
                    else:
                        parts = target.split("/")
                    pending.extend(reversed(parts))
                    continue
                if info is not None and stat.S_ISDIR(info.st_mode):
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                    self._release(fd)
                    fd, real = child, len(done) + 1
                done.append(name)
        except OSError as exc:
            raise renamed(exc, shown((*done, name))) from None
        finally:
            self._release(fd)
        return tuple(done)

    @contextmanager
    def exclusive(self, parts: Parts, check: Callable[[], object] = bool) -> Iterator[None]:
        """Hold this process's lock of the file at ``parts`` meanwhile.

        Two writers that each read a file and replace it lose one's work, so whoever
        reads a file to replace it holds this from the read to the end. What ``check``
        raises (a cancellation), while waiting or once the lock is held, ends the wait.
        """
        where = os.fstat(self._fd)
        key = (where.st_dev, where.st_ino, parts)
        with _file_locks_guard:
            lock, users = _file_locks.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            while not lock.acquire(timeout=_TURN_CHECK_SECONDS):
                check()
            try:
                check()  # given up on while it waited: it must change nothing now
                yield
            finally:
                lock.release()
        finally:
            with _file_locks_guard:
                users[0] -= 1
                if not users[0]:
                    del _file_locks[key]

    def lstat(self, parts: Parts) -> os.stat_result | None:
        """What is at ``parts`` (a link is not followed), or None if nothing is."""
        if not parts:
            return os.fstat(self._fd)
        try:
            with self._parent(parts) as fd, naming(shown(parts)):
                return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def read_bytes(self, parts: Parts, max_bytes: int | None = None) -> bytes:
        """The bytes of the regular, singly linked file at ``parts``.

        Raises:
            ConfinementError: it is a link, not a regular file, has several hard
                links or is over ``max_bytes``.
            OSError: it cannot be opened or read; the error names ``parts``.
        """
        if max_bytes is None:
            with self._regular(parts) as (fd, _):
                return read_up_to(fd, None)
        data, size = self.read_capped(parts, max_bytes)
        if data is None:
            raise ConfinementError(f"{shown(parts)} is {size} bytes, over the limit of {max_bytes}")
        return data

    def sha256(self, parts: Parts) -> str:
        """The SHA-256 (hex) of the file `read_bytes` would read, taken in bounded chunks.

        Raises:
            ConfinementError: it is a link, not a regular file, or has several hard links.
            OSError: it cannot be opened or read; the error names ``parts``.
        """
        with self._regular(parts) as (fd, _):
            hashed = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                hashed.update(chunk)
            return hashed.hexdigest()

    def read_capped(self, parts: Parts, max_bytes: int) -> tuple[bytes | None, int]:
        """The file's bytes and size, or None and its size if it is over ``max_bytes``.

        Reads at most one byte past ``max_bytes``, however large the file is or grows.

        Raises:
            ConfinementError: it is a link, not a regular file, or has several hard links.
            OSError: it cannot be opened or read; the error names ``parts``.
        """
        with self._regular(parts) as (fd, info):
            data = read_up_to(fd, max_bytes + 1)
            if len(data) > max_bytes:
                return None, max(info.st_size, len(data))
            return data, len(data)

    def file_info(self, parts: Parts) -> os.stat_result:
        """What the file at ``parts`` is, checked as `read_bytes` checks it, without reading it.

        Raises:
            ConfinementError: it is a link, not a regular file, or has several hard links.
            OSError: it cannot be opened; the error names ``parts``.
        """
        with self._regular(parts) as (_, info):
            return info

    @contextmanager
    def _regular(self, parts: Parts) -> Iterator[tuple[int, os.stat_result]]:
        """The open descriptor of the regular, singly linked file at ``parts``, and its stat."""
        where = shown(parts)
        with self._parent(parts) as parent, naming(where):
            fd = open_file(parts, parent)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise ConfinementError(f"{where} is not a regular file")
                if info.st_nlink > 1:
                    raise ConfinementError(
                        f"{where} has {info.st_nlink} hard links; a file linked more than "
                        "once may share its bytes with a file outside, so it is not used"
                    )
                yield fd, info
            finally:
                os.close(fd)

    def write_atomic(self, parts: Parts, data: bytes, mode: int | None = None) -> None:
        """Replace (or create) the file at ``parts`` with ``data`` in one rename.

        An existing file keeps its permission bits and, where the process may give
        it (as root), its owner and group; a new one gets ``mode``, or the default.
        """
        with self._parent(parts) as parent, naming(shown(parts)):
            try:
                found = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                found = None
            kept = found if found is not None and stat.S_ISREG(found.st_mode) else None
            final = mode if found is None else None
            if kept is not None:
                final = stat.S_IMODE(kept.st_mode)
            temp = f".{secrets.token_hex(8)}.toolcycle-tmp"
            # Born private when the bits are known: another user who opened a temporary
            # readable by all before its chmod could read a private file's bytes.
            fd = os.open(temp, _TEMP_FLAGS, 0o666 if final is None else 0o600, dir_fd=parent)
            try:
                try:
                    if kept is not None:  # before the chmod, which a chown may undo
                        with suppress(PermissionError):  # only root may give a file away
                            os.fchown(fd, kept.st_uid, kept.st_gid)
                    if final is not None:
                        os.fchmod(fd, final)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                os.replace(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with suppress(OSError):  # nothing more can be done; the name is random
                    os.unlink(temp, dir_fd=parent)
                raise

    def make_dirs(self, parts: Parts) -> Iterator[Parts]:
        """Create the missing directories of ``parts``, yielding each one once made."""
        for depth in range(1, len(parts) + 1):
            here = parts[:depth]
            info = self.lstat(here)
            if info is None:
                self.make_dir(here)
                yield here
            elif not stat.S_ISDIR(info.st_mode):
                kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
                raise ConfinementError(f"{shown(here)} is {kind}; cannot create folders in it")

    def make_dir(self, parts: Parts) -> None:
        """Create the directory at ``parts``; its parent must exist."""
        with self._parent(parts) as parent, naming(shown(parts)):
            os.mkdir(parts[-1], dir_fd=parent)

    def unlink(self, parts: Parts) -> None:
        """Remove the file (or link itself) at ``parts``."""
        with self._parent(parts) as parent, naming(shown(parts)):
            os.unlink(parts[-1], dir_fd=parent)

    def readlink(self, parts: Parts) -> str:
        """The text of the symbolic link at ``parts`` (what it points to, as written)."""
        with self._parent(parts) as parent, naming(shown(parts)):
            return os.readlink(parts[-1], dir_fd=parent)

    def symlink(self, text: str, parts: Parts) -> None:
        """Create a symbolic link at ``parts`` whose text is ``text``; it is not followed."""
        with self._parent(parts) as parent, naming(shown(parts)):
            os.symlink(text, parts[-1], dir_fd=parent)

    def rmdir(self, parts: Parts) -> None:
        """Remove the empty directory at ``parts`` (a link there is not removed)."""
        with self._parent(parts) as parent, naming(shown(parts)):
            os.rmdir(parts[-1], dir_fd=parent)

    def scan(
        self,
        parts: Parts,
        *,
        recursive: bool,
        keep: Callable[[str], bool] | None = None,
    ) -> Iterator[tuple[Parts, os.stat_result]]:
        """Each entry under the directory ``parts``, in sorted order, links not followed.

        With ``recursive``, real subdirectories are entered (links to directories are
        listed, never entered); every directory precedes its contents. A name that
        ``keep`` refuses is neither yielded nor, if it is a directory, entered.
        """
        stack = [self._entries(parts, keep)]
        while stack:
            if not stack[-1]:
                stack.pop()
                continue
            here, info = stack[-1].pop()
            yield here, info
            if recursive and stat.S_ISDIR(info.st_mode):
                stack.append(self._entries(here, keep))

    def _entries(
        self, parts: Parts, keep: Callable[[str], bool] | None
    ) -> list[tuple[Parts, os.stat_result]]:
        """The entries of a directory, last name first (so that ``pop`` takes them in order)."""
        with open_dirs(self._fd, parts) as fd, naming(shown(parts)):
            names = sorted(filter(keep, os.listdir(fd)), reverse=True)
            found = [(name, lstat_at(name, fd)) for name in names]
        return [((*parts, name), info) for name, info in found if info is not None]

    def _parent(self, parts: Parts) -> AbstractContextManager[int]:
        """A descriptor of the folder that holds ``parts`` (never the root itself)."""
        return open_dirs(self._fd, parts[:-1])

    def _below(self, path: str, original: str, link: str | None = None) -> list[str]:
        """The components of ``path`` relative to the root; an absolute one must lie in it."""
        if not os.path.isabs(path):
            return path.split("/")
        for prefix in self._prefixes:
            if path == prefix:
                return []
            base = prefix.rstrip("/") + "/"
            if path.startswith(base):
                return path[len(base) :].split("/")
        raise OutsideRootError(original, link)

    def _reopen(self, fd: int, parts: Parts) -> int:
        """Open ``parts`` (real directories) afresh from the root, then release ``fd``."""
        if parts:
            with open_dirs(self._fd, parts) as opened:
                fresh = os.dup(opened)
        else:
            fresh = self._fd
        self._release(fd)
        return fresh

    def _release(self, fd: int) -> None:
        if fd != self._fd:
            os.close(fd)
