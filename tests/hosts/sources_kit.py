"""What the source tests of both hosts share: an MCP stdio server, a skill with a script.

The MCP server says which process it is and which started it; the skill's script
says which process its reaper's parent is (the process that ran the tool's body).
"""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path

from toolcycle.sources.mcp import McpServer

HERE = Path(__file__).parent
WAIT = 10.0

SCRIPT = """\
#!/usr/bin/env python3
import os

with open(f"/proc/{os.getppid()}/stat") as stat:  # our parent is the reaper
    print(stat.read().rsplit(")", 1)[1].split()[1])
"""


def pid_server() -> McpServer:
    """The ``pids`` MCP server, started over stdio by whoever activates its tool."""
    return McpServer.stdio(sys.executable, [str(HERE / "mcp_pid_server.py")], name="pids")


def skill_folder(root: Path) -> Path:
    """A folder holding one skill, ``whose``, with a script that names the tool's process."""
    folder = root / "skills" / "whose"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: whose\ndescription: Says which process runs its script.\n---\n"
        "Run scripts/whose.py.\n"
    )
    script = folder / "scripts" / "whose.py"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    return root / "skills"


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie counts), waiting WAIT seconds at most.

    A pidfd becomes readable when its process ends, so this waits on an event, not a clock.
    """
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([handle], [], [], WAIT)
    finally:
        os.close(handle)
    return bool(ready)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs now."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
