"""The hardened validation layer: offline, capped, and never raising at call time."""

from __future__ import annotations

import builtins
import io
import math
import re
import socket
import urllib.request
from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from toolcycle import ToolSchemaValidationError, ValidationLimits
from toolcycle.models import Validation
from toolcycle.validation import SchemaCompiler, validate_input, validate_output

OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
POINT_URI = "https://example.com/point.json"
POINT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def _compile_error(schema: Any, **options: Any) -> ToolSchemaValidationError:
    with pytest.raises(ToolSchemaValidationError) as info:
        SchemaCompiler(**options).compile(schema, tool_name="t")
    return info.value


def _first_issue(error: ToolSchemaValidationError) -> Any:
    assert error.validation is not None and not error.validation.valid
    return error.validation.issues[0]


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$ref": "http://example.com/schema.json"}, "/$ref"),
        ({"$ref": "https://example.com/schema.json#/$defs/a"}, "/$ref"),
        ({"$ref": "file:///etc/passwd"}, "/$ref"),
        ({"properties": {"x": {"$ref": "file:///etc/passwd"}}}, "/properties/x/$ref"),
        ({"$defs": {"d": {"$ref": "http://127.0.0.1:9/x"}}}, "/$defs/d/$ref"),
        ({"items": {"$ref": "other.json#/x"}}, "/items/$ref"),
        ({"$dynamicRef": "https://example.com/meta#meta"}, "/$dynamicRef"),
    ],
)
def test_references_outside_the_schema_are_never_retrieved(schema: Any, pointer: str) -> None:
    """A remote, file or relative reference fails at compile time, naming its pointer."""
    error = _compile_error(schema)
    issue = _first_issue(error)
    assert issue.pointer == pointer
    assert issue.keyword == pointer.rsplit("/", 1)[-1]
    assert "never retrieved" in issue.message and "pre-load" in issue.message
    assert error.tool_name == "t" and error.schema_kind == "input"


def test_nothing_is_opened_or_connected_while_compiling_and_validating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compiling and validating, references included, open no file and no socket."""
    calls: Counter[str] = Counter()

    def counting(name: str, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return original(*args, **kwargs)

        return wrapper

    documents = {POINT_URI: POINT, "https://example.com/defs.json": {"$defs": {"s": POINT}}}
    for target, name in [
        (socket.socket, "connect"),
        (socket, "create_connection"),
        (urllib.request, "urlopen"),
        (builtins, "open"),
        (io, "open"),
    ]:
        monkeypatch.setattr(target, name, counting(name, getattr(target, name)))

    compiler = SchemaCompiler(documents)
    cases: list[tuple[Any, Any, bool]] = [
        (OBJECT, {"a": 1}, True),
        ({"$ref": POINT_URI}, {"x": 1}, True),
        ({"$ref": POINT_URI}, {"x": "1"}, False),
        ({"$ref": "https://example.com/defs.json#/$defs/s"}, {}, False),
        ({"$defs": {"p": {"type": "string"}}, "items": {"$ref": "#/$defs/p"}}, ["s", 3], False),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "uri"}, "x", True),
        ({"$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"}}, [[1]], True),
    ]
    for schema, value, valid in cases:
        assert compiler.compile(schema).validate(value)[1].valid is valid
    with pytest.raises(ToolSchemaValidationError):
        compiler.compile({"$ref": "https://example.com/missing.json"})
    with pytest.raises(ToolSchemaValidationError):
        compiler.compile({"$ref": "file:///etc/hostname"})
    assert sum(calls.values()) == 0, calls


def test_pre_loaded_documents_resolve() -> None:
    """A $ref to a pre-loaded document, or to a definition inside one, validates against it."""
    documents = {POINT_URI: POINT, "https://example.com/defs.json": {"$defs": {"p": POINT}}}
    compiler = SchemaCompiler(documents=documents)
    whole = compiler.compile({"$ref": POINT_URI})
    assert whole.validate({"x": 1})[1].valid
    assert not whole.validate({})[1].valid
    part = compiler.compile({"items": {"$ref": "https://example.com/defs.json#/$defs/p"}})
    assert part.validate([{"x": 1}])[1].valid
    _, verdict = part.validate([{"x": 1}, {"x": "no"}])
    assert not verdict.valid and verdict.issues[0].pointer == "/1/x"


def test_a_missing_local_definition_is_a_compile_error_naming_the_pointer() -> None:
    """#/$defs/missing does not resolve: the error names the reference and where it is."""
    error = _compile_error({"$defs": {"a": {"$ref": "#/$defs/missing"}}})
    issue = _first_issue(error)
    assert (issue.pointer, issue.keyword) == ("/$defs/a/$ref", "$ref")
    assert "#/$defs/missing" in issue.message
    assert "fix the pointer or add the missing definition" in issue.message
    assert "/$defs/a/$ref" in str(error)


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        ("^[a-z]+(-[a-z]+)?$", "a" * 10_000, "a" * 10_000 + "!"),
        ("^(?:\\d{1,3}\\.){3}\\d{1,3}$", "192.168.0.1", "1.2.3"),
        ("^([0-9a-f]{1,4}:){7}[0-9a-f]{1,4}$", "fe80:0:0:0:0:0:0:1", "f" * 10_000),
        ("^[a-z]+(\\.[a-z0-9-]+)*$", "a" + ".b-1" * 2_500, "a" + ".b" * 5_000 + "!"),
        ("^([a-z]-?)+$", "a-" * 4_999 + "a", "a" * 10_000 + "!"),
    ],
)
@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_safe_patterns_compile_and_work_on_long_strings(
    backend: str, pattern: str, good: str, bad: str
) -> None:
    """Everyday patterns are accepted and validate long strings, on both backends."""
    compiled = SchemaCompiler(backend=backend).compile({"type": "string", "pattern": pattern})  # type: ignore[arg-type]
    assert compiled.validate(good)[1].valid
    _, verdict = compiled.validate(bad)
    assert not verdict.valid and verdict.issues[0].keyword == "pattern"


