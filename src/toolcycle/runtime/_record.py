"""One call's record: when and under which id it started, and what it gathers until its trace.

The recorder (`toolcycle.runtime._recorder`) opens a record when a call starts and
turns it into the call's trace when the call ends; the steps in between write to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.models import ApprovalRecord, GuardrailRecord, ProgressEvent, RetryAttempt

__all__ = ["CallRecord", "Extras", "format_call_id"]


class Extras:
    """The parts of a call's record that only the agent-loop features set.

    Kept apart so that a plain call's record and trace values stay as small as
    they were before those features: a call makes one only when it sets one.
    """

    __slots__ = ("attempts", "cache_hit", "guardrails", "host", "retry", "revealed")

    def __init__(self) -> None:
        self.retry = 0  # which model retry the call is (see runtime._retries)
        self.attempts: tuple[RetryAttempt, ...] | list[RetryAttempt] = ()  # a RetryPolicy's
        self.cache_hit = False  # answered from the result cache
        self.guardrails: tuple[GuardrailRecord, ...] = ()  # their decisions, in order
        self.revealed: tuple[str, ...] = ()  # the deferred tools a search or a call revealed
        # A hosted call's host name and where it ran, read at the call's end.
        self.host: Callable[[], tuple[str, str | None]] | None = None


class CallRecord:
    """When and under which id one call started; the runtime holds it until the trace."""

    __slots__ = (
        "_number",
        "_prefix",
        "abandoned",
        "active_at",
        "approval",
        "extras",
        "idle_limited",
        "plan_id",
        "progress",
        "progress_sinks",
        "scrub",
        "started",
        "t0",
        "tool_call_id",
        "tool_name",
        "uncut",
    )

    def __init__(
        self, tool_name: str, plan_id: str, prefix: str, number: int, started: float, t0: float
    ) -> None:
        self.tool_name = tool_name
        self.plan_id = plan_id
        # The call's id is written out only when read (most calls' traces never are).
        self._prefix = prefix
        self._number = number
        self.started = started
        self.t0 = t0
        self.progress = 0
        # Its latest progress report (time.monotonic()). Only an idle limit reads it,
        # through a Deadline that counts from its own start, made after this record,
        # so "never" (0.0) reads the same as the record's start and costs no clock.
        self.active_at = 0.0
        # Set once the arguments are known: removes their secrets from exported text.
        self.scrub: Callable[[str], str] | None = None
        self.approval: ApprovalRecord | None = None  # how its approval was decided
        self.abandoned = False  # its plan ended and stopped waiting for it
        self.tool_call_id: str | None = None  # the model's id, for a call from the agent loop
        # What only calls of the agent-loop features set (see `Extras`): one slot,
        # None on a plain call, so such a call neither stores nor traces them.
        self.extras: Extras | None = None

    @property
    def retry(self) -> int:
        """Which model retry the call is (see runtime._retries)."""
        extras = self.extras
        return 0 if extras is None else extras.retry

    @retry.setter
    def retry(self, value: int) -> None:
        self._extras().retry = value

    @property
    def attempts(self) -> tuple[RetryAttempt, ...] | list[RetryAttempt]:
        """Each attempt of a tool with a `RetryPolicy`, in order."""
        extras = self.extras
        return () if extras is None else extras.attempts

    @attempts.setter
    def attempts(self, value: tuple[RetryAttempt, ...] | list[RetryAttempt]) -> None:
        self._extras().attempts = value

    @property
    def cache_hit(self) -> bool:
        """The call was answered from the result cache."""
        extras = self.extras
        return False if extras is None else extras.cache_hit

    @cache_hit.setter
    def cache_hit(self, value: bool) -> None:
        self._extras().cache_hit = value

    @property
    def guardrails(self) -> tuple[GuardrailRecord, ...]:
        """The guardrails' decisions, in order."""
        extras = self.extras
        return () if extras is None else extras.guardrails

    @guardrails.setter
    def guardrails(self, value: tuple[GuardrailRecord, ...]) -> None:
        self._extras().guardrails = value

    @property
    def revealed(self) -> tuple[str, ...]:
        """The deferred tools a search or a call revealed."""
        extras = self.extras
        return () if extras is None else extras.revealed

    @revealed.setter
    def revealed(self, value: tuple[str, ...]) -> None:
        self._extras().revealed = value

    @property
    def host(self) -> Callable[[], tuple[str, str | None]] | None:
        """A hosted call's host name and where it ran, read at the call's end."""
        extras = self.extras
        return None if extras is None else extras.host

    @host.setter
    def host(self, value: Callable[[], tuple[str, str | None]] | None) -> None:
        self._extras().host = value

    def _extras(self) -> Extras:
        extras = self.extras
        if extras is None:
            extras = self.extras = Extras()
        return extras

    # Who else hears the call's progress reports (its span, a stream), besides the
    # plan's on_progress. Left unset on most calls, so a call pays nothing for it:
    # read it with getattr(record, "progress_sinks", ()).
    progress_sinks: tuple[Callable[[ProgressEvent], object], ...]
    # Set (to True) only on a call with an idle limit, which its progress restarts:
    # read it with getattr(record, "idle_limited", False).
    idle_limited: bool
    # Set (to None) only on an observed call. If max_result_bytes cuts its output, it
    # then holds the output before the cut and the limit, so that a recorded payload
    # can be redacted first and then cut. Read it with getattr(record, "uncut", None).
    uncut: tuple[Any, int] | None

    @property
    def call_id(self) -> str:
        """The call's id: unique within its recorder (see `TraceRecorder`)."""
        return format_call_id(self._prefix, self._number)

    def listen(self, sink: Callable[[ProgressEvent], object]) -> None:
        """Pass each later progress report of this call to ``sink`` too."""
        self.progress_sinks = (*getattr(self, "progress_sinks", ()), sink)


def format_call_id(prefix: str, number: int) -> str:
    """The call id of a record: the recorder's prefix and the call's number, in hex."""
    return f"{prefix}-{number:x}"
