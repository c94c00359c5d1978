"""Durable plans on DBOS (SQLite), instrumented: a replayed call is announced only once.

A call's ``tool.call_started`` event and its instrumentation observer (here an
OpenTelemetry span, kept by an in-memory exporter) belong to the run that ran
it. A plan resumed after a crash gets its completed calls' results back from
DBOS's record, and no event, span or trace is made for them again; a call the
resumed run reports interrupted, or one a check refuses before DBOS sees it, is
announced by that run. A plan "crashes" here by raising a `BaseException` past
its workflow, which DBOS leaves pending, and is resumed with `DBOSPlan.resume`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

from dbos import DBOS, DBOSConfig, SetWorkflowID
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import NullTracer, ToolAccessDeniedError, ToolCall, ToolRuntime, tool
from toolcycle.hosts import DBOSPlan
from toolcycle.otel import OpenTelemetry
from toolcycle.testing import capture_traces

RUNS: Counter[str] = Counter()
CRASH = threading.Event()  # set: the plan dies after its calls, as if its process were killed
DIE = threading.Event()  # set: the plan dies while ``send`` runs
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(shutdown_on_exit=False)
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
RUNTIMES: dict[str, ToolRuntime] = {}  # "observed" (with spans) and "plain", made by the fixture


class Crash(BaseException):
    """Stands for the process dying: it leaves the workflow without DBOS recording anything."""


@tool(writes=False, idempotent=True)
def lookup(key: str) -> str:
    """Read a value; idempotent, so its call is one step."""
    RUNS["lookup"] += 1
    return key.upper()


@tool(writes=False)
def send(to: str) -> str:
    """Send something once; not idempotent, so a marker step precedes its call."""
    RUNS["send"] += 1
    if DIE.is_set():
        raise Crash
    return f"sent to {to}"


@tool(writes=True)
def charge(amount: int) -> str:
    """Charge a card: a tool that writes, refused in a read-only plan."""
    return f"charged {amount}"  # pragma: no cover - every plan that calls it is read-only


def _runtime(instrumented: bool) -> ToolRuntime:
    made = ToolRuntime(
        tracer=NullTracer(),
        instrumentation=OpenTelemetry(tracer_provider=PROVIDER) if instrumented else None,
    )
    for fn in (lookup, send, charge):
        made.register(fn)
    return made


@DBOS.workflow()
def errand() -> list[Any]:
    """Look a value up, send it, then crash if asked."""
    runtime = RUNTIMES["observed"]
    with runtime.plan(durable=DBOSPlan()) as ctx:
        found = runtime.execute("lookup", {"key": "a"}, ctx)
        sent = runtime.execute("send", {"to": "ann"}, ctx)
        if CRASH.is_set():
            raise Crash
        return [found.output, sent.output, sent.error_type]


@DBOS.workflow()
async def aerrand() -> list[Any]:
    """Async twin of `errand`."""
    runtime = RUNTIMES["observed"]
    async with runtime.aplan(durable=DBOSPlan()) as ctx:
        found = await runtime.aexecute("lookup", {"key": "a"}, ctx)
        sent = await runtime.aexecute("send", {"to": "ann"}, ctx)
        if CRASH.is_set():
            raise Crash
        return [found.output, sent.output, sent.error_type]


CHARGE = ToolCall(id="c1", name="charge", arguments={"amount": 3})


@DBOS.workflow()
def refused(kind: str) -> list[Any]:
    """In a read-only plan, execute ``charge`` (it raises), then answer a model's call of it."""
    runtime = RUNTIMES[kind]
    with runtime.plan(durable=DBOSPlan(), read_only=True) as ctx:
        with pytest.raises(ToolAccessDeniedError) as raised:
            runtime.execute("charge", {"amount": 3}, ctx)
        answered = runtime.call(CHARGE, ctx)
        return [raised.type.__name__, answered.error_type]


@DBOS.workflow()
async def arefused(kind: str) -> list[Any]:
    """Async twin of `refused`."""
    runtime = RUNTIMES[kind]
    async with runtime.aplan(durable=DBOSPlan(), read_only=True) as ctx:
        with pytest.raises(ToolAccessDeniedError) as raised:
            await runtime.aexecute("charge", {"amount": 3}, ctx)
        answered = await runtime.acall(CHARGE, ctx)
        return [raised.type.__name__, answered.error_type]


