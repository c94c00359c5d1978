"""RayHost: a plan's tool stages run in the plan's own Ray actor, on a local cluster."""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray",
    reason="RayHost needs Ray: pip install -e '.[ray]' from a clone (toolcycle[ray] once published)",
)

# After the skip: ray_toolbox needs Ray.
import hosts_toolbox as box
import ray_toolbox
from hosts_toolbox import lines
from sources_kit import alive, pid_server, skill_folder
from sources_kit import gone as process_gone

from toolcycle import ToolActivationError, ToolCancelledError, ToolRuntime
from toolcycle.hosts import RayHost, ToolHostError, ToolImport
from toolcycle.sources.skills import SkillDirectory

WAIT = 10.0
QUIET = 1.0  # how long a stage that must not start yet is given to start anyway


@pytest.fixture(scope="module", autouse=True)
def cluster(ray_cluster: None) -> None:
    """One local Ray cluster for the module (see ``conftest.ray_cluster``)."""


@pytest.fixture
def host() -> Iterator[RayHost]:
    """A Ray host, closed after the test whatever happened."""
    made = RayHost()
    yield made
    made.close()


@pytest.fixture
def signal() -> Iterator[str]:
    """The name of a fresh `Signal` actor the tools set when they start."""
    name = f"signal-{uuid.uuid4().hex}"
    actor = ray_toolbox.Signal.options(name=name).remote()
    yield name
    ray.kill(actor)


@pytest.fixture
def rt(runtime: ToolRuntime) -> ToolRuntime:
    """The hosts runtime, plus the tools that signal their start."""
    runtime.register(ray_toolbox.signal_then_wait)
    runtime.register(ray_toolbox.signal_then_await)
    runtime.register(ray_toolbox.report_then_wait)
    runtime.register(ray_toolbox.areport_then_wait)
    return runtime


def started(signal: str) -> None:
    """Wait (bounded) until a tool has set the signal."""
    assert ray.get(ray.get_actor(signal).wait.remote(), timeout=WAIT)


def kill(actor: Any) -> None:
    """Kill an actor and wait (bounded) until Ray reports it dead.

    ``ray.kill`` returns before the actor is gone; a call that Ray fails is the sign.
    """
    ray.kill(actor)
    assert gone(actor)


def gone(actor: Any) -> bool:
    """Whether Ray fails a call to the actor within WAIT seconds (it is dead, or dying)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            ray.get(actor.cancel.remote(0, None), timeout=WAIT)
        except ray.exceptions.RayActorError:
            return True
    return False


def test_stages_run_in_the_plans_actor_in_lifecycle_order(
    rt: ToolRuntime, host: RayHost, journal: Path
) -> None:
    """Activate once per tool in the actor, execute there, deactivate in reverse, end the actor."""
    with rt.plan(host=host, metadata={"journal": str(journal)}) as ctx:
        first = rt.execute("first", {"x": 1}, ctx)
        rt.execute("second", {}, ctx)
        again = rt.execute("first", {"x": 2}, ctx)
        actor = host.actor(ctx)
    assert first.output["pid"] == again.output["pid"] != os.getpid()
    assert again.output["x"] == 2
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "second"],
        ["execute", "second"],
        ["execute", "first"],
        ["deactivate", "second"],
        ["deactivate", "first"],
    ]
    assert {words[2] for words in lines(journal)} == {str(first.output["pid"])}
    assert host.actor(ctx) is None and host.placement(ctx) is None
    assert gone(actor)  # the plan ended: so did its actor


def test_a_trace_names_the_host_and_the_ray_node(rt: ToolRuntime, host: RayHost) -> None:
    """The trace is the usual one, plus the host's name and the actor's node id."""
    with rt.plan(host=host) as ctx:
        result = rt.execute("where", {}, ctx)
    assert result.trace.status == "ok"
    assert result.trace.host == "ray"
    assert result.trace.host_id == ray.get_runtime_context().get_node_id()


def test_changes_and_progress_come_back_with_the_result(rt: ToolRuntime, host: RayHost) -> None:
    """What the tool recorded and reported in the actor reaches the caller's plan."""
    events: list[Any] = []
    with rt.plan(host=host, on_progress=events.append) as ctx:
        result = rt.execute("change_something", {"target": "a.txt"}, ctx)
        assert [change.target for change in ctx.changes] == ["a.txt"]
    assert [change.target for change in result.changes] == ["a.txt"]
    assert [event.message for event in events] == ["half", "done"]


def test_changes_recorded_before_a_failure_come_back_with_the_error(
    rt: ToolRuntime, host: RayHost
) -> None:
    """A body that records a change and then raises leaves the change in the plan's record."""
    with rt.plan(host=host) as ctx:
        result = rt.execute("change_then_fail", {"target": "a.txt"}, ctx)
        assert [change.target for change in ctx.changes] == ["a.txt"]
    assert isinstance(result.exception, ValueError)
    assert [change.target for change in result.changes] == ["a.txt"]


