"""`RayHost`: each plan's tools in a Ray actor of their own, on any node of a Ray cluster.

Ray is an optional extra (``toolcycle[ray]``) and is imported here only. The
plan's actor is an async actor: its ``run`` method runs one stage (a coroutine
stage on the actor's event loop, a sync one on a thread beside it) and its
``cancel`` method cancels a running stage's token, and the task of a coroutine
stage, so a cancellation reaches a body that waits as well as one that polls.
A stage's outcome travels back as bytes the caller opens itself, so an error
that does not survive the trip becomes a plain error that says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import itertools
import pickle
import threading
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError, RayError

from toolcycle import CancellationToken, ToolExecutionContext
from toolcycle.hosts._child import _unreadable
from toolcycle.hosts._process import _done, _plan_info
from toolcycle.hosts._proxy import AsyncHostedTool, HostedTool
from toolcycle.hosts._tools import ToolHostError, ToolImport, pack
from toolcycle.hosts._worker import _cancelled, _packed, load_tool

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from toolcycle import ProgressEvent, ToolInstance
    from toolcycle.hosts._child import Listener

__all__ = ["RayHost"]

Report = tuple[float, float | None, str | None]
"""One progress report of a stage: ``(progress, total, message)``."""

Outcome = tuple[bytes, list[Report], str]
"""What the actor sends back for a stage: the pickled ``(ok, value, changes)``,
the progress the stage reported (when not streamed as it came), and the actor's node id."""


