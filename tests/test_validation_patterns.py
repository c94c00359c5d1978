"""Patterns: read as ECMA-262, run in linear time on both backends, refused when they cannot be."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jsonschema_rs
import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import ToolRuntime, ToolSchemaValidationError
from toolcycle.testing import FakeTool
from toolcycle.validation import DRAFT_2020_12, SchemaCompiler
from toolcycle.validation._compiler import _engine
from toolcycle.validation._ecma import PatternError, to_re2
from toolcycle.validation._patterns import compile_pattern, matches

BACKENDS = ("jsonschema", "jsonschema-rs")

# Known ReDoS shapes, each with a value it matches and one it almost matches, by length.
CATASTROPHIC: dict[str, tuple[Callable[[int], str], Callable[[int], str]]] = {
    "^(a|a)*$": (lambda n: "a" * n, lambda n: "a" * n + "!"),
    "^(a|aa)*$": (lambda n: "a" * n, lambda n: "a" * n + "!"),
    "^(a+)+$": (lambda n: "a" * n, lambda n: "a" * n + "!"),
    "^(a*)*$": (lambda n: "a" * n, lambda n: "a" * n + "!"),
    "(x+x+)+y": (lambda n: "x" * n + "y", lambda n: "x" * n),
    "^(\\w+\\s?)*$": (lambda n: "ab " * (n // 3), lambda n: "a" * n + "!"),
    "^(a|b|ab)*c$": (lambda n: "ab" * (n // 2) + "c", lambda n: "ab" * (n // 2)),
    "^([a-z]+\\.?)+@x$": (lambda n: "a." * (n // 2) + "@x", lambda n: "a" * n + "@"),
    "^(\\d+|\\d+\\.\\d+)*$": (lambda n: "1" * n, lambda n: "1" * n + "x"),
}


def _compile(backend: str, schema: Any) -> Any:
    return SchemaCompiler(backend=backend).compile(schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("length", [25, 1_000, 10_000])
@pytest.mark.parametrize("pattern", list(CATASTROPHIC))
@pytest.mark.parametrize("backend", BACKENDS)
def test_catastrophic_patterns_validate_long_inputs_on_both_backends(
    backend: str, pattern: str, length: int
) -> None:
    """Patterns that backtrack exponentially in Python's re are accepted and give verdicts."""
    good, bad = CATASTROPHIC[pattern]
    as_value = _compile(backend, {"type": "string", "pattern": pattern})
    assert as_value.check(good(length)).valid
    assert not as_value.check(bad(length)).valid
    as_key = _compile(
        backend, {"type": "object", "patternProperties": {pattern: {"type": "integer"}}}
    )
    assert not as_key.check({good(length): "not an integer"}).valid
    assert as_key.check({bad(length): "not matched, so anything goes"}).valid
    closed = _compile(
        backend,
        {"type": "object", "patternProperties": {pattern: {}}, "additionalProperties": False},
    )
    assert closed.check({good(length): 1}).valid and not closed.check({bad(length): 1}).valid


def test_the_reference_backend_matches_with_re2_classes() -> None:
    """Jsonschema's pattern keywords are toolcycle's, and every pattern compiles to RE2."""
    cls = _engine().dialects[DRAFT_2020_12][0]
    for keyword in ("pattern", "patternProperties", "additionalProperties"):
        assert cls.VALIDATORS[keyword].__module__ == "toolcycle.validation._re2_keywords"
    assert (
        cls.VALIDATORS["unevaluatedProperties"].__module__ == "toolcycle.validation._re2_keywords"
    )
    for pattern in CATASTROPHIC:
        assert isinstance(compile_pattern(pattern), re2._Regexp)


