"""Resuming deferred calls: claim each in the approval ledger once, then run or deny it.

`ToolRuntime.resume` and ``aresume`` come here. What they take (``toolcycle.approvals``
and ``toolcycle.agent._approve``) is imported by the first resume.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from toolcycle.context import ToolExecutionContext
from toolcycle.errors import ToolRuntimeError, error_text
from toolcycle.runtime._limits import check_limits
from toolcycle.tracing import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextvars import Token

    from toolcycle.approvals import ApprovalDecision, ApprovalLedger, Resumption
    from toolcycle.models import ApprovalRecord, PendingApproval, ToolResult
    from toolcycle.runtime._interfaces import Runner
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call
    from toolcycle.runtime._steps import CallSteps

__all__ = ["Resumer"]

_log = get_logger("toolcycle.runtime")


class Resumer:
    """Finishes deferred calls: claims each in the ledger once, then runs or denies it.

    A resume is checked before its claim and again right after it: when the plan
    ended or was cancelled in between, the claim is given back (``release``, where
    the ledger has it) and the call stays resumable.

    In a durable plan whose engine records claims (``claim_once``), the claim is
    one of the plan's recorded steps, so a replay does not claim the call again;
    and a denial resumed by a replayed claim was traced by the run that made the
    claim, so it is not traced again.

    Args:
        deny: traces a resumed denial and returns its failed result (the approval
            step's ``denied``; its third argument says the denial is replayed).
        steps: opens the record of a resumed denial, and checks a resume's plan.
        runner: runs an approved call (the pipeline).
        settings: the runtime's shared settings (whether it is closed).
        ledger: where each resumed call is claimed, so that none runs twice; None
            for a `MemoryApprovalLedger`, made by the first resume.
    """

    def __init__(
        self,
        deny: Callable[[Call, ApprovalDecision, bool], ToolResult],
        steps: CallSteps,
        runner: Runner,
        settings: Settings,
        ledger: ApprovalLedger | None,
    ) -> None:
        self._deny = deny
        self._steps = steps
        self._runner = runner
        self._settings = settings
        self._ledger = ledger
        self._making = threading.Lock()  # two first resumes must share one ledger

    @property
    def ledger(self) -> ApprovalLedger:
        """The ledger resumed calls are claimed in."""
        if self._ledger is None:
            with self._making:
                if self._ledger is None:
                    from toolcycle.approvals import MemoryApprovalLedger

                    self._ledger = MemoryApprovalLedger()
        return self._ledger

    def resume(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> ToolResult:
        """Claim the call, then run it or deny it (see `ToolRuntime.resume`)."""
        from toolcycle.agent._approve import check_claimed
        from toolcycle.approvals import _resumption

        record, chosen, approval = self._check(pending, decision, ctx, timeout, idle_timeout)
        claimed, replayed = self._claim(record, ctx)
        check_claimed(record, claimed)
        self._recheck(record, ctx, timeout, idle_timeout)
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx, replayed)
        else:
            resuming = _resuming(record, chosen)
            try:
                result = self._runner.execute(*_rerun(record, ctx, timeout, idle_timeout), approval)
            finally:
                if resuming is not None:
                    _resumption.reset(resuming)
        return _answering(result, record)

    async def aresume(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> ToolResult:
        """Async twin of `resume`."""
        from toolcycle.agent._approve import check_claimed
        from toolcycle.approvals import _resumption

        record, chosen, approval = self._check(pending, decision, ctx, timeout, idle_timeout)
        claimed, replayed = await self._aclaim(record, ctx)
        check_claimed(record, claimed)
        await self._arecheck(record, ctx, timeout, idle_timeout)
        if chosen.outcome == "deny":
            result = self._resumed_denial(record, chosen, approval, ctx, replayed)
        else:
            args = _rerun(record, ctx, timeout, idle_timeout)
            resuming = _resuming(record, chosen)
            try:
                result = await self._runner.aexecute(*args, approval)
            finally:
                if resuming is not None:
                    _resumption.reset(resuming)
        return _answering(result, record)

    def _check(
        self,
        pending: Any,
        decision: Any,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> tuple[PendingApproval, ApprovalDecision, ApprovalRecord]:
        """Check a resume before its claim (see `ToolRuntime.resume`)."""
        from toolcycle.agent._approve import check_resume, record_of

        self._settings.check_open()

        record, chosen = check_resume(
            pending, decision, lambda record: self._precheck(record, ctx, timeout, idle_timeout)
        )
        approval = record_of(
            chosen, record.fingerprint, approval_id=record.approval_id, resumed=True
        )
        return record, chosen, approval

    def _precheck(
        self,
        record: PendingApproval,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> None:
        """Refusals that do not spend the approval: the call stays resumable.

        Everything the run would refuse before the tool starts is checked here.
        """
        if not isinstance(ctx, ToolExecutionContext):
            raise TypeError(f"ctx must be a ToolExecutionContext, got {type(ctx).__name__}")
        check_limits(timeout, idle_timeout)
        if ctx.ended:
            raise ToolRuntimeError(
                f"plan {ctx.plan_id!r} has ended; resume the call in an open plan",
                tool_name=record.tool_name,
                plan_id=ctx.plan_id,
            )
        self._steps.precheck(record.tool_name, ctx)

    def _recheck(
        self,
        record: PendingApproval,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> None:
        """Check the resume again once the call is claimed; a refusal gives the claim back.

        The plan may have ended, been cancelled or lost its id to another context
        (or the runtime closed) between the first check and the claim: the call
        was not run, so it must stay resumable. From here on, the resume counts
        as started, like a call its plan cancels while it runs.
        """
        try:
            self._settings.check_open()
            self._precheck(record, ctx, timeout, idle_timeout)
        except Exception:
            self._release(record, ctx)
            raise

    async def _arecheck(
        self,
        record: PendingApproval,
        ctx: ToolExecutionContext,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> None:
        """Async twin of `_recheck`: a claim given back is given back off the event loop."""
        try:
            self._settings.check_open()
            self._precheck(record, ctx, timeout, idle_timeout)
        except Exception:
            await self._arelease(record, ctx)
            raise

    async def _arelease(self, record: PendingApproval, ctx: ToolExecutionContext) -> None:
        """`_release` from async code: on a worker thread, as the claim was made.

        A shared ledger's release may wait on a disk or a database as its claim does;
        the default ledger, in memory, releases at once.
        """
        from toolcycle.approvals import MemoryApprovalLedger

        if type(self.ledger) is MemoryApprovalLedger:
            self._release(record, ctx)
        else:
            await asyncio.to_thread(self._release, record, ctx)

    def _release(self, record: PendingApproval, ctx: ToolExecutionContext) -> None:
        """Give back the claim of a resume refused right after it (see `ApprovalLedger`).

        A durable plan whose engine recorded the claim keeps it: a replay of the plan
        would get it back from its record, though the ledger had let another resume
        run the call. So does a ledger without ``release``, or whose release fails.
        """
        release = getattr(self.ledger, "release", None)  # optional in `ApprovalLedger`
        engine = ctx.durable
        if hasattr(engine, "claim_once") or hasattr(engine, "aclaim_once"):
            why = "its durable plan recorded the claim"
        elif release is None:
            why = "the ledger has no release method"
        else:
            try:
                release(record.approval_id)
            except Exception as exc:  # the refusal that led here is what the caller must hear
                why = f"the ledger's release raised {type(exc).__name__}: {error_text(exc)}"
            else:
                return
        _log.warning(
            "approval.claim_kept",
            approval_id=record.approval_id,
            tool=record.tool_name,
            plan_id=ctx.plan_id,
            reason=why,
        )

    def _claim(self, record: PendingApproval, ctx: ToolExecutionContext) -> tuple[bool, bool]:
        """Claim the call in the ledger; a durable plan's engine may record the answer.

        A replayed plan must get its own claim's answer back: asked again, the
        ledger would refuse the call this very plan claimed.

        Returns:
            The ledger's answer, and whether it is an earlier run's recorded
            answer (the engine handed it back without asking the ledger).
        """
        once = getattr(ctx.durable, "claim_once", None)  # optional in `DurablePlan`
        if once is None:
            return self.ledger.claim(record.approval_id), False
        claim, asked = self._asking(record)
        return bool(once(ctx, record.tool_name, claim)), not asked

    async def _aclaim(
        self, record: PendingApproval, ctx: ToolExecutionContext
    ) -> tuple[bool, bool]:
        """Async twin of `_claim`."""
        once = getattr(ctx.durable, "aclaim_once", None)
        if once is None:
            return await self._aclaim_in_ledger(record, ctx), False
        claim, asked = self._asking(record)
        return bool(await once(ctx, record.tool_name, claim)), not asked

    async def _aclaim_in_ledger(self, record: PendingApproval, ctx: ToolExecutionContext) -> bool:
        """The ledger's claim, made on a worker thread: a shared ledger may be a database.

        The default ledger, in memory, claims at once. A caller cancelled while the
        claim is made waits for it, and a claim it won is given back: the call never
        ran, so it stays resumable, as after a resume refused right after its claim.
        Cancelled again meanwhile, it still waits: a claim left half given back
        would be spent for good.
        """
        from toolcycle.approvals import MemoryApprovalLedger

        ledger = self.ledger
        if type(ledger) is MemoryApprovalLedger:
            return ledger.claim(record.approval_id)
        claiming = asyncio.ensure_future(asyncio.to_thread(ledger.claim, record.approval_id))
        try:
            return await asyncio.shield(claiming)
        except asyncio.CancelledError:
            giving_back = asyncio.ensure_future(self._give_back(claiming, record, ctx))
            while not giving_back.done():
                try:
                    await asyncio.shield(giving_back)
                except asyncio.CancelledError:
                    continue  # the first cancellation is raised below, once it is done
            raise

    async def _give_back(
        self, claiming: asyncio.Future[bool], record: PendingApproval, ctx: ToolExecutionContext
    ) -> None:
        """Wait for a cancelled resume's claim, and give it back if it was won."""
        await asyncio.wait({claiming})
        if not claiming.cancelled() and claiming.exception() is None and claiming.result():
            await self._arelease(record, ctx)

    def _asking(self, record: PendingApproval) -> tuple[Callable[[], bool], list[bool]]:
        """The claim to hand a durable plan's engine, and a list that fills if it is made."""
        asked: list[bool] = []
        ledger = self.ledger

        def claim() -> bool:
            asked.append(True)
            return ledger.claim(record.approval_id)

        return claim, asked

    def _resumed_denial(
        self,
        record: PendingApproval,
        decision: ApprovalDecision,
        approval: ApprovalRecord,
        ctx: ToolExecutionContext,
        replayed: bool,
    ) -> ToolResult:
        """The failed result of a deferred call that was denied, with its own trace.

        ``replayed``: the claim was an earlier run's, which traced the denial; this
        one is neither announced nor traced again (its result still has a trace).
        """
        tool_call_id = record.call.id if record.call is not None else None
        call = self._steps.start(
            record.tool_name, ctx, tool_call_id, traced=not replayed, approval=approval
        )
        self._steps.learn_secrets(call, record.arguments)  # the reason may quote one
        try:
            return self._deny(call, decision, replayed)
        finally:
            if call.observer is not None:
                self._steps.observed(call)


def _resuming(
    record: PendingApproval, decision: ApprovalDecision
) -> Token[Resumption | None] | None:
    """Hand the answer to a tool that deferred its own call; the token to undo it with."""
    from toolcycle.approvals import Resumption, _resumption

    if record.request is None:
        return None
    return _resumption.set(Resumption(record.request, decision.reply, record.approval_id))


def _rerun(
    record: PendingApproval,
    ctx: ToolExecutionContext,
    timeout: float | None,
    idle_timeout: float | None,
) -> tuple[str, dict[str, Any], ToolExecutionContext, float | None, float | None, str | None]:
    """The runner's arguments for an approved call: its recorded tool, arguments and call id."""
    call_id = record.call.id if record.call is not None else None
    return record.tool_name, record.arguments, ctx, timeout, idle_timeout, call_id


def _answering(result: ToolResult, record: PendingApproval) -> ToolResult:
    """The resumed call's result, carrying the model's call it answers, if it came as one."""
    if record.call is None:
        return result
    return result.model_copy(update={"call": record.call})
