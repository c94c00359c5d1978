"""The caller's end of a worker's pipe, against a scripted worker: large messages, the end."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import hosts_toolbox as box
import pytest

from toolcycle.hosts import ToolHostError, _child
from toolcycle.hosts._child import Child, Pending

WAIT = 10.0
BIG = 8 * 1024 * 1024  # far more than a pipe holds

Script = Callable[[Connection, threading.Event], None]


class _Scripted:
    """A context whose worker is a script on a thread, at the other end of a real pipe.

    The script gets its end of the pipe and an event the worker's ``kill`` sets.
    """

    def __init__(self, script: Script) -> None:
        self.script = script

    def Pipe(self) -> tuple[Connection, Connection]:
        return multiprocessing.Pipe()

    def Process(self, target: Any, args: tuple[Connection], **_: Any) -> _ScriptedProcess:
        return _ScriptedProcess(self.script, args[0])


class _ScriptedProcess:
    pid = 2**31 - 1  # no such process group: a kill aimed at it finds nothing

    def __init__(self, script: Script, conn: Connection) -> None:
        self.killed = threading.Event()
        own = Connection(os.dup(conn.fileno()))  # the caller closes its copy of ours
        self._thread = threading.Thread(target=script, args=(own, self.killed), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def kill(self) -> None:
        self.killed.set()

    @property
    def exitcode(self) -> int | None:
        return None if self.is_alive() else 0

    def close(self) -> None:
        if self.is_alive():
            raise ValueError("still running")


def _outcome(value: Any) -> bytes:
    return pickle.dumps((True, value, [], ()))


def _child_of(script: Script) -> Child:
    return Child(_Scripted(script), "scripted", {"plan_id": "plan"})  # type: ignore[arg-type]


def test_outcomes_are_read_while_a_large_argument_waits_for_the_worker_to_read_it() -> None:
    """A worker that answers before it reads a large argument gets its answers read: no deadlock."""

    def worker(conn: Connection, killed: threading.Event) -> None:
        conn.recv()  # the plan
        first, second = conn.recv(), conn.recv()
        assert conn.poll(WAIT)  # the third stage's large argument is on its way...
        # ...and the worker sends before it reads, as its main thread may have to
        conn.send(("done", first[1], _outcome("small")))
        conn.send(("done", second[1], _outcome(b"x" * BIG)))
        third = conn.recv()
        conn.send(("done", third[1], _outcome(len(third[3]))))
        conn.recv()  # stop
        conn.close()

    child = _child_of(worker)
    one, two = child.send("execute", "t")[1], child.send("execute", "t")[1]
    sent: list[Pending] = []
    sender = threading.Thread(
        target=lambda: sent.append(child.send("execute", "t", b"y" * BIG)[1]), daemon=True
    )
    sender.start()
    assert one.future.result(WAIT)[0] == "small"
    assert len(two.future.result(WAIT)[0]) == BIG
    sender.join(WAIT)
    assert sent[0].future.result(WAIT)[0] == BIG
    child.stop(WAIT)


def test_large_arguments_and_outputs_cross_a_real_workers_pipe_both_ways_at_once() -> None:
    """Calls with large arguments and outputs, beside activations answered at once, all end."""
    child = Child(multiprocessing.get_context(), "real", {"plan_id": "plan"})
    payload = ("pickle", pickle.dumps(box.Recorder("first")))
    child.send("activate", "first", payload)[1].future.result(WAIT)
    failures: list[BaseException] = []

    def calls(kind: str, argument: Any, times: int) -> None:
        try:
            for _ in range(times):
                child.send(kind, "first", argument)[1].future.result(WAIT)
        except BaseException as exc:
            failures.append(exc)

    big = {"x": b"z" * (BIG // 2)}
    threads = [
        threading.Thread(target=calls, args=("execute", big, 6), daemon=True) for _ in range(3)
    ]
    # An activation of an active tool is answered by the worker's reading thread itself.
    threads += [
        threading.Thread(target=calls, args=("activate", payload, 100), daemon=True)
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3 * WAIT)
    assert failures == []
    assert not any(thread.is_alive() for thread in threads)
    child.stop(WAIT)


def test_a_stop_kills_a_worker_that_does_not_read_what_is_being_sent_to_it() -> None:
    """A send stuck on a full pipe does not hold the plan's end: the worker is killed."""
    arriving = threading.Event()

    def worker(conn: Connection, killed: threading.Event) -> None:
        conn.recv()  # the plan
        if conn.poll(WAIT):  # a large argument, never read (its main thread is stuck)
            arriving.set()
        killed.wait(3 * WAIT)  # longer than the test waits for the stop
        conn.close()

    child = _child_of(worker)
    sent: list[Pending] = []
    sender = threading.Thread(
        target=lambda: sent.append(child.send("execute", "t", b"y" * BIG)[1]), daemon=True
    )
    sender.start()
    assert arriving.wait(WAIT)
    stopper = threading.Thread(target=child.stop, args=(0,))
    stopper.start()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    sender.join(WAIT)
    with pytest.raises(ToolHostError, match="was stopped"):
        sent[0].future.result(WAIT)


def test_a_stop_never_closes_the_pipe_under_a_reader_still_at_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a stop timeout of 0, the reader, busy as the worker ends, closes the pipe itself."""
    monkeypatch.setattr(_child, "_KILLED_WITHIN", 0.1)  # how long the stop waits for it
    heard, release = threading.Event(), threading.Event()
    closed_under_it: list[bool] = []

    def worker(conn: Connection, killed: threading.Event) -> None:
        conn.recv()  # the plan
        stage = conn.recv()
        conn.send(("progress", stage[1], 0.0, None, "started"))
        conn.recv()  # stop
        conn.close()

    def listener(progress: float, total: float | None, message: str | None) -> None:
        heard.set()
        release.wait(WAIT)
        closed_under_it.append(child._conn.closed)

    child = _child_of(worker)
    pending = child.send("execute", "t", None, listener)[1]
    assert heard.wait(WAIT)
    child.stop(0)
    release.set()
    child._reader.join(WAIT)
    assert closed_under_it == [False]
    assert child._conn.closed  # by the reader, at its end
    with pytest.raises(ToolHostError, match="was stopped"):
        pending.future.result(WAIT)
    with pytest.raises(ToolHostError, match="was stopped"):
        child.send("execute", "t")[1].future.result(WAIT)
