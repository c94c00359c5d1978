"""Wording for a connection's errors: why a start failed, where an answer breaks the schema.

A `Connection` that fails to start names the exception that stopped it, which
the SDK's task groups wrap in exception groups; an answer that breaks the MCP
schema is named by the places pydantic found wrong. A call result may carry
secrets, so a broken one is named by its places and failed checks alone, never
by a value.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["describe", "leaf", "places", "problems"]


def leaf(exc: BaseException | None) -> BaseException | None:
    """The first real exception inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def problems(error: ValidationError, most: int = 3) -> str:
    """The first few places ``error`` names, as ``tools.0.inputSchema.type: message``."""
    found = error.errors(include_url=False)
    said = "; ".join(f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in found[:most])
    return said + (f" (and {len(found) - most} more)" if len(found) > most else "")


def describe(exc: BaseException | None) -> str:
    """Why a start failed: the exception's type and text, or what its absence means."""
    if exc is None:
        return "it closed the connection"
    if isinstance(exc, asyncio.CancelledError):
        return "it was cancelled"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def places(error: ValidationError, most: int = 3) -> str:
    """Where ``error`` found the answer wrong and which check failed, quoting no value."""
    found = error.errors(include_url=False, include_input=False, include_context=False)
    said = "; ".join(f"{'.'.join(map(str, item['loc']))} ({item['type']})" for item in found[:most])
    return said + (f" (and {len(found) - most} more)" if len(found) > most else "")