def test_invalid_and_overlong_patterns_are_refused() -> None:
    """A pattern that does not compile, or is longer than the limit, is a compile error."""
    invalid = _first_issue(_compile_error({"properties": {"p": {"pattern": "(unclosed"}}}))
    assert (invalid.pointer, invalid.keyword) == ("/properties/p/pattern", "pattern")
    assert "'(unclosed' cannot be used: RE2 cannot compile it (missing )" in invalid.message
    bad_key = _first_issue(_compile_error({"patternProperties": {"[z-a]": {}}}))
    assert bad_key.pointer == "/patternProperties/[z-a]"
    limits = ValidationLimits(max_pattern_length=10)
    compiler = SchemaCompiler(limits=limits)
    compiler.compile({"pattern": "a" * 10})
    long = _first_issue(_compile_error({"pattern": "a" * 11}, limits=limits))
    assert long.pointer == "/pattern" and "longer than 10" in long.message


def test_schema_depth_and_size_are_capped_at_compile_time() -> None:
    """Schemas over the depth or byte limit are refused; at the limit they compile."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(80):
        node["items"] = {}
        node = node["items"]
    assert _first_issue(_compile_error(deep)).keyword == "maxDepth"
    shallow = ValidationLimits(max_schema_depth=3)
    SchemaCompiler(limits=shallow).compile({"items": {"items": {}}})
    assert (
        _first_issue(_compile_error({"items": {"items": {"items": {}}}}, limits=shallow)).keyword
        == "maxDepth"
    )
    big = {"enum": list(range(1000))}
    issue = _first_issue(_compile_error(big, limits=ValidationLimits(max_schema_bytes=100)))
    assert issue.keyword == "maxSchemaBytes" and "over the limit of 100" in issue.message


def test_schemas_that_are_not_strict_json_are_refused() -> None:
    """NaN or a non-string key inside a schema is a compile error at its pointer."""
    nan = _first_issue(_compile_error({"properties": {"a": {"minimum": math.nan}}}))
    assert nan.pointer == "/properties/a/minimum"
    key = _first_issue(_compile_error({"properties": {1: {}}}))
    assert key.pointer == "/properties"


def test_a_deep_instance_is_a_failed_validation_not_an_exception() -> None:
    """A value nested 2,000 levels deep fails with maxDepth; at the limit it passes."""
    compiled = SchemaCompiler().compile({"type": "array"})
    data, verdict = compiled.validate(_nested(2_000))
    assert data is None and not verdict.valid
    assert verdict.issues[0].keyword == "maxDepth"
    assert verdict.issues[0].pointer == "/0" * 64
    assert compiled.validate(_nested(64))[1].valid


def test_too_many_nodes_is_a_failed_validation() -> None:
    """The node cap counts every value; one over it fails with maxNodes."""
    compiled = SchemaCompiler(limits=ValidationLimits(max_instance_nodes=100)).compile({})
    assert compiled.validate(list(range(99)))[1].valid
    _, verdict = compiled.validate(list(range(100)))
    assert not verdict.valid and verdict.issues[0].keyword == "maxNodes"


def test_a_huge_integer_is_a_failed_validation() -> None:
    """An integer of 5,000 digits fails with maxIntegerBits; 4,096 bits still passes."""
    compiled = SchemaCompiler().compile({"type": "object"})
    _, verdict = compiled.validate({"n": 10**5000})
    assert not verdict.valid
    assert (verdict.issues[0].keyword, verdict.issues[0].pointer) == ("maxIntegerBits", "/n")
    assert compiled.validate({"n": -(2**4096 - 1)})[1].valid
    assert not compiled.validate({"n": 2**4096})[1].valid


def test_values_outside_json_are_a_failed_validation_not_an_exception() -> None:
    """NaN, a set or a model that contains itself fails validation at its pointer."""

    class Node(BaseModel):
        children: list[Any] = []

    node = Node()
    node.children.append(node)
    compiled = SchemaCompiler().compile({"type": "object"})
    for value, pointer, keyword in [
        ({"a": [math.nan]}, "/a/0", "type"),
        ({"s": {1}}, "/s", "type"),
        ({"n": node}, "/n", "cycle"),
    ]:
        data, verdict = compiled.validate(value)
        assert data is None and not verdict.valid
        assert (verdict.issues[0].pointer, verdict.issues[0].keyword) == (pointer, keyword)


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "/$ref",
        ),
        ({"$ref": "#"}, "/$ref"),
        ({"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}}, None),
    ],
)
def test_a_reference_loop_is_refused_when_compiled(
    backend: str, schema: dict[str, Any], pointer: str | None
) -> None:
    """A chain of $ref that comes back to itself can check nothing: refused, on both backends."""
    with pytest.raises(ToolSchemaValidationError, match="leads back to itself") as caught:
        SchemaCompiler(backend=backend).compile(schema)
    issue = caught.value.validation.issues[0]
    assert issue.keyword == "$ref"
    if pointer is not None:
        assert issue.pointer == pointer


_DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
@pytest.mark.parametrize(
    ("schema", "pointer", "keyword"),
    [
        ({"$dynamicAnchor": "n", "$dynamicRef": "#n"}, "/$dynamicRef", "$dynamicRef"),
        (
            {"$defs": {"a": {"$dynamicAnchor": "n", "$dynamicRef": "#n"}}, "$ref": "#/$defs/a"},
            "/$ref",
            "$ref",
        ),
        (
            # Dynamic scope: root -> other -> "#n", which lands on the outermost "n": root.
            {
                "$id": "https://example.com/root",
                "$dynamicAnchor": "n",
                "$ref": "other",
                "$defs": {
                    "other": {
                        "$id": "other",
                        "$dynamicRef": "#n",
                        "$defs": {"x": {"$dynamicAnchor": "n", "type": "string"}},
                    }
                },
            },
            "/$ref",
            "$ref",
        ),
        (
            {"$schema": _DRAFT_2019, "$recursiveAnchor": True, "$recursiveRef": "#"},
            "/$recursiveRef",
            "$recursiveRef",
        ),
    ],
)
def test_a_dynamic_reference_loop_is_refused_like_a_ref_loop(
    backend: str, schema: dict[str, Any], pointer: str, keyword: str
) -> None:
    """A $dynamicRef or $recursiveRef chain that comes back round is refused on both backends."""
    with pytest.raises(ToolSchemaValidationError, match="leads back to itself") as caught:
        SchemaCompiler(backend=backend).compile(schema)  # type: ignore[arg-type]
    issue = caught.value.validation.issues[0]  # type: ignore[union-attr]
    assert (issue.pointer, issue.keyword) == (pointer, keyword)


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, "/$ref"),
        (
            {"$defs": {"a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}}},
            "/$defs/a/anyOf/1/$ref",
        ),
        ({"not": {"$ref": "#"}}, "/not/$ref"),
        ({"if": {"type": "object"}, "then": {"$ref": "#"}}, "/then/$ref"),
        (
            {"dependentSchemas": {"k": {"oneOf": [{"$ref": "#"}]}}},
            "/dependentSchemas/k/oneOf/0/$ref",
        ),
        (
            {"$defs": {"a": {"$id": "https://example.com/a", "allOf": [{"$ref": "#"}]}}},
            "/$defs/a/allOf/0/$ref",
        ),
    ],
)
def test_a_loop_through_in_place_applicators_is_refused_like_a_ref_loop(
    backend: str, schema: dict[str, Any], pointer: str
) -> None:
    """allOf, anyOf, oneOf, not, if/then/else and dependentSchemas do not step into the value."""
    with pytest.raises(ToolSchemaValidationError, match="leads back to itself") as caught:
        SchemaCompiler(backend=backend).compile(schema)  # type: ignore[arg-type]
    issue = caught.value.validation.issues[0]  # type: ignore[union-attr]
    assert (issue.pointer, issue.keyword) == (pointer, "$ref")


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_a_dynamic_reference_into_the_value_is_no_loop(backend: str) -> None:
    """{"$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"}} recurses into arrays: accepted."""
    compiled = SchemaCompiler(backend=backend).compile(  # type: ignore[arg-type]
        {"$dynamicAnchor": "n", "type": "array", "items": {"$dynamicRef": "#n"}}
    )
    assert compiled.check([[[]], []]).valid
    assert not compiled.check([[1]]).valid


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_a_reference_that_descends_into_the_value_is_no_loop(backend: str) -> None:
    """{"items": {"$ref": "#"}} recurses into the value, so it is a fine recursive schema."""
    compiled = SchemaCompiler(backend=backend).compile({"items": {"$ref": "#"}, "type": "array"})
    assert compiled.check([[[]]]).valid
    assert not compiled.check([[1]]).valid


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_check_on_data_deeper_than_the_stack_never_raises(backend: str) -> None:
    """check() does not normalise, yet data nested past the limit is refused, not recursed."""
    compiled = SchemaCompiler(backend=backend).compile({"items": {"$ref": "#"}})
    verdict = compiled.check(_nested(100_000))
    assert not verdict.valid and verdict.issues[0].keyword == "maxDepth"
    assert not validate_output(compiled, _nested(100_000)).valid
    assert compiled.check(_nested(60)).valid


def test_messages_are_truncated() -> None:
    """A 10,000-character value failing maxLength gives a short message."""
    compiled = SchemaCompiler().compile({"type": "string", "maxLength": 3})
    _, verdict = compiled.validate("x" * 10_000)
    message = verdict.issues[0].message
    assert verdict.issues[0].keyword == "maxLength"
    assert len(message) < 300 and "xxx... has 10000 characters" in message
    assert len(verdict.summary()) < 300


def test_pointers_are_rfc_6901_escaped() -> None:
    """Keys holding / and ~ are escaped as ~1 and ~0, in verdicts and in normalisation errors."""
    compiled = SchemaCompiler().compile(
        {"properties": {"a/b~c": {"type": "array", "items": {"type": "string"}}}}
    )
    _, verdict = compiled.validate({"a/b~c": ["ok", 7]})
    assert verdict.issues[0].pointer == "/a~1b~0c/1"
    _, refused = compiled.validate({"~/": [math.inf]})
    assert refused.issues[0].pointer == "/~0~1/0"


@pytest.mark.parametrize(
    ("schema", "pointer", "keyword"),
    [
        ({"type": "strin"}, "/type", "anyOf"),
        ({"minLength": -1}, "/minLength", "minimum"),
        ({"properties": {"a": {"required": "a"}}}, "/properties/a/required", "type"),
        (["not", "a", "schema"], "", "type"),
        ("string", "", "type"),
        (None, "", "type"),
        (3, "", "type"),
        ({"$schema": "http://example.com/my-dialect"}, "/$schema", "$schema"),
        ({"$schema": "https://json-schema.org/draft/2099-01/schema"}, "/$schema", "$schema"),
    ],
)
def test_unusable_schemas_are_refused_at_compile_time(
    schema: Any, pointer: str, keyword: str
) -> None:
    """Metaschema violations, non-schemas and other dialects fail when compiled."""
    issue = _first_issue(_compile_error(schema))
    assert (issue.pointer, issue.keyword) == (pointer, keyword)


def test_the_2020_12_schema_uri_is_accepted_with_or_without_a_fragment() -> None:
    """$schema may name draft 2020-12 with or without the empty fragment."""
    for uri in (
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    ):
        assert SchemaCompiler().compile({"$schema": uri, "type": "integer"}).check(1).valid


def test_boolean_schemas_work() -> None:
    """True accepts everything and false nothing, at the root and inside a schema."""
    compiler = SchemaCompiler()
    assert compiler.compile(True).validate({"a": [1, None]})[1].valid
    _, verdict = compiler.compile(False).validate(None)
    assert not verdict.valid and verdict.issues[0].pointer == ""
    closed = compiler.compile({"properties": {"a": True}, "additionalProperties": False})
    assert closed.validate({"a": 1})[1].valid
    assert not closed.validate({"b": 1})[1].valid


def test_validate_input_raises_with_the_validation() -> None:
    """validate_input returns the normalised input, or raises carrying the Validation."""
    compiled = SchemaCompiler().compile({"type": "object", "properties": {"t": {"type": "array"}}})
    data = validate_input(compiled, {"t": (1, 2)})
    assert data == {"t": [1, 2]}
    with pytest.raises(ToolSchemaValidationError) as info:
        validate_input(compiled, {"t": "x"}, tool_name="t")
    error = info.value
    assert error.validation is not None and not error.validation.valid
    assert error.validation.issues[0].pointer == "/t"
    assert (error.tool_name, error.schema_kind) == ("t", "input")
    assert "/t" in str(error)


def test_validate_output_returns_a_validation_and_never_raises() -> None:
    """validate_output only reports, whether the output passes or not."""
    compiled = SchemaCompiler().compile(OBJECT)
    assert validate_output(compiled, {"a": 1}).valid
    verdict = validate_output(compiled, {"a": "x"})
    assert isinstance(verdict, Validation)
    assert not verdict.valid and verdict.issues[0].pointer == "/a"


def test_issues_are_capped_at_twenty_and_most_relevant_first() -> None:
    """Shallow errors come first, weak keywords last, then the list is cut at 20."""
    properties: dict[str, Any] = {"q": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
    properties.update({f"p{i:02}": {"type": "integer"} for i in range(40)})
    schema = {"type": "object", "required": ["missing"], "properties": properties}
    compiled = SchemaCompiler().compile(schema)
    _, verdict = compiled.validate({"q": 1, **{f"p{i:02}": "x" for i in range(40)}})
    assert len(verdict.issues) == 20
    assert (verdict.issues[0].pointer, verdict.issues[0].keyword) == ("", "required")
    assert [issue.pointer for issue in verdict.issues[1:]] == [f"/p{i:02}" for i in range(19)]
    assert all(issue.keyword == "type" for issue in verdict.issues[1:])


def test_a_weak_keyword_comes_after_a_definite_one_at_the_same_place() -> None:
    """At one pointer, an anyOf failure is listed after a plain keyword failure."""
    schema = {"anyOf": [{"type": "string"}, {"type": "null"}], "minimum": 5}
    _, verdict = SchemaCompiler().compile(schema).validate(1)
    assert [issue.keyword for issue in verdict.issues] == ["minimum", "anyOf"]


def test_a_validator_crash_becomes_an_issue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any exception inside the validator is reported as a $validator issue."""
    compiled = SchemaCompiler().compile(OBJECT)

    def explode(instance: Any) -> bool:
        raise ValueError("internal")

    monkeypatch.setattr(compiled._checker, "is_valid", explode)
    verdict = compiled.check({"a": 1})
    assert not verdict.valid and verdict.issues[0].keyword == "$validator"
    assert re.search(r"ValueError: internal", verdict.issues[0].message)


