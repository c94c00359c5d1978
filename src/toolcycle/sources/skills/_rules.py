"""The field rules of the Agent Skills specification, and what breaking one looks like.

The limits and checks are the specification's, applied in the reference
library's (``skills-ref``) order and with its exact semantics, so that the two
agree on which skills are valid: the name is stripped and NFKC-normalised before
its checks, "letters and digits" means Python's Unicode ``str.isalnum``, and the
description's length counts the text as written.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolcycle import ToolRegistrationError, ToolSkippedWarning

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    _Report = Callable[[str, str, str], None]

__all__ = [
    "FIELDS",
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "InvalidSkillWarning",
    "SkillReport",
    "SkillValidationError",
    "check_fields",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
FIELDS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})


@dataclass(frozen=True, slots=True)
class SkillReport:
    """One thing wrong with one skill folder.

    Attributes:
        path: the skill's folder.
        rule: a short stable name for what is wrong, such as ``"name-lowercase"``
            (the rules are listed on the Agent Skills page of the docs).
        message: what is wrong, naming the values involved.
        hint: what to change.
        severity: ``"error"`` makes the skill invalid, so it is not registered;
            ``"warning"`` is a value the skill keeps in a reduced form (see
            `Skill` for which).
    """

    path: Path
    rule: str
    message: str
    hint: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        return f"skill {self.path.name!r} ({self.path}): {self.message} [{self.rule}]; {self.hint}"


class SkillValidationError(ToolRegistrationError):
    """Skills are invalid and ``strict=True`` was asked for, or one `Skill` is invalid.

    Attributes:
        reports: every error found, in folder order.
    """

    def __init__(self, reports: Sequence[SkillReport]) -> None:
        errors = [report for report in reports if report.severity == "error"]
        count = f"{len(errors)} problem" + ("" if len(errors) == 1 else "s")
        super().__init__(f"{count} in skills:\n" + "\n".join(f"  {r}" for r in errors))
        self.reports = tuple(errors)


class InvalidSkillWarning(ToolSkippedWarning):
    """A skill was not registered; the message says which, why and what to change.

    Attributes:
        reports: the skill's errors.
    """

    def __init__(self, reports: Sequence[SkillReport]) -> None:
        path = reports[0].path
        problems = "; ".join(f"{r.message} [{r.rule}]: {r.hint}" for r in reports)
        super().__init__(f"skill {path.name!r} ({path}) was not registered: {problems}")
        self.reports = tuple(reports)


def check_fields(fields: dict[str, Any], folder: Path) -> list[SkillReport]:
    """Every rule ``fields`` (a parsed front matter) breaks for the skill in ``folder``."""
    reports: list[SkillReport] = []

    def report(rule: str, message: str, hint: str) -> None:
        reports.append(SkillReport(folder, rule, message, hint))

    unknown = sorted(set(fields) - FIELDS)
    if unknown:
        report(
            "field-unknown",
            f"unknown front-matter field{'s' if len(unknown) > 1 else ''} "
            + ", ".join(repr(name) for name in unknown),
            f"keep to {', '.join(sorted(FIELDS))}; put anything else under metadata",
        )
    if "name" not in fields:
        report("name-missing", "the field 'name' is missing", "add 'name: <folder name>'")
    else:
        _check_name(fields["name"], folder, report)
    if "description" not in fields:
        report(
            "description-missing",
            "the field 'description' is missing",
            "add a description of what the skill does and when to use it",
        )
    else:
        _check_description(fields["description"], report)
    if "compatibility" in fields:
        compatibility = fields["compatibility"]
        if not isinstance(compatibility, str):
            report(
                "compatibility-type",
                "the field 'compatibility' must be text",
                "write it as one line of text",
            )
        elif len(compatibility) > MAX_COMPATIBILITY_LENGTH:
            report(
                "compatibility-length",
                f"the compatibility is {len(compatibility)} characters long, "
                f"over the limit of {MAX_COMPATIBILITY_LENGTH}",
                f"shorten it to at most {MAX_COMPATIBILITY_LENGTH} characters",
            )
    return reports


def _check_name(value: Any, folder: Path, report: _Report) -> None:
    if not isinstance(value, str) or not value.strip():
        report("name-empty", "the field 'name' must be non-empty text", "set it to the folder name")
        return
    name = unicodedata.normalize("NFKC", value.strip())
    if len(name) > MAX_NAME_LENGTH:
        report(
            "name-length",
            f"the name {name!r} is {len(name)} characters long, over the limit of "
            f"{MAX_NAME_LENGTH}",
            f"shorten it (and the folder) to at most {MAX_NAME_LENGTH} characters",
        )
    if name != name.lower():
        report(
            "name-lowercase", f"the name {name!r} is not lowercase", f"use {name.lower()!r} instead"
        )
    if name.startswith("-") or name.endswith("-"):
        report(
            "name-hyphen-edge",
            f"the name {name!r} starts or ends with a hyphen",
            "remove the hyphen at the start or end",
        )
    if "--" in name:
        report(
            "name-double-hyphen",
            f"the name {name!r} has two hyphens in a row",
            "use single hyphens between words",
        )
    bad = sorted({c for c in name if not (c.isalnum() or c == "-")})
    if bad:
        report(
            "name-characters",
            f"the name {name!r} contains {', '.join(repr(c) for c in bad)}",
            "use only letters, digits and hyphens",
        )
    folder_name = unicodedata.normalize("NFKC", folder.name)
    if folder_name != name:
        report(
            "name-folder",
            f"the name {name!r} differs from the folder name {folder.name!r}",
            "rename the folder or the skill so that the two are equal",
        )


def _check_description(value: Any, report: _Report) -> None:
    if not isinstance(value, str) or not value.strip():
        report(
            "description-empty",
            "the field 'description' must be non-empty text",
            "describe what the skill does and when to use it",
        )
    elif len(value) > MAX_DESCRIPTION_LENGTH:
        report(
            "description-length",
            f"the description is {len(value)} characters long, over the limit of "
            f"{MAX_DESCRIPTION_LENGTH}",
            f"shorten it to at most {MAX_DESCRIPTION_LENGTH} characters",
        )
