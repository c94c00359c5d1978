"""Tools for the plan host tests; imported by name inside the worker processes.

Each writes what happened to it, with its process id, to a journal file named in
the plan's metadata, so a test reads back which stages ran where and in which order.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

from toolcycle import Change, ToolDescriptor, ToolExecutionContext, tool

WAIT = 10.0  # every wait inside a worker is bounded


def note(ctx: ToolExecutionContext, line: str) -> None:
    """Append one line to the plan's journal, if it names one."""
    journal = ctx.metadata.get("journal")
    if journal:
        with Path(journal).open("a", encoding="utf-8") as handle:
            handle.write(f"{line} {os.getpid()}\n")


class Recorder:
    """A tool that writes each of its stages to the journal."""

    def __init__(self, name: str, tag: str = "") -> None:
        self.name = name
        self.tag = tag  # tells apart two tools registered under one name

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            description="Record the stages.",
            input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        ctx.report_progress(0, message="activating")
        note(ctx, f"activate {self.name}{self.tag}")

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        note(ctx, f"execute {self.name}{self.tag}")
        return {"pid": os.getpid(), "x": params.get("x")}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        note(ctx, f"deactivate {self.name}{self.tag}")


class AsyncRecorder(Recorder):
    """The same, with coroutine stages."""

    async def activate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        note(ctx, f"activate {self.name}")

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:  # type: ignore[override]
        note(ctx, f"execute {self.name}")
        return {"pid": os.getpid(), "x": params.get("x")}

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        note(ctx, f"deactivate {self.name}")


class Locked(Recorder):
    """A tool that holds a lock, so it does not pickle."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.lock = threading.Lock()


def make_recorder(name: str) -> Recorder:
    """A factory the worker imports (ToolImport)."""
    return Recorder(name)


@tool(writes=False)
def where() -> int:
    """The worker's process id."""
    return os.getpid()


@tool(writes=False)
def surroundings(name: str) -> dict[str, Any]:
    """The worker's value of one environment variable, and its working folder."""
    return {"value": os.environ.get(name), "folder": os.getcwd()}


@tool
def wait_for_cancel(ctx: ToolExecutionContext) -> str:
    """Report that it started, then wait for its call token; note the cancellation."""
    token = ctx.call_token
    cancelled = threading.Event()
    token.on_cancel(cancelled.set)
    ctx.report_progress(0, message="started")
    cancelled.wait(WAIT)
    note(ctx, "cancelled" if token.is_cancelled else "not-cancelled")
    token.check()
    return "finished"


@tool
async def await_cancel(ctx: ToolExecutionContext) -> str:
    """Report that it started, then wait until its task is cancelled."""
    ctx.report_progress(0, message="started")
    try:
        await asyncio.sleep(WAIT)  # a bounded wait that cancellation cuts short
    except asyncio.CancelledError:
        note(ctx, "cancelled")
        raise
    return "finished"


@tool
def change_something(ctx: ToolExecutionContext, target: str) -> str:
    """Record a change and report progress twice."""
    ctx.report_progress(1, 2, "half")
    ctx.record_change(Change(kind="note", target=target))
    ctx.report_progress(2, 2, "done")
    return target


@tool
def change_then_fail(ctx: ToolExecutionContext, target: str) -> str:
    """Record a change, then fail (as a tool that wrote a file and then broke)."""
    ctx.record_change(Change(kind="note", target=target))
    raise ValueError("failed after the change")


@tool
def unsendable_change(ctx: ToolExecutionContext, then_fail: bool = False) -> str:
    """Record a change that travels and one whose data does not, then return (or fail)."""
    ctx.record_change(Change(kind="note", target="plain"))
    ctx.record_change(Change(kind="note", target="locked", data={"lock": threading.Lock()}))
    if then_fail:
        raise ValueError("failed after the changes")
    return "done"


@tool
def ticker(ctx: ToolExecutionContext, steps: int, gap: float) -> int:
    """Report progress ``steps`` times, ``gap`` seconds of work apart."""
    for step in range(steps):
        ctx.report_progress(step + 1, steps)
        time.sleep(gap)  # the tool's own work, between its reports
    return steps


class Unpicklable(Exception):
    """An error that does not pickle back (its constructor needs two arguments)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a} {b}")


@tool
def fail(kind: str) -> str:
    """Raise an error of the given kind."""
    if kind == "value":
        raise ValueError("bad value")
    raise Unpicklable("no", "pickle")


@tool
def unsendable() -> Any:
    """Return something that cannot travel back."""
    return threading.Lock()


def lines(journal: Path) -> list[list[str]]:
    """The journal's lines, split into words."""
    return [line.split() for line in journal.read_text().splitlines()] if journal.exists() else []


@tool
def exit_now(code: int) -> None:
    """End the worker process at once with this exit code."""
    os._exit(code)


