"""Checks of the limits a host gives: seconds to wait, bytes to keep.

Each refuses a bad value where it is given, naming it, rather than where it is
first used, which may be a plan's end long after the mistake.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["MIN_RESULT_BYTES", "check_limits", "check_result_limit", "check_seconds"]

_LONGEST = sys.float_info.max


MIN_RESULT_BYTES = 100
"""The smallest ``max_result_bytes``: a cut output's marker alone takes up to 60 bytes."""


def check_result_limit(value: Any) -> int | None:
    """``max_result_bytes`` as given, once it is None or a whole number of bytes that fits."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value < MIN_RESULT_BYTES
    ):
        raise ValueError(
            f"max_result_bytes must be None (no limit) or a whole number of at least "
            f"{MIN_RESULT_BYTES} bytes, got {value!r}; a cut output ends with a marker that "
            "needs the room"
        )
    return value


def check_limits(timeout: float | None, idle_timeout: float | None) -> None:
    """Refuse a call's limits before anything starts; NaN, inf, 0 and "5" are not seconds.

    (No limit is None; an infinite deadline would overflow the clock's arithmetic.)
    """
    check_seconds("timeout", timeout)
    check_seconds("idle_timeout", idle_timeout)


def check_seconds(name: str, value: Any, *, zero: bool = False) -> float | None:
    """``value`` once it is a finite number of seconds above 0 (or 0 itself, with ``zero``).

    None stands for no limit; an infinite one would overflow the clock's arithmetic
    when a wait is finally made, long after the mistake.

    Raises:
        ValueError: naming ``name``, for anything else (NaN, inf, a negative number, text).
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (0 <= value if zero else 0 < value)
        or value > _LONGEST  # inf, and an int too large to be a float
    ):
        least = "seconds (0 or more)" if zero else "positive seconds"
        raise ValueError(f"{name} must be {least} or None for no limit, got {value!r}")
    return value
