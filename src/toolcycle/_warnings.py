"""Warnings that point at the line of the library's caller, not at the library.

``warnings.warn`` blames the frame ``stacklevel`` levels up, and a fixed level
is wrong as soon as a public entry point reaches the warning by another path
(``register`` of a plain function goes through more frames than ``@tool``).
`warn_at_caller` counts instead: it blames the first frame whose code is not
in the ``toolcycle`` package, on every Python the project supports (3.12's
``skip_file_prefixes`` does the same, but 3.11 lacks it).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["PACKAGE_PREFIX", "warn_at_caller"]

PACKAGE_PREFIX = os.path.dirname(__file__) + os.sep
"""The package's folder: a frame whose file is inside it is the library's own."""


def warn_at_caller(warning: Warning) -> None:
    """Issue ``warning`` at the first frame outside the package, the user's line."""
    level = 1
    frame = sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(PACKAGE_PREFIX):
        frame = frame.f_back
        level += 1
    warnings.warn(warning, stacklevel=level)