@pytest.fixture(scope="module", autouse=True)
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS on a SQLite file of the module's own, launched once; the two runtimes."""
    folder: Path = tmp_path_factory.mktemp("dbos-observed")
    RUNTIMES.update(observed=_runtime(True), plain=_runtime(False))
    DBOS(
        config=DBOSConfig(
            name="toolcycle-observed-tests",
            system_database_url=f"sqlite:///{folder}/system.sqlite",
            application_version="test-1",
        )
    )
    DBOS.launch()
    yield
    DBOS.destroy()
    for made in RUNTIMES.values():
        made.close()
    RUNTIMES.clear()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    RUNS.clear()
    EXPORTER.clear()
    yield
    CRASH.clear()
    DIE.clear()


def _spans() -> Counter[str]:
    """How many ``execute_tool`` spans ended, by tool."""
    names = [span.name for span in EXPORTER.get_finished_spans()]
    return Counter(name.split()[1] for name in names if name.startswith("execute_tool "))


def _started(caplog: pytest.LogCaptureFixture) -> Counter[str]:
    """How many ``tool.call_started`` events were logged, by tool."""
    return Counter(
        record.tool  # type: ignore[attr-defined]
        for record in caplog.records
        if record.name == "toolcycle.lifecycle" and record.getMessage() == "tool.call_started"
    )


def _crash_then_resume(workflow_id: str, mode: str) -> Any:
    """Run the errand until it dies (after its calls, or inside ``send``), then resume it."""
    with SetWorkflowID(workflow_id), pytest.raises(Crash):
        if mode == "sync":
            errand()
        else:
            asyncio.run(aerrand())
    CRASH.clear()
    DIE.clear()
    return DBOSPlan.resume(workflow_id).get_result()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_replayed_call_starts_no_span_and_logs_no_start_again(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Resumed after a crash, the completed calls come back with no new event, span or trace."""
    CRASH.set()
    with (
        caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"),
        capture_traces(RUNTIMES["observed"]) as traces,
    ):
        resumed = _crash_then_resume(f"wf-replayed-{mode}", mode)
    assert resumed == ["A", "sent to ann", None]
    assert RUNS == {"lookup": 1, "send": 1}
    assert _spans() == {"lookup": 1, "send": 1}
    assert _started(caplog) == {"lookup": 1, "send": 1}
    assert [trace.tool_name for trace in traces] == ["lookup", "send"]


def test_a_call_the_resumed_run_reports_interrupted_is_announced_by_that_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call that died gets a span of its own run for its ToolInterruptedError result."""
    DIE.set()
    with caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"):
        resumed = _crash_then_resume("wf-interrupted", "sync")
    assert resumed == ["A", None, "ToolInterruptedError"]
    assert RUNS == {"lookup": 1, "send": 1}
    assert _spans() == {"lookup": 1, "send": 2}  # the run that died, and the one reporting it
    assert _started(caplog) == {"lookup": 1, "send": 2}
    last = [s for s in EXPORTER.get_finished_spans() if s.name == "execute_tool send"][-1]
    assert last.attributes is not None
    assert last.attributes["error.type"] == "ToolInterruptedError"


@pytest.mark.parametrize("kind", ["observed", "plain"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_refused_before_its_engine_is_traced_and_announced_on_every_run(
    mode: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing is recorded for a refused call, so each run refuses, traces and announces it."""
    workflow_id = f"wf-refused-{mode}-{kind}"
    plan = refused if mode == "sync" else lambda kind: asyncio.run(arefused(kind))
    with (
        caplog.at_level(logging.DEBUG, logger="toolcycle.lifecycle"),
        capture_traces(RUNTIMES[kind]) as traces,
    ):
        with SetWorkflowID(workflow_id):
            first = plan(kind)
        again = DBOS.fork_workflow(workflow_id, 1).get_result()
    assert first == again == ["ToolAccessDeniedError", "ToolAccessDeniedError"]
    assert [trace.status for trace in traces] == ["denied"] * 4
    assert _started(caplog) == {"charge": 4}
    assert _spans() == ({"charge": 4} if kind == "observed" else {})
