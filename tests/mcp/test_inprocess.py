"""The MCP source against an in-process server: discovery, calls, sharing, cancellation."""

from __future__ import annotations

import asyncio
import functools
import gc
import subprocess
import sys
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from toolcycle import (
    ProgressEvent,
    ToolCancelledError,
    ToolCapability,
    ToolCheckpointRequiredError,
    ToolInstance,
    ToolRuntime,
    ToolRuntimeError,
    ToolSkippedWarning,
)
from toolcycle.sources.mcp import McpCallError, McpServer, McpServerError, McpTool
from toolcycle.testing import FakeTool

from .conftest import VALID_TOOLS, at_once, cancel_a_slow_call, register, wait_for
from .servers import PNG, WAV, build


def test_register_source_skips_each_tool_with_an_unusable_schema_and_names_it(
    runtime, in_process
) -> None:
    """Invalid and unknown-dialect schemas are skipped with warnings; the rest register."""
    with pytest.warns(ToolSkippedWarning) as caught:
        names = [d.name for d in runtime.register_source(in_process())]
    assert names == VALID_TOOLS
    assert {w.filename for w in caught} == {__file__}  # the line that registered the server
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "'invalid_schema'" in messages[0] and "no-such-type" in messages[0]
    assert "'unknown_dialect'" in messages[1] and "no-such-dialect" in messages[1]


def test_discovery_pages_through_the_whole_tool_list(runtime, in_process) -> None:
    """A server that lists three tools per page yields the same tools, in order."""
    assert register(runtime, in_process(page_size=3)) == VALID_TOOLS


def test_discovered_tools_are_mcp_tool_instances_with_provenance(runtime, in_process) -> None:
    """Each tool says it comes from MCP and from which server, and is a ToolInstance."""
    server = in_process(name="alpha")
    tools = server.tools()
    assert all(isinstance(t, McpTool) and isinstance(t, ToolInstance) for t in tools)
    echo = runtime.register(tools[0])
    assert (echo.source, echo.source_name, echo.name) == ("mcp", "alpha", "echo")
    assert echo.description == "the echo test tool"
    assert echo.output_schema is not None and echo.output_schema["required"] == ["text", "length"]


def test_capabilities_follow_read_only_hint_and_are_never_checkpointable(
    runtime, in_process
) -> None:
    """A true readOnlyHint means writes=False (else True); a true idempotentHint, idempotent."""
    register(runtime, in_process())
    assert runtime.descriptor("echo").capability == ToolCapability(writes=False, idempotent=True)
    assert runtime.descriptor("write").capability == ToolCapability(writes=True)
    assert runtime.descriptor("erase").capability == ToolCapability(writes=True)
    assert not any(d.capability.checkpointable for d in runtime.descriptors())


def test_the_other_hints_are_kept_on_the_descriptor(runtime, in_process) -> None:
    """destructiveHint, idempotentHint and openWorldHint keep their wire names and values."""
    register(runtime, in_process())
    assert runtime.descriptor("erase").annotations == {
        "readOnlyHint": False,
        "destructiveHint": True,
    }
    assert runtime.descriptor("echo").annotations == {
        "readOnlyHint": True,
        "idempotentHint": True,
    }
    assert runtime.descriptor("fail").annotations["openWorldHint"] is False
    assert runtime.descriptor("write").annotations == {}


def test_capability_overrides_replace_what_the_annotations_give(runtime, in_process) -> None:
    """A mapping overrides single fields; a ToolCapability replaces the whole capability."""
    server = in_process(
        capabilities={"write": {"checkpointable": True}, "erase": ToolCapability(writes=False)}
    )
    register(runtime, server)
    assert runtime.descriptor("write").capability == ToolCapability(
        writes=True, checkpointable=True
    )
    assert runtime.descriptor("erase").capability == ToolCapability(writes=False)


