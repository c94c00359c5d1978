"""Validation messages: toolcycle's own words, the same from both backends."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle.validation import SchemaCompiler
from toolcycle.validation._wording import describe, duplicate_pair, json_type, show

BOTH = ["jsonschema", "jsonschema-rs"]


def _issues(backend: str, schema: Any, value: Any) -> list[tuple[str, str, str]]:
    verdict = SchemaCompiler(backend=backend).compile(schema).validate(value)[1]  # type: ignore[arg-type]
    return [(issue.pointer, issue.keyword, issue.message) for issue in verdict.issues]


MESSAGES = [
    ({"type": "integer"}, "36", [("", "type", 'expected integer, got string "36"')]),
    (
        {"type": ["null", "integer"]},
        1.5,
        [("", "type", "expected integer or null, got number 1.5")],
    ),
    ({"type": "string"}, [1], [("", "type", "expected string, got array")]),
    ({"enum": ["r", "w"]}, "x", [("", "enum", '"x" is not one of ["r", "w"]')]),
    ({"const": {"v": 1}}, 2, [("", "const", 'expected {"v": 1}, got 2')]),
    ({"minimum": 1}, 0, [("", "minimum", "0 is less than the minimum 1")]),
    ({"maximum": 1}, 2, [("", "maximum", "2 is greater than the maximum 1")]),
    ({"exclusiveMinimum": 1}, 1, [("", "exclusiveMinimum", "1 must be greater than 1")]),
    ({"exclusiveMaximum": 10}, 10, [("", "exclusiveMaximum", "10 must be less than 10")]),
    ({"multipleOf": 5}, 12, [("", "multipleOf", "12 is not a multiple of 5")]),
    (
        {"maxLength": 3},
        "abcd",
        [("", "maxLength", '"abcd" has 4 characters, more than the maximum of 3')],
    ),
    (
        {"minLength": 2},
        "a",
        [("", "minLength", '"a" has 1 character, fewer than the minimum of 2')],
    ),
    (
        {"pattern": "^[a-z]+$"},
        "A1",
        [("", "pattern", '"A1" does not match the pattern "^[a-z]+$"')],
    ),
    ({"minItems": 2}, [1], [("", "minItems", "expected at least 2 items, got 1")]),
    ({"maxItems": 1}, [1, 2], [("", "maxItems", "expected at most 1 item, got 2")]),
    (
        {"maxProperties": 1},
        {"a": 1, "b": 2},
        [("", "maxProperties", "expected at most 1 property, got 2")],
    ),
    ({"minProperties": 2}, {}, [("", "minProperties", "expected at least 2 properties, got 0")]),
    (
        {"uniqueItems": True},
        [1, {"a": [True]}, 1.0, {"a": [True]}],
        [("", "uniqueItems", "items 0 and 2 are equal; the items must be unique")],
    ),
    (
        {"required": ["a", "b", "c"]},
        {"b": 1},
        [("", "required", 'missing required properties "a", "c"')],
    ),
    (
        {"dependentRequired": {"card": ["cvv", "expiry"], "iban": ["bic"]}},
        {"card": 1, "expiry": 2, "iban": 3},
        [("", "dependentRequired", '"card" requires "cvv"; "iban" requires "bic"')],
    ),
    (
        {"properties": {"a": {}}, "patternProperties": {"^x-": {}}, "additionalProperties": False},
        {"a": 1, "x-ok": 2, "c": 3, "b": 4},
        [("", "additionalProperties", 'unexpected properties "b", "c" are not allowed')],
    ),
    (
        {"additionalProperties": {"type": "string"}},
        {"a": 1},
        [("/a", "type", "expected string, got integer 1")],
    ),
    (
        {"properties": {"a": True}, "unevaluatedProperties": False},
        {"a": 1, "x": 2},
        [("", "unevaluatedProperties", 'unevaluated property "x" is not allowed')],
    ),
    (
        {"unevaluatedProperties": {"type": "string"}},
        {"x": 2, "y": 3},
        [
            (
                "",
                "unevaluatedProperties",
                'unevaluated properties "x", "y" do not match unevaluatedProperties',
            )
        ],
    ),
    (
        {"prefixItems": [True], "unevaluatedItems": False},
        [1, 2, 3],
        [("", "unevaluatedItems", "2 unevaluated items are not allowed")],
    ),
    ({"not": {"type": "string"}}, "s", [("", "not", '"s" must not match the schema under not')]),
    (
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        None,
        [("", "anyOf", "expected integer or string, got null")],
    ),
    (
        {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        "5",
        [("", "anyOf", 'expected integer or null, got string "5"')],
    ),
    (
        {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
        0,
        [
            (
                "",
                "anyOf",
                "0 matches none of the anyOf schemas; the closest: 0 is less than the minimum 1",
            )
        ],
    ),
    (
        {
            "anyOf": [{"$ref": "#/$defs/point"}, {"type": "null"}],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        },
        {"x": "1"},
        [
            (
                "",
                "anyOf",
                (
                    '{"x": "1"} matches none of the anyOf schemas; the closest: /x: '
                    'expected number, got string "1"'
                ),
            )
        ],
    ),
    (
        {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "pattern": "^a"}]},
        "bcd",
        [("", "oneOf", '"bcd" matches none of the oneOf schemas')],
    ),
    (
        {"anyOf": [False, {"type": "integer", "maximum": 3}]},
        5,
        [
            (
                "",
                "anyOf",
                "5 matches none of the anyOf schemas; the closest: 5 is greater than the maximum 3",
            )
        ],
    ),
    (
        {"oneOf": [{"type": ["number", "null"]}, {"type": "boolean"}]},
        "x",
        [("", "oneOf", 'expected boolean or null or number, got string "x"')],
    ),
    (
        {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}], "$defs": {"n": {"type": "null"}}},
        1,
        [("", "anyOf", "1 matches none of the anyOf schemas")],
    ),
    (
        {"oneOf": [{"minimum": 0}, {"maximum": 10}]},
        5,
        [("", "oneOf", "5 matches more than one of the oneOf schemas")],
    ),
    (
        {"oneOf": [{"minimum": 10}, {"maximum": 0}]},
        5,
        [("", "oneOf", "5 matches none of the oneOf schemas")],
    ),
    (
        {"propertyNames": {"maxLength": 2}},
        {"abc": 1, "ok": 2},
        [("", "maxLength", '"abc" has 3 characters, more than the maximum of 2')],
    ),
    ({"propertyNames": False}, {"a": 1, "b": 2}, [("", "false", "no property is allowed here")]),
]


@pytest.mark.parametrize("backend", BOTH)
@pytest.mark.parametrize(("schema", "value", "expected"), MESSAGES)
def test_each_keyword_has_one_message_whichever_backend(
    backend: str, schema: Any, value: Any, expected: list[tuple[str, str, str]]
) -> None:
    """Pointer, keyword and message are toolcycle's own, identical on both engines."""
    assert _issues(backend, schema, value) == expected