def _explode() -> None:
    raise RuntimeError("this object cannot be rebuilt here")


class Unreadable:
    """An object that pickles but cannot be unpickled."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_explode, ())


@tool
def unreadable() -> Any:
    """Return something the caller cannot read back."""
    return Unreadable()


class Deferred(Recorder):
    """A sync execute that hands back a coroutine."""

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        async def later() -> str:
            return "later"

        return later()


class OnceOnly(Recorder):
    """A tool whose activate fails, after recording a change, once it ran before."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        journal = Path(ctx.metadata["journal"])
        if journal.exists() and f"activate {self.name}" in journal.read_text():
            ctx.record_change(Change(kind="note", target="half-done"))
            raise RuntimeError("activated before")
        note(ctx, f"activate {self.name}")


@tool
async def afail() -> None:
    """Fail from a coroutine."""
    raise ValueError("async failure")


class DiesAgain(Recorder):
    """A tool whose worker exits when it is activated a second time."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        journal = Path(ctx.metadata["journal"])
        if journal.exists() and f"activate {self.name}" in journal.read_text():
            os._exit(7)
        note(ctx, f"activate {self.name}")


@tool(writes=False)
def call_info(ctx: ToolExecutionContext) -> dict[str, Any]:
    """What the call's context says: its id, its limits, the tools the plan revealed."""
    return {
        "call_id": ctx.call_id,
        "timeout": ctx.timeout,
        "idle_timeout": ctx.idle_timeout,
        "revealed": sorted(ctx.revealed_tools),
    }


@tool(writes=False)
def reveal(ctx: ToolExecutionContext, names: list[str], then_fail: bool = False) -> str:
    """Reveal deferred tools to the plan, as a tool that searches for tools would."""
    ctx.reveal_tools(names)
    if then_fail:
        raise ValueError("failed after revealing")
    return "revealed"


@tool(writes=False)
async def areveal(ctx: ToolExecutionContext, names: list[str]) -> str:
    """The async twin of reveal."""
    ctx.reveal_tools(names)
    return "revealed"


@tool(writes=False)
def start_sleeper() -> int:
    """Start a process that outlives this call (as a tool's server would); its pid."""
    import subprocess
    import sys

    code = f"import time; time.sleep({WAIT * 6})"
    return subprocess.Popen([sys.executable, "-c", code]).pid


def _until_gate(ctx: ToolExecutionContext) -> None:
    """Wait (bounded) until the file the plan's metadata names as its gate exists."""
    gate = Path(ctx.metadata["gate"])
    deadline = time.monotonic() + WAIT
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # the tool's own work: it cannot be interrupted


class Lingering(Recorder):
    """A tool whose sync stages run on past their call, ignoring its token, until a gate opens.

    ``execute`` waits for the gate; so does ``activate`` when the plan's metadata
    says ``slow_activate``. Each stage reports progress as it starts.
    """

    def activate(self, ctx: ToolExecutionContext) -> None:
        note(ctx, f"activate {self.name}")
        if ctx.metadata.get("slow_activate"):
            ctx.report_progress(0, message="activating")
            _until_gate(ctx)

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        ctx.report_progress(0, message="started")
        _until_gate(ctx)
        note(ctx, f"execute-end {self.name}")
        return "finished"

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        ctx.report_progress(0, message="deactivating")
        note(ctx, f"deactivate {self.name}")


class Gated(Recorder):
    """An in-process worker's tool: ``activate`` waits for ``go``; every stage is listed.

    Its first activation fails when ``fail_first`` is set.
    """

    def __init__(self, name: str, *, fail_first: bool = False) -> None:
        super().__init__(name)
        self.entered = threading.Event()
        self.go = threading.Event()
        self.fail_first = fail_first
        self.stages: list[str] = []

    def activate(self, ctx: ToolExecutionContext) -> None:
        self.entered.set()
        self.go.wait(WAIT)
        self.stages.append("activate")
        if self.fail_first:
            self.fail_first = False
            raise RuntimeError("the first activation fails")

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        self.stages.append("deactivate")


class AsyncGated(Gated):
    """The same, with a coroutine ``deactivate``."""

    async def deactivate(self, ctx: ToolExecutionContext) -> None:  # type: ignore[override]
        self.stages.append("deactivate")


GATED: Gated | None = None
"""The tool an in-process worker test serves by name (``hosts_toolbox:GATED``)."""


class HangsAgain(Recorder):
    """A tool whose second activation (in a fresh worker) waits for the plan's gate."""

    def activate(self, ctx: ToolExecutionContext) -> None:
        journal = Path(ctx.metadata["journal"])
        again = journal.exists() and f"activate {self.name}" in journal.read_text()
        note(ctx, f"activate {self.name}")
        if again:
            _until_gate(ctx)
