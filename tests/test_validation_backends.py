"""The two validation backends: choosing one, and behaving alike from the outside."""

from __future__ import annotations

import http.server
import threading
from typing import Any

import pytest

from toolcycle import ToolRuntime, ToolSchemaValidationError, ValidationLimits
from toolcycle.testing import FakeTool
from toolcycle.validation import DRAFT_2020_12, VALIDATOR_BACKENDS, SchemaCompiler
from toolcycle.validation import _backends as backends

BOTH = ["jsonschema", "jsonschema-rs"]

OBJECT = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"enum": [1, 2]}},
    "required": ["a"],
    "additionalProperties": False,
}


def test_auto_picks_jsonschema_rs_when_it_is_installed() -> None:
    """With jsonschema-rs importable, "auto" (the default) uses it."""
    assert VALIDATOR_BACKENDS == ("auto", "jsonschema", "jsonschema-rs")
    with ToolRuntime() as runtime:
        assert runtime.validator == "jsonschema-rs"
    assert SchemaCompiler().backend == "jsonschema-rs"


def test_auto_falls_back_to_jsonschema_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without jsonschema-rs, "auto" uses jsonschema; asking for it by name names the extra."""
    real = backends.importlib.import_module

    def without_rs(name: str, *args: Any) -> Any:
        if name == "jsonschema_rs":
            raise ModuleNotFoundError("No module named 'jsonschema_rs'")
        return real(name, *args)

    monkeypatch.setattr(backends.importlib, "import_module", without_rs)
    assert not backends.fast_backend_available()
    with ToolRuntime() as runtime:
        assert runtime.validator == "jsonschema"
    with pytest.raises(ImportError, match=r"toolcycle\[fast\]"):
        ToolRuntime(validator="jsonschema-rs")


def test_an_unknown_validator_name_is_a_clear_error() -> None:
    """validator= takes one of three names; anything else says which."""
    with pytest.raises(ValueError, match="'auto', 'jsonschema', 'jsonschema-rs'.*'fastest'"):
        ToolRuntime(validator="fastest")


@pytest.mark.parametrize("backend", BOTH)
def test_each_backend_runs_a_tool_and_reports_issues_alike(backend: str) -> None:
    """A good call succeeds and a bad one is rejected with pointer and keyword, on both."""
    with ToolRuntime(validator=backend) as runtime:
        assert runtime.validator == backend
        runtime.register(FakeTool(name="t", input_schema=OBJECT))
        with runtime.plan() as ctx:
            ok = runtime.execute("t", {"a": 1, "b": 2}, ctx)
            bad = runtime.execute("t", {"a": "x", "b": 3, "z": 0}, ctx)
    assert ok.success
    assert bad.trace.status == "invalid_input"
    assert bad.validation is not None
    assert [(issue.pointer, issue.keyword) for issue in bad.validation.issues] == [
        ("", "additionalProperties"),
        ("/a", "type"),
        ("/b", "enum"),
    ]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"dependentRequired": {"bar": ["foo"]}}, {"bar": 1}),
        ({"contains": {"const": 1}, "maxContains": 1}, [1, 1]),
        ({"contains": {"const": 1}, "minContains": 2}, [1]),
        ({"propertyNames": {"maxLength": 3}}, {"abcd": 1}),
        ({"items": {"type": "string"}, "minItems": 3}, [1]),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1),
        (False, 1),
    ],
)
def test_both_backends_name_the_same_first_issue(schema: Any, value: Any) -> None:
    """The most relevant issue has the same pointer and keyword whichever engine found it."""
    first = {
        backend: SchemaCompiler(backend=backend).compile(schema).check(value).issues[0]
        for backend in BOTH
    }
    assert (first["jsonschema"].pointer, first["jsonschema"].keyword) == (
        first["jsonschema-rs"].pointer,
        first["jsonschema-rs"].keyword,
    )


@pytest.mark.parametrize("backend", BOTH)
def test_the_issue_list_is_built_only_for_a_failing_value(backend: str) -> None:
    """A valid value costs one yes/no check; the detailed errors wait for a failure."""
    compiled = SchemaCompiler(backend=backend).compile(OBJECT)
    calls: list[Any] = []
    checker = compiled._checker

    class Counting:
        def is_valid(self, instance: Any) -> bool:
            return checker.is_valid(instance)

        def issues(self, instance: Any) -> Any:
            calls.append(instance)
            return checker.issues(instance)

    compiled._checker = Counting()
    assert compiled.check({"a": 1}).valid
    assert calls == []
    assert not compiled.check({"a": "x"}).valid
    assert calls == [{"a": "x"}]


@pytest.mark.parametrize("backend", BOTH)
def test_both_backends_apply_the_same_caps(backend: str) -> None:
    """Size, depth and integer caps hold before either engine sees the value."""
    limits = ValidationLimits(max_instance_nodes=10, max_instance_depth=3, max_integer_bits=16)
    compiled = SchemaCompiler(limits=limits, backend=backend).compile({})
    keywords = [
        compiled.validate(value)[1].issues[0].keyword
        for value in (list(range(20)), [[[["deep"]]]], 2**40)
    ]
    assert keywords == ["maxNodes", "maxDepth", "maxIntegerBits"]


def test_more_than_twenty_issues_are_capped_on_both() -> None:
    """At most 20 issues, shallow first, whichever backend found them."""
    schema = {"items": {"type": "string"}, "type": "object"}
    for backend in BOTH:
        verdict = SchemaCompiler(backend=backend).compile(schema).check(list(range(50)))
        assert len(verdict.issues) == 20
        assert verdict.issues[0].pointer == ""


def test_both_engines_read_patterns_as_ecma_262() -> None:
    r"""\p{L} and \cJ are ECMA-262: both backends accept them and give the same verdicts."""
    for pattern, good, bad in (("^\\p{L}+$", "héllo", "h3llo"), ("^\\cJ$", "\n", "J")):
        for backend in ("jsonschema", "jsonschema-rs"):
            compiled = SchemaCompiler(backend=backend).compile(
                {"type": "string", "pattern": pattern}
            )
            assert compiled.check(good).valid and not compiled.check(bad).valid


def test_a_pattern_jsonschema_rs_cannot_compile_is_refused_with_its_pointer() -> None:
    """An invalid ECMA-262 pattern is a registration error at the pattern, not a crash."""
    schema = {"properties": {"p": {"pattern": "(unclosed"}}}
    with pytest.raises(ToolSchemaValidationError) as caught:
        SchemaCompiler(backend="jsonschema-rs").compile(schema)
    issue = caught.value.validation.issues[0]
    assert (issue.pointer, issue.keyword) == ("/properties/p/pattern", "pattern")


def test_ascii_classes_agree_between_engines() -> None:
    r"""\d is ASCII-only in ECMA-262, and now on both backends: Bengali digits are refused."""
    schema = {"type": "string", "pattern": "^\\d+$"}
    bengali = "\u09ea\u09e8"
    for backend in ("jsonschema", "jsonschema-rs"):
        compiled = SchemaCompiler(backend=backend).compile(schema)
        assert not compiled.check(bengali).valid and compiled.check("42").valid


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []  # noqa: RUF012 - one list shared by the server's handlers

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""


@pytest.fixture
def schema_server() -> Any:
    _CountingHandler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("backend", BOTH)
def test_no_backend_ever_retrieves_a_reference(backend: str, schema_server: str) -> None:
    """A $ref to a live server is refused, and the server never hears from us."""
    remote = f"{schema_server}/integer.json"
    with pytest.raises(ToolSchemaValidationError, match="never retrieved"):
        SchemaCompiler(backend=backend).compile({"$ref": remote})
    assert _CountingHandler.requests == []


def test_the_jsonschema_rs_engine_itself_refuses_to_retrieve(schema_server: str) -> None:
    """Even handed a schema directly, past toolcycle's checks, the engine fetches nothing."""
    engine = backends.JsonschemaRsBackend({})
    with pytest.raises(backends.BackendSchemaError, match="never retrieves"):
        engine.build({"$ref": f"{schema_server}/integer.json"}, DRAFT_2020_12)
    assert _CountingHandler.requests == []


