"""The copy of the JSON Schema Test Suite that the conformance tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUITE = Path(__file__).resolve().parent.parent / "data" / "json-schema-test-suite"
CASES = SUITE / "tests" / "draft2020-12"


def suite_remotes() -> dict[str, Any]:
    """The suite's remote documents, by the http://localhost:1234/ URI its cases use."""
    root = SUITE / "remotes"
    return {
        f"http://localhost:1234/{path.relative_to(root).as_posix()}": json.loads(
            path.read_text(encoding="utf-8")
        )
        for path in sorted(root.rglob("*.json"))
    }
