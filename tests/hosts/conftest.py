"""Plan host fixtures: the toolbox importable by name (in the workers too), a runtime."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The workers import the test tools by module name, as they would a user's.
sys.path.insert(0, str(Path(__file__).parent))

import hosts_toolbox as box

import toolcycle
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
        made.register(box.unsendable_change)
        made.register(box.exit_now)
        made.register(box.unreadable)
        made.register(box.Deferred("deferred"))
        yield made


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """The file the tools write their stages to."""
    return tmp_path / "journal.txt"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster for a module, kept out of the real home and /tmp/ray.

    Skips the test when Ray is not installed.
    """
    ray = pytest.importorskip(
        "ray",
        reason="RayHost needs Ray: pip install -e '.[ray]' from a clone (toolcycle[ray] once "
        "published)",
    )
    saved = {key: os.environ.get(key) for key in ("HOME", "RAY_AUTH_MODE")}
    home = tempfile.mkdtemp(prefix="tc-ray-home-")
    scratch = tempfile.mkdtemp(prefix="tc-ray-")  # short: Ray's socket paths must fit
    os.environ["HOME"] = home
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # The actors import toolcycle and the test tools by name, from this checkout.
    paths = [str(Path(__file__).parent), str(Path(toolcycle.__file__).parents[1])]
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=scratch,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}},
    )
    try:
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
