"""`RayHost`: each plan's tools in a Ray actor, on any node of a Ray cluster.

This is the caller's side: which actor serves a plan (one of its own, or one of
the host's pool), the stages sent to it and their outcomes. The actor's side is
``_ray_actor``. A stage's outcome travels back as bytes the caller opens itself,
so an error that does not survive the trip becomes a plain error that says so.
Ray is an optional extra (``toolcycle[ray]``), imported only here and there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import pickle
import threading
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayActorError, RayError

from toolcycle.errors import shown_value
from toolcycle.hosts._base import HostBase, HostedPlan
from toolcycle.hosts._child import _unreadable
from toolcycle.hosts._process import _plan_info, checked_stop_timeout
from toolcycle.hosts._ray_actor import LEAVE_GRACE, remote_actor
from toolcycle.hosts._tools import ToolHostError, settle, tool_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolExecutionContext
    from toolcycle.hosts._child import Listener
    from toolcycle.hosts._ray_actor import Outcome, Report
    from toolcycle.hosts._tools import Call, Settled, ToolImport

__all__ = ["RayHost"]


class RayHost(HostBase["_Plan"]):
    """Runs each plan's tools in one Ray actor the plan owns.

    Pass it as ``runtime.plan(host=RayHost())`` once ``ray.init()`` has run in
    the caller's process (on a laptop, or joining a cluster with ``address=``).
    The plan's first activation creates its actor wherever Ray places it; the
    tools' ``activate``, ``execute`` and ``deactivate`` run inside it, at most
    once per plan and in reverse order at its end, as they would in the caller's
    process; then the actor is killed. Everything else a call does stays in the
    caller's runtime. One host may serve many plans at once, each with its actor.

    With ``pool=n`` the host keeps ``n`` actors instead, started when first
    needed, and gives each new plan the one serving the fewest plans: a plan's
    tools are kept apart from other plans' inside it (by a key of the plan's
    own: two plans may share an id), their lifecycle is the same (activation
    once per plan in its actor, reverse deactivation at its end), and the
    plan's end drops its state there rather than killing the actor. Use it for
    many short plans, where an actor per plan would start a worker process each.

    An actor that dies fails the stage it ran with a `ToolHostError` naming the
    host; the plan's next call starts one fresh actor (in a pool: replaces that
    actor, once for all its plans) and activates its tools again there. A
    second death fails the plan's later calls: end it.

    Args:
        name: the host's name in traces and messages.
        tools: tools the actor builds from an import path (`ToolImport`), by
            registered name; every other tool is pickled, or sent by its
            module's name for it when it does not pickle (a ``@tool`` function).
        actor_options: passed to Ray's ``.options()`` for each plan's actor
            (``num_cpus``, ``resources``, ``runtime_env``, ``scheduling_strategy``);
            leave ``max_restarts`` alone: a restarted actor has lost its tools.
        pool: host every plan on this many shared actors; None (the default)
            for an actor per plan.
        stop_timeout: seconds a plan's stages still running as it ends, and
            then the tools no call took up, get to end in its actor; an actor of
            its own is killed then (0 kills it at once).

    Raises:
        ValueError: an empty name, a pool that is not a positive int, or a
            ``stop_timeout`` that is not a finite number of seconds, 0 or more.
        TypeError: a ``tools`` value that is not a `ToolImport`.
    """

    def __init__(
        self,
        *,
        name: str = "ray",
        tools: Mapping[str, ToolImport] | None = None,
        actor_options: Mapping[str, Any] | None = None,
        pool: int | None = None,
        stop_timeout: float = LEAVE_GRACE,
    ) -> None:
        super().__init__(name, tools)
        if pool is not None and (type(pool) is not int or pool < 1):
            raise ValueError(f"pool must be a positive int or None, got {shown_value(pool)}")
        self._stop_timeout = checked_stop_timeout(stop_timeout)
        self._options = dict(actor_options or {})
        # Stage numbers, unique within the host, so that plans sharing an actor never clash.
        self._numbers = itertools.count(1)
        # Plan keys, unique within the host: two runtimes sharing it may give plans one id.
        self._keys = itertools.count(1)
        self._pool: list[Any] | None = None if pool is None else [None] * pool
        self._load = [0] * (pool or 0)  # plans per pool actor

    def new_plan(self, ctx: ToolExecutionContext) -> _Plan:
        """A plan of this host, made at its first stand-in."""
        return _Plan(self, ctx)

    def placement(self, ctx: ToolExecutionContext) -> str | None:
        """The Ray node id of the plan's actor, as its last stage reported it; None before."""
        plan = self.plan_of(ctx)
        return plan.node if plan is not None else None

    def actor(self, ctx: ToolExecutionContext) -> Any:
        """The Ray actor handle of the plan's current actor; None when it has none."""
        plan = self.plan_of(ctx)
        return plan.actor if plan is not None else None

    def close(self) -> None:
        """Kill every plan's actor, and the pool's, now (``end_plan`` ends one plan)."""
        super().close()
        with self._lock:
            pool, self._pool = self._pool, None if self._pool is None else [None] * len(self._pool)
            self._load = [0] * len(self._load)
        for actor in pool or ():
            _kill(actor)

    def _lend(self, dead: Any, slot: int) -> tuple[Any, int]:
        """A pool actor for a plan: the least loaded one, or a fresh one for ``dead`` at ``slot``."""
        with self._lock:
            pool = self._pool
            assert pool is not None  # pool mode only
            if dead is None:
                slot = min(range(len(pool)), key=self._load.__getitem__)
                self._load[slot] += 1
            elif pool[slot] is dead:  # the first of its plans to notice replaces it
                _kill(dead)
                pool[slot] = None
            if pool[slot] is None:
                pool[slot] = remote_actor.options(**self._options).remote(None)
            return pool[slot], slot

    def _give_back(self, slot: int) -> None:
        with self._lock:
            self._load[slot] = max(0, self._load[slot] - 1)  # 0 once the host closed


