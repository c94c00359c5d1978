"""`Skill` and `SkillDirectory`: Agent Skills folders as tool sources."""

from __future__ import annotations

import logging
import os
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcycle import ToolSkippedWarning
from toolcycle.sources._warn import warn_at_caller
from toolcycle.sources.skills._files import real_inside
from toolcycle.sources.skills._frontmatter import FrontMatterError, read_front_matter, skill_file
from toolcycle.sources.skills._limits import SkillLimits
from toolcycle.sources.skills._prompt import render_prompt
from toolcycle.sources.skills._rules import (
    InvalidSkillWarning,
    SkillReport,
    SkillValidationError,
    check_fields,
)
from toolcycle.sources.skills._scripts import checked_env
from toolcycle.sources.skills._tools import ScriptTool, SkillTool

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolInstance

__all__ = ["Skill", "SkillDirectory"]

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


class SkillDirectory:
    """A folder of skill folders (or one skill folder) as a tool source.

    Each `tools()` call (that is, each ``runtime.register_source``) scans the
    folder afresh. A skill that breaks a rule is not registered: it is
    reported in `reports` and with an `InvalidSkillWarning` saying which
    skill, which rule and what to change, and the others register, unless
    ``strict`` is set.

    Args:
        path: the folder; a relative one is made absolute now, from the
            current working folder.
        recursive: find skills at any depth (a skill's own folder is not
            searched further); otherwise each direct subfolder is a skill, and
            one without ``SKILL.md`` is reported.
        strict: raise `SkillValidationError` instead of skipping invalid skills,
            and when a recursive scan stops at ``SkillLimits.max_folders``.
        scripts: offer each skill's ``run_script`` tool (see `Skill`).
        env: variables added to the environment scripts run with.
        limits: the caps; `SkillLimits` defaults if None.
        defer_loading: keep every skill's tools out of a model's definitions
            until a tool search finds them (see docs/tool-search.md).

    Raises:
        NotADirectoryError: ``path`` is not a folder.
        TypeError: a name or value of ``env`` is not text.
        ValueError: a name of ``env`` is empty or holds ``=`` or a NUL, or a value a NUL.
    """

    __slots__ = ("_options", "_skills", "defer_loading", "path", "recursive", "reports", "strict")

    reports: tuple[SkillReport, ...]
    """Everything the last scan found wrong, errors and warnings, in folder order."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        recursive: bool = False,
        strict: bool = False,
        scripts: bool = False,
        env: Mapping[str, str] | None = None,
        limits: SkillLimits | None = None,
        defer_loading: bool = False,
    ) -> None:
        # Absolute now, so that a later rescan reads this folder whatever the
        # working folder is then; links are kept, as their names name skills.
        self.path = Path(os.path.abspath(path))
        if not self.path.is_dir():
            raise NotADirectoryError(f"the skills folder {str(self.path)!r} is not a directory")
        self.recursive = recursive
        self.strict = strict
        self.defer_loading = defer_loading
        env = checked_env(env)
        self._options: dict[str, Any] = {"scripts": scripts, "env": env, "limits": limits}
        self._skills: list[Skill] | None = None
        self.reports = ()

    def __repr__(self) -> str:
        return f"SkillDirectory({str(self.path)!r}, recursive={self.recursive})"

    @property
    def skills(self) -> list[Skill]:
        """The valid skills of the last scan (scanning now if there was none).

        Empty after a ``strict`` scan that failed: it registered nothing.
        """
        return self._skills if self._skills is not None else self.scan()

    def scan(self) -> list[Skill]:
        """Read every skill's front matter; return the valid skills by folder.

        Raises:
            SkillValidationError: ``strict`` is set and some skill is invalid, or
                the scan stopped at ``SkillLimits.max_folders``.
        """
        skills: list[Skill] = []
        reports: list[SkillReport] = []
        # By the NFKC form the rules compare names in: "café" typed two ways, or
        # "ﬁx" and "fix", would be two tools that read as one.
        seen: dict[str, Skill] = {}
        folders, stopped = self._folders()
        if stopped is not None:
            reports.append(stopped)
            note = f"skills folder {str(self.path)!r}: {stopped.message}; {stopped.hint}"
            _log.warning("%s", note)
            if not self.strict:
                warn_at_caller(ToolSkippedWarning(note))
        for folder in folders:
            try:
                skill = Skill(folder, **self._options)
            except SkillValidationError as error:
                reports.extend(error.reports)
                if not self.strict:
                    warn_at_caller(InvalidSkillWarning(error.reports))
                continue
            key = unicodedata.normalize("NFKC", skill.name)
            if key in seen:
                first = seen[key]
                same = "" if first.name == skill.name else f" (written {first.name!r} there)"
                duplicate = SkillReport(
                    skill.path,
                    "name-duplicate",
                    f"the name {skill.name!r} is also the name of {str(first.path)!r}{same}",
                    "rename one of the two skills (and its folder)",
                )
                reports.append(duplicate)
                if not self.strict:
                    warn_at_caller(InvalidSkillWarning([duplicate]))
                continue
            seen[key] = skill
            reports.extend(skill.reports)
            skills.append(skill)
        self.reports = tuple(reports)
        if self.strict and any(report.severity == "error" for report in reports):
            # Nothing registers from this scan, so nothing of the one before is listed either.
            self._skills = []
            raise SkillValidationError(reports)
        self._skills = skills
        return skills

    def tools(self) -> list[ToolInstance]:
        """Scan, then every valid skill's tools, by folder.

        Raises:
            SkillValidationError: ``strict`` is set and some skill is invalid.
        """
        return [tool for skill in self.scan() for tool in skill.tools()]

    def prompt(self) -> str:
        """The ``<available_skills>`` block for an agent's system prompt.

        One ``<skill>`` element per valid skill of the last scan, with its name,
        description and the location of its ``SKILL.md``, escaped for XML, and
        control characters stripped from the description and location (see
        ``_prompt``). After a ``strict`` scan that failed, the block lists no skill.
        """
        return render_prompt(self.skills)

    def _folders(self) -> tuple[list[Path], SkillReport | None]:
        """The candidate skill folders under `path`, sorted; and why the walk stopped early."""
        if skill_file(self.path) is not None:
            return [self.path], None
        if not self.recursive:
            return sorted(
                entry
                for entry in self.path.iterdir()
                if entry.is_dir() and not entry.name.startswith(".")
            ), None
        found: list[Path] = []
        visited: set[str] = set()  # real paths: a symlink loop or alias is walked once
        # Links are followed (a skills folder may link to skills kept elsewhere), so
        # a link to "/" would walk the whole disk: every path visited counts.
        most = (self._options["limits"] or SkillLimits()).max_folders
        walked = 0
        for folder, subfolders, _ in os.walk(self.path, followlinks=True):
            walked += 1
            if walked > most + 1:  # the top folder is not counted
                return sorted(found), _stopped(self.path, most, self.strict)
            real = os.path.realpath(folder)
            if real in visited:
                subfolders[:] = []
                continue
            visited.add(real)
            here = Path(folder)
            if here != self.path and skill_file(here) is not None:
                found.append(here)
                subfolders[:] = []  # a skill's own folders are its files, not skills
            else:
                # Real folders before links, then by name: of two paths to one folder,
                # the real one counts where they meet, else the first in path order.
                subfolders[:] = sorted(
                    (name for name in subfolders if not name.startswith(".")),
                    key=lambda name: (os.path.islink(os.path.join(folder, name)), name),
                )
        return sorted(found), None


def _stopped(top: Path, most: int, strict: bool) -> SkillReport:
    """The report of a walk cut short: an error for a strict scan, which promises every skill."""
    return SkillReport(
        top,
        "scan-truncated",
        f"the scan stopped after {most:,} folders (SkillLimits.max_folders), so skills "
        "further on were not looked for",
        "raise SkillLimits(max_folders=...) if the folder holds that many, or remove the "
        "links that lead out of it",
        severity="error" if strict else "warning",
    )


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
