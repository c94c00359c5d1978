"""The runtime's settings: the options a host may change after construction.

`Settings` is the one record of them that the façade and every part share, with
the runtime's closed state and the wait for its first ``close()`` to finish;
`Option` is the façade's public attribute that reads and writes one of them, and
`PlanOptions` types the keyword arguments of ``new_context``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Self, TypedDict, TypeVar, overload

from toolcycle.errors import ToolRuntimeError
from toolcycle.execution._portal import waker
from toolcycle.tracing import lifecycle_event

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from toolcycle.approvals import ApprovalRule, Approver
    from toolcycle.cancellation import CancellationToken
    from toolcycle.durable import DurablePlan
    from toolcycle.models import BoundResource, ProgressEvent
    from toolcycle.protocols import PlanHost
    from toolcycle.redaction import RedactionPolicy
    from toolcycle.retries import RetryPolicy
    from toolcycle.runtime._guardset import Guards

__all__ = ["Option", "Settings"]

T = TypeVar("T")


if TYPE_CHECKING:  # for annotations alone: a TypedDict class costs 0.3 ms to make at import

    class PlanOptions(TypedDict, total=False):
        """The keyword arguments of `ToolRuntime.new_context`, for ``plan`` and ``aplan``."""

        read_only: bool
        requires_checkpoint: bool
        resources: Iterable[BoundResource]
        cancellation_token: CancellationToken | None
        metadata: Mapping[str, Any] | None
        on_progress: Callable[[ProgressEvent], object] | None
        timeout: float | None
        idle_timeout: float | None
        approver: Approver | None
        approval: ApprovalRule
        host: PlanHost | None
        durable: DurablePlan | None


# The runtimes whose close() this thread (or work started from it) is running.
_closing_here: ContextVar[tuple[Settings, ...]] = ContextVar("toolcycle_closing", default=())


# A plain slotted class rather than a dataclass: a dataclass's generated methods
# cost about 0.5 ms each to make at import, which ``import toolcycle`` would pay.
class Settings:
    """The runtime's options that its public attributes may change after construction."""

    __slots__ = (
        "auto_activate",
        "closed",
        "closed_down",
        "guardrails",
        "lock",
        "loop",
        "max_result_bytes",
        "max_retries",
        "redaction",
        "retry",
        "strict_output",
        "wakers",
    )

    def __init__(
        self,
        strict_output: bool,
        max_result_bytes: int | None,
        redaction: RedactionPolicy | None,
        auto_activate: bool,
        max_retries: int = 1,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.strict_output = strict_output
        self.max_result_bytes = max_result_bytes
        self.redaction = redaction
        self.auto_activate = auto_activate
        # Defaults for tools registered later (see runtime._retries.resolve).
        self.max_retries = max_retries
        self.retry = retry
        self.closed = False
        self.closed_down = threading.Event()  # set once the first close() is over
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None  # that of an aclose() under way
        self.wakers: list[Callable[[], object]] = []  # of aclose() callers awaiting the first
        self.guardrails: Guards | None = None  # the runtime's own; set by the façade

    def check_open(self) -> None:
        """Raise `ToolRuntimeError` once the runtime is closed."""
        if self.closed:
            raise ToolRuntimeError("the runtime is closed")

    def close(self) -> bool:
        """Mark the runtime closed; True only for the first caller."""
        with self.lock:
            first, self.closed = not self.closed, True
        return first

    @contextlib.contextmanager
    def closing(self, loop: asyncio.AbstractEventLoop | None = None) -> Iterator[None]:
        """The first caller's close: work started in it is known as part of it.

        Args:
            loop: the event loop an ``aclose()`` runs on; None for ``close()``.
        """
        token = _closing_here.set((*_closing_here.get(), self))
        self.loop = loop
        try:
            yield
        finally:
            _closing_here.reset(token)
            with self.lock:
                self.loop = None
                self.closed_down.set()
                wakers, self.wakers = self.wakers, []
            for wake in wakers:
                wake()

    def closing_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether an ``aclose()`` that the code running here is not part of runs on ``loop``."""
        return self.loop is loop and self not in _closing_here.get()

    def wait_closed(self) -> None:
        """Wait until the first caller's close is over, unless this runs as part of it."""
        if self not in _closing_here.get() and not self.closed_down.is_set():
            lifecycle_event("runtime.awaiting_close")
            self.closed_down.wait()

    async def await_closed(self) -> None:
        """`wait_closed` for async code: the event loop stays free while it waits."""
        if self in _closing_here.get():
            return
        over, wake = waker(asyncio.get_running_loop())  # woken by the closing thread
        with self.lock:
            if self.closed_down.is_set():
                return
            self.wakers.append(wake)
        lifecycle_event("runtime.awaiting_close")
        try:
            await over
        finally:
            with self.lock:  # a cancelled waiter leaves nothing behind
                if wake in self.wakers:
                    self.wakers.remove(wake)


class Option(Generic[T]):
    """A public attribute of the façade that reads and writes one of its `Settings`.

    ``check`` refuses a bad value (raising) and returns the one to keep; it runs
    when the attribute is set, as the constructor runs it on its argument.
    """

    def __init__(self, name: str, check: Callable[[Any], T] | None = None) -> None:
        self._name = name
        self._check = check
        self.__doc__ = f"The ``{name}`` option (see `ToolRuntime`); may be changed."

    @overload
    def __get__(self, owner: None, kind: type) -> Self: ...
    @overload
    def __get__(self, owner: object, kind: type) -> T: ...
    def __get__(self, owner: object | None, kind: type) -> T | Self:
        if owner is None:
            return self
        value: T = getattr(owner._settings, self._name)  # type: ignore[attr-defined]
        return value

    def __set__(self, owner: object, value: T) -> None:
        if self._check is not None:
            value = self._check(value)
        setattr(owner._settings, self._name, value)  # type: ignore[attr-defined]
