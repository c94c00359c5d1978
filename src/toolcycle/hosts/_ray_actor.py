"""Inside a `RayHost` actor: the plans it holds, their tools, the stages that run now.

An actor serves one plan (a plan's own actor) or many (a host's pool), each
plan's tools kept apart by a key the host gives the plan. It is an async actor:
``run`` runs one stage and returns its outcome, ``stream`` runs one and yields
its progress reports as they come and then its outcome (a Ray streaming
generator); a stage and an outcome travel pickled, as bytes, which Ray passes on
as they are (a tuple it would pickle itself, with cloudpickle, at a cost that
showed in every call); ``cancel`` cancels a running stage's token and the task
of a coroutine stage, ``join`` and ``leave`` take a plan in and let it go
(deactivating what no call took up). A coroutine stage runs on the actor's event
loop, a sync one on a thread beside it, so the loop stays free to hear a
cancellation.

Ray is an optional extra (``toolcycle[ray]``) and is imported here and in
``_ray`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import pickle
from typing import TYPE_CHECKING, Any

import ray

from toolcycle import CancellationToken
from toolcycle.hosts._remote_stage import (
    StageContext,
    cancelled_error,
    load_tool,
    packed,
    stage_context,
    unheard,
)
from toolcycle.hosts._stages import ToolStages

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from toolcycle import ProgressEvent, ToolInstance

__all__ = ["EARLY_KEPT", "LEAVE_GRACE", "Outcome", "PlanActor", "Report", "Stage", "remote_actor"]

Report = tuple[float, float | None, str | None]
"""One progress report of a stage: ``(progress, total, message)``."""

Outcome = tuple[bytes, list[Report], str]
"""What the actor sends back for a stage: the pickled ``(ok, value, changes, revealed)``,
the progress the stage reported (when not streamed as it came), and the actor's node id."""

EARLY_KEPT = 1024
"""Cancels an actor keeps for stages it has not seen (some came after their stage)."""

LEAVE_GRACE = 5.0
"""Seconds a plan that leaves gives its stages still running to end, and then its leftover
tools to deactivate (as a `ProcessHost` worker gives them as it stops)."""

Stage = tuple[Any, ...]
"""One stage as the caller sends it, pickled: ``(plan key, kind, number, tool name,
argument, call)``, where ``call`` is the caller's call id and revealed tools (``_tools.Call``)."""