@pytest.mark.parametrize("backend", BOTH)
def test_a_false_subschema_fails_at_the_value_it_refuses(backend: str) -> None:
    """Under properties, prefixItems and items, false names the refused value's pointer.

    jsonschema on its own reports these at the parent (or one issue for all extra
    items); the runtime's copy of the schema keeps the place.
    """
    schema = {
        "properties": {"secret": False, "list": {"prefixItems": [True], "items": False}},
        "patternProperties": {"^x-": False},
    }
    value = {"secret": 1, "x-y": 2, "list": [1, 2, "three"]}
    assert _issues(backend, schema, value) == [
        ("/secret", "false", "no value is allowed here, got 1"),
        ("/x-y", "false", "no value is allowed here, got 2"),
        ("/list/1", "false", "no value is allowed here, got 2"),
        ("/list/2", "false", 'no value is allowed here, got "three"'),
    ]


@pytest.mark.parametrize("backend", BOTH)
def test_a_false_subschema_in_a_preloaded_document_keeps_its_place_too(backend: str) -> None:
    """The stand-ins are in jsonschema's copy of the pre-loaded documents as well."""
    documents = {"https://example.com/closed.json": {"properties": {"x": False}}}
    schema = {"properties": {"o": {"$ref": "https://example.com/closed.json"}}}
    compiled = SchemaCompiler(documents, backend=backend).compile(schema)  # type: ignore[arg-type]
    verdict = compiled.validate({"o": {"x": 1}})[1]
    assert [(i.pointer, i.keyword) for i in verdict.issues] == [("/o/x", "false")]