def test_the_reference_backend_never_runs_python_re_on_a_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With re.search and re.match broken, every pattern keyword still validates."""
    closed = _compile(
        "jsonschema",
        {
            "type": "object",
            "properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}},
            "patternProperties": {"^x(a+)+$": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
    )
    unevaluated = _compile(
        "jsonschema",
        {"allOf": [{"patternProperties": {"^y(a|a)*$": {}}}], "unevaluatedProperties": False},
    )

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Python's re was asked to match a schema pattern")

    monkeypatch.setattr(re, "search", broken)
    monkeypatch.setattr(re, "match", broken)
    assert closed.check({"s": "aaaa", "xaa": 1, "other": "text"}).valid
    verdict = closed.check({"s": "aaa!", "xaa": "1", "other": 2})
    assert sorted((i.pointer, i.keyword) for i in verdict.issues) == [
        ("/other", "type"),
        ("/s", "pattern"),
        ("/xaa", "type"),
    ]
    assert unevaluated.check({"yaa": 1}).valid
    verdict = unevaluated.check({"yaa": 1, "yb": 2})
    assert [(i.pointer, i.keyword) for i in verdict.issues] == [("", "unevaluatedProperties")]
    assert "yb" in verdict.issues[0].message and "yaa" not in verdict.issues[0].message


def test_jsonschema_rs_runs_patterns_on_the_regex_crate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast backend asks for RegexOptions (the regex crate), never fancy-regex."""
    seen: list[Any] = []
    original = jsonschema_rs.validator_for

    def spy(schema: Any, **options: Any) -> Any:
        seen.append(options.get("pattern_options"))
        return original(schema, **options)

    monkeypatch.setattr(jsonschema_rs, "validator_for", spy)
    _compile("jsonschema-rs", {"type": "string", "pattern": "^(a+)+$", "title": "spied"})
    assert seen and all(isinstance(option, jsonschema_rs.RegexOptions) for option in seen)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("^(a)\\1$", "backreference"),
        ("^(?<x>a)\\k<x>$", "backreference"),
        ("^a(?=b)", "lookahead or lookbehind"),
        ("^a(?!b)", "lookahead or lookbehind"),
        ("(?<=a)b", "lookahead or lookbehind"),
        ("(?<!a)b", "lookahead or lookbehind"),
        ("(?i)abc", "not an ECMA-262 group"),
        ("\\p{Alphabetic}", "no Unicode property"),
        ("a{1001}", "RE2 cannot compile it"),
        ("\\a", "not an escape ECMA-262 allows"),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_patterns_re2_cannot_run_are_refused_at_registration_on_both_backends(
    backend: str, pattern: str, reason: str
) -> None:
    """The registration error names the pattern's pointer, the pattern and the reason."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    with ToolRuntime(validator=backend) as runtime:  # type: ignore[arg-type]
        with pytest.raises(ToolSchemaValidationError) as caught:
            runtime.register(FakeTool(name="t", input_schema=schema))
    issue = caught.value.validation.issues[0]  # type: ignore[union-attr]
    assert (issue.pointer, issue.keyword) == ("/properties/s/pattern", "pattern")
    assert reason in issue.message and repr(pattern) in issue.message
    with pytest.raises(ToolSchemaValidationError, match=re.escape(reason)):
        _compile(backend, {"patternProperties": {pattern: {}}})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_safe_pattern_once_refused_runs_through_execute(backend: str) -> None:
    r"""^(\w+\s?)*$ registers, and execute accepts or rejects long values without raising."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": r"^(\w+\s?)*$"}}}
    with ToolRuntime(validator=backend) as runtime:  # type: ignore[arg-type]
        runtime.register(FakeTool(name="words", input_schema=schema))
        with runtime.plan() as ctx:
            fine = runtime.execute("words", {"s": "some words " * 1_000}, ctx)
            hostile = runtime.execute("words", {"s": "a" * 10_000 + "!"}, ctx)
    assert fine.success
    assert not hostile.success and hostile.validation is not None
    assert [(i.pointer, i.keyword) for i in hostile.validation.issues] == [("/s", "pattern")]


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("^\\d$", "\u07c0", False),  # NKO digit zero: \d is ASCII in ECMA-262
        ("^\\D$", "\u07c0", True),
        ("^\\w$", "\u00e9", False),
        ("^\\W$", "\u00e9", True),
        ("^\\s$", "\ufeff", True),  # the byte order mark is white space in ECMA-262
        ("^\\S$", "\ufeff", False),
        ("^\\s$", "\u2028", True),
        ("^.$", "\r", False),  # . never matches a line terminator
        ("^.$", "\u2029", False),
        ("^.$", "\u0085", True),
        ("^a$", "a\n", False),  # $ is the end of the text only
        ("^[\\d]$", "7", True),
        ("^[^\\W]$", "_", True),
        ("^[\\s\\d]+$", " 1\t2", True),
        ("^\\p{Letter}+$", "\u00e9t\u00e9", True),
        ("^\\p{Lu}$", "\u00c9", True),
        ("^\\p{Script=Greek}$", "\u03b1", True),
        ("^\\p{General_Category=Nd}$", "\u0664", True),
        ("^\\P{ASCII}$", "\u00e9", True),
        ("^\\P{ASCII}$", "e", False),
        ("^\\u00e9$", "\u00e9", True),
        ("^\\u{1F600}$", "\U0001f600", True),
        ("^\\uD83D\\uDE00$", "\U0001f600", True),
        ("^\\cJ$", "\n", True),
        ("^\\x41$", "A", True),
        ("^[[:alpha:]]$", "a", False),  # no POSIX classes: '[' and ':' are plain
        ("^[[:alpha:]]$", ":]", True),
        ("^[a-]$", "-", True),
        ("^(?<year>\\d{4})$", "2024", True),
        ("^\\/\\.$", "/.", True),
        ("a\\bb", "ab", False),
    ],
)
def test_ecma_262_meaning_is_kept_on_re2(pattern: str, text: str, expected: bool) -> None:
    """The rewrite keeps ECMA-262's meaning where RE2's own would differ."""
    assert matches(pattern, text) is expected


