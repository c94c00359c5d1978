"""Helpers for the Agent Skills tests: skill folders written into a temporary directory."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent.parent / "data" / "agent-skills"


def make_skill(
    root: Path,
    name: str,
    *,
    description: str = "Does one thing well.",
    extra: str = "",
    body: str = "# Instructions\n\nFollow these steps.\n",
    files: dict[str, str | bytes] | None = None,
    folder: str | None = None,
) -> Path:
    """Write a skill folder ``root/<folder or name>`` and return it."""
    path = root / (folder or name)
    path.mkdir(parents=True, exist_ok=True)
    front = f"---\nname: {name}\ndescription: {description}\n{extra}---\n"
    (path / "SKILL.md").write_text(front + body, encoding="utf-8")
    for relative, content in (files or {}).items():
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return path
