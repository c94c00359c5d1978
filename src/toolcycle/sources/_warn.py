"""Warnings of the sources, issued at the line of whoever called into toolcycle.

A source's warning can be reached from the user's code directly (``scan()``)
or through the runtime (``register_source``), so no fixed ``stacklevel`` is
right; this counts frames up to the first one outside the ``toolcycle``
package. The core has the same helper; the sources keep their own, as a
third party's source would, so that they use only the core's public names.
"""

from __future__ import annotations

import os
import sys
import warnings

import toolcycle

__all__ = ["warn_at_caller"]

_PACKAGE = os.path.dirname(toolcycle.__file__) + os.sep


def warn_at_caller(warning: Warning) -> None:
    """Issue ``warning`` at the first frame outside the package, the user's line."""
    level = 1
    frame = sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(warning, stacklevel=level)
