"""`SkillLimits`: the caps a skills source works within, shared by the source and its tools."""

from __future__ import annotations

import math
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
    """

    max_front_matter_bytes: int = 256 * 1024
    max_file_bytes: int = 1024 * 1024
    max_files: int = 1000
    script_timeout: float = 60.0
    max_output_bytes: int = 256 * 1024

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
                if not number or not (0 < value < math.inf):
                    raise ValueError(
                        f"SkillLimits(script_timeout={value!r}): give the seconds a script "
                        "may run as a positive, finite number"
                    )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"SkillLimits({field.name}={value!r}): give a whole number, 0 or more"
                )