def test_a_capability_override_with_an_unknown_field_is_refused(in_process) -> None:
    """A typo in an override is an error at discovery, not a silently ignored field."""
    with pytest.raises(ValueError, match="checkpointabel"):
        in_process(capabilities={"write": {"checkpointabel": True}}).tools()


def test_prefix_keeps_two_servers_apart(runtime, in_process) -> None:
    """Two servers with the same tools register side by side under their prefixes."""
    register(runtime, in_process(name="a", prefix="a."))
    register(runtime, in_process(name="b", prefix="b."))
    with runtime.plan() as ctx:
        assert runtime.execute("a.add", {"a": 1, "b": 2}, ctx).output == {"sum": 3}
        assert runtime.execute("b.echo", {"text": "x"}, ctx).output == {"text": "x", "length": 1}
    assert runtime.descriptor("b.echo").source_name == "b"


def test_structured_content_is_the_output_and_is_checked_against_the_output_schema(
    runtime, in_process
) -> None:
    """The structuredContent of echo is the output, validated against its outputSchema."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "héllo"}, ctx)
    assert result.success and result.output == {"text": "héllo", "length": 5}
    assert result.trace is not None and result.trace.output_valid is True


def test_arguments_are_validated_before_they_reach_the_server(runtime, in_process) -> None:
    """A missing required argument is an invalid_input result; the server is not called."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {}, ctx)
    assert not result.success and result.trace is not None
    assert result.trace.status == "invalid_input"


def test_content_blocks_become_json_with_base64_data_and_mime_types(runtime, in_process) -> None:
    """Without structuredContent, every kind of block comes back in MCP's JSON form."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        output = runtime.execute("content", {}, ctx).output
    assert output == [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
        {
            "type": "resource_link",
            "uri": "file:///tmp/a.txt",
            "name": "a.txt",
            "mimeType": "text/plain",
        },
        {
            "type": "resource",
            "resource": {"uri": "mem://note", "mimeType": "text/plain", "text": "a note"},
        },
        {
            "type": "resource",
            "resource": {"uri": "mem://blob", "mimeType": "application/octet-stream", "blob": PNG},
        },
    ]


def test_is_error_gives_a_failed_result_with_the_servers_text(runtime, in_process) -> None:
    """isError: true is a failure whose error is exactly what the server said."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("fail", {}, ctx)
    assert not result.success
    assert result.error == "it broke on purpose"
    assert result.error_type == "McpToolError"
    assert result.output == [{"type": "text", "text": "it broke on purpose"}]
    assert result.trace is not None and result.trace.status == "error"


def test_a_json_rpc_error_gives_a_failed_result_with_the_code(runtime, in_process) -> None:
    """An error response becomes McpCallError, with its code and data, in a failed result."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("rpc_error", {}, ctx)
    assert not result.success and result.error_type == "McpCallError"
    assert "-32099" in (result.error or "") and "a custom JSON-RPC failure" in (result.error or "")
    assert not (result.error or "").startswith("McpCallError")  # the class is error_type alone
    assert isinstance(result.exception, McpCallError)
    assert (result.exception.code, result.exception.data) == (-32099, {"hint": "none"})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_server_error_with_code_32000_is_the_servers_answer_not_a_lost_connection(
    runtime, in_process, sessions, mode
) -> None:
    """-32000 is also the SDK's code for a closed connection; a live server's one is its own."""
    register(runtime, in_process(mode=mode))
    with runtime.plan() as ctx:
        result = runtime.execute("rpc_error", {"code": -32000}, ctx)
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).output == {"sum": 2}
    assert result.error_type == "McpCallError" and isinstance(result.exception, McpCallError)
    assert (result.exception.code, result.exception.data) == (-32000, {"hint": "none"})
    assert sessions["opened"] == 2  # discovery, then the plan's one: no reconnection


def test_progress_reaches_the_contexts_callback_and_is_counted_in_the_trace(
    runtime, in_process
) -> None:
    """Three progress notifications give three events, in order, and progress_count 3."""
    register(runtime, in_process())
    events: list[ProgressEvent] = []
    with runtime.plan(plan_id="p1") as ctx:
        ctx.on_progress = events.append
        result = runtime.execute("progress", {"steps": 3}, ctx)
    assert result.trace is not None and result.trace.progress_count == 3
    assert [(e.progress, e.total, e.message) for e in events] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    assert {(e.tool_name, e.plan_id, e.call_id) for e in events} == {
        ("progress", "p1", result.trace.call_id)
    }


def test_progress_notifications_restart_the_idle_timeout(runtime, in_process) -> None:
    """A server that reports every 0.1 s outlives an idle_timeout of 0.5 s, 1.2 s in total."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute(
            "progress", {"steps": 12, "delay": 0.1}, ctx, timeout=30, idle_timeout=0.5
        )
    assert result.success, result.error
    assert result.trace is not None and result.trace.progress_count == 12


