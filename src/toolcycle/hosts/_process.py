"""`ProcessHost`: each plan's tools in a worker process of their own, on this machine."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle
import threading
from typing import TYPE_CHECKING, Any

from toolcycle.hosts._child import Child
from toolcycle.hosts._proxy import AsyncHostedTool, HostedTool
from toolcycle.hosts._tools import ToolHostError, ToolImport, pack

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolExecutionContext, ToolInstance
    from toolcycle.hosts._child import Listener

__all__ = ["ProcessHost"]


class ProcessHost:
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
            is killed.
    """

    def __init__(
        self,
        *,
        name: str = "process",
        tools: Mapping[str, ToolImport] | None = None,
        start_method: str | None = None,
        stop_timeout: float = 5.0,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        imports = dict(tools or {})
        for key, recipe in imports.items():
            if not isinstance(recipe, ToolImport):
                raise TypeError(
                    f"tools[{key!r}] must be a ToolImport('package.module:attribute'), "
                    f"got {recipe!r}"
                )
        methods = multiprocessing.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        if method not in methods:
            raise ValueError(f"start_method must be one of {methods}, got {method!r}")
        self._name = name
        self._imports = imports
        self._context = multiprocessing.get_context(method)
        self._stop_timeout = stop_timeout
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ProcessHost(name={self._name!r}, plans={len(self._plans)})"

    @property
    def name(self) -> str:
        """The host's name, as traces show it."""
        return self._name

    def tool(
        self, name: str, tool: ToolInstance, ctx: ToolExecutionContext, *, asynchronous: bool
    ) -> ToolInstance:
        """The stand-in that runs ``tool``'s stages in the plan's worker."""
        with self._lock:
            plan = self._plans.get(ctx.plan_id)
            if plan is None:
                plan = self._plans[ctx.plan_id] = _Plan(self, ctx)
        return plan.stand_in(name, tool, asynchronous)

    def placement(self, ctx: ToolExecutionContext) -> str | None:
        """Where the plan's tools run now: ``"pid <n>"`` of its worker; None before it starts."""
        pid = self.worker_pid(ctx)
        return None if pid is None else f"pid {pid}"

    def worker_pid(self, ctx: ToolExecutionContext) -> int | None:
        """The process id of the plan's current worker; None when it has none."""
        plan = self._plans.get(ctx.plan_id)
        child = plan.child if plan is not None else None
        return child.pid if child is not None else None

    def end(self, ctx: ToolExecutionContext) -> None:
        """The plan ended (its tools deactivated): end its worker."""
        with self._lock:
            plan = self._plans.pop(ctx.plan_id, None)
        if plan is not None:
            plan.close(self._stop_timeout)

    def close(self) -> None:
        """End every plan's worker now (the runtime's ``end_plan`` does it per plan)."""
        with self._lock:
            plans, self._plans = list(self._plans.values()), {}
        for plan in plans:
            plan.close(self._stop_timeout)


class _Plan:
    """One plan in a `ProcessHost`: its worker, and which tools it holds."""

    def __init__(self, host: ProcessHost, ctx: ToolExecutionContext) -> None:
        self.host = host
        self.plan_id = ctx.plan_id
        self.ctx = ctx  # what each stage's context in the worker carries, read at its start
        self.child: Child | None = None
        self.starts = 0
        self.payloads: dict[str, tuple[Any, ...]] = {}  # the plan's active tools
        self.live: set[str] = set()  # those active in the current worker
        self.stand_ins: dict[tuple[str, bool], HostedTool] = {}
        self.lock = threading.Lock()
        self.closed = False

    def stand_in(self, name: str, tool: ToolInstance, asynchronous: bool) -> HostedTool:
        found = self.stand_ins.get((name, asynchronous))
        if found is None or found.tool is not tool:
            kind = AsyncHostedTool if asynchronous else HostedTool
            found = self.stand_ins[name, asynchronous] = kind(name, tool, self)
        return found

    def ready(self, kind: str, name: str) -> bool:
        child = self.child
        if kind == "deactivate" or (child is not None and not child.dead and name in self.live):
            return True
        return kind == "activate" and child is not None and not child.dead

    def prepare(self, kind: str, name: str) -> None:
        with self.lock:
            child = self.child
            if child is None or child.dead:
                child = self._fresh()
            if kind == "execute" and name not in self.live:
                payload = self.payloads.get(name)
                if payload is None:  # pragma: no cover - the runtime activates first
                    return
                _, pending = child.send("activate", name, payload)
                try:
                    pending.future.result()
                except ToolHostError:
                    raise
                except Exception as exc:
                    raise ToolHostError(
                        f"tool {name!r} could not be activated again in the fresh worker "
                        f"of host {self.host.name!r}: {exc}",
                        tool_name=name,
                        plan_id=self.plan_id,
                    ) from exc
                self.live.add(name)

    def _fresh(self) -> Child:
        """Start the plan's first worker, or its one replacement."""
        if self.closed:
            raise ToolHostError(
                f"plan {self.plan_id!r} has ended in host {self.host.name!r}",
                plan_id=self.plan_id,
            )
        if self.starts >= 2:
            raise ToolHostError(
                f"the worker of host {self.host.name!r} died twice in plan "
                f"{self.plan_id!r}; end this plan and start a new one",
                plan_id=self.plan_id,
            )
        self.starts += 1
        self.live = set()
        self.child = Child(self.host._context, self.host.name, _plan_info(self.ctx))
        return self.child

    def send(
        self, kind: str, name: str, argument: Any, listener: Listener | None
    ) -> tuple[int, concurrent.futures.Future[tuple[Any, list[Any]]]]:
        child = self.child
        if kind == "deactivate":
            self.payloads.pop(name, None)
            if child is None or child.dead or name not in self.live:
                return 0, _done((None, []))  # its worker died: nothing left to release
        elif kind == "activate":
            argument = pack(name, self._tool(name), self.host._imports)
        assert child is not None  # prepare() started it
        number, pending = child.send(kind, name, argument, listener)
        if kind == "activate":
            self.payloads[name] = argument
        return number, pending.future

    def _tool(self, name: str) -> ToolInstance:
        return next(s.tool for (n, _), s in self.stand_ins.items() if n == name)

    def cancel(self, number: int, reason: str | None) -> None:
        child = self.child
        if child is not None:
            child.cancel(number, reason)

    def settled(self, kind: str, name: str, ok: bool) -> None:
        if kind == "activate":
            if ok:
                self.live.add(name)
            else:
                self.payloads.pop(name, None)
        elif kind == "deactivate":
            self.live.discard(name)

    def close(self, timeout: float) -> None:
        with self.lock:
            self.closed = True
            child, self.child = self.child, None
        if child is not None:
            child.stop(timeout)


def _plan_info(ctx: ToolExecutionContext) -> dict[str, Any]:
    """What each stage's context in the worker carries; checked to pickle now."""
    info = {
        "plan_id": ctx.plan_id,
        "read_only": ctx.read_only,
        "requires_checkpoint": ctx.requires_checkpoint,
        "resources": ctx.resources,
        "metadata": ctx.metadata,
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


def _done(value: tuple[Any, list[Any]]) -> concurrent.futures.Future[tuple[Any, list[Any]]]:
    future: concurrent.futures.Future[tuple[Any, list[Any]]] = concurrent.futures.Future()
    future.set_result(value)
    return future
