"""LangGraph's side of the approvals: pausing a run with ``interrupt()`` and resuming it.

A deferred call pauses the graph; ``Command(resume=decision)`` runs the node again, and
the tool resumes the record the graph showed through ``runtime.resume``. This module keeps
what has to hold across those runs of a node (see `GraphSteps`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from langchain_core.messages import ToolMessage
from langchain_core.runnables.config import var_child_runnable_config
from pydantic import ValidationError

from toolcycle import ApprovalDecision

try:
    from langgraph.errors import GraphInterrupt
    from langgraph.types import interrupt

    _interrupt: Callable[[Any], Any] | None = interrupt
    _PAUSES: tuple[type[BaseException], ...] = (GraphInterrupt,)
except ImportError:  # pragma: no cover - without LangGraph a deferred call stays pending
    _interrupt = None
    _PAUSES = ()

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle import PendingApproval

__all__ = ["GraphSteps", "Key", "Pause", "Resume", "graph_key"]


class Resume(NamedTuple):
    """A deferred call's record and the decision to resume it with."""

    pending: PendingApproval
    decision: ApprovalDecision | bool


class Pause(NamedTuple):
    """The graph pauses for a decision: raise ``error`` once the step's other calls answered."""

    error: BaseException


Key: TypeAlias = tuple[str, str, str]
"""A tool call in a LangGraph run: its thread, its task's namespace, its tool call id."""

REPLAYS = 128
"""How many answers, and answered steps, the tools of one plan keep for LangGraph's
re-runs of a step."""