def test_custom_dialects_must_be_pre_loaded_and_built_on_a_known_draft() -> None:
    """A $schema naming a pre-loaded metaschema of a known draft is accepted; others are not."""
    meta_uri = "https://example.com/meta.json"
    documents = {
        meta_uri: {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": meta_uri},
        "https://example.com/old.json": {"$schema": "http://json-schema.org/draft-07/schema#"},
        "https://example.com/odd.json": {"$schema": "https://example.com/nothing"},
    }
    compiler = SchemaCompiler(documents)
    assert compiler.compile({"$schema": meta_uri, "type": "string"}).check("s").valid
    assert compiler.compile({"$schema": "https://example.com/old.json"}).check(1).valid
    for bad in ("https://example.com/odd.json", "https://example.com/unknown.json", 7):
        with pytest.raises(ToolSchemaValidationError):
            compiler.compile({"$schema": bad})


@pytest.mark.parametrize(
    "dialect",
    [
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-04/schema#",
        "https://json-schema.org/draft/2019-09/schema",
    ],
)
def test_older_drafts_are_validated_under_their_own_rules(dialect: str) -> None:
    """A schema declaring an older draft is compiled and validated as that draft."""
    schema = {
        "$schema": dialect,
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
            "n": {"$ref": "#/definitions/count"},
        },
        "definitions": {"count": {"type": "integer"}},
    }
    compiled = SchemaCompiler().compile(schema)
    assert compiled.check({"pair": ["a"], "n": 1}).valid
    assert not compiled.check({"n": "x"}).valid
    # Tuple-form items are a draft-07 (and older) feature; 2019-09 still has it too.
    assert not compiled.check({"pair": ["a", 2]}).valid


