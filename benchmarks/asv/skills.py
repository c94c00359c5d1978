"""Discovering a folder of Agent Skills, as a user does it."""

from __future__ import annotations

from pathlib import Path

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.skills import SkillDirectory

SKILL_COUNT = 1_000
"""Skill folders written once per environment."""

BODY_LINE = "Read the input, change a copy of it, and say which step failed and why.\n"
"""One line of each skill's Markdown body (the body is read on activation, not here)."""


def _skill_md(name: str) -> str:
    return (
        "---\n"
        f"name: {name}\n"
        f"description: Converts and checks documents for the {name} workflow. Use it when "
        "the user asks to turn notes into a report.\n"
        "license: Apache-2.0\n"
        "metadata:\n"
        "  author: example-org\n"
        '  version: "1.0"\n'
        "allowed-tools: Bash(git log:*) Read Write\n"
        "---\n"
        f"# {name}\n\n" + BODY_LINE * 14
    )


def _discover(root: str) -> int:
    runtime = ToolRuntime(tracer=NullTracer())
    try:
        runtime.register_source(SkillDirectory(root))
        return len(runtime.descriptors())
    finally:
        runtime.close()


class Discovery:
    """A fresh runtime, ``register_source(SkillDirectory(...))`` of 1,000 skills, ``descriptors()``."""

    timeout = 300

    def setup_cache(self) -> str:
        # asv runs this once per environment, in a directory kept for the benchmarks.
        root = Path("skills").absolute()
        root.mkdir(exist_ok=True)
        for index in range(SKILL_COUNT):
            name = f"skill-{index:04d}"
            (root / name).mkdir(exist_ok=True)
            (root / name / "SKILL.md").write_text(_skill_md(name), encoding="utf-8")
        if _discover(str(root)) != SKILL_COUNT:
            raise RuntimeError(f"not every skill in {root} was registered")
        return str(root)

    def time_register_source(self, root: str) -> None:
        """The folder scan, every front matter read and checked, one tool per skill."""
        _discover(root)

    def peakmem_register_source(self, root: str) -> None:
        """Peak resident memory of the process through the same discovery."""
        _discover(root)
