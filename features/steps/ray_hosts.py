"""Steps for a plan on Ray: the journal tools in a RayHost, on a local cluster of the scenario."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from behave import given, then

import toolcycle

# The actors import the journal tools by module name, as they would a user's.
TOOLBOX = Path(__file__).resolve().parents[2] / "tests" / "hosts"
sys.path.insert(0, str(TOOLBOX))

import hosts_toolbox as box


def _start_ray(context: Any) -> Any:
    """A local Ray cluster for the scenario, kept out of the real home; None without Ray."""
    try:
        import ray
    except ImportError:
        return None
    saved = {key: os.environ.get(key) for key in ("HOME", "RAY_AUTH_MODE")}
    home = tempfile.mkdtemp(prefix="tc-ray-home-")
    scratch = tempfile.mkdtemp(prefix="tc-ray-")
    os.environ["HOME"] = home
    os.environ["RAY_AUTH_MODE"] = "disabled"
    paths = [str(TOOLBOX), str(Path(toolcycle.__file__).parents[1])]
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=scratch,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}},
    )

    def stop() -> None:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)

    context.add_cleanup(stop)
    return ray


@given('the journal tools "{one:Name}" and "{two:Name}" in a Ray host named "{name:Name}"')
def ray_journal_tools(context: Any, one: str, two: str, name: str) -> None:
    context.ray = _start_ray(context)
    if context.ray is None:
        context.scenario.skip(
            "RayHost needs Ray: pip install -e '.[ray]' from a clone (toolcycle[ray] once published)"
        )
        return
    from toolcycle.hosts import RayHost

    for tool_name in (one, two):
        context.runtime.register(box.Recorder(tool_name))
    context.host = RayHost(name=name)
    folder = tempfile.TemporaryDirectory()
    context.add_cleanup(folder.cleanup)
    context.add_cleanup(context.host.close)
    context.journal = Path(folder.name) / "journal.txt"
    context.results = []


@then('every trace names the host "{name:Name}" and the Ray node of its actor')
def traces_name_ray_node(context: Any, name: str) -> None:
    node = context.ray.get_runtime_context().get_node_id()
    for result in context.results:
        assert result.trace.host == name
        assert result.trace.host_id == node
