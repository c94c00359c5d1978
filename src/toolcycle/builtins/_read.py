"""The read-only built-ins: read_file, list_dir, search_text."""

from __future__ import annotations

import fnmatch
import stat
from typing import TYPE_CHECKING, Any, ClassVar

import re2

from toolcycle._nofollow import ConfinementError, Parts, shown
from toolcycle.builtins._workspace import NotTextError, WorkspaceError, WorkspaceTool

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterator

    from toolcycle import ToolExecutionContext
    from toolcycle._confined import ConfinedRoot

__all__ = ["ListDir", "ReadFile", "SearchText", "read_text"]

_SNIFF_BYTES = 8192


def read_text(root: ConfinedRoot, parts: Parts, max_bytes: int) -> str:
    """Read a UTF-8 text file, refusing missing, oversized, linked and binary files clearly."""
    info = root.lstat(parts)
    if info is None:
        raise FileNotFoundError(f"{shown(parts)} does not exist")
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{shown(parts)} is not a file")
    data = root.read_bytes(parts, max_bytes)
    if b"\0" in data[:_SNIFF_BYTES]:
        raise NotTextError(f"{shown(parts)} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(f"{shown(parts)} is not valid UTF-8 (byte {exc.start})") from None


def _lines(text: str) -> list[str]:
    r"""The lines of ``text``, each with its ``\n``, counted as grep and editors count them.

    Only ``\n`` ends a line (``\r\n`` ends one too). ``str.splitlines`` also breaks at
    form feeds, U+2028 and other separators, which would number lines unlike every
    other tool and cut a line in two in a window of ``read_file``.
    """
    lines = text.split("\n")
    last = lines.pop()
    kept = [line + "\n" for line in lines]
    if last:
        kept.append(last)
    return kept


def _text_name(name: str) -> bool:
    """Whether a name read from the disk is valid UTF-8, so a call can name it.

    Python gives the bytes of any other name as lone surrogates, which no JSON
    answer may hold and no call may send back.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _followed(
    root: ConfinedRoot, parts: Parts, info: os.stat_result
) -> tuple[Parts, os.stat_result] | None:
    """An entry, or where its link leads with what is there; None for links out or to nothing.

    A link whose target has a name that is not valid UTF-8 leads nowhere a call can name.
    """
    if not stat.S_ISLNK(info.st_mode):
        return parts, info
    try:
        target = root.resolve(shown(parts))
    except ConfinementError:
        return None  # a link leading outside (or in a loop) is left out
    if not all(map(_text_name, target)):
        return None
    found = root.lstat(target)
    return None if found is None else (target, found)


class ReadFile(WorkspaceTool):
    """Read a text file, optionally a window of its lines."""

    name = "read_file"
    description = "Read a UTF-8 text file in the workspace, optionally from a line offset."
    writes = False
    properties: ClassVar[dict[str, Any]] = {
        "path": {"type": "string", "description": "File path inside the workspace."},
        "offset": {"type": "integer", "minimum": 0, "description": "First line (0-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."},
    }
    required = ("path",)

    def __init__(self, *, max_bytes: int = 1_000_000) -> None:
        self.max_bytes = max_bytes

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Return the text (or the requested lines) and how many lines the file has."""
        workspace = self.workspace(params, ctx)
        with self._opened(workspace) as root:
            target = root.resolve(params["path"])
            text = read_text(root, target, self.max_bytes)
        lines = _lines(text)
        offset = params.get("offset", 0)
        limit = params.get("limit")
        window = lines[offset : None if limit is None else offset + limit]
        return {
            "path": shown(target),
            "content": "".join(window),
            "total_lines": len(lines),
            "truncated": offset > 0 or (limit is not None and offset + limit < len(lines)),
        }


class ListDir(WorkspaceTool):
    """List a directory, optionally recursively and filtered by a glob."""

    name = "list_dir"
    description = "List files and folders in a workspace directory."
    writes = False
    properties: ClassVar[dict[str, Any]] = {
        "path": {"type": "string", "description": "Directory inside the workspace."},
        "pattern": {"type": "string", "description": "Glob on names, such as '*.py'."},
        "recursive": {"type": "boolean"},
    }

    def __init__(self, *, max_entries: int = 1000) -> None:
        self.max_entries = max_entries

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Return the entries, sorted by path, and whether the cap cut them short."""
        workspace = self.workspace(params, ctx)
        with self._opened(workspace) as root:
            base = root.resolve(params.get("path", "."))
            info = root.lstat(base)
            if info is None or not stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f"{shown(base)} is not a directory")
            return self._list(root, base, params, ctx.call_token.check)

    def _list(
        self, root: ConfinedRoot, base: Parts, params: dict[str, Any], check: Callable[[], None]
    ) -> dict[str, Any]:
        pattern = params.get("pattern")
        entries: list[dict[str, Any]] = []
        truncated = False
        recursive = bool(params.get("recursive"))
        for here, info in root.scan(base, recursive=recursive, keep=_text_name):
            check()  # a walk of a large tree stops once its call is given up on
            if pattern and not fnmatch.fnmatch(here[-1], pattern):
                continue
            followed = _followed(root, here, info)
            if followed is None:
                continue
            if len(entries) == self.max_entries:
                truncated = True
                break
            target, found = followed
            is_dir = stat.S_ISDIR(found.st_mode)
            entry: dict[str, Any] = {
                "path": shown(here),
                "type": "dir" if is_dir else "file",
                "size": 0 if is_dir else found.st_size,
            }
            if target != here:  # only a link leads elsewhere; say so, and where
                entry["link"] = True
                entry["target"] = shown(target)
            entries.append(entry)
        return {"entries": entries, "truncated": truncated}


def _matcher(query: str, *, regex: bool) -> Any:
    """The RE2 program for a search query, which matches in time linear in each line.

    RE2 never backtracks, so no regular expression a model sends (``^(a+)+$``,
    say) can hold the call for longer than reading the files takes.

    Raises:
        WorkspaceError: the query is not a regular expression RE2 can run.
    """
    options = re2.Options()
    options.log_errors = False  # RE2 writes its errors to stderr otherwise
    options.never_capture = True
    options.literal = not regex
    try:
        return re2.compile(query, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise WorkspaceError(
            f"the query is not a regular expression RE2 can run ({detail}); RE2 matches in "
            "linear time, so it has no backreferences and no lookaround"
        ) from None


class SearchText(WorkspaceTool):
    """Search text files for a literal string or a regular expression (RE2 syntax)."""

    name = "search_text"
    description = "Search the workspace's text files for a string or regular expression."
    writes = False
    properties: ClassVar[dict[str, Any]] = {
        "query": {"type": "string", "minLength": 1},
        "regex": {
            "type": "boolean",
            "description": "Treat query as a regular expression (RE2 syntax: no backreferences or lookaround).",
        },
        "path": {"type": "string", "description": "Directory or file to search."},
        "pattern": {"type": "string", "description": "Glob on file names, such as '*.md'."},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 10_000},
    }
    required = ("query",)

    def __init__(self, *, max_bytes: int = 1_000_000, max_line_length: int = 10_000) -> None:
        self.max_bytes = max_bytes
        self.max_line_length = max_line_length

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """Return matching lines with their file and 1-based line number."""
        workspace = self.workspace(params, ctx)
        matcher = _matcher(params["query"], regex=bool(params.get("regex")))
        with self._opened(workspace) as root:
            base = root.resolve(params.get("path", "."))
            return self._search(root, base, matcher, params, ctx.call_token.check)

    def _search(
        self,
        root: ConfinedRoot,
        base: Parts,
        matcher: Any,
        params: dict[str, Any],
        check: Callable[[], None],
    ) -> dict[str, Any]:
        limit = params.get("max_results", 100)
        matches: list[dict[str, Any]] = []
        for target in self._files(root, base, params.get("pattern")):
            check()  # a search of a large tree stops once its call is given up on
            try:
                text = read_text(root, target, self.max_bytes)
            except (WorkspaceError, ConfinementError, OSError):
                continue  # binary, oversized, hard-linked or vanished files are skipped
            for number, ended in enumerate(_lines(text), start=1):
                line = ended.removesuffix("\n").removesuffix("\r")
                if len(line) <= self.max_line_length and matcher.search(line):
                    matches.append({"path": shown(target), "line": number, "text": line})
                    if len(matches) == limit:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}

    def _files(self, root: ConfinedRoot, base: Parts, pattern: str | None) -> Iterator[Parts]:
        """The regular files to search, each once: ``base`` itself, or those under it, in order.

        A file the walk meets by its own name is searched there, and links to it are
        passed over. A file it meets only through links (it lies outside ``base``, or
        the glob leaves its own name out) is searched where the first of them is met.
        """
        info = root.lstat(base)
        if info is not None and stat.S_ISREG(info.st_mode):
            if not pattern or fnmatch.fnmatch(base[-1], pattern):
                yield base
            return
        if info is None or not stat.S_ISDIR(info.st_mode):
            return
        linked: set[Parts] = set()  # files already searched in place of a link
        for here, entry in root.scan(base, recursive=True, keep=_text_name):
            if pattern and not fnmatch.fnmatch(here[-1], pattern):
                continue
            followed = _followed(root, here, entry)
            if followed is None or not stat.S_ISREG(followed[1].st_mode):
                continue
            target = followed[0]
            if target == here:
                yield here
            elif not _walked(target, base, pattern) and target not in linked:
                linked.add(target)
                yield target


def _walked(target: Parts, base: Parts, pattern: str | None) -> bool:
    """Whether a walk of ``base`` meets the file ``target`` (links resolved) by its own name."""
    below = len(target) > len(base) and target[: len(base)] == base
    return below and (not pattern or fnmatch.fnmatch(target[-1], pattern))
