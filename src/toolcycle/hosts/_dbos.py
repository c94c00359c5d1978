"""Durable plans on DBOS (``toolcycle[dbos]``): each call is a step of the plan's workflow.

A durable plan is opened inside a function decorated with ``@DBOS.workflow()``;
the plan takes the workflow's id. Each call of the plan runs as one DBOS step
named after the tool (``toolcycle:<tool>``), whose recorded output is the call's
whole `ToolResult`: its output, trace (with the approval decision) and changes.
When the workflow runs again with the same id (DBOS recovers it in
``DBOS.launch()``, or the host starts it again), DBOS hands back the recorded
results of the calls that completed, in order, and the tools do not run.

A call of a tool that is not idempotent is preceded by a small marker step
(``toolcycle:<tool>:started``). If the marker is recorded but the call is not,
the call was running when an earlier process died: it is reported as failed
with `ToolInterruptedError` (and that result is recorded), never run twice. An
idempotent tool needs no marker: its unfinished call simply runs again.

This module is the only part of toolcycle that imports ``dbos``.
"""

from __future__ import annotations

try:
    from dbos import DBOS
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without dbos
    raise ImportError(
        "toolcycle.hosts.DBOSPlan needs DBOS, which is an optional extra: "
        "pip install -e '.[dbos]' from a clone (toolcycle[dbos] once published)"
    ) from exc

from typing import TYPE_CHECKING

from toolcycle.errors import ToolRuntimeError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolResult

__all__ = ["DBOSPlan"]


class _Raised(BaseException):
    """Carries an exception of a call past DBOS's step, which records only `Exception`s.

    A call that raised (cancelled, refused, an activation that failed) has no
    result to give back on resume, so it is left unrecorded.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class DBOSPlan:
    """Makes a plan durable on DBOS; pass it as ``runtime.plan(durable=DBOSPlan())``.

    The plan must be opened inside a DBOS workflow (a function decorated with
    ``@DBOS.workflow()``), after ``DBOS.launch()``; its calls must be made one
    at a time, in the same order on every run, as DBOS asks of any workflow's
    steps. Results must be picklable (DBOS's default serializer).

    Args:
        prefix: the first part of each step's name (``<prefix>:<tool>``), as
            DBOS lists the workflow's steps.
    """

    __slots__ = ("_prefix",)

    def __init__(self, *, prefix: str = "toolcycle") -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix must be a non-empty string, got {prefix!r}")
        self._prefix = prefix

    def __repr__(self) -> str:
        return f"DBOSPlan(prefix={self._prefix!r})"

    def open(self, plan_id: str | None) -> str:
        """The plan's id: the one given, or the id of the workflow it runs in.

        Raises:
            ToolRuntimeError: the plan is not opened inside a DBOS workflow.
        """
        workflow_id = DBOS.workflow_id
        if workflow_id is None:
            raise ToolRuntimeError(
                "a durable plan records its calls as steps of a DBOS workflow, but no "
                "workflow is running here; open the plan inside a function decorated "
                "with @DBOS.workflow(), after DBOS.launch()",
                plan_id=plan_id,
            )
        return plan_id or workflow_id

    def run(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], ToolResult],
        interrupted: Callable[[], ToolResult],
    ) -> ToolResult:
        """Run one call as a DBOS step, or replay its recorded result (see the module)."""
        name = f"{self._prefix}:{tool_name}"
        fresh = idempotent or self._began(name)
        live: list[ToolResult] = []

        def step() -> ToolResult:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = call()
                except BaseException as exc:
                    raise _Raised(exc) from None
            live.append(result)
            return _kept(result)

        try:
            recorded = DBOS.run_step({"name": name}, step)
        except _Raised as carried:
            raise carried.error from None
        return live[0] if live else _replayed(ctx, recorded)

    async def arun(
        self,
        ctx: ToolExecutionContext,
        tool_name: str,
        idempotent: bool,
        call: Callable[[], Awaitable[ToolResult]],
        interrupted: Callable[[], ToolResult],
    ) -> ToolResult:
        """Async twin of `run`."""
        name = f"{self._prefix}:{tool_name}"
        fresh = idempotent or await self._abegan(name)
        live: list[ToolResult] = []

        async def step() -> ToolResult:
            if not fresh:
                result = interrupted()
            else:
                try:
                    result = await call()
                except BaseException as exc:
                    raise _Raised(exc) from None
            live.append(result)
            return _kept(result)

        try:
            recorded = await DBOS.run_step_async({"name": name}, step)
        except _Raised as carried:
            raise carried.error from None
        return live[0] if live else _replayed(ctx, recorded)

    @staticmethod
    def _began(name: str) -> bool:
        """Record that the call starts; False when an earlier run recorded it already."""
        ran: list[bool] = []
        DBOS.run_step({"name": f"{name}:started"}, ran.append, True)
        return bool(ran)

    @staticmethod
    async def _abegan(name: str) -> bool:
        """Async twin of `_began`."""
        ran: list[bool] = []

        async def mark() -> None:
            ran.append(True)

        await DBOS.run_step_async({"name": f"{name}:started"}, mark)
        return bool(ran)


def _kept(result: ToolResult) -> ToolResult:
    """The result as recorded: without the live exception object, which may not pickle."""
    if result.exception is None:
        return result
    return result.model_copy(update={"exception": None})


def _replayed(ctx: ToolExecutionContext, recorded: ToolResult) -> ToolResult:
    """A recorded result given back on resume; its changes join the plan's record again."""
    for change in recorded.changes:
        ctx.record_change(change)
    return recorded
