"""The ``<available_skills>`` block: its text, and which skills it lists after a rescan."""

from __future__ import annotations

from pathlib import Path

import skills_ref

from toolcycle.sources.skills import SkillDirectory

from .conftest import make_skill


def _description(prompt: str) -> str:
    """The text of the first ``<description>`` element of ``prompt``."""
    return prompt.split("<description>\n", 1)[1].split("\n</description>", 1)[0]


def test_control_characters_from_yaml_escapes_are_stripped_from_the_prompt(
    tmp_path: Path,
) -> None:
    """A bell, an ANSI colour, NUL and DEL never reach the block; tabs and line breaks do."""
    escaped = r'"a\u0007b \x1b[31mred\x1b[0m\0 DEL\x7f C1\x9b.\r\nNext\ttab\rcr\x85nel"'
    make_skill(tmp_path, "bell", description=escaped)
    directory = SkillDirectory(tmp_path)
    assert "\x1b" in directory.skills[0].description  # the skill keeps the text as written
    text = _description(directory.prompt())
    assert text == "ab [31mred[0m DEL C1.\nNext\ttab\ncr\nnel"


def test_ordinary_descriptions_render_as_the_reference_library_renders_them(
    tmp_path: Path,
) -> None:
    """Block text, with its line breaks, and plain Unicode are left as they are."""
    make_skill(tmp_path, "poem", description="|\n  Line one,\n  Zeile zwei – ok.\n")
    directory = SkillDirectory(tmp_path)
    assert directory.prompt() == skills_ref.to_prompt([(tmp_path / "poem").resolve()])
    assert _description(directory.prompt()) == "Line one,\nZeile zwei – ok."
