"""pydantic-ai toolsets as a toolcycle source (`from_toolset`), against the installed pydantic-ai."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Self

import anyio
import pytest
from pydantic import BaseModel, field_validator
from pydantic_ai import ApprovalRequired as PydanticAiApprovalRequired
from pydantic_ai import CallDeferred as PydanticAiCallDeferred
from pydantic_ai import FunctionToolset, RunContext, ToolReturn
from pydantic_ai import ModelRetry as PydanticAiModelRetry
from pydantic_ai import ToolFailed as PydanticAiToolFailed
from pydantic_ai.messages import BinaryContent, CachePoint, ImageUrl, TextContent, UploadedFile
from pydantic_ai.toolsets import WrapperToolset

from toolcycle import (
    ApprovalDecision,
    Audio,
    File,
    Image,
    ModelRetry,
    ResourceLink,
    RetryPolicy,
    Text,
    ToolAccessDeniedError,
    ToolActivationError,
    ToolCapability,
    ToolRuntime,
    ToolSource,
    tool,
)
from toolcycle.adapters.pydantic_ai import from_toolset
from toolcycle.testing import capture_traces

WAIT = 5.0


class Point(BaseModel):
    x: int
    y: int


def make_toolset() -> FunctionToolset[str]:
    """A read tool that uses the run's deps, a writing tool, and one with a model argument."""
    toolset: FunctionToolset[str] = FunctionToolset()

    @toolset.tool
    def greet(ctx: RunContext[str], name: str) -> str:
        """Greet someone on behalf of the deps."""
        return f"{ctx.deps} greets {name}"

    @toolset.tool_plain
    def write_file(path: str, text: str) -> str:
        """Write a file."""
        return f"wrote {len(text)} to {path}"

    @toolset.tool_plain(sequential=True)
    def shift(point: Point) -> ToolReturn:
        """Move a point one step right."""
        return ToolReturn(return_value=Point(x=point.x + 1, y=point.y))

    return toolset


@dataclass
class Recording(WrapperToolset[Any]):
    """Records entries and exits; can hold its entry at a gate, or fail it."""

    events: list[str] = field(default_factory=list)
    gate: asyncio.Event | None = None
    fail_enter: bool = False
    fail_listing: bool = False

    async def __aenter__(self) -> Self:
        self.events.append("enter")
        if self.gate is not None:
            await asyncio.wait_for(self.gate.wait(), WAIT)
        if self.fail_enter:
            raise ConnectionError("the server is down")
        await super().__aenter__()
        return self

    async def __aexit__(self, *args: object) -> bool | None:
        self.events.append("exit")
        return await super().__aexit__(*args)

    async def get_tools(self, ctx: RunContext[Any]) -> Any:
        if self.fail_listing and self.events.count("enter") > 1:
            raise ConnectionError("listing failed")
        return await super().get_tools(ctx)


def register(runtime: ToolRuntime, source: ToolSource) -> list[str]:
    return [descriptor.name for descriptor in runtime.register_source(source)]


def test_a_function_toolset_runs_under_a_plan_with_capabilities_validation_and_traces(
    runtime: ToolRuntime,
) -> None:
    """Its tools are validated, traced and refused by a read-only plan like any other."""
    read = {"greet": ToolCapability(writes=False)}
    source = from_toolset(make_toolset(), deps="ann", capabilities=read)
    assert register(runtime, source) == ["greet", "write_file", "shift"]
    assert "FunctionToolset" in repr(source)
    assert repr(next(iter(source.tools()))).startswith("<greet of from_toolset(")

    with capture_traces(runtime) as traces, runtime.plan(read_only=True) as ctx:
        greeted = runtime.execute("greet", {"name": "bob"}, ctx)
        wrong = runtime.execute("greet", {"name": 7}, ctx)
        with pytest.raises(ToolAccessDeniedError):
            runtime.execute("write_file", {"path": "a", "text": "b"}, ctx)

    assert greeted.output == "ann greets bob"
    assert wrong.error_type == "ToolSchemaValidationError"
    assert [(t.tool_name, t.status) for t in traces] == [
        ("greet", "ok"),
        ("greet", "invalid_input"),
        ("write_file", "denied"),
    ]