def test_pre_loaded_documents_serve_both_engines() -> None:
    """A reference to a pre-loaded document resolves offline on both backends."""
    uri = "https://schemas.example.com/count.json"
    documents = {uri: {"type": "integer", "minimum": 0}}
    for backend in BOTH:
        compiled = SchemaCompiler(documents, backend=backend).compile(
            {"properties": {"n": {"$ref": uri}}}
        )
        assert compiled.check({"n": 3}).valid
        assert compiled.check({"n": -1}).issues[0].pointer == "/n"


def test_a_document_jsonschema_rs_cannot_load_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should the engine refuse a document, the error names the way out."""

    class Refusing:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ValueError("cannot load that")

    rs = backends.importlib.import_module("jsonschema_rs")
    monkeypatch.setattr(rs, "Registry", Refusing)
    with pytest.raises(ValueError, match="cannot load that.*validator='jsonschema'"):
        backends.JsonschemaRsBackend({"https://example.com/a.json": {}})


def test_a_referencing_failure_inside_the_engine_is_a_schema_error() -> None:
    """Whatever else the engine raises while compiling becomes a schema error, never escapes."""
    engine = backends.JsonschemaRsBackend({})
    with pytest.raises(backends.BackendSchemaError) as caught:
        engine.build({"$ref": "#/$defs/missing"}, DRAFT_2020_12)
    assert caught.value.keyword
    assert caught.value.message


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_unevaluated_names_full_of_parentheses_are_reported_by_name(backend: str) -> None:
    """Names the model chose, parentheses and all, are read back out of the engine's message."""
    compiled = SchemaCompiler(backend=backend).compile(
        {"properties": {"ok": {}}, "unevaluatedProperties": False}
    )
    hostile = "(" * 20_000
    verdict = compiled.check({"ok": 1, "a(b": 1, hostile: 2})
    [issue] = verdict.issues
    assert issue.keyword == "unevaluatedProperties"
    assert issue.message.endswith(', "a(b" are not allowed')