async def test_a_tool_in_the_actor_reads_its_call_id_and_limits_and_reveals_tools(
    rt: ToolRuntime, host: RayHost
) -> None:
    """The actor's context says what the caller's would, and its reveals reach the plan."""
    async with rt.aplan(host=host, timeout=30.0, idle_timeout=20) as ctx:
        ctx.reveal_tools(["earlier"])
        info = rt.execute("call_info", {}, ctx)
        assert rt.execute("reveal", {"names": ["one"]}, ctx).success
        assert (await rt.aexecute("areveal", {"names": ["two"]}, ctx)).success
        assert ctx.revealed_tools == {"earlier", "one", "two"}
    assert info.trace is not None
    assert info.output == {
        "call_id": info.trace.call_id,
        "timeout": 30.0,
        "idle_timeout": 20,
        "revealed": ["earlier"],
    }


def test_progress_reaches_the_caller_while_the_actor_runs_the_call(
    rt: ToolRuntime, host: RayHost, signal: str
) -> None:
    """The listener hears the report before the tool ends: the tool waits for what it sends."""
    events: list[Any] = []

    def heard(event: Any) -> None:
        events.append(event)
        ray.get_actor(signal).send.remote()

    with rt.plan(host=host, metadata={"signal": signal}, on_progress=heard) as ctx:
        result = rt.execute("report_then_wait", {}, ctx)
    assert result.output == "heard", result.error
    assert [event.message for event in events] == ["waiting"]
    assert result.trace.progress_count == 1


async def test_an_async_stream_yields_the_actors_progress_before_the_result(
    rt: ToolRuntime, host: RayHost, signal: str
) -> None:
    """``astream`` of a hosted coroutine tool: the report comes first, while it waits."""
    items: list[Any] = []
    async with rt.aplan(host=host, metadata={"signal": signal}) as ctx:
        async for item in rt.astream("areport_then_wait", {}, ctx):
            items.append(item)
            if len(items) == 1:
                await ray.get_actor(signal).send.remote()
    assert [type(item).__name__ for item in items] == ["ProgressEvent", "ToolResult"]
    assert items[-1].output == "heard", items[-1].error


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_progress_from_the_actor_keeps_a_call_alive_past_its_idle_limit(
    rt: ToolRuntime, host: RayHost, asynchronous: bool
) -> None:
    """Six reports 0.3 s apart outlast an idle limit of 1 s: each restarts it as it comes.

    The tool is activated first: starting the actor is no part of the quiet being tested.
    """
    params = {"steps": 6, "gap": 0.3}
    if asynchronous:
        async with rt.aplan(host=host) as actx:
            await rt.aactivate("ticker", actx)
            result = await rt.aexecute("ticker", params, actx, idle_timeout=1.0)
    else:
        with rt.plan(host=host) as ctx:
            rt.activate("ticker", ctx)
            result = rt.execute("ticker", params, ctx, idle_timeout=1.0)
    assert result.output == 6, result.error
    assert result.trace.progress_count == 6


def test_a_call_nobody_follows_brings_its_progress_with_the_outcome(
    rt: ToolRuntime, host: RayHost
) -> None:
    """Without a listener or idle limit the plain (cheaper) call is used; reports still count."""
    with rt.plan(host=host) as ctx:
        assert not ctx.progress_followed()
        result = rt.execute("change_something", {"target": "a.txt"}, ctx)
    assert result.trace.progress_count == 2


def test_an_mcp_server_and_a_skill_run_in_the_plans_actor_and_end_with_it(
    rt: ToolRuntime, host: RayHost, tmp_path: Path
) -> None:
    """The stdio server is the actor's child, the skill's script runs there; the plan's end stops it."""
    rt.register_source(pid_server())
    rt.register_source(SkillDirectory(skill_folder(tmp_path), scripts=True))
    with rt.plan(host=host) as ctx:
        actor_pid = rt.execute("where", {}, ctx).output
        pids = rt.execute("pids", {}, ctx)
        assert pids.success, pids.error
        assert pids.output["parent"] == actor_pid != os.getpid()
        assert alive(pids.output["server"])
        ran = rt.execute("whose.run_script", {"script": "scripts/whose.py"}, ctx)
        assert ran.success, ran.error
        assert int(ran.output["stdout"]) == actor_pid
        read = rt.execute("whose", {}, ctx)
        assert "Run scripts/whose.py." in read.output["text"]
    assert process_gone(pids.output["server"])


async def test_async_plans_run_every_stage_in_the_actor(
    rt: ToolRuntime, host: RayHost, journal: Path
) -> None:
    """Async calls and aend_plan drive the same lifecycle, sync and coroutine tools alike."""
    async with rt.aplan(host=host, metadata={"journal": str(journal)}) as ctx:
        coro = await rt.aexecute("coro", {"x": 3}, ctx)
        plain = await rt.aexecute("first", {}, ctx)
        deferred = await rt.aexecute("deferred", {}, ctx)
    assert coro.output["pid"] == plain.output["pid"] != os.getpid()
    assert deferred.output == "later"
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "coro"],
        ["execute", "coro"],
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "deferred"],
        ["deactivate", "deferred"],
        ["deactivate", "first"],
        ["deactivate", "coro"],
    ]


