"""A plan's record of changes, each numbered by its place in the plan's history.

Every recorded change gets the next number, and numbers are never reused: a
rollback removes the changes it undid but leaves the others, and those recorded
meanwhile, with the numbers they had. A checkpoint keeps the number the next
change would get, so it names the same point of the history whatever rollbacks
ran since; ``toolcycle.rollback`` undoes the changes numbered from it on.
"""

from __future__ import annotations

import bisect
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcycle.models import Change

__all__ = ["ChangeHistory"]


class ChangeHistory:
    """The changes a plan recorded and not undone, oldest first, with their numbers.

    Args:
        lock: guards the record; the plan's context shares its own.
    """

    __slots__ = ("_changes", "_lock", "_numbers", "_recorded", "rolling_back", "undoing")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._changes: list[Change] = []
        self._numbers: list[int] = []  # ascending: appended in order, removed only
        self._recorded = 0
        # One rollback at a time, so that none undoes a change another is undoing.
        # Reentrant, so that a handler rolling back its own plan is refused, not stuck.
        self.undoing = threading.RLock()
        self.rolling_back = False

    def record(self, change: Change) -> None:
        """Append ``change`` with the next number."""
        with self._lock:
            self._changes.append(change)
            self._numbers.append(self._recorded)
            self._recorded += 1

    def changes(self) -> tuple[Change, ...]:
        """The changes in the record, oldest first."""
        with self._lock:
            return tuple(self._changes)

    def recorded(self) -> int:
        """How many changes were ever recorded: the number the next one will get."""
        with self._lock:
            return self._recorded

    def since(self, number: int) -> tuple[list[int], list[Change]]:
        """The numbers and changes in the record numbered ``number`` or more, oldest first.

        Raises:
            ValueError: ``number`` is negative or no change has reached it yet.
        """
        with self._lock:
            if not 0 <= number <= self._recorded:
                raise ValueError(
                    f"checkpoint index {number} is beyond the {self._recorded} changes this "
                    "plan has recorded"
                )
            start = bisect.bisect_left(self._numbers, number)
            return self._numbers[start:], self._changes[start:]

    def forget(self, numbers: Iterable[int], also: list[Change] | None = None) -> None:
        """Remove the changes with these numbers; the others keep theirs.

        Args:
            numbers: the numbers of the changes to remove.
            also: another list to remove the same change objects from (the
                changes of the call running the rollback).
        """
        gone = set(numbers)
        if not gone:
            return
        with self._lock:
            start = bisect.bisect_left(self._numbers, min(gone))
            tail = list(zip(self._numbers[start:], self._changes[start:], strict=True))
            self._numbers[start:] = [number for number, _ in tail if number not in gone]
            self._changes[start:] = [change for number, change in tail if number not in gone]
        if also:
            ids = {id(change) for number, change in tail if number in gone}
            # From the end, one item at a time: the call may still be appending from
            # another thread, and an append never moves the items before it.
            for at in range(len(also) - 1, -1, -1):
                if id(also[at]) in ids:
                    del also[at]
