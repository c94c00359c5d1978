"""Reading SKILL.md: the front matter alone at discovery, the body at activation."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest

from toolcycle.sources.skills import _frontmatter
from toolcycle.sources.skills._frontmatter import read_body, read_front_matter
from toolcycle.sources.skills._yaml_subset import MAX_NESTING, FrontMatterError, parse_yaml

GOOD = "---\nname: demo\ndescription: A demo skill.\n---\n# Demo\n\nDo the thing.\n"


def write(tmp_path: pathlib.Path, content: str | bytes) -> pathlib.Path:
    file = tmp_path / "SKILL.md"
    if isinstance(content, str):
        file.write_bytes(content.encode())
    else:
        file.write_bytes(content)
    return file


def read(file: pathlib.Path, max_bytes: int = 1 << 20) -> dict[str, Any]:
    return read_front_matter(file, max_bytes=max_bytes)


def rule_of(file: pathlib.Path, max_bytes: int = 1 << 20) -> FrontMatterError:
    with pytest.raises(FrontMatterError) as caught:
        read(file, max_bytes)
    return caught.value


def test_the_front_matter_is_read_as_a_mapping_of_strings(tmp_path: pathlib.Path) -> None:
    """Every scalar is text: numbers, booleans and null stay as written."""
    file = write(
        tmp_path,
        "---\nname: demo\ndescription: yes\nversion: 1.10\nnothing: null\nempty:\n---\n",
    )
    assert read(file) == {
        "name": "demo",
        "description": "yes",
        "version": "1.10",
        "nothing": "null",
        "empty": "",
    }


def test_nested_mappings_lists_and_block_scalars_are_kept(tmp_path: pathlib.Path) -> None:
    """Block mappings, block sequences and literal or folded text come through as data."""
    file = write(
        tmp_path,
        "---\nname: demo\ndescription: >\n  Folded\n  text.\nmetadata:\n  author: me\n"
        "  version: '2'\nallowed-tools:\n  - Read\n  - Bash(git:*)\nnotes: |\n  a\n  b\n---\n",
    )
    assert read(file) == {
        "name": "demo",
        "description": "Folded text.\n",
        "metadata": {"author": "me", "version": "2"},
        "allowed-tools": ["Read", "Bash(git:*)"],
        "notes": "a\nb\n",
    }


def test_discovery_stops_reading_at_the_closing_line(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large body is never read: discovery reads one chunk past the closing line at most."""
    body = b"x" * 5_000_000
    file = write(tmp_path, GOOD.encode() + body)
    sizes: list[int] = []
    real_open = pathlib.Path.open

    def counting_open(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
        stream = real_open(self, *args, **kwargs)
        real_read = stream.read

        def read_chunk(size: int = -1) -> bytes:
            data = real_read(size)
            sizes.append(len(data))
            return data

        stream.read = read_chunk
        return stream

    monkeypatch.setattr(pathlib.Path, "open", counting_open)
    assert read(file)["name"] == "demo"
    assert sum(sizes) <= _frontmatter._CHUNK


def test_a_body_that_is_not_utf8_does_not_stop_discovery(tmp_path: pathlib.Path) -> None:
    """Only the bytes of the front matter are decoded at discovery."""
    file = write(tmp_path, GOOD.encode() + b"\xff\xfe broken" * 2000)
    assert read(file)["description"] == "A demo skill."
    with pytest.raises(FrontMatterError, match="not valid UTF-8") as caught:
        read_body(file, max_bytes=1 << 20)
    assert caught.value.rule == "encoding"


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5, 7, 16, 31, 64])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_chunk_size_and_line_ending_reads_the_same_fields(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, chunk: int, newline: str
) -> None:
    """Chunk boundaries inside a CRLF, a "---" or a multi-byte character change nothing."""
    monkeypatch.setattr(_frontmatter, "_CHUNK", chunk)
    text = "---\nname: café-ü\ndescription: Düsseldorf ---- 中文\nx: |\n  a\n  b\n---\nbody ---\n"
    file = write(tmp_path, text.replace("\n", newline))
    assert read(file) == {
        "name": "café-ü",
        "description": "Düsseldorf ---- 中文",
        "x": "a\nb\n",
    }


def test_crlf_and_lone_cr_bodies_read_with_unix_newlines(tmp_path: pathlib.Path) -> None:
    """Windows and old Mac line endings become Unix ones, as Python's text mode reads them."""
    for newline in ("\r\n", "\r"):
        file = write(tmp_path, GOOD.replace("\n", newline))
        assert read_body(file, max_bytes=1 << 20) == "# Demo\n\nDo the thing."


def test_the_closing_line_may_end_the_file_or_carry_trailing_blanks(
    tmp_path: pathlib.Path,
) -> None:
    """A closing line may end the file, and one with trailing blanks closes too."""
    assert read(write(tmp_path, "---\nname: a\n---"))["name"] == "a"
    assert read(write(tmp_path, "--- \nname: a\n---\t \nbody"))["name"] == "a"
    assert read_body(write(tmp_path, "---\nname: a\n---"), max_bytes=1 << 20) == ""


