"""Refreshing stale sources: failed refreshes, and listings that do not block the runtime."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from toolcycle import ToolRuntime
from toolcycle.errors import MAX_ERROR_BYTES
from toolcycle.testing import FakeTool

WAIT = 5.0
HELD = 6 * WAIT  # how long a blocked listing waits: longer than any wait that watches it


class _Source:
    """A source whose list the test changes; it clears its own flag when listed, as MCP does."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.stale = False
        self.listed = 0
        self.fail_listing: Exception | None = None

    def tools(self) -> list[Any]:
        self.listed += 1
        self.stale = False
        if self.fail_listing is not None:
            raise self.fail_listing
        return [
            FakeTool(name=n, input_schema={"type": "no-such-type"})
            if n.startswith("bad")
            else FakeTool(name=n)
            for n in self.names
        ]


class _Blocking:
    """A source whose next listing waits for ``release``, after setting ``entered``."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.stale = False
        self.block = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def tools(self) -> list[Any]:
        self.stale = False
        names = list(self.names)  # what the server had when it answered
        if self.block:
            self.block = False
            self.entered.set()
            assert self.release.wait(HELD)
        return [FakeTool(name=n) for n in names]


def _logged(caplog: pytest.LogCaptureFixture, event: str, text: str) -> bool:
    """Whether a structlog event was logged with ``text`` in one of its fields."""
    return any(
        r.getMessage() == event and any(text in str(value) for value in vars(r).values())
        for r in caplog.records
    )


def _names(runtime: ToolRuntime) -> list[str]:
    return sorted(d.name for d in runtime.descriptors())


def _in_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``target`` in a daemon thread; the list gets what it raised, if anything."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_a_refresh_whose_new_list_clashes_keeps_the_old_tools_and_stays_stale(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """A new list naming another source's tool changes nothing, is logged and tried again."""
    source = _Source("a", "b")
    runtime.register_source(source)
    theirs = FakeTool(name="x")
    runtime.register(theirs)
    before = {name: runtime.descriptor(name) for name in ("a", "b")}
    source.names, source.stale = ["a", "x"], True
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        with runtime.plan() as ctx:
            assert runtime.execute("b", {}, ctx).success
            assert runtime.execute("x", {}, ctx).success
    assert _names(runtime) == ["a", "b", "x"]
    assert {name: runtime.descriptor(name) for name in ("a", "b")} == before
    assert _logged(caplog, "source.refresh_failed", "'x'")
    runtime.end_plan(runtime.new_context())  # still stale: asked again, still clashes
    assert source.listed == 3 and _names(runtime) == ["a", "b", "x"]
    runtime.unregister("x")
    runtime.end_plan(runtime.new_context())
    assert source.listed == 4 and _names(runtime) == ["a", "x"]
    runtime.end_plan(runtime.new_context())
    assert source.listed == 4  # applied: no longer stale
    assert theirs.count("activate") == 1


