"""Agent Skills folders as a tool source (``toolcycle[skills]``).

Usage::

    from toolcycle import ToolRuntime
    from toolcycle.sources.skills import SkillDirectory

    with ToolRuntime() as runtime:
        skills = SkillDirectory("skills")
        runtime.register_source(skills)
        system_prompt = skills.prompt()
        with runtime.plan(read_only=True) as ctx:
            runtime.execute("pdf-reader", {}, ctx)  # the skill's instructions

Discovery reads only each ``SKILL.md``'s front matter; activation reads the
instructions; a call reads a bundled file. This package is the only part of
toolcycle that imports ``yaml`` (PyYAML).
"""

from __future__ import annotations

try:
    import yaml as _yaml  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without PyYAML
    raise ImportError(
        "toolcycle.sources.skills needs PyYAML, which is an optional extra: "
        "pip install -e '.[skills]' from a clone (toolcycle[skills] once published)"
    ) from exc

from toolcycle.sources.skills._directory import SkillDirectory
from toolcycle.sources.skills._files import SkillFileError
from toolcycle.sources.skills._limits import SkillLimits
from toolcycle.sources.skills._rules import (
    InvalidSkillWarning,
    SkillReport,
    SkillValidationError,
)
from toolcycle.sources.skills._source import Skill
from toolcycle.sources.skills._tools import ScriptTool, SkillTool

__all__ = [
    "InvalidSkillWarning",
    "ScriptTool",
    "Skill",
    "SkillDirectory",
    "SkillFileError",
    "SkillLimits",
    "SkillReport",
    "SkillTool",
    "SkillValidationError",
]