async def test_arguments_reach_the_tool_as_its_types_and_its_return_as_json(
    runtime: ToolRuntime,
) -> None:
    """A model argument is built by the toolset's validator; a ToolReturn gives its value."""
    register(runtime, from_toolset(make_toolset()))
    assert runtime.descriptor("shift").capability == ToolCapability(sequential=True)
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("shift", {"x": 1, "y": 2}, ctx)
    assert result.output == {"x": 2, "y": 2}


async def test_model_retry_from_a_toolset_tool_asks_the_model_to_retry(
    runtime: ToolRuntime,
) -> None:
    """pydantic-ai's ModelRetry is toolcycle's: a retryable failure, as from a native tool."""
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def lookup(key: str) -> str:
        """Look a key up."""
        raise PydanticAiModelRetry("no such key; try 'a' or 'b'")

    @tool
    def native(key: str) -> str:
        """Look a key up, natively."""
        raise ModelRetry("no such key; try 'a' or 'b'")

    register(runtime, from_toolset(toolset))
    runtime.register(native)
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("lookup", {"key": "z"}, ctx)
            expected = await runtime.aexecute("native", {"key": "z"}, ctx)
    assert result.error_type == expected.error_type == "ModelRetry"
    assert result.retryable and result.retries_left == expected.retries_left == 1
    assert result.error == (expected.error or "").replace("'native'", "'lookup'")
    assert [t.status for t in traces] == ["error", "error"]


async def test_tool_failed_from_a_toolset_tool_is_never_retried(runtime: ToolRuntime) -> None:
    """pydantic-ai's ToolFailed is toolcycle's: a failure on purpose, which no policy repeats."""
    toolset: FunctionToolset[None] = FunctionToolset()
    runs: list[str] = []

    @toolset.tool_plain
    def fetch(key: str) -> str:
        """Fetch a key."""
        runs.append(key)
        raise PydanticAiToolFailed(f"{key} was deleted upstream")

    policy = RetryPolicy(attempts=3, backoff=0.0, jitter=0.0, retry_on=(Exception,))
    read = {"fetch": ToolCapability(writes=False, idempotent=True)}  # else never retried
    runtime.register_source(from_toolset(toolset, capabilities=read), retry=policy)
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("fetch", {"key": "k"}, ctx)
    assert runs == ["k"]  # one run: not retried although retry_on names every exception
    assert result.error_type == "ToolFailed" and not result.retryable
    assert result.error == "k was deleted upstream"


class RelativePath(BaseModel):
    """A path that a rule JSON Schema cannot express keeps relative."""

    path: str

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/"):
            raise ValueError("the path must be relative")
        return value


async def test_arguments_a_toolset_tool_rejects_ask_the_model_to_retry(
    runtime: ToolRuntime,
) -> None:
    """The argument validator and the args_validator function run; a rejection is a retry.

    The arguments pass the JSON Schema; the model's validator, a sync and an async
    ``args_validator`` (given the run's deps) reject them, each with its own message.
    """
    toolset: FunctionToolset[str] = FunctionToolset()

    @toolset.tool_plain
    def read(where: RelativePath) -> str:
        """Read a file."""
        return f"read {where.path}"

    def capitalised(ctx: RunContext[str], city: str) -> None:
        if city != city.title():
            raise PydanticAiModelRetry(f"{ctx.deps}: write the city capitalised")

    async def known(ctx: RunContext[str], city: str) -> None:
        if city not in {"Oslo", "Bergen"}:
            raise PydanticAiModelRetry(f"{ctx.deps}: {city} is not a known city")

    @toolset.tool_plain(args_validator=capitalised)
    def forecast(city: str) -> str:
        """Forecast the weather."""
        return f"sun in {city}"

    @toolset.tool_plain(args_validator=known)
    def warnings(city: str) -> str:
        """Weather warnings."""
        return f"none in {city}"

    register(runtime, from_toolset(toolset, deps="station"))
    async with runtime.aplan() as ctx:
        results = [
            await runtime.aexecute("read", {"path": "/etc/hosts"}, ctx),
            await runtime.aexecute("forecast", {"city": "oslo"}, ctx),
            await runtime.aexecute("warnings", {"city": "Paris"}, ctx),
        ]
        accepted = [
            await runtime.aexecute("read", {"path": "notes.txt"}, ctx),
            await runtime.aexecute("forecast", {"city": "Oslo"}, ctx),
            await runtime.aexecute("warnings", {"city": "Bergen"}, ctx),
        ]
    assert all(r.error_type == "ModelRetry" and r.retryable for r in results)
    assert "path: Value error, the path must be relative" in (results[0].error or "")
    assert "station: write the city capitalised" in (results[1].error or "")
    assert "station: Paris is not a known city" in (results[2].error or "")
    assert [r.output for r in accepted] == ["read notes.txt", "sun in Oslo", "none in Bergen"]


