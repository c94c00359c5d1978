"""The MCP source against real server processes over stdio: faults, shutdown, leftovers."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolcycle import (
    CancellationToken,
    ToolActivationError,
    ToolCancelledError,
    ToolRuntime,
    ToolRuntimeError,
)
from toolcycle.sources.mcp import McpCallError, McpServer, McpServerError, _stdio
from toolcycle.sources.mcp._stdio import LineSplitter

from .conftest import (
    RAW_SERVER,
    SERVERS,
    VALID_TOOLS,
    cancel_a_slow_call,
    children,
    register,
    stdio,
    wait_for,
    wait_gone,
)


def test_a_stdio_server_is_discovered_used_and_ended_with_its_plan(runtime) -> None:
    """Discovery's own process ends at once; the plan's process ends with the plan."""
    before = children()
    assert register(runtime, stdio(name="remote")) == VALID_TOOLS
    assert wait_gone(children() - before) == []
    with runtime.plan() as ctx:
        result = runtime.execute("echo", {"text": "over stdio"}, ctx)
        assert result.output == {"text": "over stdio", "length": 10}
        started = children() - before
        assert len(started) == 1
    assert wait_gone(started) == []


def test_the_server_gets_a_minimal_environment_plus_what_is_passed(runtime, monkeypatch) -> None:
    """The parent's variables stay out; env is added; PATH is kept even when env is given."""
    monkeypatch.setenv("TOOLCYCLE_TEST_SECRET", "do-not-leak")
    register(runtime, stdio(env={"GREETING": "hello"}))
    with runtime.plan() as ctx:
        env = runtime.execute("environment", {}, ctx).output
    assert env["GREETING"] == "hello"
    assert env["PATH"] == os.environ["PATH"]
    assert "TOOLCYCLE_TEST_SECRET" not in env


def test_a_crash_mid_call_fails_the_call_and_the_next_call_reconnects(runtime) -> None:
    """The failed result names the server, its exit code and stderr; the plan goes on."""
    before = children()
    register(runtime, stdio(name="remote"))
    with runtime.plan() as ctx:
        crashed = runtime.execute("crash", {}, ctx)
        assert not crashed.success and crashed.error_type == "McpServerError"
        assert "'remote'" in (crashed.error or "") and "exit code 3" in (crashed.error or "")
        assert "about to exit with code 3" in (crashed.error or "")
        assert isinstance(crashed.exception, McpServerError)
        assert crashed.exception.exit_code == 3
        again = runtime.execute("add", {"a": 2, "b": 2}, ctx)
        assert again.output == {"sum": 4}
    assert wait_gone(children() - before) == []


def test_a_server_error_with_code_32000_keeps_the_server_running(runtime) -> None:
    """A live server's -32000 is its answer: McpCallError, and the same process serves on."""
    register(runtime, stdio(name="remote"))
    with runtime.plan() as ctx:
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
        serving = children()
        result = runtime.execute("rpc_error", {"code": -32000}, ctx)
        assert runtime.execute("add", {"a": 2, "b": 2}, ctx).output == {"sum": 4}
        assert children() == serving
    assert result.error_type == "McpCallError" and isinstance(result.exception, McpCallError)
    assert (result.exception.code, result.exception.data) == (-32000, {"hint": "none"})


def test_a_server_that_exits_at_start_fails_registration_with_its_stderr(runtime) -> None:
    """register_source raises a ToolRuntimeError with the exit code and the stderr tail."""
    with pytest.raises(ToolRuntimeError) as caught:
        runtime.register_source(stdio("--fail-at-start", name="broken"))
    message = str(caught.value)
    assert "'broken'" in message and "exit code 2" in message
    assert "the configuration file is missing" in message
    assert runtime.descriptors() == ()


