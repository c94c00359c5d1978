"""ProcessHost at its edges: how tools travel, errors coming back, misuse, the wire."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import pickle
import threading
import types
from pathlib import Path
from typing import Any

import hosts_toolbox as box
import pytest
from hosts_toolbox import lines
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import PlanHost, ToolExecutionContext, ToolRuntime, tool
from toolcycle.hosts import ProcessHost, ToolHostError, ToolImport
from toolcycle.hosts._base import HostedPlan
from toolcycle.hosts._remote_stage import load_tool, packed
from toolcycle.hosts._tools import _by_name, pack, settle
from toolcycle.hosts._worker import _Worker, serve
from toolcycle.otel import OpenTelemetry

WAIT = 10.0


def test_a_process_host_is_a_plan_host() -> None:
    """ProcessHost satisfies the PlanHost protocol the runtime checks for."""
    host = ProcessHost()
    assert isinstance(host, PlanHost)
    assert host.name == "process"
    assert repr(host) == "ProcessHost(name='process', plans=0)"


def test_a_host_must_be_a_plan_host(runtime: ToolRuntime) -> None:
    """Anything else given as host= is refused when the plan opens."""
    with pytest.raises(TypeError, match="PlanHost"):
        runtime.new_context(host="elsewhere")  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"name": ""}, ValueError),
        ({"tools": {"x": "hosts_toolbox:where"}}, TypeError),
        ({"start_method": "teleport"}, ValueError),
        ({"stop_timeout": -1}, ValueError),
        ({"stop_timeout": float("nan")}, ValueError),
        ({"stop_timeout": "5"}, ValueError),
        ({"stop_timeout": True}, ValueError),
    ],
)
def test_process_host_options_are_checked(options: dict[str, Any], error: type) -> None:
    """A bad name, a tool not given as ToolImport, an unknown start method or stop timeout."""
    with pytest.raises(error):
        ProcessHost(**options)


def test_a_tool_import_path_needs_a_module_and_an_attribute() -> None:
    """'module:attribute' is the only form accepted."""
    with pytest.raises(ValueError, match="package.module:attribute"):
        ToolImport("hosts_toolbox")


def test_a_tool_import_builds_the_tool_inside_the_worker(journal: Path) -> None:
    """The worker calls the factory with the arguments; the registered tool never travels."""
    host = ProcessHost(tools={"locked": ToolImport("hosts_toolbox:make_recorder", ("locked",))})
    with ToolRuntime() as runtime:
        runtime.register(box.Locked("locked"))  # does not pickle: only its import travels
        with runtime.plan(host=host, metadata={"journal": str(journal)}) as ctx:
            result = runtime.execute("locked", {"x": 5}, ctx)
    assert result.output["x"] == 5
    assert lines(journal)[0][:2] == ["activate", "locked"]


def test_a_tool_import_whose_arguments_do_not_pickle_fails_its_activation_saying_so() -> None:
    """The error names the tool and its arguments, and the worker goes on serving the plan."""
    host = ProcessHost(
        tools={
            "first": ToolImport("hosts_toolbox:make_recorder", kwargs={"name": threading.Lock()})
        }
    )
    try:
        with ToolRuntime() as runtime:
            runtime.register(box.Recorder("first"))
            runtime.register(box.where)
            with runtime.plan(host=host) as ctx:
                worker = runtime.execute("where", {}, ctx).output
                with pytest.raises(ToolHostError, match="'first'.*args or kwargs") as caught:
                    runtime.execute("first", {}, ctx)
                assert runtime.execute("where", {}, ctx).output == worker
    finally:
        host.close()
    assert caught.value.tool_name == "first"


def test_a_tool_import_of_a_tool_object_uses_it_as_it_is() -> None:
    """An attribute that is neither a class nor a function is the tool itself."""
    host = ProcessHost(tools={"where": ToolImport("hosts_toolbox:where")})
    with ToolRuntime() as runtime:
        runtime.register(box.where)
        with runtime.plan(host=host) as ctx:
            result = runtime.execute("where", {}, ctx)
    assert result.output not in (None, os.getpid())


def test_errors_of_the_body_come_back_as_failed_results(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """A picklable error keeps its type; one that does not pickle back says so."""
    with runtime.plan(host=host) as ctx:
        plain = runtime.execute("fail", {"kind": "value"}, ctx)
        odd = runtime.execute("fail", {"kind": "other"}, ctx)
        unsendable = runtime.execute("unsendable", {}, ctx)
        unreadable = runtime.execute("unreadable", {}, ctx)
        deferred = runtime.execute("deferred", {}, ctx)
    assert plain.trace.error_type == "ValueError" and plain.error == "bad value"
    assert "Unpicklable" in (odd.error or "") and "could not be sent back" in (odd.error or "")
    assert "could not be sent back" in (unsendable.error or "")
    assert unreadable.trace.error_type == "ToolHostError"
    assert "could not be read back" in (unreadable.error or "")
    assert deferred.output == "later"


@pytest.mark.parametrize("then_fail", [False, True], ids=["returned", "raised"])
def test_a_change_whose_data_does_not_pickle_fails_the_call_instead_of_hanging_it(
    runtime: ToolRuntime, host: ProcessHost, then_fail: bool
) -> None:
    """The call fails at once saying so; the changes that travel reach the plan; it ends cleanly."""
    ctx = runtime.new_context(host=host)
    result = runtime.execute("unsendable_change", {"then_fail": then_fail}, ctx, timeout=WAIT)
    assert result.trace.status == "error", result.error
    assert "recorded changes could not be sent back" in (result.error or "")
    assert [change.target for change in result.changes] == ["plain"]
    assert runtime.execute("where", {}, ctx).success  # the worker goes on serving the plan
    assert runtime.end_plan(ctx) == []


def test_a_worker_that_exits_fails_its_call_with_the_exit_code(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """A worker that ends itself is a death like any other, and the message says how."""
    with runtime.plan(host=host) as ctx:
        result = runtime.execute("exit_now", {"code": 3}, ctx)
        plan = host.plan_of(ctx)
        assert plan.child is not None
        dead = plan.child
        _, pending = dead.send("execute", "where")  # nothing more reaches a dead worker
        dead.cancel(99, "late")
    assert "died (exit code 3)" in (result.error or "")
    with pytest.raises(ToolHostError, match="died"):
        pending.future.result(WAIT)


def test_plan_metadata_that_does_not_pickle_is_refused(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """The plan's metadata travels with each stage, so it must pickle."""
    with runtime.plan(host=host, metadata={"lock": threading.Lock()}) as ctx:
        with pytest.raises(ToolHostError, match="metadata do not pickle"):
            runtime.execute("where", {}, ctx)