async def test_a_validation_error_from_an_args_validator_asks_the_model_to_retry(
    runtime: ToolRuntime,
) -> None:
    """An args_validator that validates with pydantic and raises its ValidationError is a retry.

    pydantic-ai answers that rejection with a retry prompt, as it does a ``ModelRetry``;
    the problems are listed one a line, and the tool's retries in a row count it.
    """
    toolset: FunctionToolset[None] = FunctionToolset()

    def relative(ctx: RunContext[None], path: str) -> None:
        RelativePath.model_validate({"path": path})

    @toolset.tool_plain(args_validator=relative)
    def read(path: str) -> str:
        """Read a file."""
        return f"read {path}"

    register(runtime, from_toolset(toolset))
    async with runtime.aplan() as ctx:
        rejected = await runtime.aexecute("read", {"path": "/etc/hosts"}, ctx)
        accepted = await runtime.aexecute("read", {"path": "notes.txt"}, ctx)
    assert rejected.error_type == "ModelRetry" and rejected.retryable
    assert "path: Value error, the path must be relative" in (rejected.error or "")
    assert "errors.pydantic.dev" not in (rejected.error or "")
    assert accepted.output == "read notes.txt"


async def test_a_tool_returns_content_and_metadata_reach_the_model_and_the_host(
    runtime: ToolRuntime,
) -> None:
    """ToolReturn.content becomes parts after the value's text; metadata is the host's alone."""
    toolset: FunctionToolset[None] = FunctionToolset()
    png, wav, pdf = b"\x89PNG\r\n\x1a\n...", b"RIFF....WAVE", b"%PDF-1.7..."

    @toolset.tool_plain
    def report(week: int) -> ToolReturn[dict[str, int]]:
        """The weekly report."""
        return ToolReturn(
            {"week": week},
            content=[
                "the weekly report",
                TextContent("the totals", metadata={"for": "the app"}),
                BinaryContent(png, media_type="image/png"),
                BinaryContent(wav, media_type="audio/wav"),
                BinaryContent(pdf, media_type="application/pdf", identifier="weekly.pdf"),
                ImageUrl("https://example.com/chart.png"),
            ],
            metadata={"render_ms": 41},
        )

    register(runtime, from_toolset(toolset))
    with capture_traces(runtime) as traces:
        async with runtime.aplan() as ctx:
            result = await runtime.aexecute("report", {"week": 7}, ctx)
    assert result.output == {"week": 7}
    assert result.content == (
        Text('{"week":7}'),
        Text("the weekly report"),
        Text("the totals"),
        Image(png, "image/png"),
        Audio(wav, "audio/wav"),
        File(pdf, "application/pdf", name="weekly.pdf"),
        ResourceLink("https://example.com/chart.png", mime_type="image/png"),
    )
    assert result.metadata == {"render_ms": 41}
    assert traces[0].content_kinds == (("text",) * 3 + ("image", "audio", "file", "resource_link"))


