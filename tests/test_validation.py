"""The hardened validation layer: offline, capped, and never raising at call time."""

from __future__ import annotations

import builtins
import io
import socket
import urllib.request
from typing import Any

import pytest

from toolcycle import ToolSchemaValidationError, ValidationLimits
from toolcycle.validation import SchemaCompiler, validate_input, validate_output

OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def _compile_error(schema: Any, **options: Any) -> ToolSchemaValidationError:
    with pytest.raises(ToolSchemaValidationError) as info:
        SchemaCompiler(**options).compile(schema, tool_name="t")
    return info.value


@pytest.mark.parametrize(
    "ref", ["https://example.com/schema.json", "file:///etc/passwd", "other.json#/x"]
)
def test_references_outside_the_schema_are_never_retrieved(ref: str) -> None:
    """A remote, file or relative $ref fails at compile time, naming its pointer."""
    error = _compile_error({"properties": {"x": {"$ref": ref}}})
    assert error.validation is not None
    issue = error.validation.issues[0]
    assert (issue.pointer, issue.keyword) == ("/properties/x/$ref", "$ref")
    assert "pre-load" in issue.message
    assert error.tool_name == "t" and error.schema_kind == "input"


def test_nothing_is_opened_or_connected_while_compiling_and_validating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compiling and validating open no file and no socket."""
    opened: list[Any] = []

    def refuse(name: str) -> Any:
        def recorder(*args: Any, **kwargs: Any) -> Any:
            opened.append((name, args))
            raise AssertionError(f"{name} was called")

        return recorder

    documents = {"https://example.com/point.json": {"type": "object", "required": ["x"]}}
    compiler = SchemaCompiler(documents)
    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(urllib.request, "urlopen", refuse("urlopen"))
    monkeypatch.setattr(builtins, "open", refuse("open"))
    monkeypatch.setattr(io, "open", refuse("io.open"))
    schemas = [
        OBJECT,
        {"$ref": "https://example.com/point.json"},
        {"$defs": {"p": {"type": "string"}}, "items": {"$ref": "#/$defs/p"}},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "uri"},
    ]
    for schema in schemas:
        compiled = compiler.compile(schema)
        compiled.validate({"a": 1, "x": 2})
        compiled.validate(["s", 3])
    with pytest.raises(ToolSchemaValidationError):
        compiler.compile({"$ref": "https://example.com/missing.json"})
    assert opened == []


def test_pre_loaded_documents_resolve() -> None:
    """A $ref to a pre-loaded document validates against it."""
    documents = {"https://example.com/point.json": {"type": "object", "required": ["x"]}}
    compiled = SchemaCompiler(documents).compile({"$ref": "https://example.com/point.json"})
    assert compiled.validate({"x": 1})[1].valid
    assert not compiled.validate({})[1].valid


def test_a_missing_local_definition_is_a_compile_error() -> None:
    """#/$defs/missing does not resolve, and the message says how to fix it."""
    error = _compile_error({"$defs": {"a": {"$ref": "#/$defs/missing"}}})
    assert error.validation is not None
    assert error.validation.issues[0].pointer == "/$defs/a/$ref"
    assert "add the missing definition" in error.validation.issues[0].message


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "string", "pattern": "^(a+)+$"}, "/pattern"),
        ({"pattern": "(x*)*y"}, "/pattern"),
        ({"pattern": "((ab)+c?)+"}, "/pattern"),
        ({"patternProperties": {"^(a|b+)+$": {}}}, "/patternProperties/^(a|b+)+$"),
        ({"items": {"pattern": "(?:\\d+)*"}}, "/items/pattern"),
    ],
)
def test_nested_unbounded_quantifiers_are_refused(schema: dict[str, Any], pointer: str) -> None:
    """Patterns that can backtrack exponentially are refused at compile time."""
    error = _compile_error(schema)
    assert error.validation is not None
    assert error.validation.issues[0].pointer == pointer
    assert "exponential" in error.validation.issues[0].message


def test_safe_patterns_work_on_long_strings() -> None:
    """A linear pattern validates a long string."""
    compiled = SchemaCompiler().compile({"type": "string", "pattern": "^[a-z]+(-[a-z]+)?$"})
    assert compiled.validate("a" * 10_000)[1].valid
    assert not compiled.validate("a" * 10_000 + "!")[1].valid


def test_invalid_and_overlong_patterns_are_refused() -> None:
    """A pattern that does not compile, or is too long, is a compile error."""
    assert "not a valid regular expression" in str(_compile_error({"pattern": "(unclosed"}))
    limits = ValidationLimits(max_pattern_length=10)
    assert "longer than 10" in str(_compile_error({"pattern": "a" * 11}, limits=limits))


