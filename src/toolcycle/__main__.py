"""``python -m toolcycle``: the ``toolcycle`` command line."""

from __future__ import annotations

import sys

from toolcycle.cli import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover - run as a process by the tests
    sys.exit(main())