def test_cancelling_the_plan_cancels_the_sync_body_in_the_actor(
    rt: ToolRuntime, host: RayHost, journal: Path, signal: str
) -> None:
    """The body's call token in the actor mirrors the caller's: it stops the body."""
    outcome: list[BaseException] = []
    with rt.plan(host=host, metadata={"journal": str(journal), "signal": signal}) as ctx:

        def run() -> None:
            try:
                rt.execute("signal_then_wait", {}, ctx)
            except BaseException as exc:
                outcome.append(exc)

        caller = threading.Thread(target=run)
        caller.start()
        started(signal)
        ctx.cancellation_token.cancel("stop now")
        caller.join(WAIT)
    assert isinstance(outcome[0], ToolCancelledError)
    assert [words[0] for words in lines(journal)] == ["cancelled"]


async def test_cancelling_an_async_call_cancels_the_coroutine_in_the_actor(
    rt: ToolRuntime, host: RayHost, journal: Path, signal: str
) -> None:
    """From async code, the token cancels the awaiting task and the actor's task with it."""
    async with rt.aplan(host=host, metadata={"journal": str(journal), "signal": signal}) as ctx:
        call = asyncio.ensure_future(rt.aexecute("signal_then_await", {}, ctx))
        await asyncio.to_thread(started, signal)
        ctx.cancellation_token.cancel("stop now")
        with pytest.raises(ToolCancelledError):
            await asyncio.wait_for(call, WAIT)
    assert [words[0] for words in lines(journal)] == ["cancelled"]


def test_a_timeout_gives_up_on_the_call_and_cancels_its_body(
    rt: ToolRuntime, host: RayHost, journal: Path, signal: str
) -> None:
    """The caller stops waiting at the limit; the body's token is cancelled in the actor."""
    with rt.plan(host=host, metadata={"journal": str(journal), "signal": signal}) as ctx:
        rt.activate("signal_then_wait", ctx)  # starting the actor is not the call's time
        result = rt.execute("signal_then_wait", {}, ctx, timeout=0.5)
        started(signal)
    assert result.trace.status == "timed_out"
    assert result.trace.abandoned
    assert [words[0] for words in lines(journal)] == ["cancelled"]


def test_a_killed_actor_fails_its_call_and_the_plan_goes_on_in_a_fresh_one(
    rt: ToolRuntime, host: RayHost, journal: Path, signal: str
) -> None:
    """The running call fails naming the host; the next call activates again in a new actor."""
    with rt.plan(host=host, metadata={"journal": str(journal), "signal": signal}) as ctx:
        before = rt.execute("first", {}, ctx)
        killed = host.actor(ctx)
        failed: list[Any] = []
        caller = threading.Thread(
            target=lambda: failed.append(rt.execute("signal_then_wait", {}, ctx))
        )
        caller.start()
        started(signal)
        ray.kill(killed)
        caller.join(WAIT)
        again = rt.execute("first", {}, ctx)
    assert not failed[0].success
    assert failed[0].trace.error_type == "ToolHostError"
    assert "'ray' died" in (failed[0].error or "")
    assert again.output["pid"] not in (before.output["pid"], os.getpid())
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "first"],
        ["execute", "first"],
        ["deactivate", "first"],
    ]


def test_a_second_death_fails_the_plans_later_calls(rt: ToolRuntime, host: RayHost) -> None:
    """Only one fresh actor per plan: after a second death, calls fail and say what to do."""
    with rt.plan(host=host) as ctx:
        for _ in range(2):
            assert rt.execute("where", {}, ctx).success
            kill(host.actor(ctx))
            met = rt.execute("where", {}, ctx)  # meets the dead actor: fails, naming it
            assert "'ray' died" in (met.error or "")
        result = rt.execute("where", {}, ctx)
    assert not result.success
    assert "died twice" in (result.error or "")


def test_tools_travel_by_import_path(journal: Path) -> None:
    """A ToolImport is built inside the actor, with its arguments."""
    host = RayHost(
        name="imports", tools={"made": ToolImport("hosts_toolbox:make_recorder", ("made",))}
    )
    with ToolRuntime() as runtime:
        runtime.register(box.Locked("made"))  # does not pickle: the import path is used
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            result = runtime.execute("made", {"x": 5}, ctx)
    assert result.output["x"] == 5
    assert next(words[:2] for words in lines(journal)) == ["activate", "made"]


def test_errors_and_unreadable_outputs_come_back_as_failed_results(
    rt: ToolRuntime, host: RayHost
) -> None:
    """A tool's error is the call's; an output that cannot travel back says so."""
    with rt.plan(host=host) as ctx:
        failed = rt.execute("fail", {"kind": "value"}, ctx)
        odd = rt.execute("fail", {"kind": "other"}, ctx)
        unreadable = rt.execute("unreadable", {}, ctx)
    assert failed.trace.error_type == "ValueError" and "bad value" in (failed.error or "")
    assert "could not be sent back" in (odd.error or "")
    assert "could not be read back" in (unreadable.error or "")


