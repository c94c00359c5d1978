r"""Hostile patterns: 100 ReDoS shapes, each validated against a 1 KB attack string.

``redos_patterns.json`` (beside this file, written for toolcycle) holds 100 regular
expressions in five families: nested quantifiers (``^(a+)+$``), overlapping
alternation (``^(a|aa)*$``), adjacent overlapping repeats (``(x+x+)+y``), shapes
seen in real schemas (e-mail and URL checks, ``^(\w+\s?)*$``) and overlapping
classes. Each comes with its attack: a unit repeated to fill 1,023 characters and a
last character that makes the match fail, which sends a backtracking engine
through every way of splitting the repeat (on most of them Python's ``re`` would
not finish in any useful time).

``setup()`` compiles each pattern into a schema ``{"type": "string", "pattern": ...}``
once per backend and checks that every attack is refused. One call of
``time_redos_*`` validates all 100 attack strings, so its time is the total for
the 100; the target is under 10 ms on each backend. The ``*_10kb`` twins use
attacks ten times longer: linear matching costs about ten times as much, where
backtracking would cost exponentially more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcycle.validation import CompiledSchema, SchemaCompiler

DATA = Path(__file__).resolve().parent / "redos_patterns.json"
"""The 100 patterns and their attacks."""

INPUT_BYTES = 1024
"""The length of each attack string (ASCII, so characters and bytes alike)."""

BACKENDS = ("jsonschema", "jsonschema-rs")

_SCHEMAS: dict[str, list[CompiledSchema]] = {}
_ATTACKS: dict[int, list[str]] = {}


def load() -> list[dict[str, Any]]:
    """The pattern entries of the data file."""
    entries: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["patterns"]
    return entries


def attack(entry: dict[str, Any], length: int) -> str:
    """The attack string of ``entry``: its unit repeated, then its tail, ``length`` long."""
    body = length - len(entry["tail"])
    unit: str = entry["repeat"]
    tail: str = entry["tail"]
    return (unit * (body // len(unit) + 1))[:body] + tail


def setup() -> None:
    """Compile the 100 schemas on each backend and check that every attack is refused."""
    entries = load()
    for length in (INPUT_BYTES, 10 * INPUT_BYTES):
        _ATTACKS[length] = [attack(entry, length) for entry in entries]
    for backend in BACKENDS:
        compiler = SchemaCompiler(backend=backend)  # type: ignore[arg-type]
        _SCHEMAS[backend] = [
            compiler.compile({"type": "string", "pattern": entry["pattern"]}) for entry in entries
        ]
        for schema, text in zip(_SCHEMAS[backend], _ATTACKS[INPUT_BYTES], strict=True):
            if schema.check(text).valid:
                raise AssertionError(f"{schema.schema!r} accepted its attack on {backend}")


def teardown() -> None:
    """Nothing to release."""


def _validate_all(backend: str, length: int) -> None:
    for schema, text in zip(_SCHEMAS[backend], _ATTACKS[length], strict=True):
        schema.check(text)


def time_redos_jsonschema() -> None:
    """100 patterns x 1 KB on the jsonschema backend (RE2)."""
    _validate_all("jsonschema", INPUT_BYTES)


def time_redos_jsonschema_rs() -> None:
    """100 patterns x 1 KB on the jsonschema-rs backend (the regex crate)."""
    _validate_all("jsonschema-rs", INPUT_BYTES)


def time_redos_jsonschema_10kb() -> None:
    """100 patterns x 10 KB on the jsonschema backend."""
    _validate_all("jsonschema", 10 * INPUT_BYTES)


def time_redos_jsonschema_rs_10kb() -> None:
    """100 patterns x 10 KB on the jsonschema-rs backend."""
    _validate_all("jsonschema-rs", 10 * INPUT_BYTES)
