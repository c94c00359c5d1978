"""`Skill`: one Agent Skills folder as a tool source, read from its front matter.

Creating a `Skill` reads the folder's ``SKILL.md`` front matter (``_read``),
checks it against the specification's rules, and keeps the values that the
specification restricts but the reference library accepts in a reduced form,
each with a warning report. `SkillDirectory` (``_directory``) makes one per
skill folder it finds.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcycle.sources.skills._files import real_inside
from toolcycle.sources.skills._frontmatter import read_front_matter, skill_file
from toolcycle.sources.skills._limits import SkillLimits
from toolcycle.sources.skills._rules import SkillReport, SkillValidationError, check_fields
from toolcycle.sources.skills._scripts import checked_env
from toolcycle.sources.skills._tools import ScriptTool, SkillTool
from toolcycle.sources.skills._yaml_subset import FrontMatterError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolInstance

__all__ = ["Skill"]

_log = logging.getLogger("toolcycle.skills")


class Skill:
    """One skill folder as a tool source; reads its front matter when created.

    The skill becomes a read-only tool named after it whose description is the
    skill's; with ``scripts=True`` and a ``scripts/`` folder, also a tool
    ``<name>.run_script``.

    Values the specification restricts but the reference library accepts are
    kept in a reduced form with a warning report (in `reports`, and logged on
    ``toolcycle.skills``): a ``license`` that is not text is dropped, as are
    ``metadata`` that is not a mapping and its entries whose value is not text,
    and ``allowed-tools`` entries that are not text.

    Args:
        path: the folder holding ``SKILL.md`` (or ``skill.md``).
        scripts: offer the ``run_script`` tool. Off by default: scripts are
            arbitrary code.
        env: variables added to the small environment scripts run with.
        limits: the caps; `SkillLimits` defaults if None.

    Raises:
        SkillValidationError: the skill breaks a rule of the specification.
        TypeError: a name or value of ``env`` is not text.
        ValueError: a name of ``env`` is empty or holds ``=`` or a NUL, or a value a NUL.
    """

    __slots__ = (
        "_env",
        "allowed_tools",
        "compatibility",
        "description",
        "license",
        "limits",
        "location",
        "metadata",
        "name",
        "path",
        "reports",
        "scripts",
    )

    name: str
    description: str
    license: str | None
    compatibility: str | None
    metadata: dict[str, str]
    allowed_tools: tuple[str, ...] | None
    """The parsed ``allowed-tools`` field; None when the skill has none."""
    path: Path
    """The skill's folder, resolved."""
    location: Path
    """Its ``SKILL.md``."""
    reports: tuple[SkillReport, ...]
    """Warnings about values kept in a reduced form."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        scripts: bool = False,
        env: Mapping[str, str] | None = None,
        limits: SkillLimits | None = None,
    ) -> None:
        self.limits = limits or SkillLimits()
        self.scripts = scripts
        self._env = checked_env(env)
        # Absolute, so that "." or "skills/notes/.." has the folder's name for the
        # name check; made so without following symlinks, as a linked folder's name
        # is the link's in a SkillDirectory too.
        folder = Path(os.path.abspath(path))
        fields, location, errors = _read(folder, self.limits)
        if errors:
            raise SkillValidationError(errors)
        self.path = folder.resolve()
        self.location = self.path / location.name
        self.name = fields["name"].strip()
        self.description = fields["description"].strip()
        self.compatibility = fields.get("compatibility")
        notes: list[SkillReport] = []
        self.license = _text_or_none(fields, "license", folder, notes)
        self.metadata = _metadata(fields.get("metadata"), folder, notes)
        self.allowed_tools = _allowed_tools(fields.get("allowed-tools"), folder, notes)
        for note in notes:
            _log.warning("%s", note)
        self.reports = tuple(notes)

    def __repr__(self) -> str:
        return f"Skill({self.name!r}, path={str(self.path)!r})"

    def annotations(self) -> dict[str, Any]:
        """The descriptor annotations: ``location`` and the optional fields present."""
        notes: dict[str, Any] = {"location": str(self.location)}
        if self.license is not None:
            notes["license"] = self.license
        if self.compatibility is not None:
            notes["compatibility"] = self.compatibility
        if self.metadata:
            notes["metadata"] = dict(self.metadata)
        if self.allowed_tools is not None:
            notes["allowed-tools"] = list(self.allowed_tools)
        return notes

    def tools(self) -> list[ToolInstance]:
        """The skill's tool, and its ``run_script`` tool when scripts are enabled."""
        found: list[ToolInstance] = [SkillTool(self)]
        if self.scripts and (self.path / "scripts").is_dir():
            found.append(ScriptTool(self, self._env))
        return found