def test_a_host_checks_its_options() -> None:
    """A bad name or a tool recipe that is not a ToolImport fails at once, saying what to pass."""
    with pytest.raises(ValueError, match="non-empty string"):
        RayHost(name="")
    with pytest.raises(TypeError, match="ToolImport"):
        RayHost(tools={"x": "pkg:x"})  # type: ignore[dict-item]
    assert repr(RayHost(name="r")) == "RayHost(name='r', plans=0)"


def test_a_plan_needs_ray_initialised_first(
    rt: ToolRuntime, host: RayHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ray.init(), the activation raises and says to call it."""
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    with rt.plan(host=host) as ctx, pytest.raises(ToolHostError, match=r"call ray\.init\(\)"):
        rt.execute("where", {}, ctx)


def test_a_closed_host_fails_the_plans_next_call(rt: ToolRuntime, host: RayHost) -> None:
    """Closing the host kills the actors; an open plan's next call says the host was closed."""
    with rt.plan(host=host) as ctx:
        assert rt.execute("where", {}, ctx).success
        plan = host.plan_of(ctx)
        host.close()
        assert host.actor(ctx) is None
        plan.cancel(1, None)  # no actor: nothing to cancel
        later = rt.execute("where", {}, ctx)
        assert not later.success and "was closed" in (later.error or "")
        assert host.actor(ctx) is None  # no fresh actor started for it
        plan.dead = True
        with pytest.raises(ToolHostError, match="was closed"):
            plan.prepare("execute", "where")


def test_activations_that_fail_in_the_fresh_actor_fail_their_calls(journal: Path) -> None:
    """A tool that cannot be activated again after a death, or kills the fresh actor, fails."""
    host = RayHost(name="again")
    with ToolRuntime() as runtime:
        runtime.register(box.OnceOnly("once"))
        runtime.register(box.DiesAgain("dies"))
        runtime.register(ray_toolbox.FailsToActivate("broken"))
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            with pytest.raises(ToolActivationError, match="cannot start"):
                runtime.execute("broken", {}, ctx)
            assert runtime.execute("once", {}, ctx).success
            assert runtime.execute("dies", {}, ctx).success
            kill(host.actor(ctx))
            assert not runtime.execute("once", {}, ctx).success  # meets the dead actor
            once = runtime.execute("once", {}, ctx)  # a fresh actor, where it cannot start
            dies = runtime.execute("dies", {}, ctx)  # and this one ends the fresh actor
    assert "could not be activated again in the fresh actor of host 'again'" in (once.error or "")
    assert "the actor of host 'again' died during the activate of tool 'dies'" in (dies.error or "")


def test_a_failure_of_ray_itself_fails_the_stage_naming_the_host(host: RayHost) -> None:
    """An error from Ray other than a dead actor is a ToolHostError, and the actor is kept."""
    from toolcycle.hosts._ray import _Stage

    with ToolRuntime() as runtime:
        runtime.register(box.where)
        runtime.register(box.change_something)
        with runtime.plan(host=host) as ctx:
            runtime.execute("where", {}, ctx)
            runtime.activate("change_something", ctx)
            plan = host.plan_of(ctx)
            stage = _Stage(plan, plan.actor, None, "execute of tool 'where'", None)
            stage.failed(ray.exceptions.RaySystemError(""))
            stage.failed(ray.exceptions.RaySystemError(""))  # settled once: the second is dropped
            with pytest.raises(ToolHostError, match="'ray' failed during the execute"):
                stage.result()
            assert not plan.dead
            real = plan._send("execute", "where", {}, None, 99, None)
            heard = [threading.Event(), threading.Event()]
            for event in heard:  # Ray's own future is hooked once, for every callback
                real.add_done_callback(lambda _, event=event: event.set())
            assert all(event.wait(WAIT) for event in heard)
            assert real.result()[0] == real.result()[0]
            reports: list[Any] = []
            stream = plan.actor.stream.options(num_returns="streaming")
            streamed = _Stage(
                plan,
                plan.actor,
                stream.remote(
                    pickle.dumps((plan.key, "execute", 100, "change_something", {"target": "t"}))
                ),
                "execute of tool 'change_something'",
                lambda *report: reports.append(report),
                streamed=True,
            )
            ended = threading.Event()
            streamed.add_done_callback(lambda _: ended.set())  # no loop: followed on a thread
            assert ended.wait(WAIT)
            assert streamed.result()[0] == "t"
            assert reports == [(1, 2, "half"), (2, 2, "done")]


class _Entered:
    """An in-process tool whose execute says when it started, then waits to be cancelled."""

    def __init__(self, asynchronous: bool) -> None:
        self.entered = threading.Event()
        self.asynchronous = asynchronous

    def execute(self, params: dict[str, Any], ctx: Any) -> Any:
        self.entered.set()
        if self.asynchronous:
            return asyncio.sleep(WAIT)  # awaited by the actor: a cancel cuts it short
        cancelled = threading.Event()
        ctx.call_token.on_cancel(cancelled.set)
        cancelled.wait(WAIT)
        ctx.call_token.check()
        return "finished"


def _actor() -> Any:
    """The actor's class, in this process: its code runs here, under the test's eyes."""
    from toolcycle.hosts._ray_actor import PlanActor

    info = {
        "plan_id": "p",
        "read_only": False,
        "requires_checkpoint": False,
        "resources": (),
        "metadata": {},
    }
    return PlanActor(info)


async def run(actor: Any, stage: tuple[Any, ...]) -> Any:
    """One stage through the actor's ``run``, as the caller sends it (pickled); its outcome."""
    return pickle.loads(await actor.run(pickle.dumps(stage)))


async def test_the_actor_cancels_a_sync_body_through_its_token() -> None:
    """A cancel for a running sync stage cancels its token; the body stops and says so."""
    actor, tool = _actor(), _Entered(asynchronous=False)
    actor.tools["p", "t"] = tool
    running = asyncio.ensure_future(run(actor, ("p", "execute", 1, "t", {})))
    assert await asyncio.to_thread(tool.entered.wait, WAIT)
    await actor.cancel(1, "stop")
    blob, _, node = await asyncio.wait_for(running, WAIT)
    ok, error, _, _ = pickle.loads(blob)
    assert not ok and isinstance(error, ToolCancelledError) and error.reason == "stop"
    assert node == ray.get_runtime_context().get_node_id()


async def test_the_actor_cancels_the_task_of_a_coroutine_stage() -> None:
    """A cancel for a stage that awaits a coroutine cancels its task too."""
    actor, tool = _actor(), _Entered(asynchronous=True)
    actor.tools["p", "t"] = tool
    running = asyncio.ensure_future(run(actor, ("p", "execute", 1, "t", {})))
    assert await asyncio.to_thread(tool.entered.wait, WAIT)
    while 1 not in actor.tasks:  # the stage's task reaches its await within a turn or two
        await asyncio.sleep(0)
    await actor.cancel(1, "stop")
    blob, _, _ = await asyncio.wait_for(running, WAIT)
    ok, error, _, _ = pickle.loads(blob)
    assert not ok and isinstance(error, ToolCancelledError)


async def test_a_cancel_that_arrives_before_its_stage_cancels_it_at_the_start() -> None:
    """The actor keeps a cancel for a stage it has not seen yet, and applies it."""
    actor = _actor()
    actor.tools["p", "t"] = _Entered(asynchronous=False)
    await actor.cancel(7, "early")
    blob, _, _ = await asyncio.wait_for(run(actor, ("p", "execute", 7, "t", {})), WAIT)
    ok, error, _, _ = pickle.loads(blob)
    assert not ok and error.reason == "early"
    assert actor.early == {}


async def test_the_actor_activates_from_a_payload_and_forgets_a_deactivated_tool() -> None:
    """Activate builds the tool from its payload; deactivate drops it; errors travel as values."""
    actor = _actor()
    payload = ("pickle", pickle.dumps(box.Recorder("r")))
    for number, kind in enumerate(("activate", "execute", "deactivate"), start=1):
        argument = {"activate": payload, "execute": {"x": 1}}.get(kind)
        blob, _, _ = await run(actor, ("p", kind, number, "r", argument))
        assert pickle.loads(blob)[0], kind
    assert actor.tools == {} and actor.tokens == {} and actor.tasks == {}
    blob, _, _ = await run(actor, ("p", "execute", 9, "r", {}))
    ok, error, _, _ = pickle.loads(blob)
    assert not ok and isinstance(error, KeyError)
    actor.tools["p", "d"] = box.Deferred("d")  # a sync execute that hands back a coroutine
    blob, _, _ = await run(actor, ("p", "execute", 10, "d", {}))
    assert pickle.loads(blob)[:2] == (True, "later")
    actor.tools["p", "c"] = box.AsyncRecorder("c")  # a coroutine execute
    blob, _, _ = await run(actor, ("p", "execute", 11, "c", {"x": 2}))
    assert pickle.loads(blob)[1]["x"] == 2


async def test_the_actor_streams_a_stages_progress_then_its_outcome() -> None:
    """``stream`` yields each report as it comes, then the outcome with no reports in it."""
    actor = _actor()
    actor.tools["p", "c"] = box.change_something
    items = [
        item async for item in actor.stream(pickle.dumps(("p", "execute", 1, "c", {"target": "t"})))
    ]
    assert items[:2] == [(1, 2, "half"), (2, 2, "done")]
    blob, reports, _ = pickle.loads(items[2])
    assert reports == [] and pickle.loads(blob)[:2] == (True, "t")


async def test_closing_the_actors_stream_cancels_its_stage() -> None:
    """When Ray cancels the stream, the stage it runs is cancelled too."""
    actor = _actor()
    actor.tools["p", "t"] = _Entered(asynchronous=True)
    stream = actor.stream(pickle.dumps(("p", "execute", 1, "t", {})))
    first = asyncio.ensure_future(anext(stream))
    while 1 not in actor.tasks:  # the stage reaches its await within a turn or two
        await asyncio.sleep(0)
    task = actor.tasks[1]
    first.cancel()  # what Ray does to a cancelled stream
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), WAIT)
    assert task.cancelled()