def test_a_plan_refused_for_its_metadata_is_never_said_to_have_had_a_worker_die(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """Each call says the metadata does not pickle: no worker started, so none died."""
    with runtime.plan(host=host, metadata={"lock": threading.Lock()}) as ctx:
        for _ in range(3):
            with pytest.raises(ToolHostError, match="metadata do not pickle"):
                runtime.execute("where", {}, ctx)
        assert host.worker_pid(ctx) is None


def test_a_worker_starts_in_the_callers_environment_and_folder_as_they_are_then(
    runtime: ToolRuntime, host: ProcessHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable set after an earlier plan's worker started reaches the next plan's worker."""
    with runtime.plan(host=host) as ctx:  # a forkserver, if used, is running from here on
        before = runtime.execute("surroundings", {"name": "TOOLCYCLE_HOST_PROBE"}, ctx)
    monkeypatch.setenv("TOOLCYCLE_HOST_PROBE", "set later")
    monkeypatch.chdir(tmp_path)
    with runtime.plan(host=host) as ctx:
        after = runtime.execute("surroundings", {"name": "TOOLCYCLE_HOST_PROBE"}, ctx)
    assert before.output["value"] is None
    assert after.output == {"value": "set later", "folder": str(tmp_path)}


def test_a_worker_takes_on_the_environment_its_plan_info_brings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Variables are set, changed and removed to match the caller's; the rest is plan info."""
    monkeypatch.setenv("TOOLCYCLE_HOST_PROBE", "stale")
    monkeypatch.setenv("TOOLCYCLE_HOST_GONE", "only in the worker")
    environ = {**os.environ, "TOOLCYCLE_HOST_PROBE": "fresh"}
    del environ["TOOLCYCLE_HOST_GONE"]
    mine, theirs = multiprocessing.Pipe()
    worker = _Worker(theirs)
    worker.adopt({"plan_id": "p", "environ": environ})
    worker.close()
    mine.close()
    theirs.close()
    assert os.environ.get("TOOLCYCLE_HOST_PROBE") == "fresh"
    assert "TOOLCYCLE_HOST_GONE" not in os.environ
    assert worker.info == {"plan_id": "p"}


def test_a_stop_timeout_of_zero_kills_the_worker_and_ends_the_plan_cleanly(
    runtime: ToolRuntime,
) -> None:
    """Each plan's end kills its worker at once, waits until it is gone, and raises nothing."""
    host = ProcessHost(name="impatient", stop_timeout=0)
    try:
        for _ in range(3):  # a killed worker is seldom gone at once: each end must wait
            ctx = runtime.new_context(host=host)
            worker = runtime.execute("where", {}, ctx).output
            assert runtime.end_plan(ctx) == []
            with pytest.raises(ProcessLookupError):
                os.kill(worker, 0)  # reaped, not only killed
    finally:
        host.close()


def test_closing_the_host_ends_every_plans_worker(runtime: ToolRuntime, host: ProcessHost) -> None:
    """close() ends the workers of plans still open; their later calls fail clearly."""
    ctx = runtime.new_context(host=host)
    runtime.execute("where", {}, ctx)
    host.close()
    assert host.placement(ctx) is None
    runtime.end_plan(ctx)


def test_a_plan_open_when_its_host_closed_fails_its_later_calls_and_starts_no_worker(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """Its tools, active or not, fail saying the host was closed; no fresh worker starts."""
    ctx = runtime.new_context(host=host)
    runtime.execute("where", {}, ctx)
    host.close()
    later = runtime.execute("where", {}, ctx)
    assert not later.success
    assert later.trace.error_type == "ToolHostError"
    assert "was closed" in (later.error or "")
    with pytest.raises(ToolHostError, match="was closed"):
        runtime.execute("first", {}, ctx)  # its activation fails
    assert host.worker_pid(ctx) is None
    assert runtime.end_plan(ctx) == []
    assert host.plan_of(ctx) is None


def test_an_ended_plan_cannot_start_a_worker(host: ProcessHost) -> None:
    """A stand-in kept past its plan's end refuses to start a new worker."""
    with ToolRuntime() as runtime:
        runtime.register(box.where)
        ctx = runtime.new_context(host=host)
        stand_in = host.tool("where", box.where, ctx, asynchronous=False)
        plan = host.plan_of(ctx)
        plan.close()
        with pytest.raises(ToolHostError, match="has ended"):
            stand_in.activate(ctx)
        plan.cancel(1, "nothing runs")
        runtime.end_plan(ctx)


def test_spans_carry_the_host_and_the_worker(host: ProcessHost) -> None:
    """The OpenTelemetry span of a hosted call names the host and where it ran."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with ToolRuntime(instrumentation=OpenTelemetry(tracer_provider=provider)) as runtime:
        runtime.register(box.where)
        with runtime.plan(host=host) as ctx:
            result = runtime.execute("where", {}, ctx)
    calls = [
        span for span in exporter.get_finished_spans() if span.attributes.get("toolcycle.host")
    ]
    assert calls and calls[0].attributes["toolcycle.host_id"] == f"pid {result.output}"


def test_tools_travel_by_name_only_from_importable_modules() -> None:
    """A tool found under its own name in a module the worker can import goes by name."""
    assert pack("where", box.where, {}) == ("ref", "hosts_toolbox:where")
    main = types.SimpleNamespace(__module__="__main__", __qualname__="x")
    assert _by_name(main) is None
    assert _by_name(object()) is None
    assert _by_name(types.SimpleNamespace(__module__="nowhere", __qualname__="x")) is None
    ghost = types.ModuleType("ghost_module_for_hosts")
    ghost.thing = types.SimpleNamespace(__module__="ghost_module_for_hosts", __qualname__="thing")
    import sys

    sys.modules["ghost_module_for_hosts"] = ghost
    try:
        assert _by_name(ghost.thing) is None  # in sys.modules, but a fresh process has no file
    finally:
        del sys.modules["ghost_module_for_hosts"]
    assert _by_name(types.SimpleNamespace(__module__="hosts_toolbox", __qualname__="where")) is None


def test_a_payload_rebuilds_the_tool_each_way() -> None:
    """Pickled, by name, and by import (a factory called with its arguments)."""
    assert load_tool(("pickle", pickle.dumps(box.Recorder("p")))).name == "p"
    assert load_tool(("ref", "hosts_toolbox:where")) is box.where
    built = load_tool(("import", "hosts_toolbox:Recorder", ("made",), {}))
    assert isinstance(built, box.Recorder) and built.name == "made"


def test_the_worker_serves_stages_over_its_pipe() -> None:
    """The worker loop in this process: stages, progress, cancellation, unknown tools, stop."""
    mine, theirs = multiprocessing.Pipe()
    server = threading.Thread(target=serve, args=(theirs,))
    server.start()
    mine.send(("plan", {"plan_id": "p"}))

    def outcome() -> Any:
        assert mine.poll(WAIT)
        message = mine.recv()
        return message if message[0] == "progress" else (message[1], *pickle.loads(message[2]))

    mine.send(("activate", 1, "waits", ("ref", "hosts_toolbox:wait_for_cancel")))
    assert outcome() == (1, True, None, [], ())
    mine.send(("activate", 2, "coro", ("ref", "hosts_toolbox:await_cancel")))
    assert outcome() == (2, True, None, [], ())
    mine.send(("execute", 3, "waits", {}))
    assert outcome()[0] == "progress"
    mine.send(("cancel", 3, "enough"))
    mine.send(("cancel", 99, "unknown"))
    number, ok, error, _, _ = outcome()
    assert (number, ok, type(error).__name__) == (3, False, "ToolCancelledError")
    mine.send(("execute", 4, "coro", {}))
    assert outcome()[0] == "progress"
    mine.send(("cancel", 4, "enough"))
    number, ok, error, _, _ = outcome()
    assert (number, ok, type(error).__name__) == (4, False, "ToolCancelledError")
    mine.send(("execute", 5, "missing", {}))
    number, ok, error, _, _ = outcome()
    assert (number, ok, type(error).__name__) == (5, False, "KeyError")
    mine.send(("deactivate", 6, "waits"))
    assert outcome() == (6, True, None, [], ())
    mine.send(("activate", 8, "deferred", ("pickle", pickle.dumps(box.Deferred("deferred")))))
    assert outcome()[0] == "progress"  # "activating"
    assert outcome() == (8, True, None, [], ())
    mine.send(("execute", 9, "deferred", {}))
    assert outcome() == (9, True, "later", [], ())
    mine.send(("activate", 10, "afail", ("ref", "hosts_toolbox:afail")))
    assert outcome() == (10, True, None, [], ())
    mine.send(("execute", 11, "afail", {}))
    number, ok, error, _, _ = outcome()
    assert (number, ok, str(error)) == (11, False, "async failure")
    mine.send(("execute", 7, "coro", {}))  # still running when the worker is told to stop
    assert outcome()[0] == "progress"
    mine.send(("stop",))
    server.join(WAIT)
    assert not server.is_alive()
    mine.close()


def test_the_worker_ends_when_its_caller_goes_away() -> None:
    """A closed pipe ends the worker loop as a stop would."""
    mine, theirs = multiprocessing.Pipe()
    server = threading.Thread(target=serve, args=(theirs,))
    server.start()
    mine.close()
    server.join(WAIT)
    assert not server.is_alive()


async def test_an_async_call_after_a_death_starts_the_fresh_worker_off_the_loop(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """The replacement worker starts on a thread, so the caller's loop never blocks on it."""
    async with runtime.aplan(host=host) as ctx:
        died = await runtime.aexecute("exit_now", {"code": 4}, ctx)
        again = await runtime.aexecute("where", {}, ctx)
        failed = await runtime.aexecute("fail", {"kind": "value"}, ctx)
    assert not died.success and "exit code 4" in (died.error or "")
    assert again.success and failed.trace.error_type == "ValueError"
    await asyncio.sleep(0)


async def test_async_calls_bring_back_changes_and_read_the_descriptor_here(
    runtime: ToolRuntime, host: ProcessHost
) -> None:
    """Changes recorded in the worker reach an async caller's result; discover stays local."""
    async with runtime.aplan(host=host) as ctx:
        result = await runtime.aexecute("change_something", {"target": "b.txt"}, ctx)
        stand_in = host.tool("where", box.where, ctx, asynchronous=True)
    assert [change.target for change in result.changes] == ["b.txt"]
    assert stand_in.discover().name == "where"


def test_a_tool_of_the_main_script_is_refused_with_where_to_move_it() -> None:
    """A ``@tool`` written in the script run as __main__ cannot go by name: say so."""

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    shout.__module__ = "__main__"
    shout.__qualname__ = "shout"
    with pytest.raises(ToolHostError, match=r"defined in the script run as __main__.*module"):
        pack("shout", tool(writes=False)(shout), {})


def test_an_outcome_that_cannot_travel_back_becomes_an_error_saying_so() -> None:
    """An output that does not pickle, an error that does not pickle back: plain errors."""
    for ok, value in ((True, threading.Lock()), (False, box.Unpicklable("a", "b"))):
        sent_ok, error, changes, revealed = pickle.loads(packed(ok, value, [], ("found",)))
        assert not sent_ok and changes == [] and revealed == ("found",)
        assert "could not be sent back from the host" in str(error)


class _InlinePlan(HostedPlan):
    """A hosted plan whose worker answers every stage at once; ``sent`` is what it got."""

    def __init__(self) -> None:
        super().__init__(ProcessHost(name="inline"), ToolExecutionContext("inline"))
        self.sent: list[tuple[str, str, Any]] = []

    def alive(self) -> bool:
        return True

    def start(self) -> None:
        raise AssertionError("an inline plan has its worker already")

    def dispatch(
        self, kind: str, name: str, argument: Any, *rest: Any
    ) -> tuple[int, concurrent.futures.Future[Any]]:
        self.sent.append((kind, name, argument))
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        settle(future, True, None, [])
        return len(self.sent), future

    def cancel(self, number: int, reason: str | None) -> None:
        return None

    def close(self) -> None:
        return None


def test_an_activation_is_sent_while_another_thread_adds_a_stand_in() -> None:
    """The plan's stand-ins may grow while an activation finds the tool it sends.

    A name that compares slowly holds the activation where it used to look its tool
    up among the plan's stand-ins; another stand-in is added meanwhile. The tool sent
    is the activated stand-in's own, and nothing fails.
    """
    progressed, go = threading.Event(), threading.Event()

    class SlowName(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            progressed.set()
            assert go.wait(WAIT)
            return str.__eq__(self, other)

    plan = _InlinePlan()
    plan.stand_in("a", box.Recorder("a"), False)
    slow = box.Recorder("b")
    stand_in = plan.stand_in(SlowName("b"), slow, False)
    failures: list[BaseException] = []

    def activate() -> None:
        try:
            stand_in.activate(ToolExecutionContext("inline"))
        except BaseException as exc:
            failures.append(exc)
        finally:
            progressed.set()

    activating = threading.Thread(target=activate)
    activating.start()
    assert progressed.wait(WAIT)
    plan.stand_in("c", box.Recorder("c"), False)  # while the activation may be under way
    go.set()
    activating.join(WAIT)
    assert not activating.is_alive() and failures == []
    [(kind, name, payload)] = plan.sent
    assert (kind, name) == ("activate", "b")
    assert load_tool(payload).name == "b"
