"""Tools for the smoke suite and the command line page: `--module tests/smoke/smoke_tools.py`."""

from __future__ import annotations

from toolcycle import tool


@tool(writes=False, checkpointable=True)
def greet(name: str) -> str:
    """Greet someone by name.

    Args:
        name: who to greet.
    """
    return f"Hello, {name}!"


@tool(writes=False, checkpointable=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b
