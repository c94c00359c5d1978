"""A setting refused for its number names it, even an int too long to print."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

import pytest

from toolcycle import (
    CachePolicy,
    NullTracer,
    ResultCache,
    RetryPolicy,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)
from toolcycle._bounds import shown_value
from toolcycle.builtins import workspace_tools
from toolcycle.hosts import ProcessHost
from toolcycle.otel import OpenTelemetry
from toolcycle.sources.mcp import McpRequests, McpServer
from toolcycle.sources.skills import SkillLimits
from toolcycle.testing import FakeTool

# More digits than Python turns into text by default (4,300).
HUGE = 10**5000


def _in_a_plan(act: Callable[[ToolRuntime, ToolExecutionContext], object]) -> None:
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(FakeTool(name="t"))
        with runtime.plan() as ctx:
            act(runtime, ctx)


def _streamed(runtime: ToolRuntime, ctx: ToolExecutionContext) -> None:
    runtime.astream("t", {}, ctx, max_buffered=-HUGE)


def _batched(runtime: ToolRuntime, ctx: ToolExecutionContext) -> None:
    asyncio.run(runtime.acall_many([], ctx, max_concurrency=-HUGE))


def _function_tool() -> None:
    @tool(writes=False, max_retries=-HUGE)
    def limited() -> None:
        """Never made."""


SETTINGS: dict[str, tuple[Callable[[], object], str]] = {
    "ttl": (lambda: CachePolicy(ttl=HUGE), "ttl must be positive, finite seconds"),
    "negative ttl": (lambda: CachePolicy(ttl=-HUGE), "ttl must be positive, finite seconds"),
    "max_entries": (lambda: ResultCache(max_entries=-HUGE), "max_entries must be a positive"),
    "max_bytes": (lambda: ResultCache(max_bytes=-HUGE), "max_bytes must be a positive"),
    "max_result_bytes": (
        lambda: ToolRuntime(max_result_bytes=-HUGE),
        "max_result_bytes must be None",
    ),
    "drain_timeout": (lambda: ToolRuntime(drain_timeout=HUGE), "drain_timeout must be"),
    "keep_traces": (lambda: ToolRuntime(keep_traces=-HUGE), "keep_traces must be"),
    "max_retries": (lambda: ToolRuntime(max_retries=-HUGE), "max_retries must be"),
    "call timeout": (
        lambda: _in_a_plan(lambda rt, ctx: rt.execute("t", {}, ctx, timeout=HUGE)),
        "timeout must be positive seconds",
    ),
    "plan timeout": (
        lambda: ToolExecutionContext("p", idle_timeout=HUGE),
        "idle_timeout must be positive seconds",
    ),
    "attempts": (lambda: RetryPolicy(attempts=-HUGE), "attempts must be 1 or more"),
    "backoff": (lambda: RetryPolicy(backoff=HUGE), "backoff must be seconds"),
    "tool max_retries": (_function_tool, "max_retries must be a whole number"),
    "max_buffered": (lambda: _in_a_plan(_streamed), "max_buffered must be at least 1"),
    "max_concurrency": (lambda: _in_a_plan(_batched), "max_concurrency must be at least 1"),
    "script_timeout": (lambda: SkillLimits(script_timeout=HUGE), "SkillLimits(script_timeout="),
    "max_files": (lambda: SkillLimits(max_files=-HUGE), "SkillLimits(max_files=<a negative"),
    "mcp timeout": (lambda: _mcp(timeout=-HUGE), "timeout must be positive seconds or None"),
    "mcp huge timeout": (lambda: _mcp(timeout=HUGE), "timeout must be positive seconds or None"),
    "mcp startup_timeout": (lambda: _mcp(startup_timeout=-HUGE), "startup_timeout must be"),
    "mcp max_rounds": (lambda: McpRequests(max_rounds=-HUGE), "max_rounds must be a positive"),
    "process stop_timeout": (lambda: ProcessHost(stop_timeout=-HUGE), "stop_timeout must be"),
    "huge stop_timeout": (lambda: ProcessHost(stop_timeout=HUGE), "stop_timeout must be"),
    "max_undo_bytes": (lambda: workspace_tools(max_undo_bytes=-HUGE), "max_undo_bytes must be"),
    "max_payload_chars": (
        lambda: OpenTelemetry(max_payload_chars=-HUGE),
        "max_payload_chars must be positive",
    ),
}


def _mcp(**options: object) -> McpServer:
    return McpServer.stdio(sys.executable, ["-c", "pass"], name="never-started", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_setting_refused_for_an_int_too_long_to_print_says_what_it_refused(
    setting: str,
) -> None:
    """The message names the setting and the int's size, instead of failing to print it."""
    make, message = SETTINGS[setting]
    with pytest.raises((ValueError, ToolDefinitionError)) as refused:
        make()
    text = str(refused.value)
    assert message in text
    assert "int of about 5,001 digits" in text


def test_shown_value_prints_ordinary_values_as_repr_and_long_ints_by_size() -> None:
    """Ordinary values read as repr; only an int too long to be worth printing is summarised."""
    assert shown_value(float("inf")) == "inf"
    assert shown_value(10**70) == repr(10**70)
    assert shown_value(True) == "True"
    assert shown_value(-(10**400)) == "a negative int of about 401 digits"
    assert shown_value(2**300) == "an int of about 91 digits"
    assert len(str(2**300)) == 91
    assert sys.get_int_max_str_digits() < 5001  # HUGE cannot be printed here


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", float("inf")),
        ("timeout", float("nan")),
        ("timeout", True),
        ("timeout", "5"),
        ("startup_timeout", float("inf")),
        ("startup_timeout", 10**400),
        ("startup_timeout", None),
    ],
    ids=["inf", "nan", "bool", "text", "startup-inf", "startup-past-float", "startup-none"],
)
def test_an_mcp_server_refuses_timeouts_that_are_not_finite_positive_seconds(
    option: str, value: object
) -> None:
    """Infinity, or an int past the largest float, is refused when the server is built."""
    with pytest.raises(ValueError, match=f"{option} must be positive seconds"):
        _mcp(**{option: value})


def test_an_mcp_server_takes_a_whole_number_of_seconds_as_a_timeout() -> None:
    """An int is a number of seconds like a float; None is no limit for a call."""
    assert _mcp(timeout=5, startup_timeout=2).timeout == 5
    assert _mcp(timeout=None).timeout is None