def test_a_server_that_goes_quiet_is_stopped_by_the_idle_timeout(runtime, in_process) -> None:
    """One progress report, then silence: the call stops at the idle limit, not the total."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        result = runtime.execute("slow", {"seconds": 30}, ctx, timeout=30, idle_timeout=0.3)
    assert result.trace is not None and result.trace.status == "timed_out"
    assert result.trace.progress_count == 1
    assert "reported no progress for 0.3 seconds" in (result.error or "")
    assert result.trace.duration_ms < 10_000  # far below the 30 s total


def test_draft_07_schemas_are_validated_under_draft_07(runtime, in_process) -> None:
    """The draft7 tool registers, and its definitions-based $ref is enforced."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        assert runtime.execute("draft7", {"n": 4}, ctx).output == {"n": 4}
        rejected = runtime.execute("draft7", {"n": "four"}, ctx)
    assert rejected.trace is not None and rejected.trace.status == "invalid_input"


def test_a_large_result_is_cut_to_max_result_bytes(in_process) -> None:
    """An output over the runtime's limit is cut with a marker; both sizes are traced."""
    with ToolRuntime(max_result_bytes=1000) as runtime:
        register(runtime, in_process())
        with runtime.plan() as ctx:
            result = runtime.execute("big", {"size": 5000}, ctx)
    assert result.truncated and isinstance(result.output, str)
    assert "[cut: output was" in result.output
    assert result.trace is not None
    assert result.trace.result_size_bytes <= 1000
    assert result.trace.original_size_bytes > 5000


def test_tools_of_one_server_share_one_connection_per_plan(runtime, in_process, sessions) -> None:
    """Three tools used in one plan open one connection; the plan end closes it."""
    register(runtime, in_process())
    with runtime.plan() as ctx:
        runtime.execute("echo", {"text": "a"}, ctx)
        runtime.execute("add", {"a": 1, "b": 1}, ctx)
        runtime.execute("content", {}, ctx)
        # discovery used one connection of its own, already closed
        assert sessions == {"opened": 2, "closed": 1}
    assert sessions == {"opened": 2, "closed": 2}


def test_each_plan_has_its_own_connection(runtime, in_process, sessions) -> None:
    """Two plans at once hold two connections; each closes with its plan."""
    register(runtime, in_process())
    first, second = runtime.new_context(), runtime.new_context()
    runtime.execute("echo", {"text": "a"}, first)
    runtime.execute("echo", {"text": "b"}, second)
    assert sessions["opened"] - sessions["closed"] == 2
    runtime.end_plan(first)
    assert sessions["opened"] - sessions["closed"] == 1
    runtime.end_plan(second)
    assert sessions["opened"] == sessions["closed"] == 3


def test_runtime_scope_serves_every_plan_with_one_connection_until_close(
    in_process, sessions
) -> None:
    """scope="runtime": plans come and go; the connection closes at runtime.close()."""
    runtime = ToolRuntime()
    register(runtime, in_process(scope="runtime"))
    for _ in range(3):
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 2, "b": 3}, ctx).output == {"sum": 5}
    assert sessions == {"opened": 2, "closed": 1}
    runtime.close()
    assert sessions == {"opened": 2, "closed": 2}