def test_a_server_that_fails_at_activation_gives_an_activation_error(runtime, tmp_path) -> None:
    """A server that starts for discovery but not for the plan fails activation clearly."""
    flag = tmp_path / "started"
    before = children()
    register(runtime, stdio("--fail-if-exists", str(flag), name="flaky"))
    with runtime.plan() as ctx:
        with pytest.raises(ToolActivationError) as caught:
            runtime.execute("add", {"a": 1, "b": 1}, ctx)
    assert "started a second time" in str(caught.value.__cause__)
    assert isinstance(caught.value.__cause__, McpServerError)
    assert caught.value.__cause__.exit_code == 2
    assert wait_gone(children() - before) == []


def test_a_server_that_never_answers_is_bounded_by_the_startup_timeout(runtime) -> None:
    """A hung server fails discovery within startup_timeout, and its process is ended."""
    before = children()
    started = time.monotonic()
    with pytest.raises(McpServerError, match="did not list its tools within 1.0 seconds"):
        runtime.register_source(stdio("--hang-at-start", name="hung", startup_timeout=1.0))
    assert time.monotonic() - started < 8
    assert wait_gone(children() - before) == []


def test_a_server_writing_garbage_to_stdout_is_a_clear_fault(runtime) -> None:
    """A line that is not JSON-RPC ends the connection with an error quoting it."""
    with pytest.raises(McpServerError, match="not JSON-RPC: 'Welcome to the server!"):
        runtime.register_source(stdio("--garbage", name="noisy", startup_timeout=10))


@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=12))
def test_the_line_splitter_gives_the_same_lines_however_the_stream_is_cut(
    data: bytes, cuts: list[int]
) -> None:
    """Fed in any chunks, the splitter finishes the lines ``split`` finds; ``flush`` gives the rest."""
    bounds = sorted({0, len(data), *(cut for cut in cuts if cut <= len(data))})
    splitter = LineSplitter()
    lines: list[bytes] = []
    for start, end in itertools.pairwise(bounds):
        lines += splitter.feed(data[start:end])
    *expected, rest = data.split(b"\n")
    assert lines == expected
    assert splitter.pending == len(rest)
    assert splitter.flush() == rest
    assert splitter.pending == 0
    assert splitter.feed(b"\n") == [b""]


def test_a_result_of_megabytes_over_stdio_arrives_whole() -> None:
    """A message spread over many pipe reads is put back together byte for byte."""
    with ToolRuntime(max_result_bytes=None) as runtime:
        register(runtime, stdio())
        with runtime.plan() as ctx:
            result = runtime.execute("big", {"size": 3_000_000}, ctx)
    assert result.success
    assert result.output == [{"type": "text", "text": "x" * 3_000_000}]


def test_a_message_over_the_size_cap_fails_the_call_and_the_plan_goes_on(
    runtime, monkeypatch
) -> None:
    """The call fails naming the cap, the server is ended, and the next call reconnects."""
    monkeypatch.setattr(_stdio, "MAX_MESSAGE_BYTES", 100_000)
    before = children()
    register(runtime, stdio(name="flood"))
    with runtime.plan() as ctx:
        failed = runtime.execute("big", {"size": 1_000_000}, ctx)
        first = children() - before
        assert not failed.success
        assert failed.error is not None
        assert "'flood'" in failed.error
        assert "sent a message larger than 100000 bytes" in failed.error
        assert runtime.execute("add", {"a": 1, "b": 2}, ctx).output == {"sum": 3}
    assert wait_gone(first | (children() - before)) == []


def test_a_server_with_a_long_stderr_line_keeps_being_heard(runtime, caplog) -> None:
    """An over-long stderr line is cut, not the end of reading: the server never blocks on it.

    The server writes a 200 KB line and then more than a pipe holds before it serves;
    if its stderr stopped being read, it would block and never finish starting.
    """
    caplog.set_level(logging.DEBUG, logger="toolcycle.sources.mcp.stderr")
    assert register(runtime, stdio("--loud", name="loud", startup_timeout=10)) == VALID_TOOLS
    said = [record.getMessage() for record in caplog.records]
    assert "loud: log line 2999 " + "." * 90 in said
    assert "loud: loud: done" in said