def _read(folder: Path, limits: SkillLimits) -> tuple[dict[str, Any], Path, list[SkillReport]]:
    """The fields and ``SKILL.md`` of ``folder``, or the errors that make it invalid."""

    def fail(rule: str, message: str, hint: str) -> tuple[dict[str, Any], Path, list[SkillReport]]:
        return {}, folder, [SkillReport(folder, rule, message, hint)]

    if not folder.is_dir():
        return fail("folder-missing", "the skill folder does not exist", "check the path")
    location = skill_file(folder)
    if location is None:
        return fail(
            "file-missing",
            "the folder has no SKILL.md",
            "add a SKILL.md with name and description, or move the folder out",
        )
    if not location.is_file():
        return fail(
            "file-missing",
            f"{location.name} is not a regular file",
            f"make {location.name} a file holding the front matter and instructions",
        )
    real = real_inside(folder.resolve(), location)
    if real is None:
        return fail(
            "file-outside",
            f"{location.name} is a symlink to a file outside the skill's folder",
            f"put the {location.name} itself in the folder, or link to a file inside it",
        )
    try:
        fields = read_front_matter(real, max_bytes=limits.max_front_matter_bytes)
    except FrontMatterError as exc:
        return fail(exc.rule, str(exc), exc.hint)
    except OSError as exc:
        return fail("file-unreadable", f"SKILL.md cannot be read: {exc}", "check its permissions")
    return fields, location, check_fields(fields, folder)


def _text_or_none(
    fields: dict[str, Any], key: str, folder: Path, notes: list[SkillReport]
) -> str | None:
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    notes.append(_warning(folder, key, f"the field {key!r} is not text, so it is ignored"))
    return None


def _metadata(value: Any, folder: Path, notes: list[SkillReport]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        notes.append(_warning(folder, "metadata", "'metadata' is not a mapping, so it is ignored"))
        return {}
    kept = {key: item for key, item in value.items() if isinstance(item, str)}
    dropped = sorted(set(value) - set(kept))
    if dropped:
        names = ", ".join(repr(key) for key in dropped)
        notes.append(_warning(folder, "metadata", f"metadata {names} are not text, so ignored"))
    return kept


def _allowed_tools(value: Any, folder: Path, notes: list[SkillReport]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _split_allowed(value)
    items = value if isinstance(value, list) else [value]
    kept = tuple(item.strip() for item in items if isinstance(item, str) and item.strip())
    if len(kept) != len(items):
        notes.append(
            _warning(
                folder, "allowed-tools", "entries of 'allowed-tools' that are not text are ignored"
            )
        )
    return kept


def _split_allowed(text: str) -> tuple[str, ...]:
    """Cut allowed-tools text at its spaces, except inside parentheses.

    So ``Bash(git log:*) Read`` is two patterns, and ``Bash(echo (a) b)`` one.
    One pass over the text: a pattern search for each ``(`` that never closes
    would make a long value cost its length squared.
    """
    patterns: list[str] = []
    start, depth = None, 0
    for index, char in enumerate(text):
        if char.isspace() and depth == 0:
            if start is not None:
                patterns.append(text[start:index])
                start = None
            continue
        if start is None:
            start = index
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
    if start is not None:
        patterns.append(text[start:])
    return tuple(patterns)


def _warning(folder: Path, field: str, message: str) -> SkillReport:
    return SkillReport(
        folder,
        f"{field}-type",
        message,
        f"write {field!r} as the specification says (text, or for metadata text values)",
        severity="warning",
    )
