"""Steps for plan hosts: the journal tools in a ProcessHost, cancellation, a killed worker."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from behave import given, then, when

from toolcycle import ToolCancelledError
from toolcycle.hosts import ProcessHost

# The workers import the journal tools by module name, as they would a user's.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "hosts"))

import hosts_toolbox as box

WAIT = 10.0


def _journal(context: Any) -> list[list[str]]:
    return box.lines(context.journal)


@given('the journal tools "{one:Name}" and "{two:Name}" in a process host named "{name:Name}"')
def journal_tools(context: Any, one: str, two: str, name: str) -> None:
    for tool_name in (one, two):
        context.runtime.register(box.Recorder(tool_name))
    context.runtime.register(box.wait_for_cancel)
    context.host = ProcessHost(name=name)
    folder = tempfile.TemporaryDirectory()
    context.add_cleanup(folder.cleanup)
    context.add_cleanup(context.host.close)
    context.journal = Path(folder.name) / "journal.txt"
    context.results = []


def _plan(context: Any, **options: Any) -> Any:
    return context.runtime.plan(
        host=context.host, metadata={"journal": str(context.journal)}, **options
    )


@when('a plan with the host runs "{a:Name}", "{b:Name}" and "{c:Name}"')
def run_three(context: Any, a: str, b: str, c: str) -> None:
    with _plan(context) as ctx:
        for name in (a, b, c):
            context.results.append(context.runtime.execute(name, {}, ctx))


@then("the stages ran in one other process in this order:")
def stages_in_order(context: Any) -> None:
    seen = _journal(context)
    assert [words[:2] for words in seen] == [[row["stage"], row["tool"]] for row in context.table]
    pids = {words[2] for words in seen}
    assert len(pids) == 1 and str(os.getpid()) not in pids, pids


@then('every trace names the host "{name:Name}" and the worker that ran the call')
def traces_name_host(context: Any, name: str) -> None:
    for result in context.results:
        assert result.trace.host == name
        assert result.trace.host_id == f"pid {result.output['pid']}"


@when("a plan with the host cancels its token while a call waits for it")
def cancel_while_waiting(context: Any) -> None:
    started = threading.Event()
    context.raised = None
    with _plan(context, on_progress=lambda _: started.set()) as ctx:

        def run() -> None:
            try:
                context.runtime.execute("wait_for_cancel", {}, ctx)
            except BaseException as exc:
                context.raised = exc

        caller = threading.Thread(target=run)
        caller.start()
        assert started.wait(WAIT)
        ctx.cancellation_token.cancel("stop now")
        caller.join(WAIT)


@then("the call raised ToolCancelledError")
def raised_cancelled(context: Any) -> None:
    assert isinstance(context.raised, ToolCancelledError), context.raised


@then("the body in the worker saw its token cancelled")
def body_saw_cancel(context: Any) -> None:
    assert [words[0] for words in _journal(context)] == ["cancelled"]


@when('a plan with the host kills its worker while a call runs, then runs "{name:Name}"')
def kill_worker(context: Any, name: str) -> None:
    with _plan(context) as ctx:
        context.runtime.execute(name, {}, ctx)
        pid = context.host.worker_pid(ctx)
        ctx.on_progress = lambda _: os.kill(pid, signal.SIGKILL)
        context.interrupted = context.runtime.execute("wait_for_cancel", {}, ctx)
        ctx.on_progress = None
        context.results.append(context.runtime.execute(name, {}, ctx))
    context.killed = pid


@then('the call that was running failed naming the host "{name:Name}"')
def failed_naming_host(context: Any, name: str) -> None:
    assert not context.interrupted.success
    assert f"host {name!r}" in context.interrupted.error and "SIGKILL" in context.interrupted.error


@then('"{name:Name}" ran in a second worker, activated there again')
def ran_in_second_worker(context: Any, name: str) -> None:
    pids = [words[2] for words in _journal(context) if words[:2] == ["activate", name]]
    assert len(pids) == 2 and pids[0] == str(context.killed) != pids[1]
    assert context.results[-1].output["pid"] == int(pids[1])


@given('an MCP stdio server and a skill with a script in a process host named "{name:Name}"')
def sources_in_host(context: Any, name: str) -> None:
    from sources_kit import pid_server, skill_folder

    from toolcycle.sources.skills import SkillDirectory

    folder = tempfile.TemporaryDirectory()
    context.add_cleanup(folder.cleanup)
    context.runtime.register_source(pid_server())
    context.runtime.register_source(SkillDirectory(skill_folder(Path(folder.name)), scripts=True))
    context.host = ProcessHost(name=name)
    context.add_cleanup(context.host.close)


@when("a plan with the host calls the server's tool and runs the skill's script")
def call_sources(context: Any) -> None:
    with context.runtime.plan(host=context.host) as ctx:
        context.pids = context.runtime.execute("pids", {}, ctx)
        script = {"script": "scripts/whose.py"}
        context.script = context.runtime.execute("whose.run_script", script, ctx)
        context.worker = context.host.worker_pid(ctx)


@then("both ran in the plan's worker, and the server's process ended with the plan")
def sources_ran_in_worker(context: Any) -> None:
    from sources_kit import gone

    assert context.pids.success, context.pids.error
    assert context.script.success, context.script.error
    assert context.pids.output["parent"] == context.worker
    assert int(context.script.output["stdout"]) == context.worker
    assert gone(context.pids.output["server"])
