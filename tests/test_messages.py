"""What a new user reads first: the format of failed results, warnings and naming advice."""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from toolcycle import (
    BoundResource,
    ToolDefinitionError,
    ToolDefinitionWarning,
    ToolResult,
    ToolRuntime,
    tool,
    wrap,
)
from toolcycle.builtins import workspace_tools

ROOT = Path(__file__).resolve().parent.parent
# An exception's class name at the start of a message: "ValueError: ..." and the like.
_TYPE_PREFIX = re.compile(r"^[A-Z]\w*(Error|Exception|Warning): ")


def _line_after(marker: str) -> int:
    """The line number of the first line of this file that contains ``marker``."""
    source = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(source, 1) if marker in line) + 1


def _assert_one_format(result: ToolResult, error_type: str) -> None:
    assert not result.success
    assert result.error_type == error_type
    assert result.error and not _TYPE_PREFIX.match(result.error), result.error
    assert result.trace is not None
    assert (result.trace.error, result.trace.error_type) == (result.error, error_type)


def test_every_stage_gives_a_failed_result_the_same_format() -> None:
    """Validation, refusal, a function's exception and a built-in's: message, then error_type."""

    @tool(writes=False)
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    @tool
    def erase(path: str) -> None:
        """Erase a file."""

    with ToolRuntime() as runtime:
        runtime.register(divide)
        runtime.register(erase)
        with runtime.plan("p", read_only=True) as ctx:
            invalid = runtime.execute("divide", {"a": 1, "b": "x"}, ctx)
            raised = runtime.execute("divide", {"a": 1, "b": 0}, ctx)
            denied = runtime.call({"name": "erase", "arguments": {"path": "a"}}, ctx)
            unknown = runtime.call({"name": "nope", "arguments": {}}, ctx)
    _assert_one_format(invalid, "ToolSchemaValidationError")
    _assert_one_format(raised, "ZeroDivisionError")
    assert raised.error == "division by zero"
    _assert_one_format(denied, "ToolAccessDeniedError")
    _assert_one_format(unknown, "ToolNotFoundError")


def test_a_built_in_tools_error_has_the_same_format(tmp_path: Path) -> None:
    """A workspace tool's exception is its message; its class is the error_type."""
    workspace = BoundResource(kind="workspace", name="ws", location=str(tmp_path))
    with ToolRuntime() as runtime:
        runtime.register_source(workspace_tools())
        with runtime.plan(resources=[workspace]) as ctx:
            result = runtime.execute("read_file", {"path": "../outside.txt"}, ctx)
    _assert_one_format(result, "PathOutsideWorkspaceError")


def test_a_skill_tools_error_has_the_same_format(tmp_path: Path) -> None:
    """A skill's missing file is a message and a SkillFileError type, as any other failure."""
    pytest.importorskip("yaml")
    from toolcycle.sources.skills import SkillDirectory

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nBody.\n")
    with ToolRuntime() as runtime:
        runtime.register_source(SkillDirectory(folder))
        with runtime.plan() as ctx:
            result = runtime.execute("notes", {"path": "missing.md"}, ctx)
    _assert_one_format(result, "SkillFileError")


