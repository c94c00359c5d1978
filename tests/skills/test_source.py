"""Skills as tools: discovery and its reports, activation once per plan, reading files."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import skills_ref

from toolcycle import ToolActivationError, ToolRegistrationError, ToolRuntime, ToolSkippedWarning
from toolcycle.sources.skills import (
    InvalidSkillWarning,
    Skill,
    SkillDirectory,
    SkillLimits,
    SkillReport,
    SkillTool,
    SkillValidationError,
    _tools,
)

from .conftest import CORPUS, make_skill

VALID_CORPUS = [
    "algorithmic-art",
    "brand-guidelines",
    "canvas-design",
    "frontend-design",
    "internal-comms",
    "mcp-builder",
    "skill-creator",
    "slack-gif-creator",
    "theme-factory",
    "web-artifacts-builder",
    "webapp-testing",
]


def register(runtime: ToolRuntime, source: Any) -> list[str]:
    """Register ``source`` expecting no warning, and return the tool names."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return [descriptor.name for descriptor in runtime.register_source(source)]


def test_the_corpus_registers_every_valid_skill_and_reports_the_invalid_one() -> None:
    """Eleven real skills register; claude-api's 1,068-character description is reported."""
    directory = SkillDirectory(CORPUS)
    with ToolRuntime() as runtime:
        with pytest.warns(InvalidSkillWarning, match="claude-api") as caught:
            names = [d.name for d in runtime.register_source(directory)]
    assert names == VALID_CORPUS
    [warning] = caught
    assert warning.filename == __file__  # the line that registered the folder
    assert "1068 characters long" in str(warning.message)
    assert "shorten it to at most 1024" in str(warning.message)
    [report] = directory.reports
    assert (report.path.name, report.rule, report.severity) == (
        "claude-api",
        "description-length",
        "error",
    )
    assert isinstance(warning.message, ToolSkippedWarning)


def test_strict_turns_reports_into_an_error_and_registers_nothing() -> None:
    """With strict=True an invalid skill fails the whole registration."""
    with ToolRuntime() as runtime:
        with pytest.raises(SkillValidationError, match="description-length") as caught:
            runtime.register_source(SkillDirectory(CORPUS, strict=True))
        assert not runtime.descriptors()
    assert isinstance(caught.value, ToolRegistrationError)
    assert [r.rule for r in caught.value.reports] == ["description-length"]


def test_an_invalid_skill_is_reported_with_every_rule_it_breaks(tmp_path: Path) -> None:
    """The report lists each broken rule, with what to change."""
    make_skill(tmp_path, "Bad--Name-", folder="other", extra="colour: red\n")
    with pytest.raises(SkillValidationError) as caught:
        Skill(tmp_path / "other")
    rules = [report.rule for report in caught.value.reports]
    assert rules == [
        "field-unknown",
        "name-lowercase",
        "name-hyphen-edge",
        "name-double-hyphen",
        "name-folder",
    ]
    text = str(caught.value)
    assert "5 problems" in text
    assert "use 'bad--name-' instead" in text
    assert "'colour'" in text


def test_one_invalid_skill_never_stops_the_others(tmp_path: Path) -> None:
    """Broken YAML, a missing SKILL.md and a bad name are each reported; good skills register."""
    make_skill(tmp_path, "good")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("---\nname: broken\ndescription: [x\n---\n")
    (tmp_path / "empty").mkdir()
    make_skill(tmp_path, "UPPER", folder="upper")
    make_skill(tmp_path, "zeta")
    directory = SkillDirectory(tmp_path)
    with ToolRuntime() as runtime, pytest.warns(InvalidSkillWarning) as caught:
        names = [d.name for d in runtime.register_source(directory)]
    assert names == ["good", "zeta"]
    assert [(r.path.name, r.rule) for r in directory.reports] == [
        ("broken", "yaml-syntax"),
        ("empty", "file-missing"),
        ("upper", "name-lowercase"),
        ("upper", "name-folder"),
    ]
    assert len(caught) == 3  # one warning per skill