def test_draft_07_references_are_checked_offline() -> None:
    """A draft-07 $ref that does not resolve is a compile error naming its pointer."""
    error = _compile_error(
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"$ref": "#/nope"}]}
    )
    assert error.validation is not None
    assert error.validation.issues[0].pointer == "/items/0/$ref"


def test_the_false_schema_reports_the_keyword_false() -> None:
    """A value against the boolean schema false is rejected under the keyword 'false'."""
    from toolcycle.validation import SchemaCompiler as Compiler

    issue = Compiler().compile(False).validate(1)[1].issues[0]
    assert (issue.pointer, issue.keyword) == ("", "false")


def test_identical_schemas_are_compiled_once_and_share_one_validator():
    """A source listing many tools with one schema pays the metaschema check once."""
    compiler = SchemaCompiler()
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    first = compiler.compile(schema, tool_name="a")
    assert compiler.compile(dict(schema), tool_name="b") is first
    assert compiler.compile({"type": "object"}) is not first


def test_the_compiled_schema_cache_is_bounded_and_keeps_recent_schemas():
    """The cache evicts the least recently used schema first."""
    compiler = SchemaCompiler()
    kept = compiler.compile({"title": "kept"})
    oldest = compiler.compile({"title": "schema 0"})
    for index in range(1, SchemaCompiler._CACHE_SIZE):
        compiler.compile({"title": f"schema {index}"})
        assert compiler.compile({"title": "kept"}) is kept  # touched, so never the oldest
    assert compiler.compile({"title": "schema 0"}) is not oldest  # evicted, compiled afresh
    assert len(compiler._compiled) == SchemaCompiler._CACHE_SIZE


def test_an_unusable_schema_is_not_cached_and_fails_again_with_its_own_tool_name():
    """Errors are not remembered; each tool's error names that tool."""
    compiler = SchemaCompiler()
    for name in ("a", "b"):
        with pytest.raises(ToolSchemaValidationError, match=repr(name)):
            compiler.compile({"type": 12}, tool_name=name)


def test_a_schema_holding_a_lone_surrogate_is_refused_clearly() -> None:
    with pytest.raises(ToolSchemaValidationError, match="not valid Unicode"):
        SchemaCompiler().compile({"type": "string", "description": "\ud800"})
