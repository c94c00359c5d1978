"""The read-only built-ins: read_file, list_dir, search_text."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any, ClassVar

import re2

from toolcycle.builtins._workspace import NotTextError, WorkspaceError, WorkspaceTool

if TYPE_CHECKING:
    from pathlib import Path

    from toolcycle import ToolExecutionContext

__all__ = ["ListDir", "ReadFile", "SearchText", "read_text"]

_SNIFF_BYTES = 8192


def read_text(path: Path, shown: str, max_bytes: int) -> str:
    """Read a UTF-8 text file, refusing missing, oversized and binary files clearly."""
    if not path.exists():
        raise FileNotFoundError(f"{shown} does not exist")
    if not path.is_file():
        raise WorkspaceError(f"{shown} is not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise WorkspaceError(f"{shown} is {size} bytes, over the limit of {max_bytes}")
    data = path.read_bytes()
    if b"\0" in data[:_SNIFF_BYTES]:
        raise NotTextError(f"{shown} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(f"{shown} is not valid UTF-8 (byte {exc.start})") from None


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
        target = self.resolve(workspace, params["path"])
        text = read_text(target, params["path"], self.max_bytes)
        lines = text.splitlines(keepends=True)
        offset = params.get("offset", 0)
        limit = params.get("limit")
        window = lines[offset : None if limit is None else offset + limit]
        return {
            "path": self.relative(workspace, target),
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
        shown = params.get("path", ".")
        root = self.resolve(workspace, shown)
        if not root.is_dir():
            raise WorkspaceError(f"{shown} is not a directory")
        pattern = params.get("pattern")
        walker = root.rglob("*") if params.get("recursive") else root.iterdir()
        entries: list[dict[str, Any]] = []
        truncated = False
        for entry in sorted(walker):
            if pattern and not fnmatch.fnmatch(entry.name, pattern):
                continue
            try:
                self.resolve(workspace, str(entry))
            except WorkspaceError:
                continue  # a symlink leading outside is not listed
            if len(entries) == self.max_entries:
                truncated = True
                break
            is_dir = entry.is_dir()
            entries.append(
                {
                    "path": self.relative(workspace, entry),
                    "type": "dir" if is_dir else "file",
                    "size": 0 if is_dir else entry.stat().st_size,
                }
            )
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
    except UnicodeEncodeError:
        raise WorkspaceError("the query holds a lone surrogate, which no text file holds") from None


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
        shown = params.get("path", ".")
        root = self.resolve(workspace, shown)
        matcher = _matcher(params["query"], regex=bool(params.get("regex")))
        limit = params.get("max_results", 100)
        pattern = params.get("pattern")
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        matches: list[dict[str, Any]] = []
        for path in files:
            if pattern and not fnmatch.fnmatch(path.name, pattern):
                continue
            try:
                target = self.resolve(workspace, str(path))
                text = read_text(target, str(path), self.max_bytes)
            except (WorkspaceError, OSError):
                continue  # binary, oversized or outside files are skipped
            for number, line in enumerate(text.splitlines(), start=1):
                if len(line) <= self.max_line_length and matcher.search(line):
                    matches.append(
                        {"path": self.relative(workspace, target), "line": number, "text": line}
                    )
                    if len(matches) == limit:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}
