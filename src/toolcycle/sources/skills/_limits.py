"""`SkillLimits`: the caps a skills source works within, shared by the source and its tools."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SkillLimits"]


@dataclass(frozen=True, slots=True)
class SkillLimits:
    """The caps a skills source works within.

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