def test_schema_size_and_depth_are_capped() -> None:
    """Schemas over the byte or depth limit are refused before any other check."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(80):
        node["items"] = {}
        node = node["items"]
    assert _compile_error(deep).validation.issues[0].keyword == "maxDepth"  # type: ignore[union-attr]
    big = {"enum": list(range(1000))}
    small = ValidationLimits(max_schema_bytes=100)
    error = _compile_error(big, limits=small)
    assert error.validation is not None and error.validation.issues[0].keyword == "maxSchemaBytes"


def test_instance_caps_give_a_failed_validation_not_an_exception() -> None:
    """Deep, large or huge-integer values fail validation with a named keyword."""
    compiled = SchemaCompiler(limits=ValidationLimits(max_instance_nodes=100)).compile({})
    deep: Any = []
    for _ in range(2000):
        deep = [deep]
    assert compiled.validate(deep)[1].issues[0].keyword == "maxDepth"
    assert compiled.validate(list(range(200)))[1].issues[0].keyword == "maxNodes"
    huge = 10**5000
    assert compiled.validate({"n": huge})[1].issues[0].keyword == "maxIntegerBits"


def test_a_reference_cycle_is_a_failed_validation() -> None:
    """A schema that refers to itself in a loop fails validation; nothing is raised."""
    compiled = SchemaCompiler().compile(
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    )
    data, validation = compiled.validate(1)
    assert data == 1 and not validation.valid
    assert validation.issues[0].keyword == "$validator"
    assert "loop" in validation.issues[0].message


def test_messages_are_truncated_and_pointers_escaped() -> None:
    """Long offending values are cut short; keys with / and ~ are escaped."""
    compiled = SchemaCompiler().compile(
        {"properties": {"a/b~c": {"type": "string", "maxLength": 3}}}
    )
    _, validation = compiled.validate({"a/b~c": "x" * 10_000})
    issue = validation.issues[0]
    assert issue.pointer == "/a~1b~0c"
    assert len(issue.message) <= 240


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"type": "strin"}, "anyOf"),
        (["not", "a", "schema"], "type"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "$schema"),
        ({"minLength": -1}, "minimum"),
    ],
)
def test_unusable_schemas_are_refused(schema: Any, keyword: str) -> None:
    """Metaschema violations, non-schemas and other dialects fail at compile time."""
    error = _compile_error(schema)
    assert error.validation is not None and error.validation.issues[0].keyword == keyword


def test_boolean_schemas_work() -> None:
    """True accepts everything and false nothing."""
    compiler = SchemaCompiler()
    assert compiler.compile(True).validate({"a": 1})[1].valid
    assert not compiler.compile(False).validate(None)[1].valid


def test_validate_input_raises_and_validate_output_returns() -> None:
    """validate_input raises with the Validation; validate_output only reports."""
    compiled = SchemaCompiler().compile(OBJECT)
    assert validate_input(compiled, {"a": 1}) == {"a": 1}
    with pytest.raises(ToolSchemaValidationError) as info:
        validate_input(compiled, {"a": "x"}, tool_name="t")
    assert info.value.validation is not None and info.value.tool_name == "t"
    verdict = validate_output(compiled, {"a": "x"})
    assert not verdict.valid and verdict.issues[0].pointer == "/a"


def test_issues_are_capped_and_most_relevant_first() -> None:
    """At most 20 issues are reported."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(40)}}
    compiled = SchemaCompiler().compile(schema)
    _, validation = compiled.validate({f"p{i}": "x" for i in range(40)})
    assert len(validation.issues) == 20
    assert all(issue.keyword == "type" for issue in validation.issues)


def test_a_validator_crash_becomes_an_issue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any exception inside the validator is reported as a $validator issue."""
    compiled = SchemaCompiler().compile(OBJECT)

    def explode(self: Any, instance: Any) -> bool:
        raise ValueError("internal")

    monkeypatch.setattr(type(compiled._validator), "is_valid", explode)
    validation = compiled.check({"a": 1})
    assert not validation.valid and "ValueError" in validation.issues[0].message


def test_custom_dialects_must_be_pre_loaded_and_built_on_2020_12() -> None:
    """A $schema naming a pre-loaded 2020-12 metaschema is accepted; others are not."""
    meta_uri = "https://example.com/meta.json"
    documents = {
        meta_uri: {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": meta_uri},
        "https://example.com/old.json": {"$schema": "http://json-schema.org/draft-07/schema#"},
    }
    compiler = SchemaCompiler(documents)
    compiler.compile({"$schema": meta_uri, "type": "string"})
    with pytest.raises(ToolSchemaValidationError):
        compiler.compile({"$schema": "https://example.com/old.json"})
    with pytest.raises(ToolSchemaValidationError):
        compiler.compile({"$schema": 7})