async def test_a_stage_fails_naming_the_host_when_ray_fails_what_it_waits_for() -> None:
    """Ray's error reaches the stage whether it waits on a stream or on Ray's future."""
    from toolcycle import ToolExecutionContext
    from toolcycle.hosts._ray import _Plan, _Stage

    plan = _Plan(RayHost(name="here"), ToolExecutionContext("p"))

    async def broken_stream() -> Any:
        raise ray.exceptions.RaySystemError("gone")
        yield  # an async generator

    stage = _Stage(plan, None, broken_stream(), "execute of tool 't'", None, streamed=True)
    with pytest.raises(ToolHostError, match="'here' failed during the execute"):
        await asyncio.wait_for(asyncio.wrap_future(stage), WAIT)
    remote: Any = __import__("concurrent.futures").futures.Future()
    remote.set_exception(ray.exceptions.RaySystemError("gone"))
    plain = _Stage(plan, None, None, "execute of tool 't'", None)
    plain._settled(remote)
    with pytest.raises(ToolHostError, match="'here' failed"):
        plain.result()


def test_a_pool_hosts_many_plans_on_its_actors_each_with_its_own_lifecycle(
    rt: ToolRuntime, tmp_path: Path
) -> None:
    """Three plans on two actors: activation once per plan, reverse deactivation, actors kept."""
    host = RayHost(pool=2)
    journals = [tmp_path / f"plan{n}.txt" for n in range(3)]
    try:
        with (
            rt.plan(host=host, metadata={"journal": str(journals[0])}) as one,
            rt.plan(host=host, metadata={"journal": str(journals[1])}) as two,
            rt.plan(host=host, metadata={"journal": str(journals[2])}) as three,
        ):
            pids = []
            for ctx in (one, two, three):
                rt.execute("first", {"x": 1}, ctx)
                rt.execute("second", {}, ctx)
                pids.append(rt.execute("first", {"x": 2}, ctx).output["pid"])
            actors = [host.actor(ctx) for ctx in (one, two, three)]
            assert host._load == [2, 1]
        assert pids[0] == pids[2] != pids[1]  # the least loaded actor takes the next plan
        assert actors[0] is actors[2] is not actors[1]
        for journal in journals:
            assert [words[:2] for words in lines(journal)] == [
                ["activate", "first"],
                ["execute", "first"],
                ["activate", "second"],
                ["execute", "second"],
                ["execute", "first"],
                ["deactivate", "second"],
                ["deactivate", "first"],
            ]
        assert host._load == [0, 0]
        assert not gone_soon(actors[0])  # the plans ended, their actors serve on
        with rt.plan(host=host) as four:  # and take the next plan, holding nothing of the last
            assert rt.execute("where", {}, four).output in pids
        assert ray.get(actors[0].leave.remote("nobody"), timeout=WAIT) is None
    finally:
        host.close()
    assert gone(actors[0]) and gone(actors[1])  # closing the host ends the pool