def test_a_crash_is_seen_even_when_a_helper_still_holds_the_servers_stdout(runtime) -> None:
    """The end of stdout is not the only sign of a crash: the server's exit is watched too.

    The server starts a helper that inherits its stdout, then exits with code 3;
    the pipe stays open, and without the watch the call would wait for its timeout.
    (The SDK's own stdio server keeps its protocol pipe from its children, so the
    hand-written one plays this server.)
    """
    before = children()
    command = [str(RAW_SERVER), "--crash-leaving-helper"]
    register(runtime, McpServer.stdio(sys.executable, command, name="leaky"))
    with runtime.plan() as ctx:
        result = runtime.execute("quick", {"n": 1}, ctx, timeout=20)
        assert result.trace is not None
        assert result.trace.status == "error"
        assert result.error_type == "McpServerError"
        assert "'leaky'" in (result.error or "")
        assert "exit code 3" in (result.error or "")
    assert wait_gone(children() - before) == []


def test_closing_the_server_while_a_plan_starts_it_fails_the_activation_as_closed(
    runtime, tmp_path
) -> None:
    """``server.close()`` interrupts a start in progress; that is not the plan's cancellation."""
    flag = tmp_path / "hang"
    server = stdio("--hang-if-exists", str(flag), name="slowstart")
    register(runtime, server)
    flag.write_text("hang from now on")
    before = children()
    ctx = runtime.new_context()
    raised: list[BaseException] = []
    finished = threading.Event()

    def call() -> None:
        try:
            runtime.execute("add", {"a": 1, "b": 1}, ctx)
        except BaseException as exc:
            raised.append(exc)
        finally:
            finished.set()

    thread = threading.Thread(target=call)
    thread.start()
    assert wait_for(lambda: bool(children() - before), timeout=10)
    server.close()
    assert finished.wait(10)
    thread.join(5)
    runtime.end_plan(ctx)
    [error] = raised
    assert not ctx.cancellation_token.is_cancelled
    assert isinstance(error, ToolActivationError), repr(error)
    assert "MCP server 'slowstart' is closed" in str(error)
    assert wait_gone(children() - before) == []


def test_a_failed_restart_of_a_runtime_wide_server_binds_only_its_plan(tmp_path) -> None:
    """scope="runtime": after a crash and a failed restart, the next plan starts it anew."""
    flag = tmp_path / "started"
    with ToolRuntime() as runtime:
        register(runtime, stdio("--fail-if-exists", str(flag), name="once", scope="runtime"))
        flag.unlink()  # discovery's start made it
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
            assert not runtime.execute("crash", {}, ctx).success
            refused = runtime.execute("add", {"a": 1, "b": 1}, ctx)
            assert refused.error is not None and "started a second time" in refused.error
            again = runtime.execute("add", {"a": 1, "b": 1}, ctx)
            assert again.error == refused.error  # the plan's later calls fail at once
        flag.unlink()  # now it can start again
        with runtime.plan() as ctx:
            assert runtime.execute("add", {"a": 1, "b": 1}, ctx).output == {"sum": 2}


def test_a_command_that_does_not_exist_is_a_clear_error(runtime) -> None:
    """Starting a missing executable fails registration with the OS error."""
    with pytest.raises(McpServerError, match="'ghost' failed to start: FileNotFoundError"):
        runtime.register_source(McpServer.stdio("/nonexistent/mcp-server", name="ghost"))


def test_a_wrapper_and_its_grandchildren_are_ended_with_the_plan(runtime) -> None:
    """A server started through a shell, and a process it spawned, leave nothing behind."""
    command = f"{sys.executable} {SERVERS}; exit 0"  # the shell stays as the parent
    before = children()
    register(runtime, McpServer.stdio("/bin/sh", ["-c", command], name="wrapped"))
    with runtime.plan() as ctx:
        spawned = runtime.execute("spawn", {}, ctx).output
        tree = children() - before
        assert {spawned["pid"], spawned["server"]} <= tree
        assert len(tree) == 3  # the shell, the server, the grandchild
    assert wait_gone(tree) == []


