"""`RetryPolicy`: how a call of an idempotent tool retries a transient fault.

Two kinds of retry exist, and this module is about the second:

- a *model retry* is a new call the model makes after a failure it can fix (an
  invalid input, a tool raising `toolcycle.ModelRetry`); ``max_retries`` bounds
  them per tool and plan;
- an *attempt* is one more run of the tool inside the same call, after a
  transient fault (a timeout of the tool's own request, a dropped connection).
  Only a tool whose capability says ``idempotent=True`` may have one, because
  an attempt that failed halfway may already have had its effect.

The runtime drives the attempts with tenacity (the ``retry`` extra), waiting
between them in a way that its cancellation and the call's time limit
interrupt at once; see the retries page of the docs.
"""

from __future__ import annotations

from typing import Any

from toolcycle._bounds import shown_value

__all__ = ["RetryPolicy"]

# Why a policy is refused for a tool that is not idempotent, wherever it is given.
_NOT_IDEMPOTENT = (
    "tool {name!r} has a retry policy but is not idempotent: a failed attempt may "
    "already have had its effect; mark it idempotent=True if running it twice "
    "is harmless, or drop retry="
)


class RetryPolicy:
    """Retry a call's transient faults: up to ``attempts`` runs, with a growing wait.

    The wait before attempt *n + 1* is ``backoff * 2 ** (n - 1)`` seconds, at most
    ``max_backoff``, plus a random share of ``jitter`` seconds, so that callers
    who failed together do not retry together.

    Never retried, whatever ``retry_on`` says: `toolcycle.ModelRetry`,
    `toolcycle.ToolFailed`, a cancellation, and the call running out of its own
    time. An attempt never starts once the call's time limit would pass during
    the wait; the call then fails with the last attempt's error.

    Args:
        attempts: runs in all, the first included (at least 1).
        backoff: seconds to wait before the second attempt (0 or more).
        max_backoff: the longest wait between two attempts, before jitter.
        jitter: up to this many random seconds added to each wait.
        retry_on: the exception classes that are transient for this tool.

    Raises:
        TypeError: ``attempts`` is not a whole number.
        ValueError: a number is out of range, or ``retry_on`` holds something
            that is not an exception class.
    """

    # A plain slotted class, not a dataclass: a dataclass's generated methods cost
    # about half a millisecond each to make, which ``import toolcycle`` would pay.
    __slots__ = ("attempts", "backoff", "jitter", "max_backoff", "retry_on")

    attempts: int
    backoff: float
    max_backoff: float
    jitter: float
    retry_on: tuple[type[Exception], ...]

    def __init__(
        self,
        attempts: int = 3,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        jitter: float = 0.1,
        retry_on: tuple[type[Exception], ...] = (TimeoutError, ConnectionError),
    ) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError(f"attempts must be a whole number, got {attempts!r}")
        if attempts < 1:
            raise ValueError(
                f"attempts must be 1 or more (the first run counts), got {shown_value(attempts)}"
            )
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff), ("jitter", jitter)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value < 1e9
            ):
                raise ValueError(f"{name} must be seconds, 0 or more, got {shown_value(value)}")
        if isinstance(retry_on, type):  # one class given alone: accept it as a tuple of one
            retry_on = (retry_on,)
        if not isinstance(retry_on, tuple) or not all(
            isinstance(kind, type) and issubclass(kind, Exception) for kind in retry_on
        ):
            raise ValueError(f"retry_on must be a tuple of Exception subclasses, got {retry_on!r}")
        fields: dict[str, Any] = {
            "attempts": attempts,
            "backoff": backoff,
            "max_backoff": max_backoff,
            "jitter": jitter,
            "retry_on": retry_on,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a RetryPolicy cannot be changed; make a new one (setting {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a RetryPolicy cannot be changed (deleting {name!r})")

    def _fields(self) -> tuple[Any, ...]:
        return (self.attempts, self.backoff, self.max_backoff, self.jitter, self.retry_on)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryPolicy):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        kinds = ", ".join(kind.__name__ for kind in self.retry_on)
        return (
            f"RetryPolicy(attempts={self.attempts}, backoff={self.backoff}, "
            f"max_backoff={self.max_backoff}, jitter={self.jitter}, retry_on=({kinds}))"
        )
