"""Checks of the limits a host gives: seconds to wait, bytes to keep.

Each refuses a bad value where it is given, naming it, rather than where it is
first used, which may be a plan's end long after the mistake.
"""

from __future__ import annotations

from typing import Any

from toolcycle._bounds import check_seconds, shown_value

__all__ = ["MIN_RESULT_BYTES", "check_limits", "check_result_limit", "check_seconds"]


MIN_RESULT_BYTES = 100
"""The smallest ``max_result_bytes``: a cut output's marker alone takes up to 60 bytes."""


def check_result_limit(value: Any) -> int | None:
    """``max_result_bytes`` as given, once it is None or a whole number of bytes that fits."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value < MIN_RESULT_BYTES
    ):
        raise ValueError(
            f"max_result_bytes must be None (no limit) or a whole number of at least "
            f"{MIN_RESULT_BYTES} bytes, got {shown_value(value)}; a cut output ends with a "
            "marker that needs the room"
        )
    return value


def check_limits(timeout: float | None, idle_timeout: float | None) -> None:
    """Refuse a call's limits before anything starts; NaN, inf, 0 and "5" are not seconds.

    (No limit is None; an infinite deadline would overflow the clock's arithmetic.)
    """
    check_seconds("timeout", timeout)
    check_seconds("idle_timeout", idle_timeout)
