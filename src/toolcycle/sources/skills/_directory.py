"""`SkillDirectory`: a folder of Agent Skills folders as one tool source.

Each scan walks the folder for skill folders (its direct subfolders, or at any
depth, following links but counting every folder visited against
``SkillLimits.max_folders``), makes a `Skill` of each, and reports the ones that
break a rule or repeat a name instead of registering them, with a warning or,
when ``strict``, an error. It also renders the ``<available_skills>`` block of
the valid skills for an agent's system prompt.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcycle import ToolSkippedWarning
from toolcycle.sources._warn import warn_at_caller
from toolcycle.sources.skills._frontmatter import skill_file
from toolcycle.sources.skills._limits import SkillLimits
from toolcycle.sources.skills._prompt import render_prompt
from toolcycle.sources.skills._rules import InvalidSkillWarning, SkillReport, SkillValidationError
from toolcycle.sources.skills._scripts import checked_env
from toolcycle.sources.skills._source import Skill

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolInstance

__all__ = ["SkillDirectory"]

_log = logging.getLogger("toolcycle.skills")


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