def test_an_exception_without_a_message_is_named_in_a_sentence() -> None:
    """With nothing to quote, the error says which tool raised what, still not 'Type: ...'."""

    @tool(writes=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        raise LookupError

    with ToolRuntime() as runtime:
        runtime.register(lookup)
        with runtime.plan() as ctx:
            result = runtime.execute("lookup", {"key": "k"}, ctx)
    _assert_one_format(result, "LookupError")
    assert result.error == "tool 'lookup' raised LookupError without a message"


def test_registering_a_lambda_says_how_to_name_it() -> None:
    """Register takes no name=, so the advice names wrap and @tool, which do."""
    with ToolRuntime() as runtime, pytest.raises(ToolDefinitionError) as info:
        runtime.register(lambda x: x)
    assert "wrap(fn, name=...) or @tool(name=...)" in str(info.value)
    assert "name" not in inspect.signature(ToolRuntime.register).parameters


def test_a_function_without_a_description_warns_at_the_decorated_line() -> None:
    """@tool on a doc-less function is accepted, with a warning pointing at the user's code."""
    with pytest.warns(ToolDefinitionWarning, match="tool 'bare' has no description") as caught:

        @tool(writes=False)  # the line the warning names
        def bare(x: int) -> int:
            return x

    [warning] = caught
    assert warning.filename == __file__
    assert warning.lineno == _line_after("@tool(writes=False)  # the line the warning names") - 1
    assert bare.discover().description == ""


def test_wrap_and_register_of_a_doc_less_function_warn_at_the_callers_line() -> None:
    """Both paths reach the same check through different frames; both blame the caller."""

    def bare(x: int) -> int:
        return x

    with pytest.warns(ToolDefinitionWarning) as by_wrap:
        wrap(bare, writes=False)  # wrap's line
    with ToolRuntime() as runtime, pytest.warns(ToolDefinitionWarning) as by_register:
        runtime.register(bare)  # register's line
    assert [(w.filename, w.lineno) for w in by_wrap] == [
        (__file__, _line_after("wrap(bare, writes=False)  # wrap's line") - 1)
    ]
    assert [(w.filename, w.lineno) for w in by_register] == [
        (__file__, _line_after("runtime.register(bare)  # register's line") - 1)
    ]


def test_a_description_given_by_argument_needs_no_docstring() -> None:
    """description= is enough; nothing is warned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wrapped = wrap(lambda: 1, name="one", description="Return one.")
    assert wrapped.discover().description == "Return one."


class _Address(BaseModel):
    street: str
    zip_code: str = Field(title="Postal code")


class _Titled(BaseModel):
    model_config = ConfigDict(title="A labelled point")
    x: int


def _titles(schema: Any) -> list[str]:
    """Every ``title`` keyword anywhere in a schema, in document order."""
    if isinstance(schema, dict):
        found = [schema["title"]] if isinstance(schema.get("title"), str) else []
        return found + [t for value in schema.values() for t in _titles(value)]
    if isinstance(schema, list):
        return [t for value in schema for t in _titles(value)]
    return []


def test_provider_definitions_keep_only_the_titles_the_author_wrote() -> None:
    """Titles pydantic makes up from names are gone; Field(title=) and a config title stay."""

    @tool(writes=False)
    def ship(address: _Address, point: _Titled, express_delivery: bool = False) -> _Address:
        """Ship a parcel."""
        return address

    with ToolRuntime() as runtime:
        runtime.register(ship)
        with runtime.plan() as ctx:
            definitions = {
                fmt: runtime.tool_definitions(ctx, format=fmt)[0]
                for fmt in ("openai", "openai-responses", "anthropic", "gemini", "mcp")
            }
    for fmt, definition in definitions.items():
        titles = ["Postal code", "A labelled point"] + (["Postal code"] if fmt == "mcp" else [])
        assert _titles(definition) == titles, fmt  # MCP's adds the output schema
    output = ship.discover().output_schema
    assert output is not None and _titles(output) == ["Postal code"]


_INSTALL = re.compile(r"pip install\s+(?:-e\s+)?(?P<target>'[^']*'|\"[^\"]*\"|\S+)")
_CANONICAL = re.compile(
    r"^pip install -e '\.\[(?P<extra>[\w-]+)\]'`?(?:\s+#)? from a clone \(`?toolcycle\[(?P=extra)\]`? "
    r"once published\)"
)


def _install_hints() -> list[tuple[str, str]]:
    """Each ``pip install`` in the README, docs and source, with the text that follows it."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "src").rglob("*.py"))
    hints = []
    for path in files:
        text = re.sub(r'"\s*\n\s*"', "", path.read_text(encoding="utf-8"))  # join split strings
        text = re.sub(r"\s*\n\s*", " ", text)
        where = path.relative_to(ROOT).as_posix()
        hints += [(where, text[m.start() : m.end() + 80]) for m in _INSTALL.finditer(text)]
    return hints


def test_every_install_hint_says_it_installs_from_a_clone() -> None:
    """Toolcycle is on no index yet: an extra is offered as -e '.[x]' from a clone, one wording."""
    hints = _install_hints()
    assert len(hints) >= 8
    wrong = []
    for where, hint in hints:
        target = _INSTALL.match(hint)["target"]  # type: ignore[index]
        by_name = "toolcycle" in target  # no index has it yet
        extra = target.startswith("'.[") and not target.startswith(("'.[dev", "'.[bench"))
        if by_name or (extra and not _CANONICAL.match(hint)):
            wrong.append((where, hint))
    assert wrong == []