@pytest.mark.parametrize("backend", BOTH)
def test_the_contains_family_is_one_keyword_with_its_bounds_in_the_message(backend: str) -> None:
    """The minContains and maxContains bounds fail as contains, whichever one an engine blames."""
    contains = {"type": "string"}
    cases = [
        ({"contains": contains}, [1], "expected at least 1 of the items"),
        ({"contains": contains, "minContains": 2}, ["a"], "expected at least 2 of the items"),
        ({"contains": contains, "maxContains": 2}, ["a"] * 3, "expected between 1 and 2 of"),
        ({"contains": contains, "minContains": 0, "maxContains": 1}, ["a", "b"], "at most 1 of"),
        ({"contains": contains, "minContains": 2, "maxContains": 2}, ["a"], "exactly 2 of"),
    ]
    for schema, value, start in cases:
        [(pointer, keyword, message)] = _issues(backend, schema, value)
        assert (pointer, keyword) == ("", "contains")
        assert start in message, message


@pytest.mark.parametrize("backend", BOTH)
def test_draft_04_exclusive_bounds_fail_as_the_bound_they_modify(backend: str) -> None:
    """exclusiveMinimum: true in draft-04 is part of minimum, so minimum is the keyword."""
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "minimum": 3,
        "exclusiveMinimum": True,
    }
    assert _issues(backend, schema, 3) == [("", "minimum", "3 must be greater than 3")]


@pytest.mark.parametrize("backend", BOTH)
def test_draft_07_dependencies_and_additional_items_are_worded_alike(backend: str) -> None:
    """The older keywords get messages from the schema too."""
    draft7 = "http://json-schema.org/draft-07/schema#"
    schema = {"$schema": draft7, "dependencies": {"a": ["b"]}}
    assert _issues(backend, schema, {"a": 1}) == [("", "dependencies", '"a" requires "b"')]
    schema = {"$schema": draft7, "items": [True], "additionalItems": False}
    assert _issues(backend, schema, [1, 2, 3]) == [
        ("", "additionalItems", "expected at most 1 item, got 3")
    ]


@pytest.mark.parametrize("backend", BOTH)
def test_an_empty_key_keeps_its_place_in_the_pointer(backend: str) -> None:
    """A property named "" is a pointer step of its own ("/"), though jsonschema-rs drops it."""
    schema = {"additionalProperties": {"additionalProperties": {"type": "boolean"}}}
    value = {"": {"": 1, "b": True}, "a": {"": 2}}
    assert _issues(backend, schema, value) == [
        ("//", "type", "expected boolean, got integer 1"),
        ("/a/", "type", "expected boolean, got integer 2"),
    ]


