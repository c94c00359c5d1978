"""What every layer's check of a numeric setting shares: seconds, and the refused value's text.

Each setting is checked where it is given, by the module that owns it; these are
the pieces those checks have in common, so that a plan's timeout and a call's are
refused alike, and so that no message fails while naming the value it refuses
(`shown_value` is the public ``toolcycle.errors.shown_value``, which sources and
hosts use too).
"""

from __future__ import annotations

import sys
from typing import Any

from toolcycle.errors import shown_value

__all__ = ["LONGEST_SECONDS", "check_seconds", "shown_value"]

LONGEST_SECONDS = sys.float_info.max
"""The most seconds a limit may be: any more is no float, and overflows a deadline's sum."""


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
        or value > LONGEST_SECONDS  # inf, and an int too large to be a float
    ):
        least = "seconds (0 or more)" if zero else "positive seconds"
        raise ValueError(f"{name} must be {least} or None for no limit, got {shown_value(value)}")
    return value