class _Plan(HostedPlan):
    """One plan in a `RayHost`: its actor (its own, or one of the pool's)."""

    worker = "actor"

    def __init__(self, host: RayHost, ctx: ToolExecutionContext) -> None:
        super().__init__(host, ctx)
        self.ray_host = host
        self.actor: Any = None
        self.dead = False
        self.node: str | None = None
        self.numbers = host._numbers
        self.key = f"{self.plan_id}#{next(host._keys)}"  # the plan's own, in a shared actor
        self.slot = -1  # its pool actor's place in the pool; -1 for an actor of its own
        # Done when the plan ends: a start waiting for its pool actor stops waiting.
        self.leaving: concurrent.futures.Future[None] = concurrent.futures.Future()

    def alive(self) -> bool:
        return self.actor is not None and not self.dead

    def start(self) -> None:
        """Start the plan's first actor, or its one replacement (in a pool: lend one)."""
        if not ray.is_initialized():
            raise ToolHostError(
                f"host {self.host.name!r} needs Ray: call ray.init() (or "
                "ray.init(address=...) to join a cluster) before the plan runs",
                plan_id=self.plan_id,
            )
        host = self.ray_host
        old = self.actor
        info = _plan_info(self.ctx)
        self.starts += 1
        self.dead = False
        if host._pool is not None:
            self.actor, self.slot = host._lend(old, self.slot)
            # Waited for: an async actor may start a later call before an earlier one.
            # Not for ever: an actor Ray cannot place never answers, and the plan's
            # end, which waits for this start's lock, must still end it.
            joined = self.actor.join.remote(info, self.key).future()
            concurrent.futures.wait([joined, self.leaving], return_when="FIRST_COMPLETED")
            if not joined.done():
                raise ToolHostError(
                    f"plan {self.plan_id!r} ended before an actor of host "
                    f"{self.host.name!r} took it in (can Ray place the pool's actors?)",
                    plan_id=self.plan_id,
                )
            try:
                joined.result()
            except RayError as exc:
                raise self.lost(self.actor, "plan's start", exc) from None
            return
        if old is not None:  # dead, or out of reach: make sure it stays gone
            _kill(old)
        self.actor = remote_actor.options(**host._options).remote(info, self.key)

    def dispatch(
        self, kind: str, name: str, argument: Any, listener: Listener | None, call: Call | None
    ) -> tuple[int, concurrent.futures.Future[Settled]]:
        number = next(self.numbers)
        return number, self._send(kind, name, argument, listener, number, call)

    def _send(
        self,
        kind: str,
        name: str,
        argument: Any,
        listener: Listener | None,
        number: int,
        call: Call | None,
    ) -> _Stage:
        actor = self.actor
        label = f"{kind} of tool {tool_name(name)!r}"
        stage = pickle.dumps((self.key, kind, number, name, argument, call))
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

    def cancel(self, number: int, reason: str | None) -> None:
        actor = self.actor
        if actor is not None and not self.dead:
            actor.cancel.remote(number, reason)  # nothing to wait for: the stage answers

    def close(self) -> None:
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # ended twice
            self.leaving.set_result(None)
        with self.lock:
            self.closed = True
            actor, self.actor = self.actor, None
            dead = self.dead
        if actor is None:
            return
        if self.slot >= 0:
            self.ray_host._give_back(self.slot)
        grace = self.ray_host._stop_timeout
        with contextlib.suppress(Exception):  # dead, or Ray shut down: nothing to let go
            if self.slot >= 0 or (grace > 0 and not dead):
                left = actor.leave.remote(self.key, grace)
            if self.slot < 0 and grace > 0 and not dead:
                # Its leftover activations are deactivated there before it is killed;
                # the doubled wait leaves room for the call to reach a busy actor.
                ray.get(left, timeout=2 * grace)
        if self.slot < 0:
            _kill(actor)


class _Stage(concurrent.futures.Future["Settled"]):
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

    def result(self, timeout: float | None = None) -> Settled:
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

    def take(self, item: Report | bytes) -> None:
        """Pass on a progress report, or open what the actor sent back and settle with it."""
        if not isinstance(item, bytes):
            self.tell([item])
            return
        outcome: Outcome = pickle.loads(item)  # plain values: it opens
        blob, reports, node = outcome
        self.plan.node = node
        self.tell(reports)
        try:
            ok, value, changes, revealed = pickle.loads(blob)
        except Exception as exc:
            ok, value, changes, revealed = False, _unreadable(self.label, exc), [], ()
        self.finish(ok, value, changes, revealed)

    def tell(self, reports: list[Any]) -> None:
        if self.listener is not None:
            for report in reports:
                with contextlib.suppress(Exception):  # a listener's failure is its own
                    self.listener(*report)

    def failed(self, exc: RayError) -> None:
        """Ray could not finish the stage: fail it naming the host."""
        self.finish(False, self.plan.lost(self.actor, self.label, exc), [])

    def finish(
        self, ok: bool, value: Any, changes: list[Any], revealed: tuple[str, ...] = ()
    ) -> None:
        settle(self, ok, value, changes, revealed)


def _kill(actor: Any) -> None:
    """Kill an actor for good; one already dead, or a Ray shut down, is fine."""
    with contextlib.suppress(Exception):
        ray.kill(actor, no_restart=True)
