"""The official JSON Schema Test Suite, draft 2020-12, through toolcycle's validation layer.

One test id per case. Every mandatory case must agree; the few that cannot are marked
strict xfail with the reason, so a fix (or a regression) is noticed either way. The
suite's remote documents are pre-loaded under http://localhost:1234/, as the suite
expects; nothing is fetched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcycle.validation import CompiledSchema, SchemaCompiler

SUITE = Path(__file__).resolve().parent.parent / "data" / "json-schema-test-suite"
CASES = SUITE / "tests" / "draft2020-12"

NO_UNICODE_PROPERTIES = (
    "Python's re module has no \\p{...} Unicode property escapes, so the pattern is "
    "refused when the schema is compiled"
)
NO_VOCABULARIES = (
    "jsonschema applies every 2020-12 keyword whatever $vocabulary a custom metaschema declares"
)

# (file, group description, case description or "*") -> reason, for cases that cannot agree.
KNOWN: dict[tuple[str, str, str], str] = {
    ("pattern.json", "pattern with Unicode property escape requires unicode mode", "*"): (
        NO_UNICODE_PROPERTIES
    ),
    ("patternProperties.json", "patternProperties with Unicode property escape", "*"): (
        NO_UNICODE_PROPERTIES
    ),
    (
        "vocabulary.json",
        "schema that uses custom metaschema with with no validation vocabulary",
        "no validation: invalid number, but it still validates",
    ): NO_VOCABULARIES,
}

# Optional cases: format assertions are off by default (the specification's default),
# and a few others need features Python's re or jsonschema lack.
OPTIONAL_REASONS = {
    "format": "format is an annotation by default in draft 2020-12; no format is asserted",
    "ecmascript-regex.json": "Python's re differs from ECMA-262 regular expressions",
    "unicode.json": "Python's re differs from ECMA-262 regular expressions",
    "dependencies-compatibility.json": (
        "the draft 7 keyword `dependencies` is not part of 2020-12, and the 2020-12 "
        "validator ignores it"
    ),
}


def _remotes() -> dict[str, Any]:
    root = SUITE / "remotes"
    return {
        f"http://localhost:1234/{path.relative_to(root).as_posix()}": json.loads(path.read_text())
        for path in sorted(root.rglob("*.json"))
    }


COMPILER = SchemaCompiler(_remotes())
_COMPILED: dict[tuple[str, int], CompiledSchema] = {}


def _cases(folder: Path) -> list[Any]:
    return [
        pytest.param(
            rel, index, group, case, id=f"{rel}::{group['description']}::{case['description']}"
        )
        for path in sorted(folder.glob("*.json"))
        for rel in [path.relative_to(CASES).as_posix()]
        for index, group in enumerate(json.loads(path.read_text()))
        for case in group["tests"]
    ]


def _compiled(rel: str, index: int, schema: Any) -> CompiledSchema:
    key = (rel, index)
    if key not in _COMPILED:
        _COMPILED[key] = COMPILER.compile(schema)
    return _COMPILED[key]


def _check(rel: str, index: int, group: dict[str, Any], case: dict[str, Any]) -> None:
    compiled = _compiled(rel, index, group["schema"])
    assert compiled.check(case["data"]).valid is case["valid"]


@pytest.mark.parametrize(("rel", "index", "group", "case"), _cases(CASES))
def test_mandatory_case(
    rel: str, index: int, group: dict[str, Any], case: dict[str, Any], request: Any
) -> None:
    """Each mandatory draft 2020-12 case agrees with the suite's verdict."""
    reason = KNOWN.get((rel, group["description"], "*")) or KNOWN.get(
        (rel, group["description"], case["description"])
    )
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    _check(rel, index, group, case)


def _optional_reason(rel: str) -> str | None:
    for key, reason in OPTIONAL_REASONS.items():
        if key in rel:
            return reason
    return None


@pytest.mark.parametrize(("rel", "index", "group", "case"), _cases(CASES / "optional"))
def test_optional_case(rel: str, index: int, group: dict[str, Any], case: dict[str, Any]) -> None:
    """Optional cases are reported; disagreements have a stated reason."""
    try:
        _check(rel, index, group, case)
    except Exception as exc:
        reason = _optional_reason(rel)
        if reason is None:
            raise
        pytest.xfail(f"{reason} ({type(exc).__name__})")


def test_the_suite_is_present_and_complete() -> None:
    """The copy holds the licence and at least a thousand mandatory cases."""
    assert (SUITE / "LICENSE").is_file()
    assert len(_cases(CASES)) > 1000
