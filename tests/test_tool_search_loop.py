"""Tool search from async code: building the index never blocks the caller's event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from toolcycle import ToolDescriptor, ToolRuntime, tool
from toolcycle.agent._search import SearchIndex
from toolcycle.runtime import _search
from toolcycle.testing import capture_traces

pytest.importorskip("bm25s")

WAIT = 5.0


@tool(writes=False, defer_loading=True)
def github_create_issue(repo: str, title: str) -> str:
    """Create an issue in a GitHub repository."""
    return f"{repo}#{title}"


@tool(writes=False, defer_loading=True)
def slack_post_message(channel: str, text: str) -> str:
    """Post a message to a Slack channel."""
    return "posted"


SEARCH = {"id": "call_1", "name": "search_tools", "arguments": {"query": "slack message"}}


class LoopBoundIndex(SearchIndex):
    """An index whose build finishes only once the event loop has run a callback.

    The build asks the loop to set ``released`` and waits for it (boundedly): a
    build on the loop's own thread keeps the loop from ever running that callback.
    """

    loop: ClassVar[asyncio.AbstractEventLoop]
    builds: ClassVar[list[bool]] = []

    def __init__(self, descriptors: Sequence[ToolDescriptor]) -> None:
        released = threading.Event()
        self.loop.call_soon_threadsafe(released.set)
        self.builds.append(released.wait(WAIT))
        super().__init__(descriptors)


@pytest.fixture
def loop_bound(monkeypatch: pytest.MonkeyPatch) -> type[LoopBoundIndex]:
    """`LoopBoundIndex` in place of the runtime's search index, its builds list empty."""
    monkeypatch.setattr(LoopBoundIndex, "builds", [])
    monkeypatch.setattr(_search, "SearchIndex", LoopBoundIndex)
    return LoopBoundIndex


@pytest.fixture
def searchable(runtime: ToolRuntime) -> ToolRuntime:
    """The runtime with two deferred tools."""
    runtime.register(github_create_issue)
    runtime.register(slack_post_message)
    return runtime


async def test_acall_builds_the_search_index_while_the_event_loop_keeps_running(
    searchable: ToolRuntime, loop_bound: type[LoopBoundIndex]
) -> None:
    """The first search's index is built off the loop; result, reveal and trace as ever."""
    loop_bound.loop = asyncio.get_running_loop()
    with capture_traces(searchable) as traces:
        async with searchable.aplan(read_only=True) as ctx:
            result = await asyncio.wait_for(searchable.acall(SEARCH, ctx), WAIT)
            assert loop_bound.builds == [True]  # the loop ran the callback mid-build
            assert result.success
            assert [tool["name"] for tool in result.output["tools"]] == ["slack_post_message"]
            assert ctx.revealed_tools == {"slack_post_message"}
            again = await searchable.acall(SEARCH, ctx)  # warm: no second build
            assert again.output == result.output
            assert loop_bound.builds == [True]
    assert [(t.tool_name, t.status, t.revealed_tools) for t in traces] == [
        ("search_tools", "ok", ("slack_post_message",)),
        ("search_tools", "ok", ("slack_post_message",)),
    ]


async def test_acall_many_builds_the_search_index_while_the_event_loop_keeps_running(
    searchable: ToolRuntime, loop_bound: type[LoopBoundIndex]
) -> None:
    """A search in a batch builds its index off the loop too; both searches share it."""
    loop_bound.loop = asyncio.get_running_loop()
    async with searchable.aplan(read_only=True) as ctx:
        batch = [SEARCH, {**SEARCH, "id": "call_2"}]
        results = await asyncio.wait_for(searchable.acall_many(batch, ctx), WAIT)
    assert all(loop_bound.builds) and loop_bound.builds
    assert [r.output for r in results] == [results[0].output] * 2
    assert results[0].output["tools"][0]["name"] == "slack_post_message"


async def test_a_search_with_its_index_built_answers_on_the_loop_without_a_thread(
    searchable: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once built, an index is searched at once: no thread is started for it."""
    async with searchable.aplan(read_only=True) as ctx:
        await searchable.acall(SEARCH, ctx)

        async def no_thread(*args: Any) -> Any:
            raise AssertionError("a built index needs no thread")

        monkeypatch.setattr(_search, "athread", no_thread)
        found = await searchable.acall(SEARCH, ctx)
    assert found.output["tools"][0]["name"] == "slack_post_message"


class Finished:
    """Instrumentation that keeps the status of each observed call's trace."""

    def __init__(self) -> None:
        self.statuses: list[str | None] = []

    def call_started(self, **_: Any) -> Finished:
        return self

    @property
    def record_payloads(self) -> bool:
        return False

    def finish(self, trace: Any, **_: Any) -> None:
        self.statuses.append(None if trace is None else trace.status)

    def stage_started(self, *_: Any, **__: Any) -> Any:
        return None


async def test_a_search_cancelled_while_its_index_builds_is_traced_and_the_index_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cancelling the caller mid-build traces the search as cancelled; the next one reuses it."""
    entered, release = threading.Event(), threading.Event()
    builds: ClassVar[list[bool]] = []

    class HeldIndex(SearchIndex):
        def __init__(self, descriptors: Sequence[ToolDescriptor]) -> None:
            entered.set()
            builds.append(release.wait(WAIT))
            super().__init__(descriptors)

    monkeypatch.setattr(_search, "SearchIndex", HeldIndex)
    observed = Finished()
    loop = asyncio.get_running_loop()
    with ToolRuntime(instrumentation=observed) as runtime:
        runtime.register(slack_post_message)
        with capture_traces(runtime) as traces:
            async with runtime.aplan(read_only=True) as ctx:
                task = asyncio.ensure_future(runtime.acall(SEARCH, ctx))
                assert await loop.run_in_executor(None, entered.wait, WAIT)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert ctx.revealed_tools == set()
                release.set()
                found = await asyncio.wait_for(runtime.acall(SEARCH, ctx), WAIT)
    assert builds == [True]  # the abandoned build finished and served the next search
    assert found.output["tools"][0]["name"] == "slack_post_message"
    assert [(t.status, t.revealed_tools) for t in traces] == [
        ("cancelled", ()),
        ("ok", ("slack_post_message",)),
    ]
    assert observed.statuses == ["cancelled", "ok"]