async def test_tool_return_content_without_a_part_is_named_or_left_out(
    runtime: ToolRuntime,
) -> None:
    """An uploaded file or an unknown item becomes a line naming it, a cache point nothing.

    Metadata that is not a mapping is kept under "metadata"; a URL whose media type
    cannot be inferred is a link without one. A plain ToolReturn (no content, no
    metadata) still gives its value alone.
    """
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def upload() -> ToolReturn:
        """Upload a file."""
        return ToolReturn(
            "uploaded",
            content=[
                UploadedFile("file-abc123", "openai", media_type="application/pdf"),
                CachePoint(),
                ImageUrl("https://example.com/latest"),  # no media type to infer
                Point(x=1, y=2),  # not pydantic-ai content: a kind this adapter does not know
            ],
            metadata=["not", "a", "mapping"],
        )

    @toolset.tool_plain
    def note() -> ToolReturn:
        """A note."""
        return ToolReturn(None, content="only content")

    @toolset.tool_plain
    def plain() -> ToolReturn:
        """A plain value."""
        return ToolReturn({"ok": True})

    register(runtime, from_toolset(toolset))
    async with runtime.aplan() as ctx:
        uploaded = await runtime.aexecute("upload", {}, ctx)
        noted = await runtime.aexecute("note", {}, ctx)
        plained = await runtime.aexecute("plain", {}, ctx)
    assert uploaded.output == "uploaded"
    assert uploaded.content == (
        Text("uploaded"),
        Text(
            "[uploaded file file-abc123 (application/pdf) not shown: "
            "toolcycle has no content part for it]"
        ),
        ResourceLink("https://example.com/latest"),
        Text("[Point item not shown: toolcycle has no content part for it]"),
    )
    assert uploaded.metadata == {"metadata": ["not", "a", "mapping"]}
    assert noted.output is None and noted.content == (Text("only content"),)
    assert noted.metadata is None
    assert plained.output == {"ok": True} and plained.content == () and plained.metadata is None


def test_a_tool_pydantic_ai_loads_only_when_searched_is_a_deferred_tool(
    runtime: ToolRuntime,
) -> None:
    """defer_loading, set on a tool or by a whole toolset's defer_loading(), defers it here.

    It stays out of the definitions until a search reveals it; the others are shown.
    """
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain(defer_loading=True)
    def create_issue(repo: str, title: str) -> str:
        """Create an issue in a GitHub repository."""
        return f"created {title!r} in {repo}"

    @toolset.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    others: FunctionToolset[None] = FunctionToolset()

    @others.tool_plain
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    register(runtime, from_toolset(toolset))
    register(runtime, from_toolset(others.defer_loading()))
    assert [runtime.descriptor(name).defer_loading for name in ("create_issue", "add")] == [
        True,
        False,
    ]
    assert runtime.descriptor("multiply").defer_loading
    with runtime.plan() as ctx:
        shown = runtime.tool_definitions(ctx, format="openai")
        assert [d["function"]["name"] for d in shown] == ["add", "search_tools"]
        search = {"name": "search_tools", "arguments": {"query": "github issue"}}
        assert runtime.call(search, ctx).success
        assert "create_issue" in ctx.revealed_tools


async def test_each_plan_enters_the_toolset_once_and_exits_it_at_its_end(
    runtime: ToolRuntime,
) -> None:
    """Listing enters and exits once; each plan then enters at activation, exits at its end."""
    recording = Recording(make_toolset())
    register(runtime, from_toolset(recording, deps="ann"))
    assert recording.events == ["enter", "exit"]
    for _ in range(2):
        async with runtime.aplan() as ctx:
            await runtime.aexecute("greet", {"name": "a"}, ctx)
            await runtime.aexecute("write_file", {"path": "p", "text": "t"}, ctx)
            assert recording.events[-1] == "enter"
    assert recording.events == ["enter", "exit"] * 3


async def test_concurrent_first_calls_in_a_plan_share_one_entry(runtime: ToolRuntime) -> None:
    """Two tools activated at once in one plan: the second waits for the first's entry."""
    recording = Recording(make_toolset())
    source = from_toolset(recording, deps="ann")
    register(runtime, source)
    recording.gate = asyncio.Event()
    async with runtime.aplan() as ctx:
        calls = asyncio.gather(
            runtime.aexecute("greet", {"name": "a"}, ctx),
            runtime.aexecute("write_file", {"path": "p", "text": "t"}, ctx),
        )
        task = asyncio.ensure_future(calls)
        await _until(lambda: source._plans.get(ctx.plan_id, None) is not None)
        await _until(lambda: source._plans[ctx.plan_id].active == 2)
        recording.gate.set()
        first, second = await asyncio.wait_for(task, WAIT)
    assert first.success and second.success
    assert recording.events == ["enter", "exit", "enter", "exit"]