def test_front_matter_nested_too_deep_is_reported_and_the_others_register(
    tmp_path: Path,
) -> None:
    """A skill whose YAML nests past the limit gets a report; the scan goes on."""
    make_skill(tmp_path, "good")
    make_skill(tmp_path, "deep", extra="metadata:\n  " + "- " * 990 + "v\n")
    directory = SkillDirectory(tmp_path)
    with pytest.warns(InvalidSkillWarning, match="nested more than"):
        skills = directory.scan()
    assert [skill.name for skill in skills] == ["good"]
    assert [(r.path.name, r.rule) for r in directory.reports] == [("deep", "yaml-refused")]


def test_a_single_skill_folder_is_a_directory_of_one(tmp_path: Path) -> None:
    """SkillDirectory given a skill's own folder registers that skill alone."""
    path = make_skill(tmp_path, "solo", files={"sub/SKILL.md": "not a skill"})
    with ToolRuntime() as runtime:
        assert register(runtime, SkillDirectory(path)) == ["solo"]


def test_a_skill_folder_given_as_dot_is_named_after_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Skill(".") and SkillDirectory(".") in a skill's folder check the name against its name."""
    path = make_skill(tmp_path, "notes", files={"sub/guide.md": "Guide."})
    monkeypatch.chdir(path)
    assert Skill(".").name == "notes"
    assert Skill("sub/..").path == path.resolve()
    with ToolRuntime() as runtime:
        assert register(runtime, SkillDirectory(".")) == ["notes"]


def test_a_relative_folder_is_rescanned_where_it_was_when_the_directory_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that changes its working folder later still refreshes the same skills."""
    make_skill(tmp_path / "skills", "notes")
    (tmp_path / "elsewhere" / "skills" / "stray").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    directory = SkillDirectory("skills")
    monkeypatch.chdir(tmp_path / "elsewhere")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the stray folder elsewhere is never looked at
        assert [skill.name for skill in directory.scan()] == ["notes"]
    assert directory.reports == ()
    assert directory.path == tmp_path / "skills"


def test_hidden_folders_and_plain_files_are_not_skills(tmp_path: Path) -> None:
    """A .git folder or a README next to the skills is neither registered nor reported."""
    make_skill(tmp_path, "real")
    (tmp_path / ".git").mkdir()
    (tmp_path / "README.md").write_text("# skills")
    directory = SkillDirectory(tmp_path)
    with ToolRuntime() as runtime:
        assert register(runtime, directory) == ["real"]
    assert directory.reports == ()


def test_recursive_discovery_finds_nested_skills_but_not_inside_a_skill(tmp_path: Path) -> None:
    """Skills are found at any depth; a skill's own subfolders are its files."""
    make_skill(tmp_path / "team-a", "alpha", files={"examples/inner/SKILL.md": "---\n"})
    make_skill(tmp_path / "team-b" / "deep", "beta")
    (tmp_path / "team-c").mkdir()
    directory = SkillDirectory(tmp_path, recursive=True)
    with ToolRuntime() as runtime:
        assert register(runtime, directory) == ["alpha", "beta"]
    with pytest.warns(InvalidSkillWarning, match="file-missing"):
        assert SkillDirectory(tmp_path).skills == []  # not recursive: the teams are not skills


@pytest.mark.parametrize("links", [{"a": ".", "b": "."}, {"up": ".."}])
def test_recursive_discovery_walks_each_folder_once_through_symlink_loops(
    tmp_path: Path, links: dict[str, str]
) -> None:
    """Links to a folder itself or to an ancestor neither trap the walk nor find a skill twice."""
    make_skill(tmp_path / "group", "notes")
    for name, target in links.items():
        os.symlink(target, tmp_path / "group" / name)
    code = (
        "from toolcycle.sources.skills import SkillDirectory\n"
        f"directory = SkillDirectory({str(tmp_path)!r}, recursive=True, strict=True)\n"
        "print([skill.name for skill in directory.scan()], directory.reports)\n"
    )
    try:  # a subprocess, so that an endless walk fails the test instead of hanging the run
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the recursive scan did not end within 30 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['notes'] ()"


