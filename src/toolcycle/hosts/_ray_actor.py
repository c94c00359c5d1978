"""Inside a `RayHost` actor: the plans it holds, their tools, the stages that run now.

An actor serves one plan (a plan's own actor) or many (a host's pool), each plan's
tools kept apart by its id. It is an async actor: ``run`` runs one stage and
returns its outcome, ``stream`` runs one and yields its progress reports as they
come and then its outcome (a Ray streaming generator); a stage and an outcome
travel pickled, as bytes, which Ray passes on as they are (a tuple it would
pickle itself, with cloudpickle, at a cost that showed in every call); ``cancel`` cancels a
running stage's token and the task of a coroutine stage, ``join`` and ``leave``
take a plan in and drop it. A coroutine stage runs on the actor's event loop, a
sync one on a thread beside it, so the loop stays free to hear a cancellation.

Ray is an optional extra (``toolcycle[ray]``) and is imported here and in
``_ray`` only.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
from typing import TYPE_CHECKING, Any

import ray

from toolcycle import CancellationToken
from toolcycle.hosts._worker import StageContext, _cancelled, _packed, load_tool, stage_context

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from toolcycle import ProgressEvent, ToolInstance

__all__ = ["EARLY_KEPT", "Outcome", "PlanActor", "Report", "Stage", "remote_actor"]

Report = tuple[float, float | None, str | None]
"""One progress report of a stage: ``(progress, total, message)``."""

Outcome = tuple[bytes, list[Report], str]
"""What the actor sends back for a stage: the pickled ``(ok, value, changes, revealed)``,
the progress the stage reported (when not streamed as it came), and the actor's node id."""

EARLY_KEPT = 1024
"""Cancels an actor keeps for stages it has not seen (some came after their stage)."""

Stage = tuple[Any, ...]
"""One stage as the caller sends it, pickled: ``(plan id, kind, number, tool name,
argument, call)``, where ``call`` is the caller's call id and revealed tools (``_tools.Call``)."""


class PlanActor:
    """One actor's plans and the stages that run now.

    Each stage gets a context of its own, whose token mirrors the caller's call
    token: the caller's ``cancel`` cancels it, and the task of a coroutine stage.
    Stage numbers are unique within the host, so one actor's stages never clash.

    Args:
        info: the plan of an actor of its own (see ``_process._plan_info``); None
            for a pool's actor, which plans ``join``.
    """

    def __init__(self, info: dict[str, Any] | None = None) -> None:
        self.node: str = ray.get_runtime_context().get_node_id()
        self.plans: dict[str, dict[str, Any]] = {}
        self.tools: dict[tuple[str, str], ToolInstance] = {}  # by (plan id, tool name)
        self.tokens: dict[int, CancellationToken] = {}
        self.tasks: dict[int, asyncio.Future[Any]] = {}  # the coroutine stages
        self.early: dict[int, str | None] = {}  # cancels that came before their stage
        if info is not None:
            self.plans[info["plan_id"]] = info

    async def join(self, info: dict[str, Any]) -> None:
        """Take a plan in: what its stages' contexts carry."""
        self.plans[info["plan_id"]] = info

    async def leave(self, plan_id: str) -> None:
        """Drop a plan that ended, with any tool its deactivation left behind."""
        self.plans.pop(plan_id, None)
        for key in [key for key in self.tools if key[0] == plan_id]:
            del self.tools[key]

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
        plan_id, kind, number, name, argument, *rest = stage
        call = rest[0] if rest else None  # a stage sent by hand may leave it out
        token = self.tokens[number] = CancellationToken()

        def progress(event: ProgressEvent) -> None:
            report((event.progress, event.total, event.message))

        info = self.plans.get(plan_id) or {"plan_id": plan_id}
        ctx = stage_context(info, token, progress, call)
        if number in self.early:
            token.cancel(self.early.pop(number))
        try:
            ok, value = True, await self._stage(number, kind, (plan_id, name), argument, ctx)
        except asyncio.CancelledError:  # our cancel, or ray.cancel of this method
            token.cancel("the call was cancelled")
            ok, value = False, _cancelled(ctx)
        except Exception as exc:
            ok, value = False, exc
        finally:
            self.tokens.pop(number, None)
            self.tasks.pop(number, None)
        if ok and kind == "deactivate":
            self.tools.pop((plan_id, name), None)
        return _packed(ok, value, list(ctx.changes), ctx.revealed_here()), reports, self.node

    async def _stage(
        self,
        number: int,
        kind: str,
        key: tuple[str, str],
        argument: Any,
        ctx: StageContext,
    ) -> Any:
        if key[0] not in self.plans:
            raise RuntimeError(f"plan {key[0]!r} has not joined this actor")
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


remote_actor: Any = ray.remote(PlanActor)
"""`PlanActor` as a Ray actor class: ``remote_actor.options(...).remote(info)``."""
