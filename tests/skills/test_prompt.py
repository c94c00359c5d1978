"""The ``<available_skills>`` block: its text, and which skills it lists after a rescan."""

from __future__ import annotations

from pathlib import Path

import pytest
import skills_ref

from toolcycle import ToolRuntime
from toolcycle.sources.skills import SkillDirectory, SkillValidationError

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


def test_the_tool_description_is_stripped_of_control_characters_as_the_prompt_is(
    tmp_path: Path,
) -> None:
    """What a model reads of a skill is the same text in its tool and in the block."""
    escaped = r'"Reads \x1b]0;title\x07files\x1b[2J.\r\nThen\ttabs."'
    make_skill(tmp_path, "reader", description=escaped)
    directory = SkillDirectory(tmp_path)
    with ToolRuntime() as runtime:
        [descriptor] = runtime.register_source(directory)
    assert descriptor.description == "Reads ]0;titlefiles[2J.\nThen\ttabs."
    assert descriptor.description == _description(directory.prompt())
    assert "\x1b" in directory.skills[0].description  # the skill keeps the text as written


def test_control_characters_in_a_folder_on_the_path_are_stripped_from_the_location(
    tmp_path: Path,
) -> None:
    """A container folder named with an escape sequence shows in the block without it."""
    container = tmp_path / "team\x1b[31m\x07\rred"
    skill = make_skill(container, "notes")
    directory = SkillDirectory(tmp_path, recursive=True)
    assert directory.skills[0].location == skill.resolve() / "SKILL.md"  # kept as it is
    location = directory.prompt().split("<location>\n", 1)[1].split("\n</location>", 1)[0]
    assert location == str(tmp_path.resolve() / "team[31m\nred" / "notes" / "SKILL.md")


def test_ordinary_descriptions_render_as_the_reference_library_renders_them(
    tmp_path: Path,
) -> None:
    """Block text, with its line breaks, and plain Unicode are left as they are."""
    make_skill(tmp_path, "poem", description="|\n  Line one,\n  Zeile zwei – ok.\n")
    directory = SkillDirectory(tmp_path)
    assert directory.prompt() == skills_ref.to_prompt([(tmp_path / "poem").resolve()])
    assert _description(directory.prompt()) == "Line one,\nZeile zwei – ok."


def test_a_failed_strict_rescan_leaves_the_prompt_listing_what_the_runtime_lists(
    tmp_path: Path,
) -> None:
    """Nothing registers from a strict scan that fails, and prompt() lists nothing either."""
    make_skill(tmp_path, "alpha")
    make_skill(tmp_path, "beta")
    directory = SkillDirectory(tmp_path, strict=True)
    with ToolRuntime() as runtime:
        runtime.register_source(directory)
        assert "<name>\nbeta\n</name>" in directory.prompt()
        make_skill(tmp_path, "beta", description="")  # beta breaks a rule now
        # A host refreshes the source: its old tools go, the folder is scanned again.
        for descriptor in runtime.descriptors():
            runtime.unregister(descriptor.name)
        with pytest.raises(SkillValidationError):
            runtime.register_source(directory)
        assert runtime.descriptors() == ()
        assert directory.prompt() == skills_ref.to_prompt([])
        assert directory.skills == []
        assert [report.rule for report in directory.reports] == ["description-empty"]
        make_skill(tmp_path, "beta")  # fixed: the next scan registers both again
        assert [d.name for d in runtime.register_source(directory)] == ["alpha", "beta"]
        assert "<name>\nbeta\n</name>" in directory.prompt()