def test_concurrent_first_activations_from_threads_open_one_connection(
    runtime, in_process, sessions
) -> None:
    """Eight threads activating different tools at once in one plan share one connection."""
    register(runtime, in_process())
    ctx = runtime.new_context()
    names = ["echo", "add", "fail", "progress", "content", "big", "draft7", "environment"]
    assert at_once([functools.partial(runtime.activate, name, ctx) for name in names]) == []
    assert sessions == {"opened": 2, "closed": 1}
    runtime.end_plan(ctx)
    assert sessions == {"opened": 2, "closed": 2}


def test_concurrent_first_activations_in_many_plans_open_one_runtime_connection(
    runtime, in_process, sessions
) -> None:
    """With scope='runtime', four plans activating at once still open exactly one connection."""
    register(runtime, in_process(scope="runtime"))
    plans = [runtime.new_context() for _ in range(4)]
    assert at_once([functools.partial(runtime.activate, "add", ctx) for ctx in plans]) == []
    for ctx in plans:
        runtime.end_plan(ctx)
    assert sessions == {"opened": 2, "closed": 1}  # the runtime's connection stays open
    runtime.close()
    assert wait_for(lambda: sessions == {"opened": 2, "closed": 2})


async def test_concurrent_first_activations_from_tasks_open_one_connection(
    runtime, in_process, sessions
) -> None:
    """Activating every tool at once with gathered aactivate calls opens one connection."""
    register(runtime, in_process())
    async with runtime.aplan() as ctx:
        await asyncio.gather(*(runtime.aactivate(name, ctx) for name in VALID_TOOLS))
        assert sessions == {"opened": 2, "closed": 1}
    assert sessions == {"opened": 2, "closed": 2}


async def test_many_parallel_calls_on_one_connection_each_get_their_own_result(
    runtime, in_process
) -> None:
    """Two hundred concurrent calls with distinct arguments come back matched."""
    register(runtime, in_process())
    async with runtime.aplan() as ctx:
        results = await asyncio.gather(
            *(runtime.aexecute("add", {"a": i, "b": 1000}, ctx) for i in range(200))
        )
    assert [r.output for r in results] == [{"sum": i + 1000} for i in range(200)]


def test_sync_execute_works_from_many_threads_at_once(runtime, in_process) -> None:
    """Eight threads calling execute on one plan each get their own answers."""
    register(runtime, in_process())
    ctx = runtime.new_context()
    outputs: dict[int, list[object]] = {}

    def work(worker: int) -> None:
        outputs[worker] = [
            runtime.execute("add", {"a": worker, "b": i}, ctx).output for i in range(20)
        ]

    assert at_once([functools.partial(work, w) for w in range(8)], timeout=30) == []
    runtime.end_plan(ctx)
    assert outputs == {w: [{"sum": w + i} for i in range(20)] for w in range(8)}


def test_cancelling_the_plan_cancels_the_request_on_the_server(
    runtime, in_process, tmp_path
) -> None:
    """The call raises ToolCancelledError promptly and the server's handler is cancelled."""
    register(runtime, in_process())
    marker = tmp_path / "cancelled"
    error = cancel_a_slow_call(runtime, marker, reason="user pressed stop")
    assert isinstance(error, ToolCancelledError) and error.reason == "user pressed stop"
    assert wait_for(marker.exists), "the server never saw the cancellation"
    # the connection is still good for the next call
    assert runtime.execute("add", {"a": 1, "b": 2}, runtime.new_context()).output == {"sum": 3}


