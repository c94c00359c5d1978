"""Steps for durable plans on DBOS (SQLite in a temporary folder per scenario).

No ``from __future__ import annotations`` here: behave runs step files without
registering them as modules, so pydantic could not resolve string annotations.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from behave import given, then, when
from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolcycle import Change, ConcurrentCallError, ToolExecutionContext, ToolRuntimeError, tool
from toolcycle.hosts import DBOSPlan

# The workflow below runs in the scenario's thread; it finds the scenario's runtime here.
_current: dict[str, Any] = {}
_runs: Counter = Counter()


@tool(writes=False, idempotent=True)
def quote() -> int:
    """Look the price up."""
    _runs["quote"] += 1
    return 42


@tool(writes=False)
def charge(amount: int, ctx: ToolExecutionContext) -> str:
    """Charge the card once."""
    _runs["charge"] += 1
    ctx.record_change(Change(kind="payment", target=f"card/{amount}"))
    return f"charged {amount}"


@tool(writes=False, idempotent=True)
def notify() -> str:
    """Tell the customer; telling twice is harmless."""
    _runs["notify"] += 1
    return "told"


@DBOS.workflow()
def durable_order() -> dict:
    runtime = _current["runtime"]
    with runtime.plan(durable=DBOSPlan()) as ctx:
        price = runtime.execute("quote", {}, ctx).output
        charged = runtime.execute("charge", {"amount": price}, ctx)
        runtime.execute("notify", {}, ctx)
        return {
            "charge": charged.output,
            "charge_error": charged.error_type,
            "changes": [c.target for c in ctx.changes],
        }


_held = {"started": threading.Event(), "release": threading.Event()}


@tool(writes=False)
def hold() -> str:
    """Say it started, then wait (bounded) until released."""
    _runs["hold"] += 1
    _held["started"].set()
    assert _held["release"].wait(30), "never released"
    return "held"


@DBOS.workflow()
def crowded_order() -> list:
    """hold, and from another thread a second call while it runs."""
    runtime = _current["runtime"]
    refused: list = []
    with runtime.plan(durable=DBOSPlan()) as ctx:

        def other() -> None:
            try:
                assert _held["started"].wait(30), "hold never started"
                runtime.execute("quote", {}, ctx)
            except ConcurrentCallError as exc:
                refused.append(type(exc).__name__)
            finally:
                _held["release"].set()

        thread = threading.Thread(target=other)
        thread.start()
        runtime.execute("hold", {}, ctx)
        thread.join(30)
    return refused


@given("DBOS is launched on SQLite")
def step_launch(context: Any) -> None:
    folder = Path(tempfile.mkdtemp(prefix="toolcycle-dbos-"))
    DBOS(
        config=DBOSConfig(
            name="toolcycle-features",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="features-1",
        )
    )
    DBOS.launch()
    context.add_cleanup(DBOS.destroy)
    _runs.clear()
    for fn in (quote, charge, notify, hold):
        context.runtime.register(fn)
    _current["runtime"] = context.runtime


@given('a durable plan "{plan:Name}" that quotes, then charges, then notifies')
def step_plan(context: Any, plan: str) -> None:
    with SetWorkflowID(plan):
        context.first = durable_order()
    context.plan_id = plan


def _resume_from(context: Any, step_name: str) -> None:
    steps = DBOS.list_workflow_steps(context.plan_id)
    start = next(s["function_id"] for s in steps if s["function_name"] == step_name)
    context.resumed = DBOS.fork_workflow(context.plan_id, start).get_result()


@when("the plan is resumed from the notification")
def step_resume_notify(context: Any) -> None:
    _resume_from(context, "toolcycle:notify")


@when("the plan is resumed from the charge")
def step_resume_charge(context: Any) -> None:
    _resume_from(context, "toolcycle:charge")


@then("the quote ran once and the charge ran once")
def step_ran_once(context: Any) -> None:
    assert _runs["quote"] == 1 and _runs["charge"] == 1, _runs


@then("the charge ran once")
def step_charge_once(context: Any) -> None:
    assert _runs["charge"] == 1, _runs


@then("the notification ran twice")
def step_notify_twice(context: Any) -> None:
    assert _runs["notify"] == 2, _runs


@then('the resumed plan got "{text}" for the charge')
def step_charge_output(context: Any, text: str) -> None:
    assert context.resumed["charge"] == text, context.resumed


@then('the resumed plan\'s changes are "{targets}"')
def step_changes(context: Any, targets: str) -> None:
    assert context.resumed["changes"] == targets.split(", "), context.resumed


@then('the resumed plan\'s charge failed with "{error_type}"')
def step_interrupted(context: Any, error_type: str) -> None:
    assert context.resumed["charge_error"] == error_type, context.resumed
    assert context.resumed["charge"] is None


@when("a durable plan is opened outside any workflow")
def step_outside(context: Any) -> None:
    try:
        context.runtime.new_context(durable=DBOSPlan())
    except ToolRuntimeError as exc:
        context.error = exc
    else:  # pragma: no cover - the step below reports it
        context.error = None


@when("a durable plan's second call starts while its first call runs")
def step_crowded(context: Any) -> None:
    _held["started"].clear()
    _held["release"].clear()
    context.plan_id = "crowded-1"
    with SetWorkflowID(context.plan_id):
        context.refused = crowded_order()


@then('the second call fails with "{error_type}"')
def step_refused(context: Any, error_type: str) -> None:
    assert context.refused == [error_type], context.refused


@then("only the first call was recorded")
def step_first_only(context: Any) -> None:
    steps = [s["function_name"] for s in DBOS.list_workflow_steps(context.plan_id)]
    assert steps == ["toolcycle:hold:started", "toolcycle:hold"], steps
    assert _runs == {"hold": 1}, _runs


@then('opening it fails, naming "{text}"')
def step_fails(context: Any, text: str) -> None:
    assert context.error is not None and text in str(context.error), context.error


# The crash: the same script as tests/hosts/test_dbos_crash.py, in child processes.
_SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "hosts" / "crash_plan.py"


def _env(executor: str = "") -> dict:
    env = dict(os.environ)
    env.pop("DBOS__VMID", None)
    if executor:  # DBOS's executor id, as it reads it
        env["DBOS__VMID"] = executor
    src = str(_SCRIPT.parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


@given('a process running a durable plan killed with SIGKILL while "{tool_name}" runs')
def step_killed(context: Any, tool_name: str) -> None:
    context.folder = Path(tempfile.mkdtemp(prefix="toolcycle-crash-"))
    command = [sys.executable, str(_SCRIPT), str(context.folder), "start", "0"]
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    ) as child:
        running = threading.Event()

        def read() -> None:
            for line in child.stdout:
                if line.strip() == "RUNNING":
                    running.set()
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert running.wait(60), f"{tool_name} never started"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(30)
            reader.join(5)


def _resume(context: Any, executor: str = "") -> None:
    done = subprocess.run(
        [sys.executable, str(_SCRIPT), str(context.folder), "resume", "v1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(executor),
        check=True,
    )
    context.report = json.loads(done.stdout.strip().splitlines()[-1])


@when("another process launches DBOS with the same application version")
def step_resumed(context: Any) -> None:
    _resume(context)


@when("a process of another DBOS executor resumes the plan by its id")
def step_resumed_elsewhere(context: Any) -> None:
    _resume(context, executor="resumer")


@then('the plan finished with "{tool_name}" reported as "{error_type}"')
def step_finished(context: Any, tool_name: str, error_type: str) -> None:
    assert context.report["status"] == "SUCCESS", context.report
    assert context.report["result"]["calls"][1] == [None, error_type], context.report


@then("each tool body ran once")
def step_each_once(context: Any) -> None:
    runs = (context.folder / "runs").read_text().split()
    assert [r for r in runs if not r.startswith("asked:")] == ["pay", "ship", "notify"], runs


@then("the payment's approval and change were kept, and nobody was asked again")
def step_kept(context: Any) -> None:
    result = context.report["result"]
    assert result["approved"][0] and result["changes"] == ["card/3"], result
    runs = (context.folder / "runs").read_text().split()
    assert runs.count("asked:pay") == 1, runs
