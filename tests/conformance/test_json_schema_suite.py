"""The official JSON Schema Test Suite, draft 2020-12, through toolcycle's validation layer.

One test id per case and backend (``jsonschema`` and ``jsonschema-rs``). Every mandatory
case must agree; the few that cannot are marked strict xfail with the reason (and the
exception they fail with), so a fix or a regression is noticed either way. The optional
cases run the same way, with a reason for each known disagreement. The suite's remote
documents are pre-loaded under http://localhost:1234/, as the suite expects; nothing is
fetched. docs/concepts/validation.md lists the same disagreements for users.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolcycle.validation import CompiledSchema, SchemaCompiler

from .conftest import CASES, SUITE, suite_remotes

ANY = "*"

# A known disagreement: why, and what the case fails with (AssertionError: the other
# verdict). Both backends read patterns as ECMA-262 and run them on a linear-time engine
# (RE2 for jsonschema, the regex crate for jsonschema-rs), and every pattern case of the
# suite passes on both, so no pattern case is listed here.
Known = tuple[str, type[BaseException]]

NO_VOCABULARIES: Known = (
    "jsonschema applies every 2020-12 keyword whatever $vocabulary a custom metaschema declares",
    AssertionError,
)
RS = "jsonschema-rs"
PY = "jsonschema"
BACKENDS = (PY, RS)

FORMAT_IS_ANNOTATION: Known = (
    (
        "format is an annotation by default in draft 2020-12 (the specification's default), "
        "so no format is asserted"
    ),
    AssertionError,
)
NO_FORMAT_ASSERTION_VOCABULARY: Known = (
    (
        "jsonschema does not implement the format-assertion vocabulary a custom metaschema "
        "declares, so format stays an annotation"
    ),
    AssertionError,
)
# (file, group description, case description or ANY) -> the known disagreement.
MANDATORY_KNOWN: dict[tuple[str, str, str], Known] = {
    (
        "vocabulary.json",
        "schema that uses custom metaschema with with no validation vocabulary",
        "no validation: invalid number, but it still validates",
    ): NO_VOCABULARIES,
}

OPTIONAL_KNOWN: dict[tuple[str, str, str], Known] = {}


RS_NO_FORMAT_ASSERTION_VOCABULARY: Known = (
    (
        "jsonschema-rs does not implement the format-assertion vocabulary a custom metaschema "
        "declares, so format stays an annotation"
    ),
    AssertionError,
)

# Known disagreements of the jsonschema-rs backend, which reads patterns as ECMA-262.
RS_MANDATORY_KNOWN: dict[tuple[str, str, str], Known] = {}
RS_OPTIONAL_KNOWN: dict[tuple[str, str, str], Known] = {}


def _optional_rule(rel: str, case: dict[str, Any], backend: str) -> Known | None:
    """Format checks are off, so every string the suite calls an invalid format passes."""
    if case["valid"] is False and rel.startswith("optional/format/"):
        return FORMAT_IS_ANNOTATION
    if case["valid"] is False and rel == "optional/format-assertion.json":
        return (
            RS_NO_FORMAT_ASSERTION_VOCABULARY if backend == RS else NO_FORMAT_ASSERTION_VOCABULARY
        )
    return None


COMPILERS = {
    backend: SchemaCompiler(documents=suite_remotes(), backend=backend) for backend in BACKENDS
}
_COMPILED: dict[tuple[str, str, int], CompiledSchema] = {}


def _tables(backend: str, *, optional: bool) -> dict[tuple[str, str, str], Known]:
    if backend == RS:
        return RS_OPTIONAL_KNOWN if optional else RS_MANDATORY_KNOWN
    return OPTIONAL_KNOWN if optional else MANDATORY_KNOWN


def _known(
    table: dict[tuple[str, str, str], Known], rel: str, group: dict[str, Any], case: dict[str, Any]
) -> Known | None:
    description = group["description"]
    return table.get((rel, description, ANY)) or table.get((rel, description, case["description"]))


def _cases(paths: list[Path], *, optional: bool) -> list[Any]:
    params = []
    for backend in BACKENDS:
        table = _tables(backend, optional=optional)
        for path in paths:
            rel = path.relative_to(CASES).as_posix()
            for index, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                for case in group["tests"]:
                    known = _known(table, rel, group, case)
                    if known is None and optional:
                        known = _optional_rule(rel, case, backend)
                    marks = (
                        [pytest.mark.xfail(reason=known[0], raises=known[1], strict=True)]
                        if known
                        else []
                    )
                    params.append(
                        pytest.param(
                            backend,
                            rel,
                            index,
                            group,
                            case,
                            marks=marks,
                            id=f"{backend}::{rel}::{group['description']}::{case['description']}",
                        )
                    )
    return params


MANDATORY = _cases(sorted(CASES.glob("*.json")), optional=False)
OPTIONAL = _cases(sorted((CASES / "optional").rglob("*.json")), optional=True)


def _check(backend: str, rel: str, index: int, group: dict[str, Any], case: dict[str, Any]) -> None:
    key = (backend, rel, index)
    if key not in _COMPILED:
        _COMPILED[key] = COMPILERS[backend].compile(group["schema"])
    verdict = _COMPILED[key].check(case["data"])
    assert verdict.valid is case["valid"], verdict.issues


_PARAMS = ("backend", "rel", "index", "group", "case")


@pytest.mark.parametrize(_PARAMS, MANDATORY)
def test_mandatory_case(
    backend: str, rel: str, index: int, group: dict[str, Any], case: dict[str, Any]
) -> None:
    """Each mandatory draft 2020-12 case agrees with the suite's verdict, on each backend."""
    _check(backend, rel, index, group, case)


@pytest.mark.parametrize(_PARAMS, OPTIONAL)
def test_optional_case(
    backend: str, rel: str, index: int, group: dict[str, Any], case: dict[str, Any]
) -> None:
    """Each optional case agrees, or fails for its stated reason, on each backend."""
    _check(backend, rel, index, group, case)


def test_the_suite_is_present_and_complete() -> None:
    """The copy holds its licence, its source and every draft 2020-12 folder."""
    assert (SUITE / "LICENSE").is_file()
    assert "44401e0c046704b476ec9d2e2fccdaee618f259d" in (SUITE / "SOURCE.txt").read_text()
    assert len(MANDATORY) > 2 * 1200
    assert any("optional/format/" in param.values[1] for param in OPTIONAL)
    remotes = suite_remotes()
    assert len(remotes) > 50
    assert "http://localhost:1234/draft2020-12/subSchemas.json" in remotes


def test_every_known_disagreement_names_a_real_case() -> None:
    """No entry of the known-disagreement tables is stale (a renamed or removed case)."""
    seen = {
        (param.values[1], param.values[3]["description"], key)
        for param in MANDATORY + OPTIONAL
        for key in (ANY, param.values[4]["description"])
    }
    tables = [MANDATORY_KNOWN, OPTIONAL_KNOWN, RS_MANDATORY_KNOWN, RS_OPTIONAL_KNOWN]
    stale = [key for table in tables for key in table if key not in seen]
    assert stale == []
