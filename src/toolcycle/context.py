"""The context of one plan, handed to every stage of every tool in it.

A `ToolExecutionContext` is runtime state, not wire data, so it is a slotted
dataclass rather than a pydantic model: it holds a lock, a cancellation token and
a growing list of changes. Tools read its flags and resources and record what
they change; the runtime marks it ended when the plan ends. What belongs to the
one call running in this thread or task (its changes, token and record) is kept
in that call's scope, `toolcycle._scope`, which the methods here read.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcycle._bounds import check_seconds
from toolcycle._history import ChangeHistory
from toolcycle._scope import _call_scope, _stamped
from toolcycle._value import fields_repr
from toolcycle.cancellation import CancellationToken
from toolcycle.models import BoundResource, Change, ProgressEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from toolcycle.approvals import ApprovalRule, Approver
    from toolcycle.durable import DurablePlan
    from toolcycle.rollback import Checkpoint, RollbackReport, UndoHandler

    ProgressReporter = Callable[[float, float | None, str | None], None]

__all__ = ["ToolExecutionContext"]

_log = logging.getLogger("toolcycle.context")


# Its own __init__ and __repr__ (init=False, repr=False), written as a dataclass would
# write them: a dataclass compiles the ones it generates from source at import, about
# 1 ms for this class's fields.
@dataclass(slots=True, eq=False, weakref_slot=True, init=False, repr=False)
class ToolExecutionContext:
    """Plan id, plan flags, bound resources, cancellation and recorded changes.

    Args:
        plan_id: identifies the plan; activations are cached per plan id.
        read_only: refuse tools whose capability says they write.
        requires_checkpoint: refuse tools that are not checkpointable.
        resources: resources bound for the plan's tools.
        cancellation_token: cancels every call of the plan; a new one by default (or None).
        metadata: free-form data for tools and listeners (never interpreted).
        timeout: seconds any one call of the plan may take (the smallest of
            this, the call's, the tool's and its source's limits applies).
        idle_timeout: seconds any one call of the plan may go without a
            progress report (each report restarts the count; ``timeout`` still
            caps the whole call).
        on_progress: called with a `ProgressEvent` for every progress report a
            tool of the plan makes. It may be called from any thread (an MCP
            server's reports arrive on the thread of its connection), so keep it
            short and thread-safe; an exception it raises is logged and ignored.
        approver: asked before each call that needs approval (see
            `toolcycle.approvals`); None asks nobody, and then only tools whose
            capability says ``requires_approval=True`` are refused.
        approval: which calls need approval: ``"writes"`` (the default),
            ``"all"``, ``"flagged"`` or a function of the descriptor; see
            `toolcycle.approvals.needs_approval`. Anything but ``"writes"``
            needs an approver.
        host: where the plan's tools run, a `toolcycle.PlanHost` (such as
            `toolcycle.hosts.ProcessHost`); None runs them in this process.
        durable: records each call of the plan so that a resumed plan gets
            completed calls' results back without running them again (see
            `toolcycle.durable`); None for a plan that is not durable.
    """

    plan_id: str
    read_only: bool = field(default=False, kw_only=True)
    requires_checkpoint: bool = field(default=False, kw_only=True)
    resources: tuple[BoundResource, ...] = field(default=(), kw_only=True)
    cancellation_token: CancellationToken = field(default_factory=CancellationToken, kw_only=True)
    metadata: dict[str, Any] = field(default_factory=dict, kw_only=True)
    on_progress: Callable[[ProgressEvent], object] | None = field(
        default=None, kw_only=True, repr=False
    )
    timeout: float | None = field(default=None, kw_only=True)
    idle_timeout: float | None = field(default=None, kw_only=True)
    approver: Approver | None = field(default=None, kw_only=True, repr=False)
    approval: ApprovalRule = field(default="writes", kw_only=True)
    # A PlanHost; typed loosely because the protocol's module builds on this one.
    host: Any = field(default=None, kw_only=True, repr=False)
    durable: DurablePlan | None = field(default=None, kw_only=True, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _history: ChangeHistory = field(init=False, repr=False)
    _ended: bool = field(default=False, init=False, repr=False)
    _revealed: frozenset[str] = field(default=frozenset(), init=False, repr=False)

    def __init__(
        self,
        plan_id: str,
        *,
        read_only: bool = False,
        requires_checkpoint: bool = False,
        resources: Iterable[BoundResource] = (),
        cancellation_token: CancellationToken | None = None,
        metadata: dict[str, Any] | None = None,
        on_progress: Callable[[ProgressEvent], object] | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        approver: Approver | None = None,
        approval: ApprovalRule = "writes",
        host: Any = None,
        durable: DurablePlan | None = None,
    ) -> None:
        self.plan_id = plan_id
        self.read_only = read_only
        self.requires_checkpoint = requires_checkpoint
        self.resources = resources  # type: ignore[assignment]  # a tuple once checked
        self.cancellation_token = (
            cancellation_token if cancellation_token is not None else CancellationToken()
        )
        self.metadata = metadata if metadata is not None else {}
        self.on_progress = on_progress
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.approver = approver
        self.approval = approval
        self.host = host
        self.durable = durable
        self._lock = threading.Lock()
        self._history = ChangeHistory(self._lock)
        self._ended = False
        self._revealed = frozenset()
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.plan_id, str) or not self.plan_id:
            raise ValueError(f"plan_id must be a non-empty string, got {self.plan_id!r}")
        for name in ("read_only", "requires_checkpoint"):
            flag = getattr(self, name)
            if not isinstance(flag, bool):  # "false" is truthy: the plan would mean the opposite
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        for name in ("timeout", "idle_timeout"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{name} must be a number of seconds or None, got {value!r}")
            check_seconds(name, value)  # refused as a call's limit is: inf, 0, NaN
        if not isinstance(self.cancellation_token, CancellationToken):
            raise TypeError(
                "cancellation_token must be a toolcycle.CancellationToken or None, "
                f"got {self.cancellation_token!r}"
            )
        if not isinstance(self.metadata, dict):
            raise TypeError(f"metadata must be a dict or None, got {self.metadata!r}")
        if self.on_progress is not None and not callable(self.on_progress):
            raise TypeError(f"on_progress must be callable or None, got {self.on_progress!r}")
        if not (callable(self.approval) or self.approval in ("writes", "all", "flagged")):
            raise ValueError(
                f"approval must be 'writes', 'all', 'flagged' or a function of the "
                f"descriptor, got {self.approval!r}"
            )
        if self.approval != "writes" and self.approver is None:
            raise ValueError(
                f"approval={self.approval!r} needs an approver; pass approver= as well"
            )
        if self.approver is not None and not callable(self.approver):
            raise TypeError(f"approver must be callable, got {self.approver!r}")
        resources: Iterable[BoundResource] = self.resources
        self.resources = tuple(resources)
        for resource in self.resources:
            if not isinstance(resource, BoundResource):
                raise TypeError(f"resources must be BoundResource objects, got {resource!r}")

    def __repr__(self) -> str:
        return fields_repr(self)

    @property
    def changes(self) -> tuple[Change, ...]:
        """Every change recorded in this plan so far, in the order recorded."""
        return self._history.changes()

    @property
    def call_token(self) -> CancellationToken:
        """The token of the call running in this thread or task.

        It is cancelled when the plan's token is, and also when the call's own
        timeout (or inactivity limit) passes, which the plan's token never is:
        a sync tool that polls this token stops when its call is given up on.
        Outside a call the runtime runs, it is the plan's token.
        """
        scope = _call_scope.get()
        if scope is None or scope.plan_token is not self.cancellation_token:
            return self.cancellation_token
        return scope.token()

    @property
    def call_id(self) -> str | None:
        """The runtime's id of this plan's call running in this thread or task; None outside one."""
        scope = _call_scope.get()
        if scope is None or scope.record is None or scope.plan_token is not self.cancellation_token:
            return None
        return scope.record.call_id

    @property
    def revealed_tools(self) -> frozenset[str]:
        """The deferred tools revealed in this plan: found by a search, or called by name.

        ``tool_definitions`` shows these in full for the rest of the plan.
        """
        return self._revealed

    def reveal_tools(self, names: Iterable[str]) -> None:
        """Show these deferred tools in full from now on in this plan.

        The runtime calls this for what ``search_tools`` finds and for a deferred
        tool a model calls by name; a host calls it for what a provider's own
        tool search reported.

        Raises:
            TypeError: ``names`` is a single string rather than a collection of names.
        """
        if isinstance(names, str):
            # A string is iterable too: it would reveal its letters, not the tool.
            raise TypeError(
                f"reveal_tools takes a collection of tool names, got the string {names!r}; "
                f"pass [{names!r}] to reveal that one tool"
            )
        added = frozenset(names)
        if not added <= self._revealed:
            with self._lock:  # a new set each time: readers never see one change
                self._revealed = self._revealed | added

    @property
    def ended(self) -> bool:
        """Whether the runtime has ended this plan; an ended plan runs nothing."""
        return self._ended

    def record_change(self, change: Change) -> None:
        """Append a change to the plan's record (and to the current call's result).

        Inside a call of this plan, a change whose ``tool_name`` or ``recorded_at``
        is empty gets the calling tool's name and the current UTC time, so every
        change in the record says who made it and when.
        """
        if not isinstance(change, Change):
            raise TypeError(f"record_change expects a Change, got {type(change).__name__}")
        scope = _call_scope.get()
        if scope is not None and scope.plan_token is self.cancellation_token:
            change = _stamped(change, scope.record)
        self._history.record(change)
        if scope is not None:
            scope.changes.append(change)

    def progress_reporter(self) -> ProgressReporter:
        """Return a function that reports progress of the call running now.

        Call it at the start of ``execute``; the function it returns may then be
        called from any thread or task, with ``(progress, total, message)``.
        Each report is counted in the call's trace and passed to ``on_progress``,
        and to whoever else follows the call (its span, a stream of the call). Its
        message is redacted like every message of the call.
        """
        scope = _call_scope.get()
        record = scope.record if scope is not None else None
        sinks = getattr(record, "progress_sinks", ())

        def report(progress: float, total: float | None = None, message: str | None = None) -> None:
            if record is not None:
                record.progress += 1
                record.active_at = time.monotonic()  # restarts an idle_timeout
            callback = self.on_progress
            if callback is None and not sinks:
                return
            scrub = getattr(record, "scrub", None)
            if message is not None and scrub is not None:
                message = scrub(message)  # it reaches spans and streams: the call's secrets not
            event = ProgressEvent(
                tool_name=record.tool_name if record is not None else "",
                plan_id=self.plan_id,
                call_id=record.call_id if record is not None else None,
                progress=progress,
                total=total,
                message=message,
            )
            for sink in sinks:
                try:
                    sink(event)
                except Exception:
                    _log.exception("a progress listener of plan %r raised", self.plan_id)
            if callback is None:
                return
            try:
                callback(event)
            except Exception:
                _log.exception("the on_progress callback of plan %r raised", self.plan_id)

        return report

    def progress_followed(self) -> bool:
        """Whether the progress of the call running now is followed as it happens.

        True when the plan has ``on_progress``, the call has another listener (its
        span, a stream of the call) or an idle limit that each report restarts.
        A host that can send progress back either as it comes or with the outcome
        (the latter costs less) asks this to choose.
        """
        if self.on_progress is not None or self.idle_timeout is not None:
            return True
        scope = _call_scope.get()
        record = scope.record if scope is not None else None
        return bool(getattr(record, "progress_sinks", ())) or getattr(record, "idle_limited", False)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress of the call running in this thread or task.

        Args:
            progress: how far the call is, in the tool's own unit.
            total: the value ``progress`` reaches at the end, when known.
            message: a short human-readable status.
        """
        self.progress_reporter()(progress, total, message)

    def checkpoint(self) -> Checkpoint:
        """Mark this point in the plan's history of changes, to roll back to later.

        The checkpoint stays valid for the whole plan: rollbacks (to it or to any
        other) never change which changes came after it.
        """
        from toolcycle.rollback import Checkpoint  # loaded with the first checkpoint

        return Checkpoint(plan_id=self.plan_id, index=self._history.recorded())

    def rollback(
        self,
        to: Checkpoint | None = None,
        *,
        handlers: Mapping[str, UndoHandler] | None = None,
    ) -> RollbackReport:
        """Undo the changes recorded after ``to`` (all of them by default), newest first.

        Each change is undone by the handler for its kind (the built-in file
        handlers, plus ``handlers``). The file handlers act only inside the
        workspaces this plan binds, found from each change's workspace name and
        relative target, never from a path stored in the change. Undone changes
        leave ``changes``; those that could not be undone (a conflict, no
        handler, an error) stay, in order, and are listed in the report with the
        reason. Changes recorded while it runs (a handler's compensating change,
        say) stay after them. Run inside a call of this plan, undone changes
        leave that call's result too. A checkpoint keeps its meaning across
        rollbacks: see `toolcycle.rollback.Checkpoint`.

        Raises:
            TypeError: ``to`` is not a `Checkpoint`, or a handler is a coroutine
                function (a rollback runs synchronously; nothing is undone).
            ValueError: ``to`` belongs to another plan or lies beyond the record.
            RuntimeError: an undo handler of this plan's rollback rolls it back again.
        """
        from toolcycle.rollback import _roll_back

        scope = _call_scope.get()
        if scope is not None and scope.plan_token is not self.cancellation_token:
            scope = None  # a call of another plan
        call_changes = scope.changes if scope is not None else None
        return _roll_back(self.plan_id, self._history, to, handlers, self.resources, call_changes)

    def resource(self, kind: str, name: str | None = None) -> BoundResource:
        """Return the bound resource of that kind (and name, when given).

        Raises:
            LookupError: when the plan binds no such resource, or several and no
                name was given.
        """
        matches = [r for r in self.resources if r.kind == kind and name in (None, r.name)]
        if len(matches) == 1:
            return matches[0]
        wanted = f"{kind!r}" + (f" named {name!r}" if name is not None else "")
        if not matches:
            raise LookupError(f"plan {self.plan_id!r} binds no resource of kind {wanted}")
        raise LookupError(
            f"plan {self.plan_id!r} binds {len(matches)} resources of kind {wanted}; pass a name"
        )