async def test_a_toolset_that_cannot_be_entered_fails_the_activation(
    runtime: ToolRuntime,
) -> None:
    """Entering fails: both waiting activations fail, and the next call tries again."""
    recording = Recording(make_toolset())
    source = from_toolset(recording, deps="ann")
    register(runtime, source)
    recording.gate, recording.fail_enter = asyncio.Event(), True
    async with runtime.aplan() as ctx:
        calls = asyncio.gather(
            runtime.aexecute("greet", {"name": "a"}, ctx),
            runtime.aexecute("write_file", {"path": "p", "text": "t"}, ctx),
            return_exceptions=True,
        )
        task = asyncio.ensure_future(calls)
        await _until(lambda: source._plans.get(ctx.plan_id, None) is not None)
        await _until(lambda: source._plans[ctx.plan_id].active == 2)
        recording.gate.set()
        outcomes = await asyncio.wait_for(task, WAIT)
        assert all(isinstance(outcome, ToolActivationError) for outcome in outcomes)
        assert ctx.plan_id not in source._plans
        recording.gate, recording.fail_enter = None, False
        assert (await runtime.aexecute("greet", {"name": "a"}, ctx)).success


async def test_a_toolset_whose_listing_fails_at_activation_is_exited_again(
    runtime: ToolRuntime,
) -> None:
    """The plan's copy is exited when its tools cannot be listed; the call fails."""
    recording = Recording(make_toolset(), fail_listing=True)
    register(runtime, from_toolset(recording, deps="ann"))
    async with runtime.aplan() as ctx:
        with pytest.raises(ToolActivationError):
            await runtime.aexecute("greet", {"name": "a"}, ctx)
    assert recording.events[-2:] == ["enter", "exit"]


async def test_a_tool_the_toolset_stopped_offering_fails_its_call(runtime: ToolRuntime) -> None:
    """A tool listed at registration but not in the plan's copy gives a failed result."""
    offered = {"greet"}
    toolset = make_toolset().filtered(lambda ctx, definition: definition.name in offered)
    register(runtime, from_toolset(toolset, deps="ann"))
    offered.clear()
    async with runtime.aplan() as ctx:
        result = await runtime.aexecute("greet", {"name": "a"}, ctx)
    assert result.error_type == "ToolActivationError"
    assert "no longer offers 'greet'" in (result.error or "")


async def _until(condition: Any) -> None:
    """Let other tasks run until ``condition()`` holds (bounded; no timed sleep)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def test_a_wrapper_toolset_around_a_function_toolset_is_a_source(runtime: ToolRuntime) -> None:
    """Prefixed and filtered: the wrapper's names are the tools', and calls reach the functions."""
    wrapped = make_toolset().filtered(lambda ctx, tool: tool.name != "shift").prefixed("people")
    capabilities = {"people_greet": ToolCapability(writes=False)}
    source = from_toolset(wrapped, deps="ann", capabilities=capabilities)
    assert register(runtime, source) == ["people_greet", "people_write_file"]
    with runtime.plan(read_only=True) as ctx:
        greeted = runtime.execute("people_greet", {"name": "bob"}, ctx)
        with pytest.raises(ToolAccessDeniedError):
            runtime.execute("people_write_file", {"path": "a", "text": "b"}, ctx)
    assert greeted.output == "ann greets bob"


def test_a_tool_pydantic_ai_runs_only_once_approved_needs_the_plans_approval(
    runtime: ToolRuntime,
) -> None:
    """``requires_approval=True`` asks the plan's approver, unless a capability says False."""
    paid: list[int] = []
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid"

    @toolset.tool_plain(requires_approval=True)
    def refund(amount: int) -> str:
        """Refund an amount."""
        return "refunded"

    read = ToolCapability(writes=False)
    never = ToolCapability(requires_approval=False)
    register(runtime, from_toolset(toolset, capabilities={"pay": read, "refund": never}))
    assert runtime.descriptor("pay").capability == ToolCapability(
        writes=False, requires_approval=True
    )
    with runtime.plan() as ctx:  # no approver: refused
        refused = runtime.call({"name": "pay", "arguments": {"amount": 1}}, ctx)
        refunded = runtime.call({"name": "refund", "arguments": {"amount": 1}}, ctx)
    with runtime.plan(approver=lambda request: ApprovalDecision.approve()) as ctx:
        approved = runtime.call({"name": "pay", "arguments": {"amount": 2}}, ctx)
    assert refused.error_type == "ApprovalDenied"
    assert refunded.output == "refunded"
    assert approved.output == "paid"
    assert paid == [2]