def test_a_refresh_with_an_unusable_schema_keeps_the_old_tools_and_stays_stale(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """A new list the registry cannot take (a bad schema, not skipped) leaves the old tools."""
    source = _Source("a")
    runtime.register_source(source)
    source.names, source.stale = ["a", "bad"], True
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.end_plan(runtime.new_context())
    assert _names(runtime) == ["a"]
    assert _logged(caplog, "source.refresh_failed", "no-such-type")
    source.names = ["a", "c"]
    runtime.end_plan(runtime.new_context())
    assert _names(runtime) == ["a", "c"]


def test_a_source_whose_listing_failed_is_asked_again_before_the_next_plan(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """A source that cleared its own flag before failing is still listed again."""
    source = _Source("a")
    runtime.register_source(source)
    source.names, source.stale = ["a", "b"], True
    source.fail_listing = RuntimeError("server is down")
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.end_plan(runtime.new_context())
    assert _names(runtime) == []
    assert _logged(caplog, "source.refresh_failed", "server is down")
    source.fail_listing = None
    runtime.end_plan(runtime.new_context())
    assert _names(runtime) == ["a", "b"]


def test_a_huge_refresh_failure_is_logged_cut_to_the_error_limit(
    runtime: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """A listing that fails with megabytes of text logs its head and tail, not all of it."""
    source = _Source("a")
    runtime.register_source(source)
    source.stale = True
    source.fail_listing = RuntimeError("down: " + "x" * 2_000_000 + " :end")
    with caplog.at_level(logging.WARNING, logger="toolcycle.runtime"):
        runtime.end_plan(runtime.new_context())
    [failed] = [r for r in caplog.records if r.getMessage() == "source.refresh_failed"]
    error = str(vars(failed)["error"])
    assert len(error.encode()) <= MAX_ERROR_BYTES
    assert error.startswith("down: ") and error.endswith(" :end")
    assert "bytes of this error cut" in error


def test_a_refresh_leaves_a_tool_it_does_not_own_registered(runtime: ToolRuntime) -> None:
    """A name the source had, now held by a tool registered by hand, is not taken away."""
    source = _Source("a", "b")
    runtime.register_source(source)
    runtime.unregister("b")
    mine = FakeTool(name="b")
    runtime.register(mine)
    source.names, source.stale = ["a"], True
    runtime.end_plan(runtime.new_context())
    assert _names(runtime) == ["a", "b"]
    with runtime.plan() as ctx:
        assert runtime.execute("b", {}, ctx).success
    assert mine.count("execute") == 1


def test_other_sources_are_usable_while_a_stale_source_is_being_listed(
    runtime: ToolRuntime,
) -> None:
    """A slow listing holds no lock: plans, calls, registration and lookups go on meanwhile."""
    slow = _Blocking("s1")
    runtime.register_source(slow)
    other = FakeTool(name="other")
    runtime.register(other)
    slow.names, slow.block, slow.stale = ["s1", "s2"], True, True
    refresh, refresh_errors = _in_thread(lambda: runtime.end_plan(runtime.new_context()))
    try:
        assert slow.entered.wait(WAIT)

        def meanwhile() -> None:
            with runtime.plan() as ctx:
                assert runtime.execute("other", {}, ctx).success
            runtime.register(FakeTool(name="late"))
            assert runtime.descriptor("late").name == "late"
            assert "s1" in [d.name for d in runtime.descriptors()]

        worker, errors = _in_thread(meanwhile)
        worker.join(WAIT)
        assert not worker.is_alive(), "blocked behind the listing of another source"
        assert errors == []
    finally:
        slow.release.set()
        refresh.join(WAIT)
    assert not refresh.is_alive() and refresh_errors == []
    assert _names(runtime) == ["late", "other", "s1", "s2"]
    assert other.count("execute") == 1


def test_a_source_is_listed_by_one_thread_at_a_time(runtime: ToolRuntime) -> None:
    """A plan opened while the source is being listed neither waits nor lists it again."""
    slow = _Blocking("s1")
    runtime.register_source(slow)
    listings = 0
    tools = slow.tools

    def counted() -> list[Any]:
        nonlocal listings
        listings += 1
        return tools()

    slow.tools = counted  # type: ignore[method-assign]
    slow.names, slow.block, slow.stale = ["s2"], True, True
    refresh, refresh_errors = _in_thread(lambda: runtime.end_plan(runtime.new_context()))
    try:
        assert slow.entered.wait(WAIT)
        slow.stale = True  # the list changed again while it was being listed
        worker, errors = _in_thread(lambda: runtime.end_plan(runtime.new_context()))
        worker.join(WAIT)
        assert not worker.is_alive() and errors == []
        assert listings == 1
    finally:
        slow.release.set()
        refresh.join(WAIT)
    assert not refresh.is_alive() and refresh_errors == []
    assert _names(runtime) == ["s2"]
    slow.names = ["s3"]
    runtime.end_plan(runtime.new_context())  # the change seen during the listing
    assert listings == 2 and _names(runtime) == ["s3"]


def test_a_listing_finished_after_close_registers_nothing() -> None:
    """A refresh whose source was closed meanwhile is dropped, not applied."""
    runtime = ToolRuntime()
    slow = _Blocking("s1")
    runtime.register_source(slow)
    slow.names, slow.block, slow.stale = ["s2"], True, True
    refresh, _ = _in_thread(runtime.new_context)
    try:
        assert slow.entered.wait(WAIT)
        closer, close_errors = _in_thread(runtime.close)
        closer.join(WAIT)
        assert not closer.is_alive() and close_errors == []
    finally:
        slow.release.set()
        refresh.join(WAIT)
    assert not refresh.is_alive()
    assert "s2" not in [d.name for d in runtime.descriptors()]


def test_registering_a_source_again_replaces_its_earlier_registration(
    runtime: ToolRuntime,
) -> None:
    """A source registered afresh (after its tools were unregistered) is listed once per refresh."""
    source = _Source("a")
    runtime.register_source(source)
    runtime.unregister("a")
    runtime.register_source(source)
    source.names, source.stale = ["b"], True
    runtime.end_plan(runtime.new_context())
    assert source.listed == 3 and _names(runtime) == ["b"]


async def test_aplan_lists_a_stale_source_off_the_event_loop(runtime: ToolRuntime) -> None:
    """While a stale source is listed for an async plan, the caller's event loop runs on."""
    slow = _Blocking("s1")
    runtime.register_source(slow)
    slow.names, slow.block, slow.stale = ["s2"], True, True
    progressed = threading.Event()

    def watchdog() -> None:  # frees a listing that blocks the loop, so the test ends
        if slow.entered.wait(WAIT) and not progressed.wait(WAIT):
            slow.release.set()

    threading.Thread(target=watchdog, daemon=True).start()

    async def open_plan() -> list[str]:
        async with runtime.aplan():
            return _names(runtime)

    task = asyncio.create_task(open_plan())
    assert await asyncio.to_thread(slow.entered.wait, WAIT)
    progressed.set()
    free = not slow.release.is_set()
    slow.release.set()
    assert await asyncio.wait_for(task, WAIT) == ["s2"]
    assert free, "the listing held up the event loop"