@pytest.mark.parametrize("backend", BOTH)
def test_a_keyword_reached_through_a_reference_is_worded_from_its_own_schema(
    backend: str,
) -> None:
    """$ref into $defs and into a pre-loaded document: the limit comes from the target."""
    documents = {"https://example.com/limits.json": {"$defs": {"small": {"maximum": 9}}}}
    schema = {
        "$id": "https://example.com/root.json",
        "properties": {
            "local": {"$ref": "#/$defs/short"},
            "remote": {"$ref": "limits.json#/$defs/small"},
        },
        "$defs": {"short": {"maxLength": 2}},
    }
    compiled = SchemaCompiler(documents, backend=backend).compile(schema)  # type: ignore[arg-type]
    verdict = compiled.validate({"local": "abc", "remote": 10})[1]
    assert [(i.pointer, i.keyword, i.message) for i in verdict.issues] == [
        ("/local", "maxLength", '"abc" has 3 characters, more than the maximum of 2'),
        ("/remote", "maximum", "10 is greater than the maximum 9"),
    ]


def test_issues_are_ordered_by_depth_then_pointer_keyword_and_message() -> None:
    """Shallow first, anyOf/oneOf last at a depth, then alphabetical: no engine order shows."""
    schema = {
        "type": "object",
        "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
        "required": ["z"],
        "anyOf": [{"required": ["x"]}, {"required": ["y"]}],
        "additionalProperties": False,
    }
    value = {"b": 1, "a": 2, "c": 3}
    for backend in BOTH:
        assert _issues(backend, schema, value) == [
            ("", "additionalProperties", 'unexpected property "c" is not allowed'),
            ("", "required", 'missing required property "z"'),
            ("", "anyOf", '{"a": 2, "b": 1, "c": 3} matches none of the anyOf schemas'),
            ("/a", "type", "expected string, got integer 2"),
            ("/b", "type", "expected string, got integer 1"),
        ]


def test_show_quotes_values_as_compact_sorted_json_cut_to_sixty_characters() -> None:
    """Messages never grow with the value, and key order never changes them."""
    assert show({"b": 1, "a": None}) == '{"a": null, "b": 1}'
    assert show("é") == '"é"'
    long = show("x" * 1000)
    assert len(long) == 60 and long.endswith("...")
    assert show(object()) == "object"


def test_json_type_names_the_json_type_of_a_python_value() -> None:
    """A bool is boolean, not integer; a whole float is an integer, as JSON Schema counts."""
    assert [json_type(v) for v in (None, True, 1, 1.0, 1.5, "s", [], {})] == [
        "null",
        "boolean",
        "integer",
        "integer",
        "number",
        "string",
        "array",
        "object",
    ]


def test_duplicate_pair_uses_json_equality() -> None:
    """1 equals 1.0 but not True; objects compare by content, whatever their key order."""
    assert duplicate_pair([True, 1, 2]) is None
    assert duplicate_pair([True, 1, 1.0]) == (1, 2)
    assert duplicate_pair([{"a": 1, "b": 2}, {"b": 2, "a": 1}]) == (0, 1)
    assert duplicate_pair([[1], [1.0]]) == (0, 1)


def test_describe_falls_back_to_a_plain_message_when_the_schema_is_unknown() -> None:
    """An unknown keyword, or one whose schema was not found, still gets a sentence."""
    assert describe("x-custom", 3, None) == ("x-custom", "3 does not satisfy x-custom")
    assert describe("type", "s", None) == ("type", '"s" does not satisfy type')
    assert describe("required", {}, None) == ("required", "{} does not satisfy required")
    assert describe("format", "x", {"format": "email"}) == ("format", '"x" is not a valid email')
    assert describe("dependentRequired", [], {"dependentRequired": {}}) == (
        "dependentRequired",
        "[] does not satisfy dependentRequired",
    )
    assert describe("dependencies", {"a": 1, "b": 2}, {"dependencies": {"a": ["b"]}}) == (
        "dependencies",
        '{"a": 1, "b": 2} does not satisfy dependencies',
    )
    assert describe("uniqueItems", [1, 2], {"uniqueItems": True}) == (
        "uniqueItems",
        "[1, 2] does not satisfy uniqueItems",
    )
