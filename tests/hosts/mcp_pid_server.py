"""A small SDK ``MCPServer`` for the plan host tests: it says which process it is.

Run this file to serve it over stdio.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("pids")


@server.tool()
def pids() -> dict[str, int]:
    """The server's process id and its parent's (the process that started it)."""
    return {"server": os.getpid(), "parent": os.getppid()}


if __name__ == "__main__":
    server.run("stdio")
