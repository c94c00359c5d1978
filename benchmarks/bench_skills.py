"""Discovering a folder of Agent Skills: toolcycle against the reference library.

``setup()`` writes two folders of `SKILL_COUNT` skills each (``skill-0000`` to
``skill-0999``) into one temporary directory, which ``teardown()`` removes: in one
the Markdown body of every ``SKILL.md`` is `LARGE_BODY_BYTES` (100 KB), in the
other `SMALL_BODY_BYTES` (1 KB). Each ``SKILL.md`` has the front matter a real
skill has: ``name``, a description of about 200 characters, ``license``,
``metadata`` with two keys and ``allowed-tools``.

Each size has two benchmarks, run over the same folder in the same process:

- ``time_skills_register_*``: what a user does. A fresh ``ToolRuntime`` with a
  null tracer, ``runtime.register_source(SkillDirectory(folder))`` (which scans
  the folder, reads every front matter, checks the fields, builds one tool per
  skill and has the runtime check and compile its schemas), then
  ``runtime.close()``.
- ``time_skills_read_properties_*``: the reference library, ``skills_ref``:
  ``read_properties(folder)`` for every skill folder, in sorted order. It reads
  the whole file and parses the front matter with StrictYAML; it checks less
  than toolcycle does (no name rules) and builds no tools.

The small bodies show how much of the speed-up comes from reading only the
front matter (toolcycle leaves the body for activation) rather than from
parsing and checking faster.

Two more benchmarks, on the 100 KB folder, measure what a user sees, for the
restated target (`benchmarks.targets`): ``time_skills_user_register_100kb``
builds a fresh ``ToolRuntime()`` (the default one), calls
``register_source(SkillDirectory(folder))`` and lists the tools with
``runtime.descriptors()``; the runtime is closed after the timing, as a user's
would be much later. ``time_skills_user_read_properties_100kb`` is
``read_properties`` of each folder again. Each runs `USER_REPEATS` times (best of
two warm runs: ``setup()`` runs each once first).

Each run takes between a tenth of a second and a few seconds, so every
benchmark says ``number = 1`` and ``repeat = REPEATS``, and the runner runs it
exactly that often. The files are freshly written, so both sides read them from
the page cache: this measures the work on the files, not the disk.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skills_ref import read_properties  # type: ignore[import-untyped]

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.skills import SkillDirectory

if TYPE_CHECKING:
    from collections.abc import Callable

SKILL_COUNT = 1000
"""How many skill folders each generated folder holds."""

LARGE_BODY_BYTES = 100 * 1024
"""The size of each Markdown body in the large folder."""

SMALL_BODY_BYTES = 1024
"""The size of each Markdown body in the small folder."""

REPEATS = 5
"""How many times each benchmark runs; the runner reports best and median."""

USER_REPEATS = 2
"""How many times each benchmark of the user's path runs, after one warm-up run."""

_PARAGRAPH = (
    "Read the input carefully before changing anything. Keep the original file "
    "untouched and write the result next to it, so that the user can compare the "
    "two. When a step fails, say which step and why, and stop there rather than "
    "guessing what the user meant.\n\n"
)
_SECTION = (
    "## Step {n}\n\n" + _PARAGRAPH + "- Check the file exists and is readable.\n"
    "- Note its size and encoding.\n"
    "- Run the conversion with `--dry-run` first.\n\n"
    "```python\n"
    "from pathlib import Path\n\n"
    "def convert(path: Path) -> str:\n"
    '    return path.read_text(encoding="utf-8").upper()\n'
    "```\n\n"
)

_state: dict[str, Any] = {}


def _body(name: str, size: int) -> str:
    """Markdown of exactly ``size`` bytes (ASCII): a title, then numbered sections."""
    parts = [f"# {name}\n\n", _PARAGRAPH]
    length = sum(map(len, parts))
    n = 1
    while length < size:
        section = _SECTION.format(n=n)
        parts.append(section)
        length += len(section)
        n += 1
    return "".join(parts)[: size - 1] + "\n"