class RayHost:
    """Runs each plan's tools in one Ray actor the plan owns.

    Pass it as ``runtime.plan(host=RayHost())`` once ``ray.init()`` has run in
    the caller's process (on a laptop, or joining a cluster with ``address=``).
    The plan's first activation creates its actor wherever Ray places it; the
    tools' ``activate``, ``execute`` and ``deactivate`` run inside it, at most
    once per plan and in reverse order at its end, as they would in the caller's
    process; then the actor is killed. Everything else a call does stays in the
    caller's runtime. One host may serve many plans at once, each with its actor.

    An actor that dies fails the stage it ran with a `ToolHostError` naming the
    host; the plan's next call starts one fresh actor and activates its tools
    again there. A second death fails the plan's later calls: end it.

    Args:
        name: the host's name in traces and messages.
        tools: tools the actor builds from an import path (`ToolImport`), by
            registered name; every other tool is pickled, or sent by its
            module's name for it when it does not pickle (a ``@tool`` function).
        actor_options: passed to Ray's ``.options()`` for each plan's actor
            (``num_cpus``, ``resources``, ``runtime_env``, ``scheduling_strategy``);
            leave ``max_restarts`` alone: a restarted actor has lost its tools.
    """

    def __init__(
        self,
        *,
        name: str = "ray",
        tools: Mapping[str, ToolImport] | None = None,
        actor_options: Mapping[str, Any] | None = None,
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
        self._name = name
        self._imports = imports
        self._options = dict(actor_options or {})
        self._plans: dict[str, _Plan] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RayHost(name={self._name!r}, plans={len(self._plans)})"

    @property
    def name(self) -> str:
        """The host's name, as traces show it."""
        return self._name

    def tool(
        self, name: str, tool: ToolInstance, ctx: ToolExecutionContext, *, asynchronous: bool
    ) -> ToolInstance:
        """The stand-in that runs ``tool``'s stages in the plan's actor."""
        with self._lock:
            plan = self._plans.get(ctx.plan_id)
            if plan is None:
                plan = self._plans[ctx.plan_id] = _Plan(self, ctx)
        return plan.stand_in(name, tool, asynchronous)

    def placement(self, ctx: ToolExecutionContext) -> str | None:
        """The Ray node id of the plan's actor, as its last stage reported it; None before."""
        plan = self._plans.get(ctx.plan_id)
        return plan.node if plan is not None else None

    def actor(self, ctx: ToolExecutionContext) -> Any:
        """The Ray actor handle of the plan's current actor; None when it has none."""
        plan = self._plans.get(ctx.plan_id)
        return plan.actor if plan is not None else None

    def end(self, ctx: ToolExecutionContext) -> None:
        """The plan ended (its tools deactivated): kill its actor."""
        with self._lock:
            plan = self._plans.pop(ctx.plan_id, None)
        if plan is not None:
            plan.close()

    def close(self) -> None:
        """Kill every plan's actor now (the runtime's ``end_plan`` does it per plan)."""
        with self._lock:
            plans, self._plans = list(self._plans.values()), {}
        for plan in plans:
            plan.close()


class _Plan:
    """One plan in a `RayHost`: its actor, and which tools it holds (a `Placement`)."""

    def __init__(self, host: RayHost, ctx: ToolExecutionContext) -> None:
        self.host = host
        self.plan_id = ctx.plan_id
        self.ctx = ctx
        self.actor: Any = None
        self.dead = False
        self.node: str | None = None
        self.starts = 0
        self.numbers = itertools.count(1)
        self.payloads: dict[str, tuple[Any, ...]] = {}  # the plan's active tools
        self.live: set[str] = set()  # those active in the current actor
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
        alive = self.actor is not None and not self.dead
        return kind == "deactivate" or (alive and (kind == "activate" or name in self.live))

    def prepare(self, kind: str, name: str) -> None:
        with self.lock:
            if self.actor is None or self.dead:
                self._fresh()
            if kind == "execute" and name not in self.live:
                payload = self.payloads.get(name)
                if payload is None:  # pragma: no cover - the runtime activates first
                    return
                try:
                    self._send("activate", name, payload, None, next(self.numbers)).result()
                except ToolHostError:
                    raise
                except Exception as exc:
                    raise ToolHostError(
                        f"tool {name!r} could not be activated again in the fresh actor "
                        f"of host {self.host.name!r}: {exc}",
                        tool_name=name,
                        plan_id=self.plan_id,
                    ) from exc
                self.live.add(name)

    def _fresh(self) -> None:
        """Start the plan's first actor, or its one replacement."""
        if self.closed:
            raise ToolHostError(
                f"plan {self.plan_id!r} has ended in host {self.host.name!r}",
                plan_id=self.plan_id,
            )
        if not ray.is_initialized():
            raise ToolHostError(
                f"host {self.host.name!r} needs Ray: call ray.init() (or "
                "ray.init(address=...) to join a cluster) before the plan runs",
                plan_id=self.plan_id,
            )
        if self.starts >= 2:
            raise ToolHostError(
                f"the actor of host {self.host.name!r} died twice in plan "
                f"{self.plan_id!r}; end this plan and start a new one",
                plan_id=self.plan_id,
            )
        old = self.actor
        if old is not None:  # dead, or out of reach: make sure it stays gone
            with contextlib.suppress(Exception):
                ray.kill(old, no_restart=True)
        info = _plan_info(self.ctx)
        self.starts += 1
        self.live = set()
        self.dead = False
        self.actor = _RemoteActor.options(**self.host._options).remote(info)

    def send(
        self, kind: str, name: str, argument: Any, listener: Listener | None
    ) -> tuple[int, concurrent.futures.Future[tuple[Any, list[Any]]]]:
        if kind == "deactivate":
            self.payloads.pop(name, None)
            if self.actor is None or self.dead or name not in self.live:
                return 0, _done((None, []))  # its actor died: nothing left to release
        elif kind == "activate":
            argument = pack(name, self._tool(name), self.host._imports)
        number = next(self.numbers)
        future = self._send(kind, name, argument, listener, number)
        if kind == "activate":
            self.payloads[name] = argument
        return number, future

    def _send(
        self, kind: str, name: str, argument: Any, listener: Listener | None, number: int
    ) -> _Stage:
        actor = self.actor
        label = f"{kind} of tool {name!r}"
        # One tuple, not four arguments: Ray serialises each argument of a call apart.
        stage = (kind, number, name, argument)
        if listener is not None and self.ctx.progress_followed():
            # Someone follows the progress as it comes: stream it (a streamed call
            # costs Ray more than a plain one, so only then).
            stream = actor.stream.options(num_returns="streaming").remote(stage)
            return _Stage(self, actor, stream, label, listener, streamed=True)
        return _Stage(self, actor, actor.run.remote(stage), label, listener)

    def lost(self, actor: Any, label: str, exc: RayError) -> ToolHostError:
        """The error for a stage Ray could not finish; a dead actor is replaced next call."""
        died = isinstance(exc, RayActorError)
        if died and actor is self.actor:
            self.dead = True
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        why = lines[-1] if lines else type(exc).__name__
        return ToolHostError(
            f"the actor of host {self.host.name!r} {'died' if died else 'failed'} during "
            f"the {label} in plan {self.plan_id!r} ({type(exc).__name__}: {why})",
            plan_id=self.plan_id,
        )

    def _tool(self, name: str) -> ToolInstance:
        return next(s.tool for (n, _), s in self.stand_ins.items() if n == name)

    def cancel(self, number: int, reason: str | None) -> None:
        actor = self.actor
        if actor is not None and not self.dead:
            actor.cancel.remote(number, reason)  # nothing to wait for: the stage answers

    def settled(self, kind: str, name: str, ok: bool) -> None:
        if kind == "activate":
            if ok:
                self.live.add(name)
            else:
                self.payloads.pop(name, None)
        elif kind == "deactivate":
            self.live.discard(name)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            actor, self.actor = self.actor, None
        if actor is not None:
            with contextlib.suppress(Exception):  # already dead, or Ray shut down
                ray.kill(actor, no_restart=True)


class _Stage(concurrent.futures.Future[tuple[Any, list[Any]]]):
    """One stage sent to the plan's actor, settled from its outcome.

    ``ref`` is the object ref of a plain ``run``, or the stream of a ``stream``:
    its items are the stage's progress reports, passed to the listener as they
    come, then the outcome. A sync caller's ``result()`` waits with Ray on its
    own thread, the quickest way to wait for Ray; an async caller's
    ``add_done_callback`` (from ``asyncio.wrap_future``) follows the stage on
    the caller's event loop instead.
    """

    def __init__(
        self,
        plan: _Plan,
        actor: Any,
        ref: Any,
        label: str,
        listener: Listener | None,
        *,
        streamed: bool = False,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.actor = actor
        self.ref = ref
        self.label = label
        self.listener = listener
        self.streamed = streamed
        self.follower: Any = None  # what follows the stage for add_done_callback

    def result(self, timeout: float | None = None) -> tuple[Any, list[Any]]:
        """Wait for the stage's outcome (the stand-ins never pass a timeout)."""
        if not self.done() and self.follower is None:
            self._collect()
        return super().result(timeout)

    def add_done_callback(self, fn: Any) -> None:
        """Call ``fn`` once the stage settles, from whichever thread settles it."""
        if self.follower is None:
            if not self.streamed:
                self.follower = self.ref.future()  # Ray's own future: nothing to run
                self.follower.add_done_callback(self._settled)
            else:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # no loop here: follow the stream on a thread of its own
                    self.follower = threading.Thread(target=self._collect, daemon=True)
                    self.follower.start()
                else:
                    self.follower = loop.create_task(self._follow())
        super().add_done_callback(fn)

    def _collect(self) -> None:
        """Wait for the stage with Ray on this thread, passing on what comes."""
        try:
            if self.streamed:
                for ref in self.ref:
                    self.take(ray.get(ref))
            else:
                self.take(ray.get(self.ref))
        except RayError as exc:
            self.failed(exc)

    async def _follow(self) -> None:
        try:
            async for ref in self.ref:
                self.take(await ref)
        except RayError as exc:
            self.failed(exc)

    def _settled(self, remote: concurrent.futures.Future[Any]) -> None:
        try:
            self.take(remote.result())
        except RayError as exc:
            self.failed(exc)

    def take(self, item: Report | Outcome) -> None:
        """Pass on a progress report, or open what the actor sent back and settle with it."""
        if not isinstance(item[0], bytes):
            self.tell([item])
            return
        blob, reports, node = item
        self.plan.node = node
        self.tell(reports)
        try:
            ok, value, changes = pickle.loads(blob)
        except Exception as exc:
            ok, value, changes = False, _unreadable(self.label, exc), []
        self.finish(ok, value, changes)

    def tell(self, reports: list[Any]) -> None:
        if self.listener is not None:
            for report in reports:
                with contextlib.suppress(Exception):  # a listener's failure is its own
                    self.listener(*report)

    def failed(self, exc: RayError) -> None:
        """Ray could not finish the stage: fail it naming the host."""
        self.finish(False, self.plan.lost(self.actor, self.label, exc), [])

    def finish(self, ok: bool, value: Any, changes: list[Any]) -> None:
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # settled already
            if ok:
                self.set_result((value, changes))
            else:
                self.set_exception(value)


class _PlanActor:
    """Inside the actor: one plan's tools and the stages that run now.

    Each stage gets a context of its own, whose token mirrors the caller's call
    token: the caller's ``cancel`` cancels it, and the task of a coroutine stage.
    """

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.node: str = ray.get_runtime_context().get_node_id()
        self.tools: dict[str, ToolInstance] = {}
        self.tokens: dict[int, CancellationToken] = {}
        self.tasks: dict[int, asyncio.Future[Any]] = {}  # the coroutine stages
        self.early: dict[int, str | None] = {}  # cancels that came before their stage

    async def run(self, stage: tuple[str, int, str, Any]) -> Outcome:
        """Run one stage, ``(kind, number, tool name, argument)``; return its outcome.

        It never raises: the stage's errors travel back as values. The progress
        the stage reports travels with the outcome.
        """
        reports: list[Report] = []
        return await self._run(stage, reports.append, reports)

    async def stream(self, stage: tuple[str, int, str, Any]) -> AsyncIterator[Report | Outcome]:
        """Run one stage as `run` does, yielding each progress report as it comes, then the outcome.

        Ray streams what an async generator method yields (``num_returns="streaming"``),
        so the caller hears progress while the stage runs.
        """
        loop = asyncio.get_running_loop()
        heard: asyncio.Queue[Report | None] = asyncio.Queue()

        def report(item: Report) -> None:  # from the loop, or from a sync body's thread
            loop.call_soon_threadsafe(heard.put_nowait, item)

        task = asyncio.ensure_future(self._run(stage, report, []))
        task.add_done_callback(lambda _: heard.put_nowait(None))
        try:
            while (item := await heard.get()) is not None:
                yield item
            yield task.result()
        finally:
            task.cancel()  # Ray cancelled the stream: so is the stage (a no-op once done)

    async def _run(
        self,
        stage: tuple[str, int, str, Any],
        report: Callable[[Report], None],
        reports: list[Report],
    ) -> Outcome:
        kind, number, name, argument = stage
        token = self.tokens[number] = CancellationToken()

        def progress(event: ProgressEvent) -> None:
            report((event.progress, event.total, event.message))

        info = self.info
        ctx = ToolExecutionContext(
            info["plan_id"],
            read_only=info["read_only"],
            requires_checkpoint=info["requires_checkpoint"],
            resources=info["resources"],
            metadata=dict(info["metadata"]),
            cancellation_token=token,
            on_progress=progress,
        )
        if number in self.early:
            token.cancel(self.early.pop(number))
        try:
            ok, value = True, await self._stage(number, kind, name, argument, ctx)
        except asyncio.CancelledError:  # our cancel, or ray.cancel of this method
            token.cancel("the call was cancelled")
            ok, value = False, _cancelled(ctx)
        except Exception as exc:
            ok, value = False, exc
        finally:
            self.tokens.pop(number, None)
            self.tasks.pop(number, None)
        if ok and kind == "deactivate":
            self.tools.pop(name, None)
        return _packed(ok, value, list(ctx.changes)), reports, self.node

    async def _stage(
        self, number: int, kind: str, name: str, argument: Any, ctx: ToolExecutionContext
    ) -> Any:
        if kind == "activate":
            self.tools[name] = load_tool(argument)
        stage = getattr(self.tools[name], kind)
        args = (argument, ctx) if kind == "execute" else (ctx,)
        if inspect.iscoroutinefunction(stage):
            value = stage(*args)
        else:
            value = await asyncio.to_thread(stage, *args)  # the loop stays free for cancels
            if not inspect.isawaitable(value):
                return value
        # A coroutine: in a task of its own, which a cancel cancels.
        task = self.tasks[number] = asyncio.ensure_future(value)
        return await task

    async def cancel(self, number: int, reason: str | None) -> None:
        """Cancel a stage's token, and its task if it awaits (a sync body polls its token)."""
        token = self.tokens.get(number)
        if token is None:
            self.early[number] = reason
            return
        token.cancel(reason)
        task = self.tasks.get(number)
        if task is not None:
            task.cancel()


_RemoteActor: Any = ray.remote(_PlanActor)
