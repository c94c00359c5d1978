"""Reading a ``SKILL.md``: the YAML front matter without the body, and the body later.

Discovery must stay fast for folders of large skills, so `read_front_matter`
reads the file in chunks and stops at the line that closes the front matter;
the Markdown body is read only when a skill is activated (`read_body`). The
front matter found is parsed by `toolcycle.sources.skills._yaml_subset`, which
holds the YAML rules and `FrontMatterError`.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Any

from toolcycle.sources.skills._files import open_regular, read_capped
from toolcycle.sources.skills._yaml_subset import FrontMatterError, parse_yaml

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["read_body", "read_front_matter", "skill_file"]

_CHUNK = 8192
# The hint when the SKILL.md read at discovery can no longer be read at activation.
_CHANGED = (
    "it changed since the skill was registered; put it back, or register the skill's source again"
)
_BOMS = {
    codecs.BOM_UTF8: "UTF-8 with a byte-order mark",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}
# The front matter opens with a line "---" and closes at the next such line;
# trailing blanks are allowed, except a tab on the opening line, which StrictYAML
# (handed the rest of that line by the reference library) refuses.
_OPENING = re.compile(rb"--- *(?:\n|\Z)")
_CLOSING = re.compile(rb"^---[ \t]*(?:\n|\Z)", re.MULTILINE)


def skill_file(folder: Path) -> Path | None:
    """The skill's ``SKILL.md``, or its lowercase ``skill.md``; None if it has neither.

    The first name that exists wins even if it is not a file (a folder
    ``SKILL.md`` hides a file ``skill.md``), as in the reference library.
    """
    for name in ("SKILL.md", "skill.md"):
        candidate = folder / name
        if candidate.exists():
            return candidate
    return None


def read_front_matter(file: Path, *, max_bytes: int) -> dict[str, Any]:
    """Parse the front matter of ``file``, reading no further than its closing line.

    Args:
        file: the ``SKILL.md``.
        max_bytes: how far to read looking for the closing line before giving up.

    Returns:
        The YAML mapping: string keys; strings, lists and mappings as values.

    Raises:
        FrontMatterError: the file is not a regular file or not UTF-8, has no
            front matter, or its YAML is invalid, refused (see the module
            docstring) or not a mapping.
        OSError: the file cannot be read.
    """
    # The search runs on bytes: "---" and newlines are ASCII, which UTF-8 never
    # uses inside a multi-byte character, so only the front matter is decoded.
    data = b""
    held_cr = False  # a "\r" at a chunk's end may be half of "\r\n"
    opened = open_regular(file)
    if opened is None:
        raise FrontMatterError(
            "file-missing",
            f"{file.name} is not a regular file",
            f"make {file.name} a file holding the front matter and instructions",
        )
    with opened as stream:
        while True:
            chunk = stream.read(_CHUNK)
            if not data and not held_cr:
                _check_bom(chunk)
            at_eof = not chunk
            if held_cr:
                chunk = b"\r" + chunk
            held_cr = chunk.endswith(b"\r") and not at_eof
            if held_cr:
                chunk = chunk[:-1]
            data += _unix_newlines(chunk)
            found = _split(data, at_eof=at_eof)
            # Where the front matter ends, or how far the search has read: a chunk may
            # carry a closing line from past the limit, and that line counts as missing.
            if (len(data) if found is None else found[3]) > max_bytes:
                raise _too_large(max_bytes)
            if found is not None:
                return parse_yaml(_decode(found[0], offset=found[2]))
            if at_eof:
                raise _unclosed()


def read_body(file: Path, *, max_bytes: int) -> str:
    """The Markdown after the front matter, with Unix newlines and without surrounding blanks.

    Args:
        file: the real path of the ``SKILL.md``.
        max_bytes: the largest ``SKILL.md`` to read (`SkillLimits.max_file_bytes`).

    Raises:
        FrontMatterError: the file is no longer UTF-8 or has lost its front matter.
        SkillFileError: the file is missing, not a regular file, unreadable or
            larger than ``max_bytes``.
    """
    data = read_capped(file, file.name, max_bytes=max_bytes, limit="max_file_bytes", hint=_CHANGED)
    _check_bom(data)
    data = _unix_newlines(data)
    found = _split(data, at_eof=True)
    if found is None:
        raise _unclosed()
    return _without_blank_lines_around(_decode(found[1], offset=found[3]))


def _without_blank_lines_around(text: str) -> str:
    """``text`` without its leading and trailing blank lines.

    The first line keeps its indentation: in Markdown it may make a code block.
    """
    content = text.lstrip()
    if not content:
        return ""
    start = text.rfind("\n", 0, len(text) - len(content)) + 1
    return text[start:].rstrip()


def _decode(data: bytes, *, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(offset + exc.start) from None


def _split(data: bytes, *, at_eof: bool) -> tuple[bytes, bytes, int, int] | None:
    """(YAML, body, start of YAML, start of body) once ``data`` holds the front matter.

    Returns None while more of the file is needed to tell.

    Raises:
        FrontMatterError: the data does not open with a line ``---``.
    """
    if not data.startswith(b"---") and (at_eof or len(data) >= 3):
        raise FrontMatterError(
            "frontmatter-missing",
            "SKILL.md does not start with a line '---' opening its YAML front matter",
            "put the fields between a line '---' at the very top and a second line '---'",
        )
    opening = _OPENING.match(data)
    if opening is None:
        if b"\n" in data or at_eof:
            raise FrontMatterError(
                "frontmatter-missing",
                "the first line of SKILL.md must be '---' alone",
                "put the fields on the lines after the opening '---', not on it",
            )
        return None
    closing = _CLOSING.search(data, opening.end())
    if closing is None or (closing.end() == len(data) and not at_eof and data[-1:] != b"\n"):
        # A "---" at the very end of what was read so far may yet become "----".
        return None
    start, end = opening.end(), closing.end()
    return data[start : closing.start()], data[end:], start, end


def _unix_newlines(data: bytes) -> bytes:
    # Universal newlines, as Python's text mode reads the file for the reference library.
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _check_bom(head: bytes) -> None:
    for bom, what in _BOMS.items():
        if head.startswith(bom):
            raise FrontMatterError(
                "encoding",
                f"SKILL.md is saved as {what}, so it does not start with '---'",
                "save it as UTF-8 without a byte-order mark",
            )


def _not_utf8(offset: int) -> FrontMatterError:
    return FrontMatterError(
        "encoding",
        f"SKILL.md is not valid UTF-8 (at byte {offset})",
        "save it as UTF-8",
    )


def _too_large(max_bytes: int) -> FrontMatterError:
    return FrontMatterError(
        "frontmatter-too-large",
        f"no line '---' closes the front matter within its first {max_bytes} bytes",
        "close the front matter with a line '---' after the last field, or raise "
        "SkillLimits(max_front_matter_bytes=...) to allow a longer one",
    )


def _unclosed() -> FrontMatterError:
    return FrontMatterError(
        "frontmatter-unclosed",
        "no line '---' closes the YAML front matter",
        "add a line '---' after the last field, before the instructions",
    )