def gone_soon(actor: Any) -> bool:
    """Whether a call to the actor fails now (it answers at once when alive)."""
    try:
        ray.get(actor.cancel.remote(0, None), timeout=WAIT)
    except ray.exceptions.RayActorError:
        return True
    return False


def test_a_dead_pool_actor_is_replaced_once_for_all_its_plans(rt: ToolRuntime) -> None:
    """Both plans on a killed actor fail once, then go on in one fresh actor of the pool."""
    host = RayHost(pool=1)
    try:
        with rt.plan(host=host) as one, rt.plan(host=host) as two:
            before = rt.execute("where", {}, one).output
            assert rt.execute("where", {}, two).output == before
            kill(host.actor(one))
            assert not rt.execute("where", {}, one).success  # meets the dead actor
            assert not rt.execute("where", {}, two).success
            after = rt.execute("where", {}, one).output
            assert rt.execute("where", {}, two).output == after != before
            assert host.actor(one) is host.actor(two) is host._pool[0]
    finally:
        host.close()


def test_a_pool_must_be_a_positive_int() -> None:
    """``pool`` is None or at least 1."""
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="pool must be a positive int"):
            RayHost(pool=bad)  # type: ignore[arg-type]


def test_a_pool_actor_runs_a_tool_registered_anew_beside_the_one_it_replaces(
    rt: ToolRuntime, journal: Path
) -> None:
    """As without a host: the new tool is activated before its next call, both deactivated."""
    host = RayHost(pool=1)
    try:
        with rt.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            rt.execute("first", {}, ctx)
            rt.unregister("first")
            rt.register(box.Recorder("first", tag="-new"))
            assert rt.execute("first", {}, ctx).success
    finally:
        host.close()
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "first"],
        ["execute", "first"],
        ["activate", "first-new"],
        ["execute", "first-new"],
        ["deactivate", "first-new"],
        ["deactivate", "first"],
    ]