class PlanActor:
    """One actor's plans and the stages that run now.

    Each stage gets a context of its own, whose token mirrors the caller's call
    token: the caller's ``cancel`` cancels it, and the task of a coroutine stage.
    Stage numbers are unique within the host, so one actor's stages never clash;
    plans are kept apart by a key the host makes unique (two plans may share an id).

    Each plan's tools keep their lifecycle as in a `ProcessHost` worker
    (`ToolStages`): activated at most once, never deactivated under a stage of
    theirs still running here (a sync body its caller gave up on), and
    deactivated as the plan leaves if their activation outlived every call
    that wanted it.

    Args:
        info: the plan of an actor of its own (see ``_process._plan_info``); None
            for a pool's actor, which plans ``join``.
        key: that plan's key; its id when not given.
    """

    def __init__(self, info: dict[str, Any] | None = None, key: str | None = None) -> None:
        self.node: str = ray.get_runtime_context().get_node_id()
        self.plans: dict[str, dict[str, Any]] = {}  # by plan key
        self.lifecycles: dict[str, ToolStages[asyncio.Future[bool]]] = {}  # by plan key
        self.tools: dict[tuple[str, str], ToolInstance] = {}  # by (plan key, tool name)
        self.tokens: dict[int, CancellationToken] = {}
        self.tasks: dict[int, asyncio.Future[Any]] = {}  # the coroutine stages
        self.owners: dict[int, str] = {}  # the plan key of each stage whose work began
        self.early: dict[int, str | None] = {}  # cancels that came before their stage
        if info is not None:
            self._take(info, key)

    def _take(self, info: dict[str, Any], key: str | None) -> None:
        key = info["plan_id"] if key is None else key
        self.plans[key] = info
        self.lifecycles.setdefault(key, ToolStages())

    async def join(self, info: dict[str, Any], key: str | None = None) -> None:
        """Take a plan in under ``key`` (its id when not given): what its stages' contexts carry."""
        self._take(info, key)

    async def leave(self, key: str, grace: float = LEAVE_GRACE) -> None:
        """Let a plan that ended go: its stages, its leftover tools, what it held here.

        Its stages still running are cancelled and given ``grace`` seconds to end
        (a deactivation held for one of them runs meanwhile); then a tool whose
        activation no call took up is deactivated, newest first, within what is
        left of ``grace``. Any tool then left is dropped.
        """
        info = self.plans.pop(key, None) or {"plan_id": key}
        lifecycle = self.lifecycles.pop(key, None)
        if lifecycle is not None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + grace
            for number, owner in list(self.owners.items()):
                token = self.tokens.get(number)
                if owner == key and token is not None:
                    token.cancel("the plan ended")
            quiet: asyncio.Future[None] = loop.create_future()

            def heard() -> None:
                if not quiet.done():  # the wait below may have given up
                    quiet.set_result(None)

            lifecycle.when_quiet(heard)
            with contextlib.suppress(TimeoutError):  # a body that runs on: nothing to release
                await asyncio.wait_for(quiet, grace)
                for name in lifecycle.leftover():
                    await self._release(info, key, name, deadline - loop.time())
        for held in [held for held in self.tools if held[0] == key]:
            del self.tools[held]

    async def _release(self, info: dict[str, Any], key: str, name: str, left: float) -> None:
        """Deactivate a tool no caller will, as its plan leaves; its outcome has no one to go to."""
        ctx = stage_context(info, CancellationToken(), unheard, None)

        async def deactivate() -> None:
            stage: Any = self.tools[key, name].deactivate  # sync, or a coroutine function
            if inspect.iscoroutinefunction(stage):
                value = stage(ctx)
            else:
                value = await asyncio.to_thread(stage, ctx)
            if inspect.isawaitable(value):
                await value

        with contextlib.suppress(Exception):  # the caller has gone: nobody to tell
            await asyncio.wait_for(deactivate(), max(0.0, left))

    async def run(self, stage: bytes) -> bytes:
        """Run one pickled `Stage`; return its pickled `Outcome`, with the progress it reported.

        It never raises: the stage's errors travel back as values.
        """
        reports: list[Report] = []
        return pickle.dumps(await self._run(pickle.loads(stage), reports.append, reports))

    async def stream(self, stage: bytes) -> AsyncIterator[Report | bytes]:
        """Run one stage as `run` does, yielding each progress report as it comes, then the outcome.

        Ray streams what an async generator method yields (``num_returns="streaming"``),
        so the caller hears progress while the stage runs.
        """
        loop = asyncio.get_running_loop()
        heard: asyncio.Queue[Report | None] = asyncio.Queue()

        def report(item: Report) -> None:  # from the loop, or from a sync body's thread
            loop.call_soon_threadsafe(heard.put_nowait, item)

        task = asyncio.ensure_future(self._run(pickle.loads(stage), report, []))
        task.add_done_callback(lambda _: heard.put_nowait(None))
        try:
            while (item := await heard.get()) is not None:
                yield item
            yield pickle.dumps(task.result())
        finally:
            task.cancel()  # Ray cancelled the stream: so is the stage (a no-op once done)

    async def _run(
        self, stage: Stage, report: Callable[[Report], None], reports: list[Report]
    ) -> Outcome:
        key, kind, number, name, argument, *rest = stage
        call = rest[0] if rest else None  # a stage sent by hand may leave it out
        token = self.tokens[number] = CancellationToken()

        def progress(event: ProgressEvent) -> None:
            report((event.progress, event.total, event.message))

        info = self.plans.get(key) or {"plan_id": key}
        ctx = stage_context(info, token, progress, call)
        if number in self.early:
            token.cancel(self.early.pop(number))
        try:
            ok, value = True, await self._stage(number, kind, key, name, argument, ctx)
        except asyncio.CancelledError:  # our cancel, or ray.cancel of this method
            token.cancel("the call was cancelled")
            task = self.tasks.get(number)
            if task is not None:
                task.cancel()
            ok, value = False, cancelled_error(ctx)
        except Exception as exc:
            ok, value = False, exc
        finally:
            if number not in self.owners:  # no work began, or it ended: else it pops them
                self.tokens.pop(number, None)
        return packed(ok, value, list(ctx.changes), ctx.revealed_here()), reports, self.node

    async def _stage(
        self, number: int, kind: str, key: str, name: str, argument: Any, ctx: StageContext
    ) -> Any:
        lifecycle = self.lifecycles.get(key)
        if lifecycle is None or key not in self.plans:
            raise RuntimeError(f"plan {key!r} has not joined this actor")
        gate: asyncio.Future[None] | None = None
        if kind == "activate" and not await _claimed(lifecycle, name):
            return None  # active here already: its caller gave up on it, it went on
        if kind == "deactivate":
            # Stages their callers gave up on may still run here: not under them.
            gate = asyncio.get_running_loop().create_future()
            lifecycle.deactivate(name, functools.partial(gate.set_result, None))
        else:
            lifecycle.begin(name)
        self.owners[number] = key
        # The stage's work, shielded: it ends when the body does, not when its caller leaves.
        work = asyncio.ensure_future(self._work(gate, number, kind, (key, name), argument, ctx))
        work.add_done_callback(lambda done: self._ended(done, number, kind, (key, name), lifecycle))
        return await asyncio.shield(work)

    async def _work(
        self,
        gate: asyncio.Future[None] | None,
        number: int,
        kind: str,
        key: tuple[str, str],
        argument: Any,
        ctx: StageContext,
    ) -> Any:
        if gate is not None:
            await gate
        if kind == "activate":
            self.tools[key] = load_tool(argument)
        stage = getattr(self.tools[key], kind)
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

    def _ended(
        self,
        done: asyncio.Future[Any],
        number: int,
        kind: str,
        key: tuple[str, str],
        lifecycle: ToolStages[asyncio.Future[bool]],
    ) -> None:
        """A stage's work ended: what waited for it goes on."""
        self.tokens.pop(number, None)
        self.tasks.pop(number, None)
        self.owners.pop(number, None)
        ok = not done.cancelled() and done.exception() is None
        if ok and kind == "deactivate":
            self.tools.pop(key, None)
        if kind == "activate":
            for waiter in lifecycle.activated(key[1], ok):
                if not waiter.done():  # its caller left
                    waiter.set_result(ok)
        lifecycle.end(key[1])

    async def cancel(self, number: int, reason: str | None) -> None:
        """Cancel a stage's token, and its task if it awaits (a sync body polls its token)."""
        token = self.tokens.get(number)
        if token is None:
            # Before its stage, or after it (it ended as the cancel came): a pool's actor
            # lives on, so keep the latest EARLY_KEPT only, the oldest going first.
            self.early[number] = reason
            if len(self.early) > EARLY_KEPT:
                del self.early[next(iter(self.early))]
            return
        token.cancel(reason)
        task = self.tasks.get(number)
        if task is not None:
            task.cancel()


async def _claimed(lifecycle: ToolStages[asyncio.Future[bool]], name: str) -> bool:
    """Whether this activate of ``name`` is to run: not if the tool is active, or becomes so.

    One that comes while another runs waits for it and shares its outcome; if
    that failed, it tries afresh, as the runtime's cache would have.
    """
    while True:
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        verdict = lifecycle.activate(name, waiter)
        if verdict != "wait":
            return verdict == "run"
        if await waiter:
            return False


remote_actor: Any = ray.remote(PlanActor)
"""`PlanActor` as a Ray actor class: ``remote_actor.options(...).remote(info)``."""
