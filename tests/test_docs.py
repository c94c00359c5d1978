"""Run every Python example of the documentation and the README.

Each fenced ``python`` block of ``docs/**/*.md`` and ``README.md`` is one test,
named ``file:line`` after the line of its opening fence. A block runs in a fresh
module of its own, so examples cannot lean on one another, and is compiled so
that its line numbers are those of the Markdown file: a failing assert points at
the line of the page. A block whose first line is ``# not run`` is reported as
skipped.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolcycle import tool, wrap

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOT_RUN = "# not run"

# Pages that describe behaviour and so must show it in at least one runnable example.
REFERENCE_ONLY = {"api.md", "glossary.md"}

_OPEN = re.compile(r"^(?P<indent>[ \t]*)```python\s*$")


@dataclass(frozen=True)
class Example:
    """One fenced ``python`` block: where it is and what it says."""

    path: Path
    line: int
    """Line number of the opening fence (1-based)."""
    source: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def runs(self) -> bool:
        first = self.source.lstrip("\n").splitlines()[:1]
        return first != [NOT_RUN]


def _examples_in(path: Path) -> list[Example]:
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        if opened is None:
            index += 1
            continue
        indent = opened["indent"]
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{path}:{start}: a ```python block is never closed")
        body = [line.removeprefix(indent) for line in lines[start:end]]
        examples.append(Example(path, start, textwrap.dedent("\n".join(body)) + "\n"))
        index = end + 1
    return examples


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _all_examples() -> list[Example]:
    examples: list[Example] = []
    for path in [*_pages(), ROOT / "README.md"]:
        examples.extend(_examples_in(path))
    return examples


EXAMPLES = _all_examples()


def _params() -> list[object]:
    skip = pytest.mark.skip(reason=f"the block starts with {NOT_RUN!r}")
    return [
        pytest.param(example, id=example.id, marks=() if example.runs else skip)
        for example in EXAMPLES
    ]


@pytest.mark.parametrize("example", _params())
def test_documentation_example_runs(example: Example) -> None:
    """The example runs to the end in a fresh module, so every assert in it holds."""
    # Pad with blank lines so that line numbers in tracebacks are those of the page.
    source = "\n" * example.line + example.source
    code = compile(source, str(example.path), "exec", dont_inherit=True)
    name = "toolcycle_docs_example"
    module = types.ModuleType(name)
    module.__file__ = str(example.path)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the examples is the point
    finally:
        del sys.modules[name]


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.runs], ids=lambda e: e.id)
def test_documentation_example_asserts_what_it_shows(example: Example) -> None:
    """Every runnable example checks its own claims with at least one assert."""
    tree = ast.parse(example.source)
    assert any(isinstance(node, ast.Assert) for node in ast.walk(tree)), example.id


def test_every_behaviour_page_has_a_runnable_example() -> None:
    """Each page that describes behaviour shows it in a block the suite runs."""
    runnable = {e.path for e in EXAMPLES if e.runs}
    missing = [
        page.relative_to(DOCS).as_posix()
        for page in _pages()
        if page.name not in REFERENCE_ONLY and page not in runnable
    ]
    assert missing == []


def test_every_page_is_in_the_navigation() -> None:
    """mkdocs.yml lists every page of docs/, so none is built but unreachable."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    absent = [
        page.relative_to(DOCS).as_posix()
        for page in _pages()
        if page.relative_to(DOCS).as_posix() not in config
    ]
    assert absent == []


def test_few_examples_are_excluded_from_running() -> None:
    """Skipping with '# not run' stays the exception: at most one block in ten."""
    skipped = [e.id for e in EXAMPLES if not e.runs]
    assert len(skipped) * 10 <= len(EXAMPLES), skipped


def test_the_security_table_names_tests_that_exist() -> None:
    """Every test docs/security.md cites as proof is a test function in that file."""
    page = (DOCS / "security.md").read_text(encoding="utf-8")
    cited = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`((?:, `::\w+`)*)", page)
    assert len(cited) >= 10
    missing = []
    for path, first, more in cited:
        source = (ROOT / path).read_text(encoding="utf-8")
        names = [first, *re.findall(r"`::(\w+)`", more)]
        missing += [f"{path}::{name}" for name in names if f"def {name}(" not in source]
    assert missing == []


def _documented_options(page: Path, heading: str) -> list[str]:
    """The backquoted names in the first column of the table under ``heading``."""
    text = page.read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_the_callables_page_documents_every_option_of_tool_and_wrap() -> None:
    """The options table lists exactly the keyword options of @tool, which wrap shares."""
    documented = _documented_options(DOCS / "sources" / "callables.md", "## Options and defaults")
    options = [
        name
        for name, parameter in inspect.signature(tool).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    wrapped = [
        name
        for name, parameter in inspect.signature(wrap).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    assert wrapped == options
    assert documented == options