def test_the_rewrite_is_plain_re2_syntax() -> None:
    """Classes become explicit code points; a lone surrogate in a value still matches."""
    assert to_re2("\\d+") == "[\\x{30}-\\x{39}]+"
    assert to_re2("a.b") == "a[^\\x{A}\\x{D}\\x{2028}-\\x{2029}]b"
    assert matches("^a.b$", "a\ud800b")
    with pytest.raises(PatternError, match="lone surrogate"):
        to_re2("\\uD800")


EDGES = [
    "[]",
    "[^]",
    "\\0",
    "[\\b]",
    "a{",
    "x{a}",
    "[\\d-z]",
    "[z-a]",
    "a{2,1}",
    "\\x4",
    "\\Z",
    "\\k<n>(?<n>a)",
    "(a)\\1",
    "\\cJ",
    "\\u{1F600}",
    "\\p{Lu}",
    "[\\P{L}]",
    "\\/",
    "[\\-a]",
    "a]",
    "a}",
    "[\\w-]",
    "(?:a|b)+?",
    "a{2,}",
]


@pytest.mark.parametrize("pattern", EDGES)
def test_both_backends_accept_and_refuse_the_same_patterns(pattern: str) -> None:
    """For corner cases of ECMA-262 syntax, both backends accept the pattern or both refuse it."""
    outcomes = []
    for backend in BACKENDS:
        try:
            _compile(backend, {"pattern": pattern})
        except ToolSchemaValidationError as error:
            outcomes.append(error.validation.issues[0].pointer)  # type: ignore[union-attr]
        else:
            outcomes.append("accepted")
    assert outcomes[0] == outcomes[1]


_AGREEING = [
    "^[a-z]+$",
    "^\\d{2,4}$",
    "^\\w+\\s\\w+$",
    "^.+$",
    "^[^\\d\\s]*$",
    "\\S",
    "^\\p{L}+$",
    "^\\P{L}*$",
    "^(a|b)*c?$",
    "^[\\u00e0-\\u00ff]+$",
    "^[\\s\\S]$",
    "^\\u{e9}+$",
    "[.]",
]
_TEXT = st.text(
    alphabet="aAbcz09_ -.\n\r\t\u2028\u00a0\ufeff\u00e9\u0664\u09ea\U0001f600", max_size=6
)
_COMPILED = {
    pattern: [_compile(backend, {"type": "string", "pattern": pattern}) for backend in BACKENDS]
    for pattern in _AGREEING
}


@settings(max_examples=300, deadline=None)
@given(pattern=st.sampled_from(_AGREEING), text=_TEXT)
def test_pattern_verdicts_agree_between_backends(pattern: str, text: str) -> None:
    """On ASCII and non-ASCII text, line terminators included, both engines agree."""
    reference, fast = _COMPILED[pattern]
    assert reference.check(text).valid is fast.check(text).valid


def test_format_regex_is_an_annotation_that_compiles_nothing() -> None:
    """format: regex asserts nothing on either backend; the class's checker compiles with RE2."""
    for backend in BACKENDS:
        assert _compile(backend, {"type": "string", "format": "regex"}).check("(a)\\1").valid
    checker = _engine().dialects[DRAFT_2020_12][0].FORMAT_CHECKER
    assert checker.conforms("^(a|a)*$", "regex")
    assert not checker.conforms("(a)\\1", "regex")
