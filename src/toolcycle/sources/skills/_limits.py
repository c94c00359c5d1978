"""`SkillLimits`: the caps a skills source works within, shared by the source and its tools."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields

__all__ = ["SkillLimits"]


@dataclass(frozen=True, slots=True)
class SkillLimits:
    """The caps a skills source works within.

    Each cap is a whole number, 0 or more; ``script_timeout`` is a positive,
    finite number of seconds.

    Attributes:
        max_front_matter_bytes: how far discovery reads looking for the line
            that closes the front matter.
        max_file_bytes: the largest bundled file a call may read.
        max_files: how many bundled files activation lists.
        script_timeout: seconds a script may run (the ``timeout`` of each
            ``run_script`` tool; a smaller ``timeout=`` of a call wins).
        max_output_bytes: how much of a script's stdout, and of its stderr, is kept.
        max_folders: how many folders below the top a recursive `SkillDirectory`
            scan visits (each path to a folder counts, links included); past it the
            scan stops with a ``scan-truncated`` report (an error, raised, for a
            ``strict`` directory), so that a link to ``/`` in an untrusted folder
            cannot make it walk the whole disk.
    """

    max_front_matter_bytes: int = 256 * 1024
    max_file_bytes: int = 1024 * 1024
    max_files: int = 1000
    script_timeout: float = 60.0
    max_output_bytes: int = 256 * 1024
    max_folders: int = 10_000

    def __post_init__(self) -> None:
        """Refuse caps that mean nothing, naming the field.

        Raises:
            ValueError: a cap is negative or not a whole number, or
                ``script_timeout`` is not a positive, finite number.
        """
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "script_timeout":
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                # An int past the largest float is finite, but overflows a deadline.
                if not number or not (0 < value <= sys.float_info.max):
                    raise ValueError(
                        f"SkillLimits(script_timeout={_shown(value)}): give the seconds a script "
                        "may run as a positive, finite number"
                    )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"SkillLimits({field.name}={_shown(value)}): give a whole number, 0 or more"
                )


def _shown(value: object) -> str:
    """``repr(value)``, or the size of an int too long for Python to print."""
    if isinstance(value, int) and value.bit_length() > 256:
        sign = "a negative" if value < 0 else "an"
        return f"<{sign} int of about {math.floor(math.log10(abs(value))) + 1:,} digits>"
    return repr(value)