def test_cancelling_a_stdio_call_reaches_the_server(runtime, tmp_path) -> None:
    """The server's handler is cancelled, the call raises, and the plan's end ends the server."""
    before = children()
    register(runtime, stdio())
    marker = tmp_path / "cancelled"
    assert isinstance(cancel_a_slow_call(runtime, marker), ToolCancelledError)
    assert wait_for(marker.exists), "the server never saw the cancellation"
    assert wait_gone(children() - before) == []


def test_cancelling_an_activation_ends_the_server_it_was_starting(runtime, tmp_path) -> None:
    """A plan cancelled while its server starts raises promptly and leaves no process."""
    flag = tmp_path / "hang"
    before = children()
    register(runtime, stdio("--hang-if-exists", str(flag), name="slowstart"))
    flag.write_text("hang from now on")
    token = CancellationToken()
    ctx = runtime.new_context(cancellation_token=token)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            runtime.execute("add", {"a": 1, "b": 1}, ctx)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    assert wait_for(lambda: bool(children() - before), timeout=10), "the server never started"
    starting = children() - before
    token.cancel("not needed after all")
    thread.join(5)
    assert not thread.is_alive(), "the cancelled activation did not return within 5 s"
    assert isinstance(outcome[0], ToolCancelledError)
    runtime.end_plan(ctx)
    assert wait_gone(starting) == []


def test_a_reconnect_that_fails_fails_that_call_and_the_rest_of_the_plan(runtime, tmp_path) -> None:
    """After a crash one fresh start is tried; when it fails, later calls fail at once."""
    flag = tmp_path / "started"
    before = children()
    register(runtime, stdio("--fail-if-exists", str(flag), name="once"))
    flag.unlink()  # discovery's start created it; the plan's first start may go ahead
    with runtime.plan() as ctx:
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
        crashed = runtime.execute("crash", {}, ctx)
        assert not crashed.success and "exit code 3" in (crashed.error or "")
        retry = runtime.execute("add", {"a": 1, "b": 1}, ctx)
        assert not retry.success and "started a second time" in (retry.error or "")
        assert isinstance(retry.exception, McpServerError) and retry.exception.exit_code == 2
        later = runtime.execute("add", {"a": 1, "b": 1}, ctx)
        assert later.exception is retry.exception
    assert wait_gone(children() - before) == []


def test_runtime_scope_uses_one_process_for_every_plan(tmp_path) -> None:
    """With scope='runtime' the plans share one server process, ended by close()."""
    before = children()
    runtime = ToolRuntime()
    register(runtime, stdio(scope="runtime"))
    pids = set()
    for _ in range(2):
        with runtime.plan() as ctx:
            runtime.execute("add", {"a": 1, "b": 1}, ctx)
            pids |= children() - before
    assert len(pids) == 1
    runtime.close()
    assert wait_gone(pids) == []


_HOST = textwrap.dedent(
    """
    import sys, warnings
    from toolcycle import ToolRuntime, ToolSkippedWarning
    from toolcycle.sources.mcp import McpServer
    warnings.simplefilter("ignore", ToolSkippedWarning)
    runtime = ToolRuntime()
    runtime.register_source(McpServer.stdio(sys.executable, [{servers!r}], name="child"))
    ctx = runtime.new_context()
    runtime.activate("add", ctx)
    print(runtime.execute("environment", {{}}, ctx).trace.call_id, flush=True)
    sys.stdin.readline()  # the test has found the server: now end as told
    {ending}
    """
)