async def test_cancelling_the_awaiting_task_cancels_the_request_on_the_server(
    runtime, in_process, tmp_path
) -> None:
    """Cancelling aexecute's task propagates to the server too."""
    register(runtime, in_process())
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    marker = tmp_path / "cancelled"
    async with runtime.aplan() as ctx:
        ctx.on_progress = lambda event: loop.call_soon_threadsafe(started.set)
        call = asyncio.ensure_future(
            runtime.aexecute("slow", {"seconds": 60, "marker": str(marker)}, ctx)
        )
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, 2)
        assert await asyncio.to_thread(wait_for, marker.exists)


def test_a_call_timeout_cancels_the_request_and_reports_timed_out(
    runtime, in_process, tmp_path
) -> None:
    """execute(timeout=...) returns a timed_out result, and the server saw the cancel."""
    register(runtime, in_process())
    marker = tmp_path / "cancelled"
    with runtime.plan() as ctx:
        result = runtime.execute("slow", {"seconds": 60, "marker": str(marker)}, ctx, timeout=0.2)
        assert result.trace is not None and result.trace.status == "timed_out"
        assert not result.success
        assert wait_for(marker.exists)
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).output == {"sum": 2}


async def test_the_servers_timeout_option_applies_to_every_call(in_process, tmp_path) -> None:
    """McpServer(timeout=...) becomes each descriptor's timeout; aexecute honours it."""
    marker = tmp_path / "cancelled"
    with ToolRuntime() as runtime:
        register(runtime, in_process(timeout=0.2))
        assert runtime.descriptor("slow").timeout == 0.2
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("slow", {"seconds": 60, "marker": str(marker)}, ctx)
        assert result.trace is not None and result.trace.status == "timed_out"
        assert await asyncio.to_thread(wait_for, marker.exists)


def test_a_read_only_plan_runs_read_only_mcp_tools_and_refuses_the_others(
    runtime, in_process
) -> None:
    """Capability checks apply to MCP tools unchanged."""
    register(runtime, in_process())
    with runtime.plan(read_only=True) as ctx:
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
        with pytest.raises(ToolRuntimeError, match="write"):
            runtime.execute("write", {"path": "x"}, ctx)
    with runtime.plan(requires_checkpoint=True) as ctx:
        with pytest.raises(ToolCheckpointRequiredError):
            runtime.execute("write", {"path": "x"}, ctx)


def test_list_changed_marks_the_server_stale_and_the_next_plan_sees_the_new_tool(
    runtime, in_process
) -> None:
    """After notifications/tools/list_changed, new_context registers the new list."""
    server = in_process()
    register(runtime, server)
    assert "extra" not in [d.name for d in runtime.descriptors()]
    with runtime.plan() as ctx:
        runtime.execute("add_tool", {}, ctx)
        assert wait_for(lambda: server.stale)
    with runtime.plan() as ctx:
        assert not server.stale
        assert runtime.execute("extra", {}, ctx).success
    assert runtime.descriptor("extra").source_name == "local"


def test_a_refresh_reuses_the_open_runtime_scope_connection(runtime, in_process, sessions) -> None:
    """With scope='runtime', listing the changed tools needs no second connection."""
    server = in_process(scope="runtime")
    register(runtime, server)
    with runtime.plan() as ctx:
        runtime.execute("add_tool", {}, ctx)
        assert wait_for(lambda: server.stale)
    opened = sessions["opened"]
    with runtime.plan() as ctx:
        assert runtime.execute("extra", {}, ctx).success
    assert sessions["opened"] == opened  # the refresh listed over the live connection


def test_a_refresh_that_fails_is_tried_again_before_the_next_plan(runtime, caplog) -> None:
    """A server that cannot list its changed tools stays stale, so a later plan gets them."""
    failing = {"on": False}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        if failing["on"]:
            raise MCPError(-32603, "the catalogue is being rebuilt")
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

    source = McpServer.in_process(Server("moody", on_list_tools=list_tools))
    runtime.register_source(source)
    source._stale = True  # as a notifications/tools/list_changed would
    failing["on"] = True
    runtime.end_plan(runtime.new_context())
    assert runtime.descriptors() == ()
    assert source.stale and "source.refresh_failed" in caplog.text
    failing["on"] = False
    runtime.end_plan(runtime.new_context())
    assert [d.name for d in runtime.descriptors()] == ["t"]
    assert not source.stale