def test_a_plan_whose_pool_actor_cannot_be_placed_still_ends(rt: ToolRuntime) -> None:
    """Ray waits for ever to place an actor it has no room for; the plan's end does not."""
    host = RayHost(pool=1, actor_options={"num_cpus": 64})  # the cluster has 2
    ctx = rt.new_context(host=host)
    result = rt.execute("where", {}, ctx, timeout=0.5)
    ended = threading.Event()
    ender = threading.Thread(target=lambda: (rt.end_plan(ctx), ended.set()), daemon=True)
    ender.start()
    closer = threading.Thread(target=host.close, daemon=True)
    try:
        assert ended.wait(WAIT)
    finally:
        closer.start()
        closer.join(WAIT)
    assert result.trace.status == "timed_out"
    assert not closer.is_alive()


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_a_stop_timeout_must_be_a_finite_number_of_seconds(bad: Any) -> None:
    """``stop_timeout`` is checked as ProcessHost checks it, when the host is made."""
    with pytest.raises(ValueError, match="stop_timeout must be a finite number"):
        RayHost(stop_timeout=bad)


@pytest.mark.parametrize(
    ("options", "setting"),
    [({"pool": -(10**5000)}, "pool"), ({"stop_timeout": 10**5000}, "stop_timeout")],
)
def test_a_ray_host_refuses_an_int_too_long_to_print_by_its_size(
    options: dict[str, Any], setting: str
) -> None:
    """The message names the setting and the int's size, instead of failing to print it."""
    with pytest.raises(ValueError, match=f"{setting} must be .* int of about 5,001 digits"):
        RayHost(**options)


@pytest.mark.parametrize("stop_timeout", [0, 0.5])
def test_a_plan_ends_within_its_stop_timeout_when_a_body_runs_on(
    stop_timeout: float, signal: str
) -> None:
    """A body that ignores its token holds the plan's end no longer than stop_timeout allows."""
    host = RayHost(stop_timeout=stop_timeout)
    try:
        with ToolRuntime(abandon_timeout=0.1, deactivate_timeout=0.2) as runtime:
            runtime.register(ray_toolbox.signal_then_ignore)
            ctx = runtime.new_context(host=host, metadata={"signal": signal})
            runtime.activate("signal_then_ignore", ctx)
            result = runtime.execute("signal_then_ignore", {}, ctx, timeout=0.2)
            started(signal)
            actor = host.actor(ctx)
            began = time.monotonic()
            runtime.end_plan(ctx)
            took = time.monotonic() - began
    finally:
        host.close()
    assert result.trace.abandoned
    assert took < 2 * stop_timeout + 2.5  # the default, 5 s, would hold it 5 s or more
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.join.remote({"plan_id": "x"}), timeout=WAIT)  # killed


async def test_a_pool_actor_keeps_plans_apart_and_drops_what_a_plan_left() -> None:
    """Tools are held per plan; ``leave`` drops a plan's leftovers; an unknown plan fails."""
    from toolcycle.hosts._ray_actor import PlanActor

    actor = PlanActor(None)  # a pool's actor: plans join it
    assert actor.plans == {}
    for plan in ("p", "q"):
        await actor.join({"plan_id": plan, "metadata": {"who": plan}})
    payload = ("pickle", pickle.dumps(box.Recorder("r")))
    for plan in ("p", "q"):
        blob, _, _ = await run(actor, (plan, "activate", 1, "r", payload))
        assert pickle.loads(blob)[0]
    assert set(actor.tools) == {("p", "r"), ("q", "r")}
    await actor.leave("q")
    assert set(actor.tools) == {("p", "r")} and "q" not in actor.plans
    blob, _, _ = await run(actor, ("q", "execute", 2, "r", {}))
    ok, error, _, _ = pickle.loads(blob)
    assert not ok and "has not joined this actor" in str(error)


def test_a_plan_that_joins_a_dead_pool_actor_fails_once_then_gets_a_fresh_one(
    rt: ToolRuntime,
) -> None:
    """A pool actor that died while idle fails the next plan's start, naming the host."""
    host = RayHost(name="pooled", pool=1)
    try:
        with rt.plan(host=host) as one:
            before = rt.execute("where", {}, one).output
            kill(host.actor(one))
        with rt.plan(host=host) as two:
            with pytest.raises(ToolHostError, match="'pooled' died during the plan's start"):
                rt.execute("where", {}, two)
            after = rt.execute("where", {}, two)
    finally:
        host.close()
    assert after.output != before


async def test_an_actor_keeps_only_the_latest_cancels_for_stages_it_has_not_seen() -> None:
    """A cancel that came after its stage ended is dropped once newer ones pile up."""
    from toolcycle.hosts._ray_actor import EARLY_KEPT

    actor = _actor()
    for number in range(EARLY_KEPT + 5):
        await actor.cancel(number, "late")
    assert len(actor.early) == EARLY_KEPT
    assert min(actor.early) == 5