def _host_server_pids(ending: str) -> tuple[subprocess.Popen[str], set[int]]:
    """Start a host process that leaves a server running, and find that server."""
    host = subprocess.Popen(
        [sys.executable, "-c", _HOST.format(servers=str(SERVERS), ending=ending)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert host.stdout is not None and host.stdin is not None
    assert host.stdout.readline(), "the host did not get as far as a call"
    servers = {p.pid for p in psutil.Process(host.pid).children(recursive=True)}
    assert len(servers) == 1
    # Only now may the host end: before, an exit could beat the look for its server.
    host.stdin.write("\n")
    host.stdin.flush()
    return host, servers


def test_servers_die_with_a_host_that_is_killed() -> None:
    """SIGKILL of the host (no exit handler runs) still ends its server: parent-death signal."""
    host, servers = _host_server_pids("import time; time.sleep(60)")
    with host:
        host.send_signal(signal.SIGKILL)
        host.wait(10)
    assert wait_gone(servers) == []


def test_servers_are_ended_by_the_exit_handler_when_the_host_exits() -> None:
    """A host that exits without closing its runtime leaves no server behind."""
    host, servers = _host_server_pids("sys.exit(0)")
    with host:
        assert host.wait(15) == 0
    assert wait_gone(servers) == []


def test_a_response_after_the_call_timed_out_is_dropped_and_logged(
    runtime, tmp_path, caplog
) -> None:
    """The late answer never becomes another call's result, and the connection keeps working."""
    caplog.set_level(logging.DEBUG, logger="mcp")
    register(runtime, McpServer.stdio(sys.executable, [str(RAW_SERVER)], name="raw"))
    release = tmp_path / "release"
    with runtime.plan() as ctx:
        timed_out = runtime.execute("late", {"release": str(release)}, ctx, timeout=0.5)
        assert timed_out.trace.status == "timed_out"
        release.write_text("go")
        assert wait_for(lambda: "late request id" in caplog.text), (
            "the late response was not logged"
        )
        quick = runtime.execute("quick", {"n": 7}, ctx)
        assert quick.success and quick.output == {"n": 7}


def test_a_server_that_ignores_stdin_and_sigterm_is_killed(runtime) -> None:
    """The shutdown goes on to SIGKILL when closing stdin and SIGTERM do not end the server."""
    before = children()
    register(runtime, McpServer.stdio(sys.executable, [str(RAW_SERVER), "--stubborn"], name="mule"))
    with runtime.plan() as ctx:
        assert runtime.execute("quick", {"n": 1}, ctx).output == {"n": 1}
        server = children() - before
        assert len(server) == 1
    assert wait_gone(server) == []


def test_server_output_never_reaches_the_hosts_stdout_or_stderr(runtime, capfd, caplog) -> None:
    """The server's stderr is kept and logged at DEBUG; the host's file descriptors stay clean."""
    caplog.set_level(logging.DEBUG, logger="toolcycle.sources.mcp.stderr")
    register(runtime, stdio(name="chatty"))
    with runtime.plan() as ctx:
        assert runtime.execute("add", {"a": 1, "b": 1}, ctx).success
    out, err = capfd.readouterr()
    assert "testserver: starting" not in out + err
    assert "chatty: testserver: starting, pid" in caplog.text


def test_blank_lines_between_messages_are_skipped(runtime) -> None:
    """Empty lines on a server's stdout are not a fault."""
    register(runtime, McpServer.stdio(sys.executable, [str(RAW_SERVER), "--blank-lines"]))
    with runtime.plan() as ctx:
        assert runtime.execute("quick", {"n": 2}, ctx).output == {"n": 2}


def test_arguments_given_as_one_string_are_refused_when_the_server_is_built() -> None:
    """A string is a sequence: each character would have been an argument of the command."""
    with pytest.raises(TypeError) as raised:
        McpServer.stdio(sys.executable, "server.py")  # type: ignore[arg-type]
    assert str(raised.value) == (
        "args must be a list of arguments, not one string; pass ['server.py'], "
        "or shlex.split(...) of a command line"
    )


def test_a_whole_command_line_given_as_the_command_says_to_split_it(runtime) -> None:
    """The command line's --mcp takes 'python server.py'; McpServer.stdio takes a program."""
    server = McpServer.stdio("python3 server.py --verbose", name="joined")
    with pytest.raises(McpServerError) as raised:
        runtime.register_source(server)
    assert str(raised.value) == (
        "MCP server 'joined' failed to start: FileNotFoundError: no program "
        "'python3 server.py --verbose': the command is one program, and its arguments go "
        "in args, as in McpServer.stdio('python3', ['server.py', '--verbose'])"
    )
