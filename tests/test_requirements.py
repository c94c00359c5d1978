"""Every requirement has a scenario, and every scenario names a requirement."""

from __future__ import annotations

import re
from pathlib import Path

FEATURES = Path(__file__).resolve().parent.parent / "features"


def _manifest() -> set[str]:
    ids = set()
    for line in (FEATURES / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ids.add(line.split()[0])
    return ids


def _scenarios() -> list[tuple[str, set[str]]]:
    found = []
    for path in sorted(FEATURES.glob("*.feature")):
        tags: set[str] = set()
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            stripped = line.strip()
            if stripped.startswith("@"):
                tags |= {tag[1:] for tag in stripped.split() if tag.startswith("@req-")}
            elif re.match(r"Scenario( Outline)?:", stripped):
                found.append((f"{path.name}:{number}", tags))
                tags = set()
    return found


def test_every_scenario_names_a_known_requirement() -> None:
    """Each scenario carries at least one req- tag, and all its tags are in the manifest."""
    manifest = _manifest()
    scenarios = _scenarios()
    assert scenarios
    for where, tags in scenarios:
        assert tags, f"{where} has no requirement tag"
        assert tags <= manifest, f"{where} names unknown requirements {tags - manifest}"


def test_every_requirement_has_a_scenario() -> None:
    """Each requirement in the manifest is covered by at least one scenario."""
    used = set().union(*(tags for _, tags in _scenarios()))
    assert _manifest() - used == set()
