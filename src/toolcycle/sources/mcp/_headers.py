"""Which tools have arguments the SDK mirrors into ``Mcp-Param-*`` HTTP headers.

On a 2026-07-28 streamable HTTP connection the SDK copies each argument whose
input-schema property carries ``x-mcp-header`` into an ``Mcp-Param-<token>``
header of the ``tools/call`` request, and a server checks that the header is
there. The SDK learns which arguments to copy from a ``tools/list`` answered on
the same session. toolcycle lists a server's tools once, at registration, on a
connection of its own, while calls go over each plan's connection; so a plan's
connection lists the tools once before the first call of such a tool (see
`Connection.call`). Servers with no such tool pay nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

if TYPE_CHECKING:
    from collections.abc import Iterable

    import mcp_types

__all__ = ["header_tools"]


def header_tools(listed: Iterable[mcp_types.Tool]) -> frozenset[str]:
    """The names of the listed tools with at least one valid ``x-mcp-header`` argument.

    A tool whose annotations are invalid is left out: the SDK drops it from a
    2026-07-28 listing, and copies nothing for it.
    """
    return frozenset(
        tool.name
        for tool in listed
        if find_invalid_x_mcp_header(tool.input_schema) is None
        and x_mcp_header_map(tool.input_schema)
    )
