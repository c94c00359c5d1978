"""Import time in fresh interpreters, and how many modules the import loads.

asv runs the code a ``timeraw_*`` function returns in a new interpreter and times it
there, not counting the interpreter's own start. ``setup`` first compiles
toolcycle's sources to bytecode beside them (without importing anything), as
installing a package does, so that the figures are the same for an editable
install where ``PYTHONDONTWRITEBYTECODE`` is set as for the installed copy in an
asv environment.
"""

from __future__ import annotations

import compileall
import importlib.util
import subprocess
import sys
from pathlib import Path

FLOOR = """
import asyncio, logging
from pydantic import BaseModel, ConfigDict
class Record(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    name: str
"""
"""What ``import toolcycle`` cannot do without: asyncio, logging and one pydantic model class."""

FIRST_CALL = """
from toolcycle import NullTracer, ToolRuntime, tool
@tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b
runtime = ToolRuntime(tracer=NullTracer())
runtime.register(add)
with runtime.plan("first") as ctx:
    assert runtime.execute("add", {"a": 1, "b": 2}, ctx).output == 3
"""
"""Import toolcycle, build a runtime, register one tool and make one validated call."""

COUNT_MODULES = """
import sys
before = set(sys.modules)
import toolcycle
print(len(set(sys.modules) - before))
"""


def setup() -> None:
    """Compile toolcycle's sources to bytecode where the import looks for it."""
    spec = importlib.util.find_spec("toolcycle")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("toolcycle is not installed")
    for folder in spec.submodule_search_locations:
        compileall.compile_dir(Path(folder), quiet=1)


def timeraw_import_toolcycle() -> str:
    """``import toolcycle``."""
    return "import toolcycle"


def timeraw_import_floor() -> str:
    """The floor of its dependencies: tells a dependency's change from toolcycle's own."""
    return FLOOR


def timeraw_first_call() -> str:
    """Import, a runtime, one ``@tool`` function registered and one validated ``execute``."""
    return FIRST_CALL


def track_import_modules() -> int:
    """Modules that ``import toolcycle`` adds to ``sys.modules`` (an eager import shows here)."""
    done = subprocess.run(
        [sys.executable, "-c", COUNT_MODULES], check=True, capture_output=True, text=True
    )
    return int(done.stdout)


track_import_modules.unit = "modules"  # type: ignore[attr-defined]