class _Stuck(box.Recorder):
    """An in-process tool whose execute ignores its token until ``go``; its stages are listed."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.entered = threading.Event()
        self.go = threading.Event()
        self.stages: list[str] = []

    def execute(self, params: dict[str, Any], ctx: Any) -> str:
        self.entered.set()
        self.go.wait(WAIT)
        self.stages.append("execute-end")
        return "finished"

    def deactivate(self, ctx: Any) -> None:
        self.stages.append("deactivate")


async def test_the_actor_holds_a_deactivate_until_a_sync_body_its_caller_left_has_ended() -> None:
    """A stream Ray cancels leaves its sync body running: the tool is deactivated only after."""
    actor, tool = _actor(), _Stuck("t")
    actor.tools["p", "t"] = tool
    stream = actor.stream(pickle.dumps(("p", "execute", 1, "t", {})))
    first = asyncio.ensure_future(anext(stream))
    assert await asyncio.to_thread(tool.entered.wait, WAIT)
    first.cancel()  # what Ray does to a cancelled stream: the body runs on, on its thread
    with pytest.raises(asyncio.CancelledError):
        await first
    deactivating = asyncio.ensure_future(run(actor, ("p", "deactivate", 2, "t", None)))
    try:
        done, _ = await asyncio.wait({deactivating}, timeout=QUIET)
        assert not done  # held: the body still runs
    finally:
        tool.go.set()
    blob, _, _ = await asyncio.wait_for(deactivating, WAIT)
    assert pickle.loads(blob)[0]
    assert tool.stages == ["execute-end", "deactivate"]
    assert actor.tools == {} and actor.tokens == {} and actor.tasks == {}


async def _waits_for_the_first(actor: Any, plan: str, name: str) -> None:
    """Until an activate of ``name`` waits for the one under way (a turn of the loop or two)."""
    for _ in range(1000):
        if actor.lifecycles[plan]._activating.get(name):
            return
        await asyncio.sleep(0)
    raise AssertionError(f"no activate of {name!r} waits")


@pytest.mark.parametrize("tool", [box.Gated, box.AsyncGated], ids=["sync", "coroutine"])
async def test_the_actor_shares_a_running_activation_and_releases_it_when_no_caller_did(
    tool: type[box.Gated],
) -> None:
    """A second activate waits for the first and shares it; leaving deactivates it once."""
    actor, gated = _actor(), tool("gated")
    box.GATED = gated
    payload = ("ref", "hosts_toolbox:GATED")
    first = asyncio.ensure_future(run(actor, ("p", "activate", 1, "gated", payload)))
    assert await asyncio.to_thread(gated.entered.wait, WAIT)
    second = asyncio.ensure_future(run(actor, ("p", "activate", 2, "gated", payload)))
    await _waits_for_the_first(actor, "p", "gated")
    gated.go.set()
    for outcome in await asyncio.wait_for(asyncio.gather(first, second), WAIT):
        assert pickle.loads(outcome[0])[0]
    blob, _, _ = await run(actor, ("p", "activate", 3, "gated", payload))  # active: done at once
    assert pickle.loads(blob)[0]
    await asyncio.wait_for(actor.leave("p"), WAIT)
    assert gated.stages == ["activate", "deactivate"]
    assert actor.tools == {} and actor.plans == {}


async def test_the_actor_activates_afresh_for_a_waiting_caller_when_the_first_activation_failed() -> (
    None
):
    """The second activate does not share a failure: it tries again, as the runtime would."""
    actor, gated = _actor(), box.Gated("gated", fail_first=True)
    box.GATED = gated
    payload = ("ref", "hosts_toolbox:GATED")
    first = asyncio.ensure_future(run(actor, ("p", "activate", 1, "gated", payload)))
    assert await asyncio.to_thread(gated.entered.wait, WAIT)
    second = asyncio.ensure_future(run(actor, ("p", "activate", 2, "gated", payload)))
    await _waits_for_the_first(actor, "p", "gated")
    gated.go.set()
    outcomes = await asyncio.wait_for(asyncio.gather(first, second), WAIT)
    assert [pickle.loads(blob)[0] for blob, _, _ in outcomes] == [False, True]
    blob, _, _ = await run(actor, ("p", "deactivate", 3, "gated", None))
    assert pickle.loads(blob)[0]
    await asyncio.wait_for(actor.leave("p"), WAIT)
    assert gated.stages == ["activate", "activate", "deactivate"]


def test_plans_of_two_runtimes_with_one_id_keep_apart_on_a_pool_actor(
    rt: ToolRuntime, tmp_path: Path
) -> None:
    """Two plans named alike share a pool actor: each keeps its tools, metadata and end."""
    host = RayHost(pool=1)
    journals = [tmp_path / "one.txt", tmp_path / "two.txt"]
    try:
        with ToolRuntime() as other:
            other.register(box.Recorder("first"))
            one = rt.new_context(host=host, plan_id="same", metadata={"journal": str(journals[0])})
            two = other.new_context(
                host=host, plan_id="same", metadata={"journal": str(journals[1])}
            )
            assert rt.execute("first", {"x": 1}, one).success
            assert other.execute("first", {"x": 2}, two).success
            assert host.actor(one) is host.actor(two)
            assert other.end_plan(two) == []
            after = rt.execute("first", {"x": 3}, one)  # the other plan's end took nothing of it
            assert after.success, after.error
            assert rt.end_plan(one) == []
    finally:
        host.close()
    assert [words[:2] for words in lines(journals[0])] == [
        ["activate", "first"],
        ["execute", "first"],
        ["execute", "first"],
        ["deactivate", "first"],
    ]
    assert [words[:2] for words in lines(journals[1])] == [
        ["activate", "first"],
        ["execute", "first"],
        ["deactivate", "first"],
    ]
