"""MCP and Skills sources in a plan host: their processes start in the host and end with the plan."""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sources_kit import alive, gone, pid_server, skill_folder

from toolcycle import ToolDescriptor, ToolRuntime
from toolcycle.hosts import ProcessHost
from toolcycle.sources.mcp import McpServer, McpTool
from toolcycle.sources.skills import SkillDirectory

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@pytest.fixture
def sources(tmp_path: Path) -> Iterator[ToolRuntime]:
    """A runtime with the ``pids`` MCP server and the ``whose`` skill (scripts on)."""
    with ToolRuntime() as runtime:
        runtime.register_source(pid_server())
        runtime.register_source(SkillDirectory(skill_folder(tmp_path), scripts=True))
        yield runtime


def test_an_mcp_servers_process_starts_in_the_host_and_ends_with_the_plan(
    sources: ToolRuntime, host: ProcessHost
) -> None:
    """The stdio server is a child of the plan's worker; ending the plan stops it."""
    with sources.plan(host=host) as ctx:
        first = sources.execute("pids", {}, ctx)
        again = sources.execute("pids", {}, ctx)
        worker = host.worker_pid(ctx)
    assert first.success, first.error
    pids = first.output
    assert pids["parent"] == worker != os.getpid()
    assert again.output == pids  # one server for the plan, started once
    assert gone(pids["server"])
    assert worker is not None and gone(worker)


def test_each_plan_starts_its_own_server_in_its_own_worker(
    sources: ToolRuntime, host: ProcessHost
) -> None:
    """Two plans at once: two workers, two servers; each ends with its plan."""
    with sources.plan(host=host) as one, sources.plan(host=host) as two:
        a = sources.execute("pids", {}, one).output
        b = sources.execute("pids", {}, two).output
        assert a["server"] != b["server"] and a["parent"] != b["parent"]
        assert alive(a["server"]) and alive(b["server"])
    assert gone(a["server"]) and gone(b["server"])


def test_a_skills_tools_run_in_the_host(sources: ToolRuntime, host: ProcessHost) -> None:
    """The skill's read tool and its script run in the plan's worker."""
    with sources.plan(host=host) as ctx:
        read = sources.execute("whose", {}, ctx)
        ran = sources.execute("whose.run_script", {"script": "scripts/whose.py"}, ctx)
        worker = host.worker_pid(ctx)
    assert read.success and "Run scripts/whose.py." in read.output["text"]
    assert ran.success, ran.error
    assert int(ran.output["stdout"]) == worker != os.getpid()


def test_an_mcp_tool_pickles_as_its_servers_recipe_and_shares_it_again() -> None:
    """Two tools of one server, pickled apart, come back with one server between them."""
    server = McpServer.stdio(sys.executable, ["-c", "pass"], name="s", scope="runtime")
    one = McpTool(server, ToolDescriptor(name="a"), "a")
    two = McpTool(server, ToolDescriptor(name="b"), "b")
    back_one, back_two = pickle.loads(pickle.dumps(one)), pickle.loads(pickle.dumps(two))
    assert back_one.server is back_two.server is not server
    assert back_one.server.scope == "plan"  # in a host, a connection per plan
    assert back_one.discover().name == "a" and back_two.remote_name == "b"
    server.close()
