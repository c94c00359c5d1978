"""Plan host fixtures: the toolbox importable by name (in the workers too), a runtime."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The workers import the test tools by module name, as they would a user's.
sys.path.insert(0, str(Path(__file__).parent))

import hosts_toolbox as box

from toolcycle import ToolRuntime
from toolcycle.hosts import ProcessHost


@pytest.fixture
def host() -> Iterator[ProcessHost]:
    """A process host, closed after the test whatever happened."""
    made = ProcessHost(name="local")
    yield made
    made.close()


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with the toolbox's tools registered."""
    with ToolRuntime() as made:
        made.register(box.Recorder("first"))
        made.register(box.Recorder("second"))
        made.register(box.AsyncRecorder("coro"))
        for fn in (
            box.where,
            box.surroundings,
            box.wait_for_cancel,
            box.await_cancel,
            box.change_something,
            box.change_then_fail,
            box.ticker,
        ):
            made.register(fn)
        made.register(box.fail)
        for fn in (box.call_info, box.reveal, box.areveal, box.start_sleeper):
            made.register(fn)
        made.register(box.unsendable)
        made.register(box.exit_now)
        made.register(box.unreadable)
        made.register(box.Deferred("deferred"))
        yield made


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """The file the tools write their stages to."""
    return tmp_path / "journal.txt"
