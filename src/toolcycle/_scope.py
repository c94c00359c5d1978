"""The scope of the call running in a thread or task: its changes and its own token.

The pipeline opens one around every call (`toolcycle.context._start_collecting`),
so that each result lists exactly its own changes when calls of a plan overlap,
and a tool can ask for a token that its call's time limit cancels.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from toolcycle.cancellation import CancellationToken

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.models import Change

__all__ = ["CallRecord", "CallScope", "call_scope"]


class CallRecord(Protocol):
    """The part of the runtime's record of a call that progress reports update."""

    tool_name: str
    progress: int
    active_at: float

    @property
    def call_id(self) -> str:
        """The call's id."""
        ...


class CallScope:
    """What the call running in this thread or task collects, and its own token.

    The call's token is made on first use (most tools never ask for it): a
    child of the plan's token that the runtime also cancels when the call times
    out. Once the call is over it is unlinked from the plan's token, so a plan
    with many calls does not pile up callbacks.
    """

    __slots__ = ("_reason", "_token", "_unlink", "changes", "closed", "plan_token", "record")

    def __init__(self, record: CallRecord | None, plan_token: CancellationToken) -> None:
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
call_scope: ContextVar[CallScope | None] = ContextVar("toolcyclecall_scope", default=None)
