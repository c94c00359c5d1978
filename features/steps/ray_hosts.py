"""Steps for a plan on Ray: the journal tools in a RayHost, on a local cluster of the scenario."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from behave import given, then, when

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


@given(
    'the journal tools "{one:Name}" and "{two:Name}" in a Ray host pool of {size:d} named "{name:Name}"'
)
def ray_pool_tools(context: Any, one: str, two: str, size: int, name: str) -> None:
    ray_journal_tools(context, one, two, name)
    if context.ray is not None:
        from toolcycle.hosts import RayHost

        context.host.close()
        context.host = RayHost(name=name, pool=size)
        context.add_cleanup(context.host.close)


@when(
    "a plan with the host runs a tool that reports every {gap:g} s for {total:g} s, "
    "with an idle limit of {idle:g} s"
)
def run_ticker(context: Any, gap: float, total: float, idle: float) -> None:
    context.runtime.register(box.ticker)
    with context.runtime.plan(host=context.host) as ctx:
        context.runtime.activate("ticker", ctx)  # the actor's start is not the quiet tested
        params = {"steps": round(total / gap), "gap": gap}
        context.result = context.runtime.execute("ticker", params, ctx, idle_timeout=idle)


@then("the call succeeded and its trace counts {count:d} progress reports")
def ticker_succeeded(context: Any, count: int) -> None:
    assert context.result.success, context.result.error
    assert context.result.trace.progress_count == count


@when('three plans with the host each run "{a:Name}", "{b:Name}" and "{c:Name}"')
def three_plans(context: Any, a: str, b: str, c: str) -> None:
    folder = context.journal.parent
    context.journals = [folder / f"plan{n}.txt" for n in range(3)]
    plans = [
        context.runtime.plan(host=context.host, metadata={"journal": str(journal)})
        for journal in context.journals
    ]
    contexts = [plan.__enter__() for plan in plans]
    try:
        for ctx in contexts:
            for name in (a, b, c):
                context.results.append(context.runtime.execute(name, {}, ctx))
    finally:
        for plan in reversed(plans):
            plan.__exit__(None, None, None)


@then("each plan's stages ran in this order:")
def each_plan_in_order(context: Any) -> None:
    wanted = [[row["stage"], row["tool"]] for row in context.table]
    for journal in context.journals:
        assert [words[:2] for words in box.lines(journal)] == wanted


@then("the three plans ran in two actor processes")
def two_actor_processes(context: Any) -> None:
    pids = {words[2] for journal in context.journals for words in box.lines(journal)}
    assert len(pids) == 2 and str(os.getpid()) not in pids
