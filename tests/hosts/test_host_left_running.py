"""Plan hosts: stages a caller gave up on while they run on in the worker (a process, an actor)."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

import hosts_toolbox as box
import pytest
from hosts_toolbox import lines

from toolcycle import ProgressEvent, ToolRuntime
from toolcycle.hosts import ProcessHost
from toolcycle.hosts._worker import serve

if TYPE_CHECKING:
    from toolcycle.hosts import RayHost

WAIT = 10.0
QUIET = 1.0  # how long a stage that must not start yet is given to start anyway


@pytest.fixture(params=["process", "ray"])
def either(request: pytest.FixtureRequest) -> Iterator[ProcessHost | RayHost]:
    """A process host, then a Ray host (on a local cluster), closed after the test."""
    if request.param == "process":
        made: ProcessHost | RayHost = ProcessHost(name="local")
    else:
        request.getfixturevalue("ray_cluster")  # skips the test without Ray
        from toolcycle.hosts import RayHost  # Ray is an optional extra

        made = RayHost()
    yield made
    made.close()


def _heard() -> tuple[dict[str, threading.Event], Callable[[ProgressEvent], None]]:
    """Events set by the progress messages the worker's stages report, and the listener."""
    events = {word: threading.Event() for word in ("activating", "started", "deactivating")}

    def listen(event: ProgressEvent) -> None:
        if event.message in events:
            events[event.message].set()

    return events, listen


async def test_a_plan_end_deactivates_a_tool_only_once_its_abandoned_body_has_ended(
    runtime: ToolRuntime, either: ProcessHost | RayHost, journal: Path, tmp_path: Path
) -> None:
    """After aexecute gives up on a sync body, the worker deactivates the tool once it ends."""
    gate = tmp_path / "gate"
    heard, listen = _heard()
    runtime.register(box.Lingering("lingering"))
    ctx = runtime.new_context(
        host=either, metadata={"journal": str(journal), "gate": str(gate)}, on_progress=listen
    )
    await runtime.aactivate("lingering", ctx)  # starting the worker is not the call's time
    result = await runtime.aexecute("lingering", {}, ctx, timeout=0.5)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert heard["started"].is_set()
    ending = asyncio.ensure_future(runtime.aend_plan(ctx))
    try:
        # The body still runs in the worker: its tool must not be deactivated under it.
        assert not await asyncio.to_thread(heard["deactivating"].wait, QUIET)
    finally:
        gate.touch()
        errors = await asyncio.wait_for(ending, WAIT)
    assert errors == []
    assert [words[:2] for words in lines(journal)] == [
        ["activate", "lingering"],
        ["execute-end", "lingering"],
        ["deactivate", "lingering"],
    ]
    assert either.placement(ctx) is None  # the worker ended, or the actor


@pytest.mark.parametrize("called_again", [True, False], ids=["called-again", "not-called-again"])
async def test_an_activation_the_caller_gave_up_on_runs_once_and_is_deactivated_once(
    runtime: ToolRuntime,
    either: ProcessHost | RayHost,
    journal: Path,
    tmp_path: Path,
    called_again: bool,
) -> None:
    """An activate that outlives its aexecute is the plan's one: never a second, undone at the end."""
    gate = tmp_path / "gate"
    heard, listen = _heard()
    runtime.register(box.Lingering("lingering"))
    metadata = {"journal": str(journal), "gate": str(gate), "slow_activate": True}
    async with runtime.aplan(host=either, metadata=metadata, on_progress=listen) as ctx:
        await runtime.aactivate("first", ctx)  # starting the worker is not the call's time
        first = await runtime.aexecute("lingering", {}, ctx, timeout=0.5)
        assert first.trace is not None and first.trace.status == "timed_out"
        assert heard["activating"].is_set()
        gate.touch()  # the first activate now ends in the worker
        if called_again:
            again = await runtime.aexecute("lingering", {}, ctx, timeout=WAIT)
            assert again.success, again.error
    stages = [words[:2] for words in lines(journal)]
    assert stages.count(["activate", "lingering"]) == 1
    assert stages.count(["deactivate", "lingering"]) == 1
    # The runtime deactivates what it activated, newest first; the worker, as it stops
    # (the actor, as the plan leaves it), a tool whose activation no call took up.
    undone = ["lingering", "first"] if called_again else ["first", "lingering"]
    assert [words[1] for words in stages if words[0] == "deactivate"] == undone


def _serve(tool: box.Gated) -> tuple[Connection, threading.Thread]:
    """A worker serving in a thread of this process, and the caller's end of its pipe."""
    box.GATED = tool
    mine, theirs = multiprocessing.Pipe()
    thread = threading.Thread(target=serve, args=(theirs,), daemon=True)
    thread.start()
    return mine, thread


def _outcomes(conn: Connection, count: int) -> dict[int, bool]:
    """The next ``count`` outcomes the worker sends: whether each stage ended well, by number."""
    found: dict[int, bool] = {}
    while len(found) < count:
        assert conn.poll(WAIT)
        kind, number, *rest = conn.recv()
        if kind == "done":
            found[number] = pickle.loads(rest[0])[0]
    return found


@pytest.mark.parametrize("tool", [box.Gated, box.AsyncGated], ids=["sync", "coroutine"])
def test_a_worker_shares_a_running_activation_and_releases_it_when_no_caller_did(
    tool: type[box.Gated],
) -> None:
    """A second activate waits for the first and shares it; the worker deactivates it as it stops."""
    gated = tool("gated")
    conn, thread = _serve(gated)
    payload = ("ref", "hosts_toolbox:GATED")
    conn.send(("activate", 1, "gated", payload, None))
    assert gated.entered.wait(WAIT)
    conn.send(("activate", 2, "gated", payload, None))
    gated.go.set()
    assert _outcomes(conn, 2) == {1: True, 2: True}
    conn.send(("activate", 3, "gated", payload, None))  # active already: done at once
    assert _outcomes(conn, 1) == {3: True}
    conn.send(("stop",))
    thread.join(WAIT)
    conn.close()
    assert gated.stages == ["activate", "deactivate"]


def test_a_worker_activates_afresh_for_a_waiting_caller_when_the_first_activation_failed() -> None:
    """The second activate does not share a failure: it tries again, as the runtime would."""
    gated = box.Gated("gated", fail_first=True)
    conn, thread = _serve(gated)
    payload = ("ref", "hosts_toolbox:GATED")
    conn.send(("activate", 1, "gated", payload, None))
    assert gated.entered.wait(WAIT)
    conn.send(("activate", 2, "gated", payload, None))
    gated.go.set()
    assert _outcomes(conn, 2) == {1: False, 2: True}
    conn.send(("deactivate", 3, "gated", None, None))
    assert _outcomes(conn, 1) == {3: True}
    conn.send(("stop",))
    thread.join(WAIT)
    conn.close()
    assert gated.stages == ["activate", "activate", "deactivate"]


def test_a_worker_told_to_stop_gives_its_running_stages_the_grace_it_was_given() -> None:
    """The host's stop_timeout travels with the stop: the worker waits that long, not its own."""
    gated = box.Gated("gated")
    conn, thread = _serve(gated)
    try:
        conn.send(("activate", 1, "gated", ("ref", "hosts_toolbox:GATED"), None))
        assert gated.entered.wait(WAIT)
        conn.send(("stop", 0.2))
        thread.join(3.0)  # its own grace, 5 s, would keep it longer
        assert not thread.is_alive()
    finally:
        gated.go.set()
        thread.join(WAIT)
        conn.close()
    assert "deactivate" not in gated.stages  # never activated: nothing to release