def _linked_to_a_big_tree(tmp_path: Path, wide: int, deep: int) -> Path:
    """A skills folder with one skill and a link to a tree of ``wide * (deep + 1)`` folders."""
    disk = tmp_path / "disk"
    for branch in range(wide):
        for leaf in range(deep):
            (disk / f"b{branch:04}" / f"l{leaf:04}").mkdir(parents=True)
    make_skill(disk / f"b{wide - 1:04}", "far-away")  # the last thing a full walk would find
    skills = tmp_path / "skills"
    make_skill(skills, "alpha")
    os.symlink(disk, skills / "world")
    return skills


def test_a_recursive_scan_stops_at_max_folders_and_says_so(tmp_path: Path) -> None:
    """A link into a big tree is walked only up to the cap; the skills met before it register."""
    skills = _linked_to_a_big_tree(tmp_path, wide=6, deep=9)
    directory = SkillDirectory(skills, recursive=True, limits=SkillLimits(max_folders=20))
    with pytest.warns(ToolSkippedWarning, match=r"stopped after 20 folders \(SkillLimits"):
        assert [skill.name for skill in directory.scan()] == ["alpha"]
    [report] = directory.reports
    assert (report.rule, report.severity, report.path) == ("scan-truncated", "warning", skills)
    assert "raise SkillLimits(max_folders=...)" in report.hint
    everything = SkillDirectory(skills, recursive=True, limits=SkillLimits(max_folders=100))
    assert [skill.name for skill in everything.scan()] == ["alpha", "far-away"]
    assert everything.reports == ()


