"""Checking an `McpServer`'s options when it is built, and settling the ones left open.

Every option is checked in the constructor, so that a mistake fails where it
is made rather than at the first plan, listing or call; the checks run in one
fixed order, so that of several mistakes the same one is always reported. The
protocol era and whether connections live on the caller's loop depend on the
endpoint when not given, and are settled here too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from toolcycle.errors import shown_value
from toolcycle.sources.mcp._content import checked_overrides
from toolcycle.sources.mcp._requests import McpRequests

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolCapability

__all__ = ["ServerOptions", "checked_options"]


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """The options of a server that were checked or settled."""

    protocol: Literal["legacy", "auto"]
    same_loop: bool
    handlers: McpRequests
    """The shared `McpRequests` with the server's own handlers put in."""
    capabilities: dict[str, ToolCapability | Mapping[str, Any]]


def checked_options(
    endpoint: Any,
    *,
    protocol: Literal["legacy", "auto"] | None,
    scope: str,
    timeout: float | None,
    startup_timeout: float,
    capabilities: Mapping[str, ToolCapability | Mapping[str, Any]] | None,
    meta: object,
    requests: McpRequests | None,
    **handlers: Any,
) -> ServerOptions:
    """Check the options of `McpServer` (see there), in order, and settle the open ones.

    ``handlers`` are the server's own (``on_elicit`` and the rest), put in over ``requests``.

    Raises:
        ValueError: an option has a wrong value, or two options do not go together.
        TypeError: an option has a wrong type (see also `McpRequests`).
    """
    if protocol not in (None, "legacy", "auto"):
        raise ValueError(f"protocol must be 'legacy' or 'auto', got {protocol!r}")
    merged = (requests or McpRequests()).with_overrides(**handlers)
    if getattr(endpoint, "direct", False):
        if protocol == "legacy":
            raise ValueError(
                "protocol='legacy' needs the initialize handshake, which an in-process "
                "server in mode='auto' does not do: pass mode='legacy' too, or drop protocol"
            )
        protocol = "auto"  # driven as the SDK's Client: the server's own era, always
    elif protocol is None:
        protocol = "legacy"  # stdio and HTTP: the handshake unless asked otherwise
    if scope not in ("plan", "runtime"):
        raise ValueError(f"scope must be 'plan' or 'runtime', got {scope!r}")
    if timeout is not None:
        _check_seconds("timeout", timeout, "positive seconds or None")
    _check_seconds("startup_timeout", startup_timeout, "positive seconds")
    same_loop = getattr(endpoint, "same_loop", False)
    if same_loop and scope == "runtime":
        raise ValueError(
            "same_loop=True needs scope='plan': a runtime-scope connection outlives "
            "the loop of any one caller"
        )
    if same_loop is None:  # in process and stdio, by default: the caller's loop when it can
        same_loop = scope == "plan"
    checked = checked_overrides(capabilities)
    if meta is not None and not callable(meta):
        raise TypeError(f"meta must be a callable or None, got {meta!r}")
    return ServerOptions(protocol, same_loop, merged, checked)


def _check_seconds(name: str, value: object, wanted: str) -> None:
    """Refuse ``value`` unless it is a finite number of seconds above 0.

    Checked when the server is built, as the runtime checks its own timeouts:
    inf, or an int too large to be a float, would only fail when a call's
    deadline is summed, long after the mistake.

    Raises:
        ValueError: naming ``name``.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= sys.float_info.max
    ):
        raise ValueError(f"{name} must be {wanted}, got {shown_value(value)}")