@dataclass
class Grouped(WrapperToolset[Any]):
    """Holds an anyio task group from its entry to its exit, as a connection's reader would.

    A task group (its cancel scope) can only be exited by the task that entered it.
    """

    events: list[str] = field(default_factory=list)
    exited: asyncio.Event | None = None
    fail_exit: bool = False

    async def __aenter__(self) -> Self:
        self.group = anyio.create_task_group()
        await self.group.__aenter__()
        self.events.append("enter")
        await super().__aenter__()
        return self

    async def __aexit__(self, *args: object) -> bool | None:
        await super().__aexit__(*args)
        await self.group.__aexit__(None, None, None)
        self.events.append("exit")
        if self.exited is not None:
            self.exited.set()
        if self.fail_exit:
            raise ConnectionError("the connection did not close")
        return None


def test_a_toolset_holding_a_task_group_is_exited_by_the_task_that_entered_it(
    runtime: ToolRuntime,
) -> None:
    """Activation and the plan's end run in different tasks; the toolset does not notice."""
    grouped = Grouped(make_toolset())
    register(runtime, from_toolset(grouped, deps="ann"))
    ctx = runtime.new_context()
    assert runtime.execute("greet", {"name": "a"}, ctx).output == "ann greets a"
    assert runtime.end_plan(ctx) == []
    assert grouped.events == ["enter", "exit"] * 2


async def test_an_async_plan_exits_a_toolset_holding_a_task_group(runtime: ToolRuntime) -> None:
    """The same from async code, with the first calls made at once in tasks of their own."""
    grouped = Grouped(make_toolset())
    register(runtime, from_toolset(grouped, deps="ann"))
    ctx = runtime.new_context()
    results = await asyncio.gather(
        runtime.aexecute("greet", {"name": "a"}, ctx),
        runtime.aexecute("write_file", {"path": "p", "text": "t"}, ctx),
    )
    assert all(result.success for result in results)
    assert await runtime.aend_plan(ctx) == []
    assert grouped.events == ["enter", "exit"] * 2


async def test_a_failed_exit_is_the_plan_end_error(runtime: ToolRuntime) -> None:
    """An error of the toolset's exit is reported by the deactivation that released it."""
    grouped = Grouped(make_toolset())
    register(runtime, from_toolset(grouped, deps="ann"))
    grouped.fail_exit = True
    ctx = runtime.new_context()
    assert (await runtime.aexecute("greet", {"name": "a"}, ctx)).success
    errors = await runtime.aend_plan(ctx)
    assert len(errors) == 1
    assert "the connection did not close" in str(errors[0])
    assert grouped.events[-2:] == ["enter", "exit"]


async def test_a_plan_ended_from_another_thread_is_exited_on_its_own_loop(
    runtime: ToolRuntime,
) -> None:
    """A sync end_plan does not wait for the entering loop; that loop exits the toolset."""
    grouped = Grouped(make_toolset())
    register(runtime, from_toolset(grouped, deps="ann"))
    grouped.exited = asyncio.Event()
    ctx = runtime.new_context()
    assert (await runtime.aexecute("greet", {"name": "a"}, ctx)).success
    assert await asyncio.to_thread(runtime.end_plan, ctx) == []
    await asyncio.wait_for(grouped.exited.wait(), WAIT)
    assert grouped.events[-2:] == ["enter", "exit"]


def test_a_plan_whose_loop_has_closed_ends_without_error(runtime: ToolRuntime) -> None:
    """The loop's shutdown exited the toolset already; ending the plan later has nothing to do."""
    grouped = Grouped(make_toolset())
    register(runtime, from_toolset(grouped, deps="ann"))
    ctx = runtime.new_context()

    async def call() -> None:
        assert (await runtime.aexecute("greet", {"name": "a"}, ctx)).success

    asyncio.run(call())
    assert grouped.events[-2:] == ["enter", "exit"]
    assert runtime.end_plan(ctx) == []
    assert grouped.events.count("exit") == 2


async def test_an_activation_cancelled_while_entering_leaves_nothing_entered(
    runtime: ToolRuntime,
) -> None:
    """Cancelling the first call stops the entry; the plan holds nothing, and can try again."""
    recording = Recording(make_toolset())
    source = from_toolset(recording, deps="ann")
    register(runtime, source)
    recording.gate = asyncio.Event()
    ctx = runtime.new_context()
    call = asyncio.ensure_future(runtime.aexecute("greet", {"name": "a"}, ctx))
    await _until(lambda: recording.events.count("enter") == 2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, WAIT)
    await _until(lambda: ctx.plan_id not in source._plans)
    assert recording.events == ["enter", "exit", "enter"]  # never entered, so never exited
    recording.gate = None
    assert (await runtime.aexecute("greet", {"name": "b"}, ctx)).success
    assert await runtime.aend_plan(ctx) == []
    assert recording.events[-2:] == ["enter", "exit"]