def test_a_strict_scan_cut_short_by_max_folders_raises_and_registers_nothing(
    tmp_path: Path,
) -> None:
    """Strict promises every skill or none: a scan that did not look everywhere is an error."""
    skills = _linked_to_a_big_tree(tmp_path, wide=6, deep=9)
    directory = SkillDirectory(
        skills, recursive=True, strict=True, limits=SkillLimits(max_folders=20)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # raised instead of warned, as for an invalid skill
        with pytest.raises(SkillValidationError, match=r"stopped after 20 folders") as raised:
            directory.scan()
    [report] = raised.value.reports
    assert (report.rule, report.severity) == ("scan-truncated", "error")
    assert directory.skills == [] and directory.reports == (report,)
    with ToolRuntime() as runtime, pytest.raises(SkillValidationError):
        runtime.register_source(directory)
    assert runtime.descriptors() == ()


def test_by_default_a_recursive_scan_visits_at_most_ten_thousand_folders(tmp_path: Path) -> None:
    """The default cap stops a walk that a link has led into a tree past 10,000 folders."""
    skills = _linked_to_a_big_tree(tmp_path, wide=101, deep=100)
    directory = SkillDirectory(skills, recursive=True)
    with pytest.warns(ToolSkippedWarning, match="stopped after 10,000 folders"):
        assert [skill.name for skill in directory.scan()] == ["alpha"]
    assert [report.rule for report in directory.reports] == ["scan-truncated"]
    assert "stopped after 10,000 folders" in directory.reports[0].message
    assert SkillLimits().max_folders == 10_000


def test_a_link_to_a_skill_beside_it_is_passed_over_for_the_real_folder(tmp_path: Path) -> None:
    """The link sorts first by name, yet the real folder is the one registered."""
    make_skill(tmp_path / "group", "notes")
    os.symlink("notes", tmp_path / "group" / "a-link")
    directory = SkillDirectory(tmp_path, recursive=True, strict=True)
    assert [skill.path for skill in directory.scan()] == [(tmp_path / "group" / "notes").resolve()]
    assert directory.reports == ()


def test_two_skills_with_one_name_keep_the_first_and_report_the_second(tmp_path: Path) -> None:
    """In recursive mode two folders may share a name; only the first registers."""
    make_skill(tmp_path / "a", "same")
    make_skill(tmp_path / "b", "same")
    directory = SkillDirectory(tmp_path, recursive=True)
    with pytest.warns(InvalidSkillWarning, match="name-duplicate") as caught:
        skills = directory.scan()
    assert [warning.filename for warning in caught] == [__file__]  # the line that scanned
    assert [skill.path for skill in skills] == [(tmp_path / "a" / "same").resolve()]
    assert directory.reports[0].rule == "name-duplicate"


@pytest.mark.parametrize(
    ("first", "second"),
    [("caf\u00e9", "cafe\u0301"), ("fix", "\ufb01x")],
    ids=["composed-and-decomposed", "ligature"],
)
def test_two_names_equal_once_normalised_are_one_name(
    tmp_path: Path, first: str, second: str
) -> None:
    """Names compared as the rules compare them (NFKC): the second is a duplicate."""
    make_skill(tmp_path / "a", first)
    make_skill(tmp_path / "b", second)
    directory = SkillDirectory(tmp_path, recursive=True)
    with pytest.warns(InvalidSkillWarning, match="name-duplicate"):
        skills = directory.scan()
    assert [skill.name for skill in skills] == [first]
    assert [report.rule for report in directory.reports] == ["name-duplicate"]
    assert f"written {first!r} there" in directory.reports[0].message


def test_a_path_that_is_not_a_folder_is_refused_at_once(tmp_path: Path) -> None:
    """A missing skills folder is an error when the source is made, naming the path."""
    with pytest.raises(NotADirectoryError, match="nowhere"):
        SkillDirectory(tmp_path / "nowhere")
    with pytest.raises(SkillValidationError, match="folder-missing"):
        Skill(tmp_path / "nowhere")


def test_the_descriptor_says_skill_read_only_and_carries_the_optional_fields(
    tmp_path: Path,
) -> None:
    """Name, description, source, capability and annotations come from the front matter."""
    extra = (
        "license: Apache-2.0\ncompatibility: Needs git\nmetadata:\n  author: me\n"
        "allowed-tools: Bash(git log:*) Read  Write\n"
    )
    make_skill(tmp_path, "rich", description="  Reads rich text.  ", extra=extra)
    with ToolRuntime() as runtime:
        [descriptor] = runtime.register_source(SkillDirectory(tmp_path))
    assert descriptor.name == "rich"
    assert descriptor.description == "Reads rich text."
    assert (descriptor.source, descriptor.source_name) == ("skill", "rich")
    assert not descriptor.capability.writes
    assert descriptor.capability.checkpointable
    assert descriptor.annotations == {
        "location": str((tmp_path / "rich" / "SKILL.md").resolve()),
        "license": "Apache-2.0",
        "compatibility": "Needs git",
        "metadata": {"author": "me"},
        "allowed-tools": ["Bash(git log:*)", "Read", "Write"],
    }


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        ("Bash(git log:*) Read", ("Bash(git log:*)", "Read")),
        ("  Read   Write\tEdit ", ("Read", "Write", "Edit")),
        ("Bash(echo (a) b) Read", ("Bash(echo (a) b)", "Read")),
        ("Bash(unclosed Read", ("Bash(unclosed Read",)),
        ("a)b c", ("a)b", "c")),
        ("", ()),
    ],
)
def test_allowed_tools_text_splits_at_spaces_outside_parentheses(
    text: str, patterns: tuple[str, ...]
) -> None:
    from toolcycle.sources.skills._source import _split_allowed

    assert _split_allowed(text) == patterns


def test_allowed_tools_text_of_unclosed_parentheses_is_read_in_one_pass(tmp_path: Path) -> None:
    """240 KB of "a(" took about 20 s with a pattern search; one pass takes milliseconds."""
    make_skill(tmp_path, "tools", extra="allowed-tools: " + "a(" * 120_000 + "\n")
    skill = Skill(tmp_path / "tools")
    assert skill.allowed_tools == ("a(" * 120_000,)


