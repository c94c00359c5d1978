"""What a skill folder may not make the runtime read: outside links, hidden files, huge files."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from toolcycle import ToolActivationError, ToolRuntime
from toolcycle.sources.skills import Skill, SkillDirectory, SkillLimits, SkillValidationError
from toolcycle.sources.skills._frontmatter import read_front_matter
from toolcycle.sources.skills._yaml_subset import FrontMatterError

from .conftest import make_skill

SECRET = "hunter2-outside-the-skill"
FRONT = "---\nname: {name}\ndescription: Looks harmless.\n---\n"


def register(runtime: ToolRuntime, source: Any) -> list[str]:
    """Register ``source``, letting skipped-skill warnings pass, and return the tool names."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [descriptor.name for descriptor in runtime.register_source(source)]


def call(runtime: ToolRuntime, name: str, params: dict[str, Any]) -> Any:
    """One call of ``name`` in a plan of its own."""
    with runtime.plan(read_only=True) as ctx:
        return runtime.execute(name, params, ctx)


# -- SKILL.md that leads out of its folder ------------------------------------------------------


def test_a_skill_md_linked_outside_its_folder_is_reported_and_never_served(
    tmp_path: Path,
) -> None:
    """A SKILL.md symlink to a file outside the folder is a 'file-outside' report, no tool."""
    outside = tmp_path / "elsewhere.md"
    outside.write_text(FRONT.format(name="trojan") + SECRET)
    folder = tmp_path / "skills" / "trojan"
    folder.mkdir(parents=True)
    os.symlink(outside, folder / "SKILL.md")
    directory = SkillDirectory(tmp_path / "skills")
    with ToolRuntime() as runtime:
        assert register(runtime, directory) == []
    assert [report.rule for report in directory.reports] == ["file-outside"]
    assert "outside the skill's folder" in str(directory.reports[0])
    assert SECRET not in str(directory.reports[0])
    with pytest.raises(SkillValidationError, match="file-outside"):
        Skill(folder)


def test_a_skill_md_swapped_for_an_outside_link_after_discovery_fails_activation(
    tmp_path: Path,
) -> None:
    """A link planted after registration is refused at activation; no body is served."""
    outside = tmp_path / "elsewhere.md"
    outside.write_text(FRONT.format(name="swapped") + SECRET)
    folder = make_skill(tmp_path / "skills", "swapped")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path / "skills"))
        (folder / "SKILL.md").unlink()
        os.symlink(outside, folder / "SKILL.md")
        with pytest.raises(ToolActivationError, match="outside the skill's folder") as caught:
            call(runtime, "swapped", {})
    assert SECRET not in str(caught.value)


def test_a_skill_md_linked_to_a_file_inside_its_folder_is_read(tmp_path: Path) -> None:
    """Links that stay in the folder are fine: the linked file is the instructions."""
    folder = tmp_path / "skills" / "inner"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "skill.txt").write_text(FRONT.format(name="inner") + "Steps.")
    os.symlink(Path("docs") / "skill.txt", folder / "SKILL.md")
    with ToolRuntime() as runtime:
        assert register(runtime, SkillDirectory(tmp_path / "skills")) == ["inner"]
        assert call(runtime, "inner", {}).output["text"] == "Steps."


def test_an_instructions_file_swapped_for_a_fifo_fails_activation_without_waiting(
    tmp_path: Path,
) -> None:
    """A FIFO where SKILL.md was is refused at once instead of blocking the call."""
    folder = make_skill(tmp_path / "skills", "piped")
    outcome: list[BaseException] = []
    done = threading.Event()
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path / "skills"))
        (folder / "SKILL.md").unlink()
        os.mkfifo(folder / "SKILL.md")

        def activate() -> None:
            try:
                call(runtime, "piped", {})
            except BaseException as exc:
                outcome.append(exc)
            finally:
                done.set()

        thread = threading.Thread(target=activate, daemon=True)
        thread.start()
        finished = done.wait(5)
        if not finished:  # release a reader stuck on the FIFO so the thread can end
            with open(os.open(folder / "SKILL.md", os.O_WRONLY | os.O_NONBLOCK), "wb"):
                pass
        thread.join(5)
    assert finished, "activation waited on a FIFO"
    assert isinstance(outcome[0], ToolActivationError)
    assert "not a regular file" in str(outcome[0])


# -- hidden files --------------------------------------------------------------------------------