def _skill_md(name: str, body_bytes: int) -> str:
    description = (
        f"Converts, checks and summarises documents for the {name} workflow. Use it "
        "when the user asks to turn spreadsheets, PDFs or Markdown notes into a "
        "clean report, or to check one against the team's style guide."
    )
    front = (
        "---\n"
        f"name: {name}\n"
        f"description: {description}\n"
        "license: Apache-2.0\n"
        "metadata:\n"
        "  author: example-org\n"
        '  version: "1.0"\n'
        "allowed-tools: Bash(git log:*) Read Write\n"
        "---\n"
    )
    return front + _body(name, body_bytes)


def _generate(root: Path, body_bytes: int) -> list[Path]:
    root.mkdir()
    folders = []
    for index in range(SKILL_COUNT):
        name = f"skill-{index:04d}"
        folder = root / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(_skill_md(name, body_bytes), encoding="utf-8")
        folders.append(folder)
    return sorted(folders)


def setup() -> None:
    """Write both folders of skills and check that toolcycle registers every skill."""
    if _state:
        return
    tmp = Path(tempfile.mkdtemp(prefix="toolcycle-bench-skills-"))
    _state["tmp"] = tmp
    try:
        for key, size in (("large", LARGE_BODY_BYTES), ("small", SMALL_BODY_BYTES)):
            root = tmp / key
            _state[key] = (root, _generate(root, size))
            # toolcycle skips an invalid skill with a warning, which would flatter it;
            # read_properties raises on one, so the benchmark itself checks that side.
            if _register(root) != SKILL_COUNT:
                raise RuntimeError(f"not every generated skill in {root} was registered")
        _state["open"] = []
        time_skills_user_register_100kb()
        time_skills_user_read_properties_100kb()
        _close_user_runtimes()
    except BaseException:
        teardown()
        raise


def teardown() -> None:
    """Remove the temporary directory and everything in it."""
    if not _state:
        return
    _close_user_runtimes()
    shutil.rmtree(_state["tmp"], ignore_errors=True)
    _state.clear()


def _once_per_repeat(fn: Callable[[], None]) -> Callable[[], None]:
    """Mark a slow benchmark to run once per repeat, `REPEATS` times, without warm-up."""
    fn.number = 1  # type: ignore[attr-defined]
    fn.repeat = REPEATS  # type: ignore[attr-defined]
    fn.warmup_time = 0  # type: ignore[attr-defined]
    return fn


def _register(root: Path) -> int:
    runtime = ToolRuntime(tracer=NullTracer())
    try:
        return len(runtime.register_source(SkillDirectory(root)))
    finally:
        runtime.close()


def _read_all(folders: list[Path]) -> list[Any]:
    return [read_properties(folder) for folder in folders]


@_once_per_repeat
def time_skills_register_100kb() -> None:
    """Fresh runtime, register_source(SkillDirectory) of 1,000 skills of 100 KB, close."""
    _register(_state["large"][0])


@_once_per_repeat
def time_skills_read_properties_100kb() -> None:
    """skills_ref.read_properties of the same 1,000 skill folders, sorted."""
    _read_all(_state["large"][1])


@_once_per_repeat
def time_skills_register_1kb() -> None:
    """Fresh runtime, register_source(SkillDirectory) of 1,000 skills of 1 KB, close."""
    _register(_state["small"][0])


@_once_per_repeat
def time_skills_read_properties_1kb() -> None:
    """skills_ref.read_properties of the same 1,000 small skill folders, sorted."""
    _read_all(_state["small"][1])


def _close_user_runtimes() -> None:
    for runtime in _state.get("open", ()):
        runtime.close()
    _state.get("open", []).clear()


def time_skills_user_register_100kb() -> None:
    """A user's path: fresh ToolRuntime(), register_source(SkillDirectory), descriptors()."""
    runtime = ToolRuntime()
    _state["open"].append(runtime)  # closed after the timing
    runtime.register_source(SkillDirectory(_state["large"][0]))
    if len(runtime.descriptors()) != SKILL_COUNT:
        raise RuntimeError("not every skill is listed")


def time_skills_user_read_properties_100kb() -> None:
    """skills_ref.read_properties of each of the 1,000 skill folders of 100 KB."""
    _read_all(_state["large"][1])


for _bench in (time_skills_user_register_100kb, time_skills_user_read_properties_100kb):
    _bench.number = 1  # type: ignore[attr-defined]
    _bench.repeat = USER_REPEATS  # type: ignore[attr-defined]