def test_allowed_tools_may_be_a_list(tmp_path: Path) -> None:
    """A YAML list of patterns is kept in order."""
    make_skill(tmp_path, "listed", extra="allowed-tools:\n  - Read\n  - Bash(ls -la)\n")
    assert Skill(tmp_path / "listed").allowed_tools == ("Read", "Bash(ls -la)")
    make_skill(tmp_path, "none")
    assert Skill(tmp_path / "none").allowed_tools is None


def test_values_the_specification_restricts_are_kept_reduced_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Non-text metadata, license and allowed-tools entries are dropped, logged and reported."""
    extra = (
        "license:\n  name: MIT\nmetadata:\n  ok: yes\n  nested:\n    a: b\n"
        "allowed-tools:\n  - Read\n  - - nested\n"
    )
    make_skill(tmp_path, "loose", extra=extra)
    with caplog.at_level(logging.WARNING, logger="toolcycle.skills"):
        skill = Skill(tmp_path / "loose")
    assert skill.license is None
    assert skill.metadata == {"ok": "yes"}
    assert skill.allowed_tools == ("Read",)
    assert [(r.rule, r.severity) for r in skill.reports] == [
        ("license-type", "warning"),
        ("metadata-type", "warning"),
        ("allowed-tools-type", "warning"),
    ]
    assert "'nested'" in caplog.text
    assert skills_ref.validate(tmp_path / "loose") == []  # the reference accepts it too
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "SKILL.md").write_text("---\nname: flat\ndescription: d\nmetadata: x\n---")
    assert Skill(tmp_path / "flat").metadata == {}


def test_activation_reads_the_instructions_once_per_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two calls in one plan read SKILL.md's body once; a second plan reads it again."""
    path = make_skill(tmp_path, "once", body="Step one.\n")
    reads: list[Path] = []
    real = _tools.read_body

    def counting(file: Path, *, max_bytes: int) -> str:
        reads.append(file)
        return real(file, max_bytes=max_bytes)

    monkeypatch.setattr(_tools, "read_body", counting)
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        with runtime.plan(read_only=True) as ctx:
            first = runtime.execute("once", {}, ctx)
            (path / "SKILL.md").write_text("---\nname: once\ndescription: d\n---\nStep two.\n")
            second = runtime.execute("once", {}, ctx)
        assert first.output["text"] == second.output["text"] == "Step one."
        assert len(reads) == 1
        with runtime.plan() as ctx:
            assert runtime.execute("once", {}, ctx).output["text"] == "Step two."
        assert len(reads) == 2


def test_ending_a_plan_forgets_what_its_activation_loaded(tmp_path: Path) -> None:
    """Nothing of a plan stays in the tool once the plan has ended."""
    make_skill(tmp_path, "tidy")
    skill = Skill(tmp_path / "tidy")
    [tool] = skill.tools()
    assert isinstance(tool, SkillTool)
    with ToolRuntime() as runtime:
        runtime.register(tool)
        with runtime.plan() as ctx:
            runtime.execute("tidy", {}, ctx).raise_for_error()
            assert len(tool._plans) == 1
        assert len(tool._plans) == 0


def test_the_instructions_list_the_bundled_files(tmp_path: Path) -> None:
    """Files under the folder are listed relative and sorted, without SKILL.md or hidden files."""
    files = {
        "references/guide.md": "guide",
        "references/api/b.md": "b",
        "assets/logo.svg": "<svg/>",
        "scripts/run.py": "print(1)",
        ".hidden": "x",
        ".cache/y": "y",
    }
    make_skill(tmp_path, "files", files=files)
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        with runtime.plan() as ctx:
            output = runtime.execute("files", {}, ctx).output
    assert output == {
        "path": "SKILL.md",
        "text": "# Instructions\n\nFollow these steps.",
        "files": [
            "assets/logo.svg",
            "references/api/b.md",
            "references/guide.md",
            "scripts/run.py",
        ],
    }


