"""The worker side of a host: one plan's tools, driven by messages from the caller.

`serve` is the whole life of a worker. It reads requests from its end of a pipe
on its main thread, and runs each stage elsewhere so that a cancellation can
arrive while a stage runs: a sync stage on a small thread pool, a coroutine stage
on one event loop thread the worker starts when first needed.

The stage itself (its context, its tool, its packed outcome) is
`toolcycle.hosts._remote_stage`'s, which a Ray actor shares; a ``cancel`` message
cancels a stage's token, and also the task of a coroutine stage. What a stage
reports with ``report_progress`` travels back to the caller as it comes.

The messages are tuples. To the worker: ``("plan", info)``, ``("activate", id,
name, payload, call)``, ``("execute", id, name, params, call)``, ``("deactivate",
id, name, None, call)``, ``("cancel", id, reason)`` and ``("stop", grace)``, where
``call`` is the caller's ``(call id, revealed tools)`` at the stage's start (see
``_tools.call_of``). From it: ``("done", id, outcome)`` (the pickled ``(ok, value, changes,
revealed)``) and ``("progress", id, progress, total, message)``. From a
`ProcessHost`, ``info["environ"]`` is the caller's environment, which the worker
takes on before its first stage.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import os
import threading
import time
from typing import TYPE_CHECKING, Any

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
    from collections.abc import Callable
    from multiprocessing.connection import Connection

    from toolcycle import ProgressEvent, ToolInstance
    from toolcycle.hosts._tools import Call

__all__ = ["STOP_GRACE", "serve", "serve_detached"]

STOP_GRACE = 5.0
"""Seconds a worker told to stop without a grace, or left by its caller, gives its stages."""


class _Worker:
    """What one worker process holds: the plan, its tools, the calls running.

    Its tools' lifecycle there is `ToolStages`': each is activated at most once,
    never deactivated under a stage of it still running, and deactivated as the
    worker ends if its activation outlived every call that wanted it.
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.send_lock = threading.Lock()
        self.info: dict[str, Any] = {"plan_id": "plan"}
        self.tools: dict[str, ToolInstance] = {}
        self.tokens: dict[int, CancellationToken] = {}
        self.pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="toolcycle-host")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: threading.Thread | None = None
        self.lifecycle: ToolStages[tuple[int, Any, Call | None]] = ToolStages()
        self.stages: dict[int, tuple[str, str]] = {}  # each begun stage's kind and tool

    def adopt(self, info: dict[str, Any]) -> None:
        """Take the plan's info; from a `ProcessHost`, with the environment to run in."""
        environ = info.pop("environ", None)
        if environ is not None:
            os.environ.clear()
            os.environ.update(environ)
        self.info = info

    def send(self, message: tuple[Any, ...]) -> None:
        with self.send_lock:
            self.conn.send(message)

    def context(self, number: int, call: Call | None) -> StageContext:
        """A context for one stage, whose token the caller's cancel message cancels."""
        token = self.tokens[number] = CancellationToken()

        def progress(event: ProgressEvent) -> None:
            self.send(("progress", number, event.progress, event.total, event.message))

        return stage_context(self.info, token, progress, call)

    def start(
        self, kind: str, number: int, name: str, argument: Any = None, call: Call | None = None
    ) -> None:
        """Run one stage off the reading thread; its outcome is sent when it ends."""
        if kind == "deactivate":
            # Stages their callers gave up on may still run here: not under them.
            ctx = self.context(number, call)
            self.stages[number] = (kind, name)
            self.lifecycle.deactivate(name, lambda: self.run(kind, number, name, argument, ctx))
            return
        if kind == "activate":
            verdict = self.lifecycle.activate(name, (number, argument, call))
            if verdict != "run":  # done already, or shares the one under way
                if verdict == "done":
                    self.send(("done", number, packed(True, None, [])))
                return
        ctx = self.context(number, call)
        self.stages[number] = (kind, name)
        self.lifecycle.begin(name)
        self.run(kind, number, name, argument, ctx)

    def run(self, kind: str, number: int, name: str, argument: Any, ctx: StageContext) -> None:
        """Start one stage, begun in `lifecycle`, now."""
        try:
            if kind == "activate":
                self.tools[name] = load_tool(argument)
            stage = getattr(self.tools[name], kind)
        except Exception as exc:
            self.finish(number, False, exc, ctx)
            return
        args = (argument, ctx) if kind == "execute" else (ctx,)
        if inspect.iscoroutinefunction(stage):
            self.on_loop(number, stage(*args), ctx, kind, name)
        else:
            with contextlib.suppress(RuntimeError):  # the worker ended meanwhile
                self.pool.submit(self.run_sync, number, stage, args, ctx, kind, name)

    def run_sync(
        self, number: int, stage: Any, args: tuple[Any, ...], ctx: StageContext, *rest: str
    ) -> None:
        try:
            value = stage(*args)
        except Exception as exc:
            self.finish(number, False, exc, ctx)
        else:
            if inspect.isawaitable(value):  # a sync method that hands back a coroutine
                self.on_loop(number, _awaited(value), ctx, *rest)
            else:
                self.done(number, value, ctx, *rest)

    def on_loop(self, number: int, coro: Any, ctx: StageContext, kind: str, name: str) -> None:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            self.loop_thread = threading.Thread(
                target=self.loop.run_forever, name="toolcycle-host-loop"
            )
            self.loop_thread.start()
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        ctx.cancellation_token.on_cancel(future.cancel)

        def ended(done: concurrent.futures.Future[Any]) -> None:
            if done.cancelled():
                self.finish(number, False, cancelled_error(ctx), ctx)
            elif done.exception() is not None:
                self.finish(number, False, done.exception(), ctx)
            else:
                self.done(number, done.result(), ctx, kind, name)

        future.add_done_callback(ended)

    def done(self, number: int, value: Any, ctx: StageContext, kind: str, name: str) -> None:
        if kind == "deactivate":
            self.tools.pop(name, None)
        self.finish(number, True, value, ctx)

    def finish(self, number: int, ok: bool, value: Any, ctx: StageContext) -> None:
        """Send a begun stage's outcome; then what waited for it goes on."""
        self.tokens.pop(number, None)
        kind, name = self.stages.pop(number)
        waiting = self.lifecycle.activated(name, ok) if kind == "activate" else []
        self.send(("done", number, packed(ok, value, list(ctx.changes), ctx.revealed_here())))
        self.lifecycle.end(name)
        for later, argument, call in waiting:
            if ok:
                self.send(("done", later, packed(True, None, [])))
            else:  # the first failed: the next tries afresh, as the runtime's cache would
                self.start("activate", later, name, argument, call)

    def cancel(self, number: int, reason: str | None) -> None:
        token = self.tokens.get(number)
        if token is not None:
            token.cancel(reason)

    def close(self, grace: float = STOP_GRACE) -> None:
        """Cancel the stages still running, give them ``grace`` seconds to end, then release.

        What is still active then (an activation no call took up) is deactivated,
        newest first, within what is left of ``grace``.
        """
        deadline = time.monotonic() + grace
        for token in list(self.tokens.values()):
            token.cancel("the plan ended")
        # A deactivation held for a stage starts once that stage ends: wait for it too.
        quiet = threading.Event()
        self.lifecycle.when_quiet(quiet.set)
        if quiet.wait(grace):
            for name in self.lifecycle.leftover():
                self.release(name, deadline)
        self.pool.shutdown(wait=False, cancel_futures=True)
        loop, thread = self.loop, self.loop_thread
        if loop is not None and thread is not None:
            # A cancelled coroutine stage finishes its cleanup before the loop stops.
            asyncio.run_coroutine_threadsafe(_settle(grace), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join(grace)
            loop.close()

    def release(self, name: str, deadline: float) -> None:
        """Deactivate a tool no caller will, as the worker ends; its outcome has no one to go to."""
        ctx = stage_context(self.info, CancellationToken(), unheard, None)
        with contextlib.suppress(Exception):  # the caller has gone: nobody to tell
            stage = self.tools[name].deactivate
            if inspect.iscoroutinefunction(stage):
                asyncio.run(_awaited(stage(ctx)))  # the loop's own tasks are over
            else:
                self.pool.submit(_ran, stage, ctx).result(max(0.0, deadline - time.monotonic()))


def _ran(stage: Callable[[StageContext], Any], ctx: StageContext) -> None:
    """Run a sync stage, and a coroutine it hands back, to its end."""
    value = stage(ctx)
    if inspect.isawaitable(value):
        asyncio.run(_awaited(value))


async def _settle(grace: float) -> None:
    """Let the loop's other tasks end (they were cancelled), for ``grace`` seconds at most."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*others, return_exceptions=True), grace)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def serve_detached(conn: Connection) -> None:
    """`serve`, in a session and process group of the worker's own: a worker process's life.

    A terminal sends its Ctrl-C to its whole foreground process group; in the
    caller's group, the worker would die of it before the caller could end its
    plans gracefully. The caller ends the worker itself, and the worker ends when
    the caller goes away (its pipe closes).
    """
    if hasattr(os, "setsid"):
        os.setsid()
    serve(conn)


def serve(conn: Connection) -> None:
    """Serve one plan's tools until told to stop or the caller goes away.

    A ``("stop", grace)`` gives the stages still running, and then the tools no
    call took up, ``grace`` seconds (the host's ``stop_timeout``) to end here.
    """
    worker = _Worker(conn)
    grace = STOP_GRACE
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the caller went away
                return
            kind = message[0]
            if kind in ("activate", "execute", "deactivate"):
                worker.start(*message)
            elif kind == "cancel":
                worker.cancel(message[1], message[2])
            elif kind == "plan":
                worker.adopt(message[1])
            else:  # "stop"
                if len(message) > 1:
                    grace = message[1]
                return
    finally:
        worker.close(grace)
        conn.close()
