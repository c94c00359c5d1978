"""The scope of the call running in this thread or task.

The runtime opens a `_CallScope` around each call it runs (`_start_collecting`)
and keeps it in a context variable, so that whatever the tool does through its
`ToolExecutionContext` lands with that call even when calls of a plan overlap:
the changes it records (stamped with the call's tool and time), its progress
reports (through the call's record) and its own cancellation token, a child of
the plan's that the runtime also cancels when the call's time runs out. The
context reads the scope; only the runtime opens and closes it.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from toolcycle.cancellation import CancellationToken

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.models import Change

__all__: list[str] = []


def _stamped(change: Change, record: _CallRecord | None) -> Change:
    """``change`` with an empty tool name and time filled from the running call."""
    update: dict[str, str] = {}
    if not change.tool_name and record is not None and record.tool_name:
        update["tool_name"] = record.tool_name
    if not change.recorded_at:
        update["recorded_at"] = datetime.now(UTC).isoformat(timespec="microseconds")
    return change.model_copy(update=update) if update else change


class _CallRecord(Protocol):
    """The part of the runtime's record of a call that progress reports update."""

    tool_name: str
    progress: int
    active_at: float

    @property
    def call_id(self) -> str:
        """The call's id."""
        ...


class _CallScope:
    """What the call running in this thread or task collects, and its own token.

    The call's token is made on first use (most tools never ask for it): a
    child of the plan's token that the runtime also cancels when the call times
    out. Once the call is over it is unlinked from the plan's token, so a plan
    with many calls does not pile up callbacks.
    """

    __slots__ = ("_reason", "_token", "_unlink", "changes", "closed", "plan_token", "record")

    def __init__(self, record: _CallRecord | None, plan_token: CancellationToken) -> None:
        self.changes: list[Change] = []
        self.record = record
        self.plan_token = plan_token
        self.closed = False
        self._token: CancellationToken | None = None
        self._reason: str | None = None
        self._unlink: Callable[[], None] | None = None

    def token(self) -> CancellationToken:
        """The call's token, made now if this is the first time it is asked for."""
        with _scope_lock:
            if self._token is not None:
                return self._token
            if self.closed and self._reason is None:
                return self.plan_token
            token = CancellationToken()
            if self._reason is not None:
                token.cancel(self._reason)
            else:
                plan = self.plan_token
                self._unlink = plan.on_cancel(lambda: token.cancel(plan.reason))
            self._token = token
            if self.closed:  # close() ran meanwhile and may not have seen the token
                self._drop_link()
            return token

    def cancel(self, reason: str) -> None:
        """Cancel the call's token (now, or at its making), not the plan's."""
        with _scope_lock:
            self._reason = reason
            token = self._token
        if token is not None:
            token.cancel(reason)

    def close(self) -> None:
        """The call is over: stop following the plan's token.

        Lock-free for the common call that never asked for its token. ``closed``
        is written before ``_token`` is read here, and ``token()`` writes
        ``_token`` before it reads ``closed``, so at least one of the two sees
        the other and drops the link.
        """
        self.closed = True
        if self._token is not None:
            with _scope_lock:
                self._drop_link()

    def _drop_link(self) -> None:
        """Unregister from the plan's token; the caller holds ``_scope_lock``."""
        unlink, self._unlink = self._unlink, None
        if unlink is not None:
            unlink()


# One lock for every call's token: it is taken only when a tool asks for its
# token, a call times out, or a call that made its token ends, so it is never
# contended on the common path.
_scope_lock = threading.Lock()

# The scope of the call running in this thread or task, so that each ToolResult
# lists exactly its own changes even when calls of a plan overlap.
_call_scope: ContextVar[_CallScope | None] = ContextVar("toolcycle_call_scope", default=None)


# A protocol, not ToolExecutionContext: toolcycle.context imports this module.
class _PlanContext(Protocol):
    """The part of a plan's context that a call's scope follows."""

    @property
    def cancellation_token(self) -> CancellationToken:
        """The plan's token."""
        ...


def _start_collecting(
    ctx: _PlanContext, record: _CallRecord | None = None
) -> tuple[_CallScope, Token[_CallScope | None]]:
    """Start collecting the changes and progress of this thread or task's current call."""
    scope = _CallScope(record, ctx.cancellation_token)
    return scope, _call_scope.set(scope)


def _stop_collecting(scope: _CallScope, token: Token[_CallScope | None]) -> None:
    """Stop the collection started by `_start_collecting`."""
    scope.close()
    # Not contextlib.suppress: this runs on every call, and a try costs nothing
    # unless it catches.
    try:
        _call_scope.reset(token)
    except ValueError:  # a coroutine closed outside its task's context: nothing to reset
        return