def test_a_long_file_list_is_cut_and_says_so(tmp_path: Path) -> None:
    """With more files than max_files, the list stops there with files_truncated."""
    make_skill(tmp_path, "many", files={f"references/{i:02}.md": "x" for i in range(12)})
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path, limits=SkillLimits(max_files=5)))
        with runtime.plan() as ctx:
            output = runtime.execute("many", {}, ctx).output
    assert output["files_truncated"] is True
    assert output["files"] == [f"references/{i:02}.md" for i in range(5)]


@pytest.mark.parametrize(
    "limits",
    [
        {"script_timeout": 0},
        {"script_timeout": -1.0},
        {"script_timeout": float("inf")},
        {"script_timeout": float("nan")},
        {"script_timeout": True},
        {"script_timeout": "5"},
        {"max_files": -1},
        {"max_file_bytes": 1.5},
        {"max_output_bytes": False},
        {"max_front_matter_bytes": "256"},
    ],
    ids=str,
)
def test_limits_that_mean_nothing_are_refused_naming_the_field(limits: dict[str, Any]) -> None:
    """A negative or fractional cap, or a timeout that is not a positive number, is an error."""
    [field] = limits
    with pytest.raises(ValueError, match=rf"SkillLimits\({field}="):
        SkillLimits(**limits)


def test_caps_of_zero_and_a_fractional_timeout_are_accepted() -> None:
    """Zero keeps nothing (a valid choice); a timeout may be any positive number of seconds."""
    limits = SkillLimits(max_files=0, max_output_bytes=0, script_timeout=0.25)
    assert (limits.max_files, limits.max_output_bytes, limits.script_timeout) == (0, 0, 0.25)


def test_a_bundled_file_is_read_on_demand(tmp_path: Path) -> None:
    """{"path": ...} returns that file's text, with Unix newlines."""
    make_skill(tmp_path, "reader", files={"references/guide.md": "Line 1\r\nLine 2\r\n"})
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        with runtime.plan(read_only=True, requires_checkpoint=True) as ctx:
            result = runtime.execute("reader", {"path": "references/guide.md"}, ctx)
    assert result.output == {"path": "references/guide.md", "text": "Line 1\nLine 2\n"}


@pytest.mark.parametrize(
    ("requested", "message"),
    [
        ("../secret.txt", "'..' part"),
        ("references/../../secret.txt", "'..' part"),
        ("/etc/passwd", "absolute"),
        ("~/secret.txt", "absolute"),
        ("references\\..\\..\\secret.txt", "forward slashes"),
        ("references/nul\x00.md", "forward slashes"),
        ("link-out.txt", "leads outside"),
        ("linked-dir/secret.txt", "leads outside"),
        ("references/missing.md", "has no file"),
        ("references/guide.md/more.md", "has no file"),
        ("loop/guide.md", "loop of symlinks"),
        ("references", "not a regular file"),
        ("big.txt", "over the limit of 100 bytes"),
        ("image.png", "binary"),
        ("latin1.txt", "not UTF-8 text (at byte 3)"),
    ],
)
def test_reads_outside_the_folder_or_of_unusable_files_are_refused(
    tmp_path: Path, requested: str, message: str
) -> None:
    """Escapes, outward symlinks, loops, non-files, large and binary files fail, in their terms."""
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    files: dict[str, str | bytes] = {
        "references/guide.md": "ok",
        "big.txt": "x" * 101,
        "image.png": b"\x89PNG\r\n\x00\x00",
        "latin1.txt": "caf\xe9".encode("latin-1"),
    }
    path = make_skill(tmp_path / "skills", "guarded", files=files)
    os.symlink(tmp_path / "secret.txt", path / "link-out.txt")
    os.symlink(tmp_path / "outside", path / "linked-dir")
    os.symlink("loop", path / "loop")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(path, limits=SkillLimits(max_file_bytes=100)))
        with runtime.plan() as ctx:
            result = runtime.execute("guarded", {"path": requested}, ctx)
            listing = runtime.execute("guarded", {}, ctx).output["files"]
    assert not result.success
    assert result.error_type == "SkillFileError"
    assert message in (result.error or "")
    assert str(tmp_path) not in (result.error or "")  # the host's paths stay private
    assert "secret" not in str(result.output)
    assert "link-out.txt" not in listing  # outward links are not offered either


