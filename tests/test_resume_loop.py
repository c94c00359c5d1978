"""aresume claims in a shared ledger off the caller's event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from toolcycle import ApprovalDecision, ToolResult, ToolRuntime, tool
from toolcycle.approvals import MemoryApprovalLedger

WAIT = 5.0

ran: list[str] = []


@tool
def send(to: str) -> str:
    """Send a message (a tool that writes)."""
    ran.append(to)
    return f"sent to {to}"


class LoopBoundLedger(MemoryApprovalLedger):
    """A ledger whose claim ends only once the event loop has run a callback (or ``gate``).

    A claim made on the loop's own thread keeps the loop from running the callback.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop = loop
        self.claims: list[bool] = []
        self.released: list[str] = []
        self.releasing_threads: list[int] = []
        self.entered = threading.Event()
        self.claimed = threading.Event()  # set once a claim has been made
        self.gate: threading.Event | None = None

    def claim(self, approval_id: str) -> bool:
        gate = threading.Event()
        if self.gate is None:
            self.loop.call_soon_threadsafe(gate.set)
        else:
            gate = self.gate
        self.entered.set()
        self.claims.append(gate.wait(WAIT))
        try:
            return super().claim(approval_id)
        finally:
            self.claimed.set()

    def release(self, approval_id: str) -> None:
        self.released.append(approval_id)
        self.releasing_threads.append(threading.get_ident())
        super().release(approval_id)


def _deferred(runtime: ToolRuntime) -> ToolResult:
    with runtime.plan(approver=lambda request: ApprovalDecision.defer("ask a person")) as ctx:
        return runtime.execute("send", {"to": "ann"}, ctx)


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    ran.clear()


async def test_aresume_claims_in_the_ledger_while_the_event_loop_keeps_running() -> None:
    """A ledger's claim (a database, say) runs off the loop; the call then runs once."""
    ledger = LoopBoundLedger(asyncio.get_running_loop())
    with ToolRuntime(approval_ledger=ledger) as runtime:
        runtime.register(send)
        pending = _deferred(runtime).pending
        assert pending is not None
        async with runtime.aplan() as ctx:
            result = await asyncio.wait_for(runtime.aresume(pending, True, ctx), WAIT)
    assert ledger.claims == [True]  # the loop ran the callback while the claim waited
    assert result.output == "sent to ann" and ran == ["ann"]


async def test_an_aresume_cancelled_during_its_claim_gives_the_claim_back() -> None:
    """Cancelled while the ledger claims, the resume runs nothing and stays resumable."""
    loop = asyncio.get_running_loop()
    ledger = LoopBoundLedger(loop)
    ledger.gate = threading.Event()
    with ToolRuntime(approval_ledger=ledger) as runtime:
        runtime.register(send)
        pending = _deferred(runtime).pending
        assert pending is not None
        async with runtime.aplan() as ctx:
            task = asyncio.ensure_future(runtime.aresume(pending, True, ctx))
            assert await loop.run_in_executor(None, ledger.entered.wait, WAIT)
            task.cancel()
            ledger.gate.set()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, WAIT)
            assert ledger.released == [pending.approval_id] and ran == []
            again = await asyncio.wait_for(runtime.aresume(pending, True, ctx), WAIT)
    assert again.output == "sent to ann" and ran == ["ann"]


async def test_an_aresume_refused_after_its_claim_gives_it_back_off_the_event_loop() -> None:
    """A plan cancelled during the claim: the shared ledger's release runs on a worker thread."""
    from toolcycle import ToolCancelledError

    loop = asyncio.get_running_loop()
    ledger = LoopBoundLedger(loop)
    ledger.gate = threading.Event()
    with ToolRuntime(approval_ledger=ledger) as runtime:
        runtime.register(send)
        pending = _deferred(runtime).pending
        assert pending is not None
        async with runtime.aplan() as ctx:
            task = asyncio.ensure_future(runtime.aresume(pending, True, ctx))
            assert await loop.run_in_executor(None, ledger.entered.wait, WAIT)
            ctx.cancellation_token.cancel()
            ledger.gate.set()
            with pytest.raises(ToolCancelledError):
                await asyncio.wait_for(task, WAIT)
    assert ledger.released == [pending.approval_id] and ran == []
    assert threading.get_ident() not in ledger.releasing_threads


async def test_a_second_cancellation_while_a_claim_is_given_back_still_gives_it_back() -> None:
    """Cancelled again while it waits to give its claim back, the resume still gives it back."""
    loop = asyncio.get_running_loop()
    ledger = LoopBoundLedger(loop)
    ledger.gate = threading.Event()
    with ToolRuntime(approval_ledger=ledger) as runtime:
        runtime.register(send)
        pending = _deferred(runtime).pending
        assert pending is not None
        async with runtime.aplan() as ctx:
            task = asyncio.ensure_future(runtime.aresume(pending, True, ctx))
            assert await loop.run_in_executor(None, ledger.entered.wait, WAIT)
            task.cancel()
            # One turn of the loop: the task takes the first cancellation and starts
            # waiting for the claim, which the gate still holds.
            await asyncio.sleep(0)
            assert not task.done()
            task.cancel()
            ledger.gate.set()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, WAIT)
            assert await loop.run_in_executor(None, ledger.claimed.wait, WAIT)
            assert ledger.claims == [True]
            assert ledger.released == [pending.approval_id] and ran == []
            again = await asyncio.wait_for(runtime.aresume(pending, True, ctx), WAIT)
    assert again.output == "sent to ann" and ran == ["ann"]