def test_a_line_of_four_dashes_or_dashes_inside_text_do_not_close(tmp_path: pathlib.Path) -> None:
    """Only a line that is exactly "---" closes; "----" and "a---b" are content."""
    file = write(tmp_path, "---\nname: a\ndescription: x---y\n  ----\nmore: text\n---\nbody")
    assert read(file) == {"name": "a", "description": "x---y ----", "more": "text"}
    # Unindented, "----" is part of the YAML (where it is a syntax error), not its end.
    assert rule_of(write(tmp_path, "---\nname: a\n----\n---\n")).rule == "yaml-syntax"


@pytest.mark.parametrize(
    ("content", "rule", "message"),
    [
        (b"\xef\xbb\xbf" + GOOD.encode(), "encoding", "byte-order mark"),
        (GOOD.encode("utf-16"), "encoding", "UTF-16"),
        (b"---\nname: caf\xe9\n---\n", "encoding", "at byte 13"),
        (b"# Demo\n", "frontmatter-missing", "does not start"),
        (b"", "frontmatter-missing", "does not start"),
        (b"---name: a\n---\n", "frontmatter-missing", "first line"),
        (b"----\nname: a\n---\n", "frontmatter-missing", "first line"),
        (b"---\nname: a\n", "frontmatter-unclosed", "closes"),
        (b"---", "frontmatter-unclosed", "closes"),
    ],
)
def test_unreadable_files_are_refused_with_the_rule_they_break(
    tmp_path: pathlib.Path, content: bytes, rule: str, message: str
) -> None:
    """Each error names its rule, says what is wrong, and carries a hint."""
    error = rule_of(write(tmp_path, content))
    assert error.rule == rule
    assert message in str(error)
    assert error.hint


def test_a_front_matter_that_never_closes_stops_at_the_byte_limit(tmp_path: pathlib.Path) -> None:
    """Reading gives up after max_bytes instead of reading a huge file to its end."""
    file = write(tmp_path, "---\nname: a\n" + "x: y\n" * 100_000)
    error = rule_of(file, max_bytes=10_000)
    assert error.rule == "frontmatter-too-large"
    assert "10000 bytes" in str(error)


def test_a_closing_line_past_the_byte_limit_is_refused_even_within_one_chunk(
    tmp_path: pathlib.Path,
) -> None:
    """The limit holds for a front matter shorter than a chunk: its closing line is too late."""
    file = write(tmp_path, "---\nname: a\ndescription: " + "x" * 500 + "\n---\nBody.\n")
    error = rule_of(file, max_bytes=100)
    assert error.rule == "frontmatter-too-large"
    assert "100 bytes" in str(error) and "max_front_matter_bytes" in error.hint
    assert read(file, max_bytes=600)["name"] == "a"


@pytest.mark.parametrize(
    ("yaml_text", "what"),
    [
        ("metadata: {a: b}", "a flow collection"),
        ("allowed-tools: [Read, Write]", "a flow collection"),
        ("name: &n demo", "an anchor"),
        ("name: a\nother: *n", "an alias"),
        ("name: !!str demo", "a tag"),
        ("name: ! demo", "a tag"),
        ("? [a]\n: b", "a flow collection"),
        ("? - a\n: b", "a key that is not text"),
    ],
)
def test_yaml_that_strictyaml_refuses_is_refused(yaml_text: str, what: str) -> None:
    """Flow collections, anchors, aliases, tags and complex keys are not allowed."""
    with pytest.raises(FrontMatterError) as caught:
        parse_yaml(yaml_text)
    assert caught.value.rule in {"yaml-refused", "yaml-syntax"}
    assert what in str(caught.value) or caught.value.rule == "yaml-syntax"


def test_nesting_deeper_than_the_limit_is_refused_not_a_recursion_error() -> None:
    """Lists and mappings nest at most MAX_NESTING levels; libyaml accepts far deeper."""
    limit = MAX_NESTING
    deepest = parse_yaml("metadata:\n  " + "- " * limit + "v\n")["metadata"]
    for _ in range(limit):
        deepest = deepest[0]
    assert deepest == "v"
    for depth in (limit + 1, 990):
        with pytest.raises(FrontMatterError, match=f"nested more than {limit} levels") as caught:
            parse_yaml("metadata:\n  " + "- " * depth + "v\n")
        assert caught.value.rule == "yaml-refused"
    with pytest.raises(FrontMatterError, match="nested more than"):
        parse_yaml("".join(f"{' ' * i}k:\n" for i in range(100)) + " " * 100 + "k: v\n")


def test_duplicate_keys_are_refused_with_their_line() -> None:
    """A key given twice is an error at the second one (line numbers count SKILL.md lines)."""
    with pytest.raises(
        FrontMatterError, match=r"\(line 3, column 1\): the key 'name' appears twice"
    ):
        parse_yaml("name: a\nname: b\n")