HIDDEN = {
    ".env": f"TOKEN={SECRET}",
    ".git/config": f"[remote]\nurl = https://{SECRET}@example.invalid/\n",
    "references/.notes.md": SECRET,
    ".cache/notes.md": SECRET,
    "references/guide.md": "Guide.",
}


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        (".env", "names a hidden file or folder"),
        (".git/config", "names a hidden file or folder"),
        ("./.env", "names a hidden file or folder"),
        ("references/.notes.md", "names a hidden file or folder"),
        (".cache/notes.md", "names a hidden file or folder"),
        ("visible.md", "leads to a hidden file or folder"),
        ("linked/config", "leads to a hidden file or folder"),
    ],
)
def test_hidden_files_are_not_readable_by_path(
    tmp_path: Path, requested: str, message: str
) -> None:
    """A path naming (or linking to) a hidden file or folder is refused with a SkillFileError."""
    folder = make_skill(tmp_path, "hiding", files=dict(HIDDEN))
    os.symlink(".env", folder / "visible.md")
    os.symlink(".git", folder / "linked")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        result = call(runtime, "hiding", {"path": requested})
        listed = call(runtime, "hiding", {}).output["files"]
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert message in (result.error or "")
    assert SECRET not in str(result.output) + (result.error or "")
    assert listed == ["references/guide.md"]


def test_every_listed_file_is_readable_and_every_other_file_is_refused(tmp_path: Path) -> None:
    """Listing and reading agree: each file on disk is either listed and read, or neither."""
    folder = make_skill(tmp_path, "agreeing", files=dict(HIDDEN))
    os.symlink(".env", folder / "visible.md")
    os.symlink("references/guide.md", folder / "alias.md")
    os.symlink("../SKILL.md", folder / "references" / "skill-link.md")
    on_disk = sorted(
        (Path(base) / name).relative_to(folder).as_posix()
        for base, _, names in os.walk(folder)
        for name in names
    )
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        listed = call(runtime, "agreeing", {}).output["files"]
        readable = [path for path in on_disk if call(runtime, "agreeing", {"path": path}).success]
    assert listed == readable == ["alias.md", "references/guide.md"]


def test_a_file_whose_name_a_call_refuses_is_not_listed(tmp_path: Path) -> None:
    """Names a path may not hold (a backslash, a leading '~') are neither listed nor read."""
    files = {
        "~notes.md": "Lock file.",
        "~drafts/plan.md": "Draft.",
        "back\\slash.md": "Odd name.",
        "references/~kept.md": "Kept.",
        "references/guide.md": "Guide.",
    }
    folder = make_skill(tmp_path, "naming", files=files)
    on_disk = sorted(
        (Path(base) / name).relative_to(folder).as_posix()
        for base, _, names in os.walk(folder)
        for name in names
    )
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        listed = call(runtime, "naming", {}).output["files"]
        readable = [path for path in on_disk if call(runtime, "naming", {"path": path}).success]
    assert listed == readable == ["references/guide.md", "references/~kept.md"]


@pytest.mark.parametrize("requested", ["SKILL.md", "./SKILL.md", "references/skill-link.md"])
def test_the_skill_md_itself_is_not_readable_by_path(tmp_path: Path, requested: str) -> None:
    """Its front matter is not offered: the instructions come only from a call without a path."""
    extra = f"metadata:\n  internal: {SECRET}\n"
    folder = make_skill(tmp_path, "notes", extra=extra, files={"references/guide.md": "Guide."})
    os.symlink("../SKILL.md", folder / "references" / "skill-link.md")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        result = call(runtime, "notes", {"path": requested})
    assert not result.success and result.error_type == "SkillFileError"
    assert "SKILL.md" in (result.error or "") and "without a path" in (result.error or "")
    assert SECRET not in str(result.output) + (result.error or "")


# -- size caps -----------------------------------------------------------------------------------


def test_instructions_over_max_file_bytes_fail_activation_naming_the_limit(
    tmp_path: Path,
) -> None:
    """A SKILL.md over the cap is not read into memory; the error says how to raise the cap."""
    make_skill(tmp_path, "huge", body="x" * 5000)
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path, limits=SkillLimits(max_file_bytes=1000)))
        with pytest.raises(ToolActivationError) as caught:
            call(runtime, "huge", {})
    message = str(caught.value)
    assert "over the limit of 1000 bytes" in message
    assert "SkillLimits(max_file_bytes=...)" in message


def test_a_bundled_file_over_the_cap_is_refused_saying_how_to_raise_it(tmp_path: Path) -> None:
    """The refusal of a large bundled file names its size, the cap and the limit to raise."""
    make_skill(tmp_path, "large", files={"references/big.md": "y" * 300})
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path, limits=SkillLimits(max_file_bytes=200)))
        result = call(runtime, "large", {"path": "references/big.md"})
    assert result.error_type == "SkillFileError"
    assert "is 300 bytes, over the limit of 200 bytes" in (result.error or "")
    assert "raise SkillLimits(max_file_bytes=...)" in (result.error or "")


def test_front_matter_of_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    """read_front_matter opens without blocking and refuses what is not a regular file."""
    fifo = tmp_path / "SKILL.md"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            read_front_matter(fifo, max_bytes=1024)
        except BaseException as exc:
            outcome.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    finished = done.wait(5)
    if not finished:  # release a reader stuck on the FIFO so the thread can end
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
    thread.join(5)
    assert finished, "reading the front matter waited on a FIFO"
    assert isinstance(outcome[0], FrontMatterError)
    assert "not a regular file" in str(outcome[0])