def _flaky_toolset(seen: list[tuple[int, int]]) -> FunctionToolset[None]:
    """A tool with three retries that asks for a retry until its third try."""
    toolset: FunctionToolset[None] = FunctionToolset(max_retries=5)

    @toolset.tool(retries=3)
    def flaky(ctx: RunContext[None], n: int) -> int:
        """Answer n on the third try."""
        seen.append((ctx.retry, ctx.max_retries))
        if ctx.retry < 2:
            raise PydanticAiModelRetry("not yet")
        return n

    @toolset.tool_plain
    def firm(n: int) -> int:
        """Always ask for a retry."""
        raise PydanticAiModelRetry("no")

    return toolset


def test_a_tools_pydantic_ai_retries_are_its_max_retries(runtime: ToolRuntime) -> None:
    """The tool's retries, else its toolset's, are how many retries the plan allows it."""
    register(runtime, from_toolset(_flaky_toolset([])))
    with runtime.plan() as ctx:
        first = runtime.execute("flaky", {"n": 1}, ctx)
        firm = runtime.execute("firm", {"n": 1}, ctx)

    assert first.retryable and first.retries_left == 3
    assert firm.retryable and firm.retries_left == 5


def test_the_run_context_counts_the_tools_retries_in_the_plan(runtime: ToolRuntime) -> None:
    """RunContext.retry is the tool's retries in a row so far; a return starts it anew."""
    seen: list[tuple[int, int]] = []
    register(runtime, from_toolset(_flaky_toolset(seen)))
    with runtime.plan() as ctx:
        outcomes = [runtime.execute("flaky", {"n": 7}, ctx).success for _ in range(4)]
    with runtime.plan() as ctx:
        runtime.execute("flaky", {"n": 7}, ctx)

    assert outcomes == [False, False, True, False]
    assert seen == [(0, 3), (1, 3), (2, 3), (0, 3), (0, 3)]  # a new plan starts from 0


def test_a_tool_without_pydantic_ai_retries_takes_the_sources_limit(runtime: ToolRuntime) -> None:
    """Neither the tool nor its toolset set one: register_source's limit applies, as before."""
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    def firm(n: int) -> int:
        """Always ask for a retry."""
        raise PydanticAiModelRetry("no")

    runtime.register_source(from_toolset(toolset), max_retries=4)
    with runtime.plan() as ctx:
        assert runtime.execute("firm", {"n": 1}, ctx).retries_left == 4


def _asking_toolset() -> FunctionToolset[None]:
    """Tools that ask pydantic-ai's caller for approval or defer their call, and a checked one."""
    toolset: FunctionToolset[None] = FunctionToolset()

    def ask(ctx: RunContext[None], n: int) -> None:
        raise PydanticAiApprovalRequired()

    @toolset.tool_plain
    def pay(n: int) -> int:
        """Pay n."""
        raise PydanticAiApprovalRequired(metadata={"why": "large"})

    @toolset.tool_plain
    def later(n: int) -> int:
        """Answer n later."""
        raise PydanticAiCallDeferred()

    @toolset.tool_plain(args_validator=ask)
    def checked(n: int) -> int:
        """Answer n once checked."""
        return n

    return toolset


def test_approval_required_or_call_deferred_in_a_call_is_a_failure_saying_what_to_do(
    runtime: ToolRuntime,
) -> None:
    """pydantic-ai's in-call approval and deferral are not supported: the failure says so."""
    register(runtime, from_toolset(_asking_toolset()))
    with runtime.plan() as ctx:
        pay, later, checked = (
            runtime.execute(name, {"n": 1}, ctx) for name in ("pay", "later", "checked")
        )

    for result in (pay, later, checked):
        assert result.error_type == "ToolFailed" and not result.retryable
        assert "from_toolset does not support" in (result.error or "")
    assert "ToolCapability(requires_approval=True)" in (pay.error or "")
    assert "ApprovalRequired" in (checked.error or "")
    assert "CallDeferred" in (later.error or "")