def test_a_refresh_whose_new_list_clashes_keeps_the_servers_tools_and_tries_again(
    runtime, caplog
) -> None:
    """A changed list naming a tool held elsewhere leaves the old tools, and is asked again."""
    names = ["t"]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        listed = [types.Tool(name=n, input_schema={"type": "object"}) for n in names]
        return types.ListToolsResult(tools=listed)

    source = McpServer.in_process(Server("moody", on_list_tools=list_tools))
    runtime.register_source(source)
    runtime.register(FakeTool(name="u"))
    names.append("u")
    source._stale = True  # as a notifications/tools/list_changed would
    runtime.end_plan(runtime.new_context())
    assert [d.name for d in runtime.descriptors()] == ["t", "u"]
    assert runtime.descriptor("t").source_name == "moody"
    assert runtime.descriptor("u").source_name is None
    [failed] = [r for r in caplog.records if r.getMessage() == "source.refresh_failed"]
    assert "'u'" in str(vars(failed).get("error"))
    assert not source.stale  # the server was listed; the runtime keeps it due
    runtime.unregister("u")
    runtime.end_plan(runtime.new_context())
    assert runtime.descriptor("u").source_name == "moody"


def test_a_server_repeating_its_cursor_fails_discovery_instead_of_looping(runtime) -> None:
    """A tools/list that hands back the same cursor forever is stopped with a clear error."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tool = types.Tool(name="again", input_schema={"type": "object"})
        return types.ListToolsResult(tools=[tool], next_cursor="same")

    looping = Server("looping", on_list_tools=list_tools)
    with pytest.raises(McpServerError, match="repeated the tools/list cursor 'same'"):
        runtime.register_source(McpServer.in_process(looping))
    assert runtime.descriptors() == ()


async def test_aclose_closes_the_connections_from_async_code(in_process, sessions) -> None:
    """aclose() is close() for async hosts: the runtime-scope connection ends."""
    runtime = ToolRuntime()
    server = in_process(scope="runtime")
    register(runtime, server)
    async with runtime.aplan() as ctx:
        await runtime.aexecute("add", {"a": 1, "b": 1}, ctx)
    await server.aclose()
    assert wait_for(lambda: sessions["opened"] == sessions["closed"])
    with pytest.raises(McpServerError, match="is closed"):
        server.tools()
    runtime.close()


def test_a_closed_server_refuses_discovery_and_activation(runtime, in_process) -> None:
    """After close(), the server opens nothing more, with an error naming it."""
    server = in_process(name="gone")
    register(runtime, server)
    server.close()
    server.close()  # idempotent
    with pytest.raises(McpServerError, match="'gone' is closed"):
        server.tools()
    with runtime.plan() as ctx:
        with pytest.raises(ToolRuntimeError, match="'gone' is closed"):
            runtime.execute("add", {"a": 1, "b": 1}, ctx)


async def test_executing_a_tool_that_was_not_activated_is_a_clear_error(
    runtime, in_process
) -> None:
    """Driving McpTool.execute by hand, without activate, names the missing activation."""
    add = next(t for t in in_process(name="manual").tools() if t.remote_name == "add")
    with pytest.raises(
        McpServerError, match="'manual' has no connection for plan .* not activated"
    ):
        await add.execute({"a": 1, "b": 2}, runtime.new_context())


async def test_a_tool_driven_by_hand_runs_between_activate_and_deactivate(
    runtime, in_process, sessions
) -> None:
    """The ToolInstance protocol works without the runtime: activate, execute, deactivate."""
    add = next(t for t in in_process().tools() if t.remote_name == "add")
    ctx = runtime.new_context()
    await add.activate(ctx)
    returned = await add.execute({"a": 1, "b": 2}, ctx)
    assert returned.value == {"sum": 3}  # with the content blocks as parts beside it
    await add.deactivate(ctx)
    assert wait_for(lambda: sessions["opened"] == sessions["closed"] == 2)


def test_a_server_collected_with_open_connections_warns_and_closes_them(
    in_process, sessions
) -> None:
    """Dropping a runtime and its server without closing them warns, and still closes."""
    runtime = ToolRuntime()
    register(runtime, in_process())
    ctx = runtime.new_context()
    runtime.activate("add", ctx)
    assert sessions["opened"] - sessions["closed"] == 1
    held = [runtime, ctx]
    del runtime, ctx
    with pytest.warns(ResourceWarning, match="garbage-collected with open connections") as caught:
        _drop(held)
    assert [w.filename for w in caught] == [__file__]  # the line that let the server go
    assert wait_for(lambda: sessions["opened"] == sessions["closed"])


def _drop(held: list[object]) -> None:
    held.clear()
    gc.collect()


def test_invalid_options_are_refused_when_the_server_is_built() -> None:
    """scope, timeout and startup_timeout are checked at construction."""
    with pytest.raises(ValueError, match="scope"):
        McpServer.http("http://127.0.0.1:1/mcp", scope="forever")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        McpServer.http("http://127.0.0.1:1/mcp", timeout=0)
    with pytest.raises(ValueError, match="startup_timeout"):
        McpServer.http("http://127.0.0.1:1/mcp", startup_timeout=-1)


def test_the_core_never_imports_the_mcp_sdk() -> None:
    """Importing toolcycle leaves mcp unimported; only toolcycle.sources.mcp imports it."""
    code = "import sys, toolcycle, toolcycle.sources; assert 'mcp' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_missing_sdk_gives_an_import_error_naming_the_extra() -> None:
    """Without the mcp package the import fails with the pip command to fix it."""
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n    import toolcycle.sources.mcp\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    assert "pip install -e '.[mcp]' from a clone (toolcycle[mcp] once published)" in out


def test_a_sync_call_runs_on_the_mcp_loop_without_the_runtimes_portal() -> None:
    """McpTool names the MCP loop as its own, so execute crosses one thread, not two."""
    with ToolRuntime() as runtime:
        register(runtime, McpServer.in_process(build()))
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 1, "b": 2}, ctx).success
        assert runtime._invoker.portal._loop is None


def test_a_call_after_the_server_closed_says_it_is_closed(runtime) -> None:
    """Not "was not activated": the plan did activate it; the server has closed since."""
    server = McpServer.in_process(build(), name="local")
    register(runtime, server)
    with runtime.plan() as ctx:
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
        server.close()
        result = runtime.execute("add", {"a": 1, "b": 1}, ctx)
    assert not result.success
    assert result.error == "MCP server 'local' is closed"
    assert result.error_type == "McpServerError"


def test_a_server_sending_invalid_unicode_or_deep_values_gets_failed_results(runtime) -> None:
    """Lone surrogates and nesting past the limit in a reply fail the call, in valid Unicode."""
    deep: Any = 1
    for _ in range(200):
        deep = {"a": deep}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=name, input_schema={"type": "object"}) for name in "sed"]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        text = [types.TextContent(type="text", text="bad \ud800")]
        if params.name == "s":
            return types.CallToolResult(content=text, structured_content={"k\udc00": 1})
        if params.name == "e":
            return types.CallToolResult(content=text, is_error=True)
        return types.CallToolResult(content=text, structured_content=deep)

    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)
    runtime.register_source(McpServer.in_process(server))
    with runtime.plan() as ctx:
        results = {name: runtime.execute(name, {}, ctx) for name in "sed"}
    for result in results.values():  # the SDK itself refuses to send a lone surrogate
        assert not result.success
        (result.error or "").encode("utf-8")
    assert results["d"].error_type == "ToolOutputError"
    assert "nests deeper than 64 levels" in (results["d"].error or "")
