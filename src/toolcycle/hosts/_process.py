"""`ProcessHost`: each plan's tools in a worker process of their own, on this machine."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
from typing import TYPE_CHECKING, Any

from toolcycle.errors import shown_value
from toolcycle.hosts._base import HostBase, HostedPlan
from toolcycle.hosts._child import Child
from toolcycle.hosts._tools import ToolHostError

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import Mapping

    from toolcycle import ToolExecutionContext
    from toolcycle.hosts._child import Listener
    from toolcycle.hosts._tools import Call, Settled, ToolImport

__all__ = ["ProcessHost", "checked_stop_timeout"]


class ProcessHost(HostBase["_Plan"]):
    """Runs each plan's tools in one worker process the plan owns.

    Pass it as ``runtime.plan(host=ProcessHost())``. The plan's first activation
    starts its worker; the tools' ``activate``, ``execute`` and ``deactivate``
    run there, at most once per plan and in reverse order at its end, as they
    would in the caller's process; then the worker ends. Everything else a call
    does stays in the caller's runtime. One host may serve many plans at once,
    each with its own worker.

    A worker that dies fails the stage it ran with a `ToolHostError` naming the
    host; the plan's next call starts one fresh worker and activates its tools
    again there. A second death fails the plan's later calls: end it.

    Args:
        name: the host's name in traces and messages.
        tools: tools the worker builds from an import path (`ToolImport`), by
            registered name; every other tool is pickled, or sent by its
            module's name for it when it does not pickle (a ``@tool`` function).
        start_method: how worker processes start (``"forkserver"`` where the
            platform has it, else ``"spawn"``); ``"fork"`` starts faster, but is
            unsafe once the caller runs threads, as a runtime does.
        stop_timeout: seconds a worker may take to end after its plan before it
            is killed (0 kills it at once).

    Raises:
        ValueError: an empty name, a start method the platform lacks, or a
            ``stop_timeout`` that is not a finite number of seconds, 0 or more.
        TypeError: a ``tools`` value that is not a `ToolImport`.
    """

    def __init__(
        self,
        *,
        name: str = "process",
        tools: Mapping[str, ToolImport] | None = None,
        start_method: str | None = None,
        stop_timeout: float = 5.0,
    ) -> None:
        super().__init__(name, tools)
        methods = multiprocessing.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        if method not in methods:
            raise ValueError(f"start_method must be one of {methods}, got {method!r}")
        self._context = multiprocessing.get_context(method)
        self._stop_timeout = checked_stop_timeout(stop_timeout)

    def new_plan(self, ctx: ToolExecutionContext) -> _Plan:
        """A plan of this host, made at its first stand-in."""
        return _Plan(self, ctx)

    def placement(self, ctx: ToolExecutionContext) -> str | None:
        """Where the plan's tools run now: ``"pid <n>"`` of its worker; None before it starts."""
        pid = self.worker_pid(ctx)
        return None if pid is None else f"pid {pid}"

    def worker_pid(self, ctx: ToolExecutionContext) -> int | None:
        """The process id of the plan's current worker; None when it has none."""
        plan = self.plan_of(ctx)
        child = plan.child if plan is not None else None
        return child.pid if child is not None else None


class _Plan(HostedPlan):
    """One plan in a `ProcessHost`: its worker process."""

    def __init__(self, host: ProcessHost, ctx: ToolExecutionContext) -> None:
        super().__init__(host, ctx)
        self.process_host = host
        self.child: Child | None = None

    def alive(self) -> bool:
        child = self.child
        return child is not None and not child.dead

    def start(self) -> None:
        """Start the plan's first worker, or its one replacement."""
        info = _plan_info(self.ctx)  # a plan refused here started no worker: not a death
        self.starts += 1
        host = self.process_host
        # The caller's environment as it is now: a forkserver, started once, would
        # pass on the one it had then.
        self.child = Child(host._context, host.name, {**info, "environ": dict(os.environ)})

    def dispatch(
        self, kind: str, name: str, argument: Any, listener: Listener | None, call: Call | None
    ) -> tuple[int, concurrent.futures.Future[Settled]]:
        child = self.child
        assert child is not None  # prepare() started it
        number, pending = child.send(kind, name, argument, listener, call)
        return number, pending.future

    def cancel(self, number: int, reason: str | None) -> None:
        child = self.child
        if child is not None:
            child.cancel(number, reason)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            child, self.child = self.child, None
        if child is not None:
            child.stop(self.process_host._stop_timeout)


def checked_stop_timeout(value: object) -> float:
    """``stop_timeout`` as a float, checked when the host is made.

    Raises:
        ValueError: not a finite number of seconds, 0 or more (a bool is not one).
    """
    # Found only at a plan's end otherwise, where it would fail the end itself. An int
    # past the largest float is finite, but float() of it overflows.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= sys.float_info.max
    ):
        raise ValueError(
            f"stop_timeout must be a finite number of seconds, 0 or more, got {shown_value(value)}"
        )
    return float(value)


def _plan_info(ctx: ToolExecutionContext) -> dict[str, Any]:
    """What each stage's context in the worker carries; checked to pickle now."""
    info = {
        "plan_id": ctx.plan_id,
        "read_only": ctx.read_only,
        "requires_checkpoint": ctx.requires_checkpoint,
        "resources": ctx.resources,
        "metadata": ctx.metadata,
        "timeout": ctx.timeout,
        "idle_timeout": ctx.idle_timeout,
    }
    try:
        pickle.dumps(info)
    except Exception as exc:
        raise ToolHostError(
            f"plan {ctx.plan_id!r} cannot run in a host: its resources or metadata do not "
            f"pickle ({exc}); keep them to plain values",
            plan_id=ctx.plan_id,
        ) from None
    return info