def test_symlinks_inside_the_folder_and_a_symlinked_skill_folder_work(tmp_path: Path) -> None:
    """A link to a file of the same skill reads; a skill reached through a link registers."""
    path = make_skill(tmp_path / "real", "linked", files={"references/a.md": "A"})
    os.symlink(path / "references" / "a.md", path / "alias.md")
    (tmp_path / "skills").mkdir()
    os.symlink(path, tmp_path / "skills" / "linked")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path / "skills"))
        with runtime.plan() as ctx:
            result = runtime.execute("linked", {"path": "alias.md"}, ctx)
            files = runtime.execute("linked", {}, ctx).output["files"]
    assert result.output == {"path": "alias.md", "text": "A"}
    assert "alias.md" in files


def test_an_instructions_file_that_turned_invalid_fails_activation(tmp_path: Path) -> None:
    """A SKILL.md broken after discovery fails activation with the problem named."""
    path = make_skill(tmp_path, "fragile")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        (path / "SKILL.md").write_bytes(b"---\nname: fragile\ndescription: d\n---\n\xff")
        with runtime.plan() as ctx, pytest.raises(ToolActivationError, match="not valid UTF-8"):
            runtime.execute("fragile", {}, ctx)


def test_a_skill_md_removed_after_discovery_fails_activation_saying_what_to_do(
    tmp_path: Path,
) -> None:
    """The error names the missing file and says to restore it or register again."""
    path = make_skill(tmp_path, "vanishing")
    with ToolRuntime() as runtime:
        register(runtime, SkillDirectory(tmp_path))
        (path / "SKILL.md").unlink()
        with runtime.plan() as ctx, pytest.raises(ToolActivationError) as caught:
            runtime.execute("vanishing", {}, ctx)
    message = str(caught.value)
    assert "no file 'SKILL.md'" in message
    assert "register the skill's source again" in message
    assert "listed with its instructions" not in message


def test_the_prompt_block_matches_the_reference_library(tmp_path: Path) -> None:
    """prompt() gives skills-ref's to_prompt output for the same skill folders."""
    shutil.copytree(CORPUS, tmp_path / "corpus")
    make_skill(tmp_path / "corpus", "escape-me", description="Use <b> & \"quotes\" 'too'.")
    directory = SkillDirectory(tmp_path / "corpus")
    with pytest.warns(InvalidSkillWarning):
        ours = directory.prompt()
    folders = sorted(skill.path for skill in directory.skills)
    assert ours == skills_ref.to_prompt(folders)
    assert "Use &lt;b&gt; &amp; &quot;quotes&quot; &#x27;too&#x27;." in ours


def test_an_empty_directory_renders_an_empty_block(tmp_path: Path) -> None:
    """No skills, no <skill> elements: the same text as the reference library."""
    assert SkillDirectory(tmp_path).prompt() == skills_ref.to_prompt([])


def test_a_report_reads_as_one_line_naming_skill_rule_and_fix(tmp_path: Path) -> None:
    """str(report) has the folder, the message, the rule and the hint."""
    report = SkillReport(
        tmp_path / "x", "name-lowercase", "the name 'X' is not lowercase", "use 'x'"
    )
    assert str(report) == (
        f"skill 'x' ({tmp_path / 'x'}): the name 'X' is not lowercase [name-lowercase]; use 'x'"
    )


def test_the_skills_package_exports_exactly_its_public_names() -> None:
    """The public API of toolcycle.sources.skills is pinned."""
    import toolcycle.sources.skills as package

    assert package.__all__ == [
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
    assert all(
        getattr(package, name).__module__.startswith(package.__name__) for name in package.__all__
    )