def test_reading_a_listing_message_handles_unusual_text() -> None:
    """The listing reader takes names between the first '(' and a known ending, or none."""
    from toolcycle.validation._readers import _listed

    assert _listed("not allowed ('a(b', '((' were unexpected)") == ["a(b", "(("]
    assert _listed("not allowed ('x' was unevaluated and invalid)") == ["x"]
    assert _listed("no listing here") == []
    assert _listed("('x' was unexpected") == []
    assert _listed("(" + "(" * 5_000 + " was unexpected)") == []


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
@pytest.mark.parametrize(
    ("divisor", "value", "valid"),
    [
        (0.01, 1.13, True),  # 1.13 / 0.01 is 112.99999999999999 in binary floats
        (0.1, 0.3, True),
        (0.0001, 0.6999000000000001, False),  # a quotient that rounds to whole is not one
        (0.0001, 0.0075, True),
        (0.123456789, 1e308, False),  # the quotient overflows a float
        (1e-8, 12391239123.0, True),
        (0.5, 1.5, True),
        (3, 7, False),  # a whole-number divisor: checked as usual
    ],
)
def test_a_fractional_multiple_of_is_decided_on_the_decimals_json_writes(
    backend: str, divisor: float, value: float, valid: bool
) -> None:
    """Both backends read 1.13 as JSON writes it: a multiple of 0.01."""
    compiled = SchemaCompiler(backend=backend).compile({"multipleOf": divisor})
    assert compiled.check(value).valid is valid


def test_a_huge_integer_is_divided_by_a_fractional_multiple_of_exactly() -> None:
    """A value of 4,001 digits over 0.1 needs a quotient of 4,002 digits: no overflow."""
    compiled = SchemaCompiler(backend="jsonschema").compile({"multipleOf": 0.1})
    assert compiled.check(10**4000).valid


@pytest.mark.parametrize("backend", ["jsonschema", "jsonschema-rs"])
def test_dependencies_holds_under_2020_12_on_both_backends(backend: str) -> None:
    """The draft 7 keyword, still applied by 2020-12 validators for compatibility."""
    compiled = SchemaCompiler(backend=backend).compile(
        {"dependencies": {"card": ["billing"], "vip": {"required": ["tier"]}}}
    )
    assert not compiled.check({"card": 1}).valid
    assert not compiled.check({"vip": True}).valid
    assert compiled.check({"card": 1, "billing": "x", "vip": True, "tier": 2}).valid
