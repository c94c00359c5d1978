"""Both backends report the same issues, word for word, on every invalid case of the suite.

For each mandatory draft 2020-12 case whose value both backends refuse, the issue lists
(pointer, keyword, message, in order) must be equal. The one known exception is listed
with its reason; docs/concepts/validation.md lists it for users.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcycle import ToolSchemaValidationError
from toolcycle.validation import CompiledSchema, SchemaCompiler

from .conftest import CASES, suite_remotes

ANNOTATIONS_OF_A_FAILED_ONE_OF = (
    "when a oneOf fails because several subschemas match, jsonschema-rs drops their "
    "annotations, so it also reports the properties as unevaluated; jsonschema does not"
)
KNOWN = {
    ("unevaluatedProperties.json", "dynamic evalation inside nested refs", case): (
        ANNOTATIONS_OF_A_FAILED_ONE_OF
    )
    for case in (
        "a + b is invalid",
        "a + c is invalid",
        "a + d is invalid",
        "xx + a is invalid",
        "all + a is invalid",
    )
}


COMPILERS = [
    SchemaCompiler(documents=suite_remotes(), backend=backend)
    for backend in ("jsonschema", "jsonschema-rs")
]


def _compiled(schema: Any) -> list[CompiledSchema] | None:
    """The schema compiled by both backends, or None if it is refused (tested elsewhere)."""
    try:
        return [compiler.compile(schema) for compiler in COMPILERS]
    except ToolSchemaValidationError:
        return None


def _invalid_cases() -> list[Any]:
    params = []
    for path in sorted(CASES.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            compiled = _compiled(group["schema"])
            for case in group["tests"] if compiled else ():
                # A verdict a backend gets wrong is an xfail of the conformance test.
                if case["valid"] or any(
                    schema.validate(case["data"])[1].valid for schema in compiled
                ):
                    continue
                key = (path.name, group["description"], case["description"])
                marks = [pytest.mark.xfail(reason=KNOWN[key], strict=True)] if key in KNOWN else []
                params.append(
                    pytest.param(
                        compiled,
                        case["data"],
                        id=" / ".join(key),
                        marks=marks,
                    )
                )
    return params


CASES_TO_COMPARE = _invalid_cases()


def test_the_comparison_covers_the_suite() -> None:
    """Hundreds of invalid values take part (a filter gone wrong would empty the test)."""
    assert len(CASES_TO_COMPARE) > 500


@pytest.mark.parametrize(("compiled", "value"), CASES_TO_COMPARE)
def test_both_backends_report_the_same_issues(compiled: list[Any], value: Any) -> None:
    """Pointer, keyword and message of every issue, and their order, agree."""
    reference, fast = (schema.validate(value)[1] for schema in compiled)
    assert not reference.valid
    assert not fast.valid
    assert fast.issues == reference.issues