def test_sibling_mappings_must_share_their_indentation() -> None:
    """As in StrictYAML, two mapping values of one mapping are indented alike."""
    assert parse_yaml("a:\n  x: 1\nb:\n  y: 2\n") == {"a": {"x": "1"}, "b": {"y": "2"}}
    with pytest.raises(FrontMatterError, match="indented differently"):
        parse_yaml("a:\n  x: 1\nb:\n    y: 2\n")


@pytest.mark.parametrize(
    ("yaml_text", "what"),
    [("", "nothing"), ("# only a comment\n", "nothing"), ("- a\n- b\n", "a list"), ("x", "single")],
)
def test_front_matter_that_is_not_a_mapping_is_refused(yaml_text: str, what: str) -> None:
    """An empty, list or scalar document says what it is instead of a mapping."""
    with pytest.raises(FrontMatterError, match=what) as caught:
        parse_yaml(yaml_text)
    assert caught.value.rule == "yaml-not-mapping"


def test_invalid_yaml_reports_the_line_in_skill_md() -> None:
    """A syntax error gives the problem and where it is, counting the opening line."""
    with pytest.raises(FrontMatterError, match=r"line 3") as caught:
        parse_yaml("name: a\ndescription: b: c\n")
    assert caught.value.rule == "yaml-syntax"


def test_a_second_yaml_document_is_refused() -> None:
    """A document end marker followed by more YAML is not one front matter."""
    with pytest.raises(FrontMatterError) as caught:
        parse_yaml("name: a\n...\n--- \nb: c\n")
    assert caught.value.rule == "yaml-syntax"


def test_the_body_is_the_text_after_the_closing_line_without_surrounding_blanks(
    tmp_path: pathlib.Path,
) -> None:
    """Leading and trailing blank lines are dropped, inner ones kept."""
    file = write(tmp_path, "---\nname: a\n---\n\n\n# Title\n\n\ntext\n\n")
    assert read_body(file, max_bytes=1 << 20) == "# Title\n\n\ntext"


@pytest.mark.parametrize(
    ("body", "instructions"),
    [
        ("\n\n    indented code\n\ntext\n", "    indented code\n\ntext"),
        ("  \t \n  - nested item\n", "  - nested item"),
        ("    first line\n", "    first line"),
        (" \n\t\n", ""),
    ],
)
def test_the_first_line_of_the_body_keeps_its_indentation(
    tmp_path: pathlib.Path, body: str, instructions: str
) -> None:
    """Only blank lines are dropped around the body: an indented code block stays one."""
    file = write(tmp_path, "---\nname: a\n---\n" + body)
    assert read_body(file, max_bytes=1 << 20) == instructions


def test_a_body_read_after_the_front_matter_was_removed_is_an_error(
    tmp_path: pathlib.Path,
) -> None:
    """The file changed since discovery: activation reports it rather than guessing."""
    file = write(tmp_path, "---\nname: a\n")
    with pytest.raises(FrontMatterError) as caught:
        read_body(file, max_bytes=1 << 20)
    assert caught.value.rule == "frontmatter-unclosed"
    file.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    with pytest.raises(FrontMatterError, match="byte-order mark"):
        read_body(file, max_bytes=1 << 20)


def test_the_core_never_imports_yaml() -> None:
    """Importing toolcycle leaves yaml unimported; only the skills source imports it."""
    code = "import sys, toolcycle, toolcycle.sources; assert 'yaml' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_missing_pyyaml_gives_an_import_error_naming_the_extra() -> None:
    """Without PyYAML the import fails with the pip command to fix it."""
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "try:\n    import toolcycle.sources.skills\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    assert "pip install -e '.[skills]' from a clone (toolcycle[skills] once published)" in out


@pytest.mark.parametrize(
    ("line", "refused_at"),
    [
        ("license: x #\tcomment\twith\ttabs", None),
        ("license: 'a\tb' # and\there", None),
        ("license: 'a # not a comment'\t", 28),
        ("license: x#\tno space before the mark", 11),
        ("\tlicense: x", 0),
    ],
)
def test_tabs_are_allowed_in_comments_and_quoted_text_only(
    tmp_path: pathlib.Path, line: str, refused_at: int | None
) -> None:
    file = write(tmp_path, f"---\nname: demo\ndescription: A demo.\n{line}\n---\n")
    if refused_at is None:
        assert read(file)["license"] in {"x", "a\tb"}
        return
    error = rule_of(file)
    assert error.rule == "yaml-syntax"
    assert f"line 4, column {refused_at + 1}" in str(error)


def test_a_long_line_of_tabs_in_a_comment_is_read_in_one_pass(tmp_path: pathlib.Path) -> None:
    """Each line's comment is found once: 20,000 tabs took 23 s when each tab searched again."""
    count = 20_000
    file = write(
        tmp_path,
        f"---\nname: demo\ndescription: A demo.\nlicense: {'x' * count} #{chr(9) * count}\n---\n",
    )
    assert read(file)["license"] == "x" * count
