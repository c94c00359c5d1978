"""The requirement manifest and the feature files agree in both directions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FEATURES = Path(__file__).resolve().parent.parent / "features"
MANIFEST = FEATURES / "requirements.txt"

_ID = re.compile(r"^req-[a-z0-9]+(?:-[a-z0-9]+)*$")
_SCENARIO = re.compile(r"^(Scenario|Scenario Outline|Scenario Template|Example):")
_EXAMPLES = re.compile(r"^(Examples|Scenarios):")


@dataclass
class Scenario:
    where: str
    tags: set[str]
    example_tags: set[str] = field(default_factory=set)

    @property
    def requirements(self) -> set[str]:
        return {tag for tag in self.tags | self.example_tags if tag.startswith("req-")}


def _manifest() -> dict[str, str]:
    """Map each requirement id of the manifest to its description."""
    entries: dict[str, str] = {}
    for number, line in enumerate(MANIFEST.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        req_id, _, description = line.strip().partition(" ")
        assert _ID.match(req_id), f"requirements.txt:{number}: {req_id!r} is not a req- id"
        assert description.strip(), f"requirements.txt:{number}: {req_id} has no description"
        assert req_id not in entries, f"requirements.txt:{number}: {req_id} is listed twice"
        entries[req_id] = description.strip()
    return entries


def _scenarios() -> list[Scenario]:
    """Every scenario of every feature file, with its own tags and its Examples' tags."""
    found: list[Scenario] = []
    for path in sorted(FEATURES.glob("*.feature")):
        pending: set[str] = set()
        current: Scenario | None = None
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = raw.strip()
            if line.startswith("#"):
                continue
            if line.startswith("@"):
                pending |= {tag[1:] for tag in line.split() if tag.startswith("@")}
            elif _SCENARIO.match(line):
                current = Scenario(f"{path.name}:{number}", pending)
                found.append(current)
                pending = set()
            elif _EXAMPLES.match(line):
                assert current is not None, f"{path.name}:{number}: Examples outside a scenario"
                current.example_tags |= pending
                pending = set()
            elif line.startswith(("Feature:", "Rule:", "Background:")):
                pending = set()  # tags of these blocks belong to no single scenario
    return found


def test_manifest_lists_requirements_with_descriptions() -> None:
    """The manifest is non-empty and each line is a unique req- id with a description."""
    assert len(_manifest()) > 20


def test_feature_files_have_scenarios() -> None:
    """The parser finds the scenarios of the feature files."""
    assert len(_scenarios()) > 50


def test_every_scenario_names_a_requirement_of_the_manifest() -> None:
    """Each scenario has a req- tag, and every req- tag it carries is in the manifest."""
    manifest = _manifest()
    for scenario in _scenarios():
        assert scenario.requirements, f"{scenario.where} has no req- tag"
        unknown = scenario.requirements - manifest.keys()
        assert not unknown, f"{scenario.where} names requirements not in the manifest: {unknown}"


def test_every_requirement_of_the_manifest_tags_a_scenario() -> None:
    """Each manifest id is used by at least one scenario (or by one of its Examples)."""
    used = set().union(*(scenario.requirements for scenario in _scenarios()))
    missing = sorted(_manifest().keys() - used)
    assert not missing, f"requirements without a scenario: {missing}"