class GraphSteps:
    """What the tools of one plan remember across LangGraph's re-runs of a step.

    A deferred call pauses the graph with ``interrupt()``; when the graph resumes,
    LangGraph runs the whole node again, and ``interrupt()`` returns the decision.
    LangGraph pairs decisions with a node's interrupts by the order they are raised,
    and the calls of one ``ToolNode`` step run concurrently, so two calls waiting at
    once could swap their decisions. So in one step (one graph task) only the first call
    that needs a decision asks for one; any other is told to call again. The record the
    graph showed is the one resumed, so the runtime's ledger claims the call a person
    saw. And in a step where a call asked, the other calls' answers are replayed when
    the node runs again rather than their tools run twice: the pause waits until the
    calls of its step that are running have answered (`enter`, `leave`, `await_others`),
    because LangGraph abandons them when the node raises, and a sync tool's body that
    was cancelled mid-run still finishes on its thread, unremembered.

    What it keeps is bounded. A step whose asker waits for a decision is kept (its
    asker, the record shown) until the decision comes: LangGraph may resume it at any
    time, and forgetting it could let another call of the step take its decision. So
    a paused step that is never resumed stays as long as the tools, which serve one
    plan. Once resumed, the step moves to the answered steps, of which the latest
    `REPLAYS` are kept, as are the latest `REPLAYS` answers (only those replay).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running: dict[tuple[str, str], int] = {}
        self._waiting: dict[tuple[str, str], list[asyncio.Future[None]]] = {}
        self._askers: dict[tuple[str, str], str] = {}  # steps waiting for a decision
        self._answered: OrderedDict[tuple[str, str], str] = OrderedDict()  # and resumed
        self._shown: dict[Key, PendingApproval] = {}
        self._answers: OrderedDict[Key, ToolMessage] = OrderedDict()

    def _asker(self, step: tuple[str, str]) -> str | None:
        """The call that asked in this step, waiting or answered; the caller holds the lock."""
        asker = self._askers.get(step)
        return asker if asker is not None else self._answered.get(step)

    def replay(self, key: Key | None) -> ToolMessage | None:
        """The answer an earlier run of this call's step gave, if that step asked a person."""
        if key is None:
            return None
        with self._lock:
            asked = self._asker(key[:2]) is not None
            earlier = self._answers.get(key) if asked else None
        return None if earlier is None else earlier.model_copy()

    def remember(self, key: Key | None, answer: Any) -> Any:
        """Keep ``answer`` for a re-run of its step (the latest `REPLAYS` of them); return it."""
        if key is not None and isinstance(answer, ToolMessage):
            with self._lock:
                self._answers[key] = answer
                if len(self._answers) > REPLAYS:
                    self._answers.popitem(last=False)
        return answer

    def enter(self, key: Key | None) -> None:
        """Count a call of a graph step as running (see `leave`)."""
        if key is not None:
            with self._lock:
                self._running[key[:2]] = self._running.get(key[:2], 0) + 1

    def leave(self, key: Key | None) -> None:
        """The call answered (or failed): wake a pause that waits for it."""
        if key is None:
            return
        step = key[:2]
        with self._lock:
            left = self._running[step] - 1
            if left:
                self._running[step] = left
            else:
                del self._running[step]
            self._changed.notify_all()
            woken = self._waiting.pop(step, []) if left <= 1 else []
        for waiter in woken:
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    def wait_others(self, key: Key) -> None:
        """From a sync call about to pause: until the other running calls of its step answer.

        The calls of a sync ``ToolNode`` step run on an executor's threads; one not
        started yet is not waited for, and runs to its end when the executor closes.
        """
        step = key[:2]
        with self._changed:
            self._changed.wait_for(lambda: self._running.get(step, 0) <= 1)

    async def await_others(self, key: Key) -> None:
        """Async twin of `wait_others`, for calls that run as tasks of one loop."""
        # The step's calls were all scheduled before this one ran: one turn of the
        # loop lets each take its first step, where it enters, before they are counted.
        await asyncio.sleep(0)
        step = key[:2]
        with self._lock:
            if self._running.get(step, 0) <= 1:
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(step, []).append(waiter)
        await waiter

    def settle(self, key: Key | None, pending: PendingApproval) -> Resume | Pause | str | None:
        """The record and decision to resume with, or the pause that asks for them.

        Returns the error text for a call that may not ask in this step, and None
        outside a graph run (or without a tool call id), where nothing can pause.
        A `Pause` is for the caller to raise once the step's other calls answered.
        """
        if key is None or _interrupt is None:
            return None
        step = key[:2]
        with self._lock:
            asker = self._asker(step)
            if asker is None:
                self._askers[step] = key[2]
            elif asker != key[2]:
                return (
                    "this call needs approval while another call of the same step waits "
                    "for one; call it again once that one is answered"
                )
            shown = self._shown.get(key)
            if shown is None or shown.fingerprint != pending.fingerprint:
                shown = self._shown[key] = pending
        try:
            answer = _interrupt(_approval_request(shown))  # pauses the graph the first time
        except _PAUSES as pause:
            return Pause(pause)
        with self._lock:
            self._shown.pop(key, None)
            # Decided: kept (among the latest) for the rest of the step's re-run.
            self._answered[step] = self._askers.pop(step, key[2])
            self._answered.move_to_end(step)
            if len(self._answered) > REPLAYS:
                self._answered.popitem(last=False)
        return Resume(shown, _decision(answer))


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # its pause may have been cancelled meanwhile
        waiter.set_result(None)


def graph_key(tool_call_id: str | None) -> Key | None:
    """The key of this tool call in the LangGraph run it is part of; None outside one."""
    config = var_child_runnable_config.get()
    if tool_call_id is None or not config:
        return None
    configurable = config.get("configurable") or {}
    namespace = configurable.get("checkpoint_ns")
    if not namespace:  # a graph's task always has one; a plain invoke has none
        return None
    return str(configurable.get("thread_id")), str(namespace), tool_call_id


def _approval_request(pending: PendingApproval) -> dict[str, Any]:
    """What the paused graph shows its client: plain JSON, secrets masked."""
    call = pending.call
    return {
        "type": "toolcycle_approval",
        "tool_name": pending.tool_name,
        "arguments": call.arguments if call is not None else {},
        "fingerprint": pending.fingerprint,
        "reason": pending.reason,
        "plan_id": pending.plan_id,
        "tool_call_id": call.id if call is not None else None,
    }


def _decision(answer: object) -> ApprovalDecision | bool:
    """A resume value as a decision; anything else denies the call (fail closed)."""
    if isinstance(answer, ApprovalDecision | bool):
        return answer
    if isinstance(answer, dict):
        try:
            return ApprovalDecision.model_validate(answer)
        except ValidationError:
            pass
    return ApprovalDecision.deny(
        f"the run was resumed with {type(answer).__name__}, not an approval decision "
        "(a bool, an ApprovalDecision or its dict); the call is denied"
    )
