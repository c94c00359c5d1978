"""Result caching: policies, the bounded store, and cached calls through every entry point."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import (
    CachePolicy,
    Change,
    Image,
    NullTracer,
    ResultCache,
    Text,
    ToolCancelledError,
    ToolDefinitionError,
    ToolExecutionContext,
    ToolRegistrationError,
    ToolResult,
    ToolReturn,
    ToolRuntime,
    tool,
    wrap,
)
from toolcycle.approvals import ApprovalDecision
from toolcycle.otel import OpenTelemetry

# -- helpers ----------------------------------------------------------------------------


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counted:
    """A read-only tool whose body and activations are counted."""

    def __init__(self, policy: CachePolicy | None = None, name: str = "lookup") -> None:
        self.runs: list[dict[str, Any]] = []
        self.activations = 0

        def lookup(q: str, n: int = 1) -> dict[str, Any]:
            """Look ``q`` up."""
            self.runs.append({"q": q, "n": n})
            return {"q": q, "n": n, "items": [q] * n}

        self.tool = wrap(lookup, name=name, writes=False, cache=policy)

        @self.tool.on_activate
        def _activate(ctx: ToolExecutionContext) -> None:
            self.activations += 1


class Plan:
    """A plan as the store sees it: told apart by identity, and ended by hand."""

    def __init__(self) -> None:
        self.ended = False


def _runtime(**options: Any) -> ToolRuntime:
    return ToolRuntime(tracer=NullTracer(), deactivate_timeout=5.0, **options)


@pytest.fixture
def rt() -> Iterator[ToolRuntime]:
    runtime = _runtime()
    try:
        yield runtime
    finally:
        runtime.close()


# -- CachePolicy ------------------------------------------------------------------------


def test_a_policy_refuses_a_ttl_too_large_to_be_a_float() -> None:
    """A whole number of seconds past the largest float is refused, not an overflow later."""
    with pytest.raises(ValueError, match="ttl must be positive, finite seconds"):
        CachePolicy(ttl=10**400)
    assert CachePolicy(ttl=10**300).ttl == 10**300  # large, but a float can hold it


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf"), True, "5", None])
def test_a_policy_refuses_a_ttl_that_is_not_positive_finite_seconds(ttl: Any) -> None:
    """Ttl must be seconds: 0, negatives, NaN, inf, booleans and text are refused."""
    with pytest.raises(ValueError, match="ttl must be positive, finite seconds"):
        CachePolicy(ttl=ttl)


def test_a_policy_refuses_an_unknown_scope_and_a_key_that_is_not_callable() -> None:
    """Scope is 'plan' or 'runtime'; key is a function or None."""
    with pytest.raises(ValueError, match="scope must be 'plan' or 'runtime'"):
        CachePolicy(ttl=1, scope="process")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be a function"):
        CachePolicy(ttl=1, key="q")  # type: ignore[arg-type]


def test_a_policy_defaults_to_plan_scope_and_the_whole_input_as_key() -> None:
    """CachePolicy(ttl) caches per plan, keyed by the whole validated input."""
    policy = CachePolicy(ttl=2.5)
    assert (policy.ttl, policy.key, policy.scope) == (2.5, None, "plan")


# -- ResultCache ------------------------------------------------------------------------


@pytest.mark.parametrize("bound", ["max_entries", "max_bytes"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_a_store_refuses_bounds_that_are_not_positive_whole_numbers(bound: str, value: Any) -> None:
    """Both bounds must be positive integers."""
    with pytest.raises(ValueError, match=f"{bound} must be a positive whole number"):
        ResultCache(**{bound: value})


def test_a_store_evicts_the_least_recently_used_entry_at_max_entries() -> None:
    """The third entry in a two-entry store pushes out the one read least recently."""
    store = ResultCache(max_entries=2)
    store.put((1, ("runtime",), "a"), "A", 10, 60, None)
    store.put((1, ("runtime",), "b"), "B", 10, 60, None)
    assert store.get((1, ("runtime",), "a")) == "A"  # now b is the least recently used
    store.put((1, ("runtime",), "c"), "C", 10, 60, None)
    assert len(store) == 2
    assert store.get((1, ("runtime",), "b")) is None
    assert store.get((1, ("runtime",), "c")) == "C"
    assert (store.hits, store.misses) == (2, 1)


def test_a_store_keeps_at_most_max_bytes_and_refuses_a_larger_value() -> None:
    """Bytes are bounded too: old entries go to make room; an oversized value is not kept."""
    store = ResultCache(max_bytes=100)
    assert store.put((1, ("runtime",), "a"), "A", 60, 60, None)
    assert store.put((1, ("runtime",), "b"), "B", 60, 60, None)
    assert store.bytes_used == 60 and len(store) == 1
    assert not store.put((1, ("runtime",), "c"), "C", 101, 60, None)
    assert store.get((1, ("runtime",), "b")) == "B"


def test_a_store_entry_expires_after_its_ttl() -> None:
    """An entry is fresh for its ttl, then gone."""
    clock = Clock()
    store = ResultCache(timer=clock)
    store.put((1, ("runtime",), "a"), "A", 1, 10, None)
    clock.now += 9.9
    assert store.get((1, ("runtime",), "a")) == "A"
    clock.now += 0.2
    assert store.get((1, ("runtime",), "a")) is None


def test_a_store_that_never_kept_anything_is_empty_and_clear_forgets_all() -> None:
    """An unused store answers misses; clear() empties a used one."""
    store, plan = ResultCache(), Plan()
    assert len(store) == 0 and store.bytes_used == 0 and store.get("k") is None
    assert store.drop_plan(plan) == 0
    store.clear()
    store.put((1, ("plan", plan), "a"), "A", 1, 10, plan)
    store.clear()
    assert len(store) == 0 and store.drop_plan(plan) == 0


def test_a_store_drops_only_the_ended_plans_entries() -> None:
    """drop_plan forgets one plan's entries and keeps the others and the runtime's."""
    store, p, q = ResultCache(), Plan(), Plan()
    store.put((1, ("plan", p), "a"), "A", 1, 10, p)
    store.put((1, ("plan", q), "a"), "A", 1, 10, q)
    store.put((1, ("runtime",), "a"), "A", 1, 10, None)
    p.ended = True
    assert store.drop_plan(p) == 1
    assert len(store) == 2 and store.drop_plan(p) == 0


def test_a_store_keeps_nothing_more_for_a_plan_that_has_ended() -> None:
    """Put refuses an entry of an ended plan: its drop may already have run."""
    store, plan = ResultCache(), Plan()
    plan.ended = True
    assert not store.put((1, ("plan", plan), "a"), "A", 1, 10, plan)
    assert len(store) == 0 and store.drop_plan(plan) == 0


def test_a_plans_entries_are_all_dropped_when_one_expires_while_they_go() -> None:
    """An entry that expires between being found and removed stops nothing (no KeyError)."""

    class Ticking:
        """A clock that moves a second each time it is read, once started."""

        def __init__(self) -> None:
            self.now, self.ticking = 1000.0, False

        def __call__(self) -> float:
            self.now += self.ticking
            return self.now

    clock, plan = Ticking(), Plan()
    store = ResultCache(timer=clock)
    store.put((1, ("plan", plan), "a"), "A", 1, 1.5, plan)
    store.put((1, ("plan", plan), "b"), "B", 1, 100, plan)
    clock.ticking = True
    plan.ended = True
    assert store.drop_plan(plan) == 2
    assert len(store) == 0


# -- opting in --------------------------------------------------------------------------


def test_a_writing_tool_cannot_be_declared_cached() -> None:
    """@tool(cache=...) without writes=False fails where the tool is written."""
    with pytest.raises(ToolDefinitionError, match="writes=True is the default"):

        @tool(cache=CachePolicy(ttl=1))
        def send(to: str) -> str:
            """Send."""
            return to


def test_registering_a_cached_writing_tool_is_refused(rt: ToolRuntime) -> None:
    """register(cache=...) of a tool that writes raises ToolRegistrationError saying what to do."""

    @tool
    def send(to: str) -> str:
        """Send."""
        return to

    with pytest.raises(ToolRegistrationError, match="writes=False if the tool only reads"):
        rt.register(send, cache=CachePolicy(ttl=1))
    assert rt.descriptors() == ()


def test_registering_with_a_cache_that_is_not_a_policy_is_refused(rt: ToolRuntime) -> None:
    """cache= must be a CachePolicy; a bare number is refused at registration."""
    counted = Counted()
    with pytest.raises(ToolRegistrationError, match="must be a toolcycle.CachePolicy"):
        rt.register(counted.tool, cache=60)  # type: ignore[arg-type]


def test_a_tool_without_a_policy_is_never_cached(rt: ToolRuntime) -> None:
    """Two equal calls of an uncached tool run it twice."""
    counted = Counted()
    rt.register(counted.tool)
    with rt.plan(read_only=True) as ctx:
        first = rt.execute("lookup", {"q": "x"}, ctx)
        second = rt.execute("lookup", {"q": "x"}, ctx)
    assert len(counted.runs) == 2
    assert first.trace is not None and second.trace is not None
    assert not first.trace.cache_hit and not second.trace.cache_hit


def test_registers_policy_replaces_the_tools_own(rt: ToolRuntime) -> None:
    """register(cache=...) wins over @tool(cache=...): here, runtime scope over plan scope."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool, cache=CachePolicy(ttl=60, scope="runtime"))
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
    with rt.plan() as ctx:
        hit = rt.execute("lookup", {"q": "x"}, ctx)
    assert hit.trace is not None and hit.trace.cache_hit and len(counted.runs) == 1


# -- hits and misses --------------------------------------------------------------------


def test_a_hit_skips_the_body_and_is_marked_in_the_trace(rt: ToolRuntime) -> None:
    """The second equal call answers from the cache with the same output."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan(read_only=True) as ctx:
        miss = rt.execute("lookup", {"q": "x", "n": 2}, ctx)
        hit = rt.execute("lookup", {"q": "x", "n": 2}, ctx)
    assert len(counted.runs) == 1
    assert hit.output == miss.output == {"q": "x", "n": 2, "items": ["x", "x"]}
    assert miss.trace is not None and not miss.trace.cache_hit
    assert hit.trace is not None and hit.trace.cache_hit and hit.trace.status == "ok"
    assert hit.trace.result_size_bytes == miss.trace.result_size_bytes
    assert hit.trace.call_id != miss.trace.call_id


def test_the_key_is_the_canonical_json_of_the_validated_input(rt: ToolRuntime) -> None:
    """Key order and defaults filled by validation do not matter; another value misses."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x", "n": 1}, ctx)
        reordered = rt.execute("lookup", {"n": 1, "q": "x"}, ctx)
        other = rt.execute("lookup", {"q": "y", "n": 1}, ctx)
    assert reordered.trace is not None and reordered.trace.cache_hit
    assert other.trace is not None and not other.trace.cache_hit
    assert len(counted.runs) == 2


def test_a_key_function_replaces_the_input_part_of_the_key(rt: ToolRuntime) -> None:
    """With key=lambda d: d['q'], calls differing only in n share one entry."""
    counted = Counted(CachePolicy(ttl=60, key=lambda data: data["q"]))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x", "n": 1}, ctx)
        hit = rt.execute("lookup", {"q": "x", "n": 3}, ctx)
    assert hit.trace is not None and hit.trace.cache_hit
    assert hit.output["n"] == 1 and len(counted.runs) == 1


def test_a_key_with_a_lone_surrogate_makes_the_call_skip_the_cache(rt: ToolRuntime) -> None:
    """json.dumps writes it, UTF-8 cannot hold it: the call runs uncached, not fails."""
    counted = Counted(CachePolicy(ttl=60, key=lambda data: data["q"] + "\ud800"))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        results = [rt.execute("lookup", {"q": "x"}, ctx) for _ in range(2)]
    assert all(result.success for result in results) and len(counted.runs) == 2
    assert len(rt.result_cache) == 0


def test_a_key_function_that_changes_its_input_changes_nothing_the_tool_gets(
    rt: ToolRuntime,
) -> None:
    """It is given a copy: the tool runs with the arguments the call sent."""

    def key(data: dict[str, Any]) -> Any:
        data["n"] = 99
        return data.pop("q")

    counted = Counted(CachePolicy(ttl=60, key=key))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        first = rt.execute("lookup", {"q": "x", "n": 2}, ctx)
        hit = rt.execute("lookup", {"q": "x", "n": 5}, ctx)
    assert counted.runs == [{"q": "x", "n": 2}]
    assert first.output == {"q": "x", "n": 2, "items": ["x", "x"]}
    assert hit.trace is not None and hit.trace.cache_hit


@pytest.mark.parametrize(
    "key", [lambda data: 1 / 0, lambda data: {1, 2}, lambda data: float("nan")]
)
def test_a_key_function_that_fails_makes_the_call_skip_the_cache(rt: ToolRuntime, key: Any) -> None:
    """A key that raises or is not JSON runs the tool every time, rather than failing."""
    counted = Counted(CachePolicy(ttl=60, key=key))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        first = rt.execute("lookup", {"q": "x"}, ctx)
        second = rt.execute("lookup", {"q": "x"}, ctx)
    assert first.success and second.success and len(counted.runs) == 2
    assert len(rt.result_cache) == 0


def test_a_failing_key_functions_logged_error_hides_the_calls_secret_arguments(
    rt: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """The key_failed warning carries the error with a secret argument [redacted]."""

    @tool(writes=False, cache=CachePolicy(ttl=60, key=lambda data: int(data["password"])))
    def who(password: str) -> str:
        """Say whose password it is."""
        return "ann"

    rt.register(who)
    with caplog.at_level(logging.WARNING, logger="toolcycle"), rt.plan() as ctx:
        result = rt.execute("who", {"password": "hunter2-secret"}, ctx)
    assert result.success
    (record,) = [r for r in caplog.records if r.getMessage() == "result_cache.key_failed"]
    logged = repr(record.__dict__)
    assert "hunter2-secret" not in logged and "[redacted]" in logged


class _Unprintable(Exception):
    """An error whose repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_key_function_raising_an_error_that_cannot_be_printed_skips_the_cache(
    rt: ToolRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """The call runs uncached and the warning names the error; its repr is never asked."""

    def key(data: dict[str, Any]) -> Any:
        raise _Unprintable("no key for this")

    counted = Counted(CachePolicy(ttl=60, key=key))
    rt.register(counted.tool)
    with caplog.at_level(logging.WARNING, logger="toolcycle"), rt.plan() as ctx:
        assert rt.execute("lookup", {"q": "a"}, ctx).success
        assert rt.execute("lookup", {"q": "a"}, ctx).success
    assert len(counted.runs) == 2
    (record, _) = [r for r in caplog.records if r.getMessage() == "result_cache.key_failed"]
    assert record.__dict__["error"] == "_Unprintable: no key for this"


def test_a_hit_in_a_plan_that_never_activated_the_tool_does_not_activate_it(
    rt: ToolRuntime,
) -> None:
    """Runtime scope: the second plan's hit neither activates nor runs the tool."""
    counted = Counted(CachePolicy(ttl=60, scope="runtime"))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
    with rt.plan() as ctx:
        hit = rt.execute("lookup", {"q": "x"}, ctx)
        assert rt.cache.is_active(ctx.plan_id, "lookup") is False
    assert hit.trace is not None and hit.trace.cache_hit
    assert counted.activations == 1 and len(counted.runs) == 1


def test_plan_scope_entries_are_not_shared_and_are_dropped_at_the_plans_end(
    rt: ToolRuntime,
) -> None:
    """A new plan misses; ending the plan empties the store of its entries."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
        assert len(rt.result_cache) == 1
    assert len(rt.result_cache) == 0
    with rt.plan() as ctx:
        again = rt.execute("lookup", {"q": "x"}, ctx)
    assert again.trace is not None and not again.trace.cache_hit
    assert len(counted.runs) == 2


def test_an_entry_expires_after_the_policys_ttl() -> None:
    """Past its ttl, the same call runs the tool again."""
    clock = Clock()
    counted = Counted(CachePolicy(ttl=5, scope="runtime"))
    with _runtime(result_cache=ResultCache(timer=clock)) as rt:
        rt.register(counted.tool)
        with rt.plan() as ctx:
            rt.execute("lookup", {"q": "x"}, ctx)
            clock.now += 4
            fresh = rt.execute("lookup", {"q": "x"}, ctx)
            clock.now += 2
            stale = rt.execute("lookup", {"q": "x"}, ctx)
    assert fresh.trace is not None and fresh.trace.cache_hit
    assert stale.trace is not None and not stale.trace.cache_hit
    assert len(counted.runs) == 2


def test_a_tool_registered_again_never_sees_the_old_ones_results(rt: ToolRuntime) -> None:
    """Unregister and register anew under the same name: the first call misses."""
    first, second = Counted(CachePolicy(ttl=60, scope="runtime")), Counted()
    rt.register(first.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
    rt.unregister("lookup")
    rt.register(second.tool, cache=CachePolicy(ttl=60, scope="runtime"))
    with rt.plan() as ctx:
        result = rt.execute("lookup", {"q": "x"}, ctx)
    assert result.trace is not None and not result.trace.cache_hit
    assert len(second.runs) == 1


def test_changing_a_hits_output_does_not_change_the_cached_result(rt: ToolRuntime) -> None:
    """Every hit gets its own copy of a container output."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
        hit = rt.execute("lookup", {"q": "x"}, ctx)
        hit.output["items"].append("mine")
        again = rt.execute("lookup", {"q": "x"}, ctx)
    assert again.output["items"] == ["x"]


def test_the_store_holds_no_reference_to_the_output_the_first_caller_got(
    rt: ToolRuntime,
) -> None:
    """A container output is kept as its text: what the host does with its object is its own."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        output = rt.execute("lookup", {"q": "x"}, ctx).output
        output["items"].extend(["grown"] * 1000)  # the host grows what it got
        held = sys.getrefcount(output)
        rt.result_cache.clear()  # drops the store's references, if it held any
        assert sys.getrefcount(output) == held
        rt.execute("lookup", {"q": "x"}, ctx)
        hit = rt.execute("lookup", {"q": "x"}, ctx)
    assert hit.trace is not None and hit.trace.cache_hit
    assert hit.output == {"q": "x", "n": 1, "items": ["x"]}


@pytest.mark.parametrize("value", ["héllo", 3, 2.5, True, None, ["a", {"b": "ü"}]])
def test_any_json_output_comes_back_equal_from_the_cache(rt: ToolRuntime, value: Any) -> None:
    """Strings (non-ASCII too), numbers, null and containers survive the cache."""

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def constant(k: int) -> Any:
        """Return the value."""
        return value

    rt.register(constant)
    model_call = {
        "id": "c",
        "type": "function",
        "function": {"name": "constant", "arguments": '{"k": 1}'},
    }
    with rt.plan() as ctx:
        miss = rt.call(model_call, ctx)
        hit = rt.call(model_call, ctx)
    assert hit.trace is not None and hit.trace.cache_hit
    assert hit.output == miss.output == value
    for provider in ("openai", "anthropic", "openai-responses"):
        assert hit.to_message(provider) == miss.to_message(provider)  # type: ignore[arg-type]
    assert hit.trace.result_size_bytes == miss.trace.result_size_bytes  # type: ignore[union-attr]


# -- what is never cached ---------------------------------------------------------------


def test_failures_and_invalid_inputs_are_never_cached(rt: ToolRuntime) -> None:
    """A tool that raises runs again; a rejected input never reaches the store."""
    runs: list[int] = []

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def flaky(k: int) -> int:
        """Fail."""
        runs.append(k)
        raise RuntimeError("down")

    rt.register(flaky)
    with rt.plan() as ctx:
        assert not rt.execute("flaky", {"k": 1}, ctx).success
        assert not rt.execute("flaky", {"k": 1}, ctx).success
        bad = rt.execute("flaky", {"k": "one"}, ctx)
    assert runs == [1, 1] and bad.trace is not None and bad.trace.status == "invalid_input"
    assert len(rt.result_cache) == 0


def test_a_reported_failure_a_cut_output_and_recorded_changes_are_never_cached() -> None:
    """ToolResult(success=False), output over max_result_bytes, and changes all run again."""
    runs: list[str] = []

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def odd(kind: str) -> Any:
        """Return something that must not be kept."""
        runs.append(kind)
        if kind == "failed":
            return ToolResult(success=False, error="no")
        if kind == "changes":
            return ToolResult(output=1, changes=(Change(kind="note", target="t"),))
        return "x" * 200

    with _runtime(max_result_bytes=100) as rt:
        rt.register(odd)
        with rt.plan() as ctx:
            for kind in ("failed", "changes", "long"):
                rt.execute("odd", {"kind": kind}, ctx)
                rt.execute("odd", {"kind": kind}, ctx)
        assert len(rt.result_cache) == 0
    assert runs == ["failed", "failed", "changes", "changes", "long", "long"]


def test_a_result_that_arrives_after_its_plan_ended_is_not_kept(rt: ToolRuntime) -> None:
    """A call whose plan ends while it runs leaves nothing for the ended plan's id."""
    holder: dict[str, ToolExecutionContext] = {}

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def ender(k: int, ctx: ToolExecutionContext) -> int:
        """End the plan from inside the call."""
        rt.end_plan(holder["ctx"])
        return k

    rt.register(ender)
    ctx = rt.new_context()
    holder["ctx"] = ctx
    assert rt.execute("ender", {"k": 1}, ctx).success
    assert len(rt.result_cache) == 0


class EndingFirst(ResultCache):
    """A store that runs ``end`` once, just before it keeps the next result."""

    def __init__(self) -> None:
        super().__init__()
        self.end: Callable[[], object] | None = None

    def put(self, key: Any, value: Any, size: int, ttl: float, plan: Any) -> bool:
        end, self.end = self.end, None
        if end is not None:
            end()
        return super().put(key, value, size, ttl, plan)


def test_a_plan_that_ends_while_its_result_is_being_kept_leaves_no_entry() -> None:
    """The plan ends between the call's end and the store's put: nothing is kept for it."""
    store = EndingFirst()
    counted = Counted(CachePolicy(ttl=60))
    with _runtime(result_cache=store) as rt:
        rt.register(counted.tool)
        ctx = rt.new_context(plan_id="p")
        store.end = lambda: rt.end_plan(ctx)
        assert rt.execute("lookup", {"q": "x"}, ctx).success
        assert ctx.ended and store.end is None
        assert len(store) == 0
        with rt.plan(plan_id="p") as reused:  # a later plan of the same id starts empty
            again = rt.execute("lookup", {"q": "x"}, reused)
    assert again.trace is not None and not again.trace.cache_hit
    assert len(counted.runs) == 2


def test_ending_a_plan_keeps_the_entries_of_a_same_id_plan_of_another_runtime() -> None:
    """Two runtimes share a store, each with a plan "p": ending one leaves the other's results."""
    store = ResultCache()
    first, second = Counted(CachePolicy(ttl=60)), Counted(CachePolicy(ttl=60))
    with _runtime(result_cache=store) as one, _runtime(result_cache=store) as other:
        one.register(first.tool)
        other.register(second.tool)
        with other.plan(plan_id="p") as kept:
            other.execute("lookup", {"q": "x"}, kept)
            with one.plan(plan_id="p") as ending:
                one.execute("lookup", {"q": "x"}, ending)
            assert len(store) == 1
            hit = other.execute("lookup", {"q": "x"}, kept)
    assert hit.trace is not None and hit.trace.cache_hit
    assert len(second.runs) == 1 and len(store) == 0


# -- checks a hit still passes ----------------------------------------------------------


def test_a_hit_still_needs_the_approvers_yes(rt: ToolRuntime) -> None:
    """A tool that requires approval is asked on every call, hits included; a no is a no."""
    answers = [True, True, ApprovalDecision.deny("not now")]
    asked: list[str] = []

    def approver(request: Any) -> Any:
        asked.append(request.tool_name)
        return answers.pop(0)

    @tool(writes=False, requires_approval=True, cache=CachePolicy(ttl=60))
    def peek(q: str) -> str:
        """Read, with approval."""
        return q

    rt.register(peek)
    with rt.plan(approver=approver) as ctx:
        first = rt.execute("peek", {"q": "x"}, ctx)
        hit = rt.execute("peek", {"q": "x"}, ctx)
        denied = rt.execute("peek", {"q": "x"}, ctx)
    assert asked == ["peek", "peek", "peek"]
    assert first.trace is not None and not first.trace.cache_hit
    assert hit.trace is not None and hit.trace.cache_hit
    assert not denied.success and denied.trace is not None and denied.trace.status == "denied"


def test_a_hit_in_a_cancelled_plan_raises_as_any_call_does(rt: ToolRuntime) -> None:
    """The plan's checks come before the lookup: a cancelled plan gets no cached answer."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
        ctx.cancellation_token.cancel("stop")
        with pytest.raises(ToolCancelledError):
            rt.execute("lookup", {"q": "x"}, ctx)


# -- every entry point ------------------------------------------------------------------


def test_aexecute_caches_like_execute(rt: ToolRuntime) -> None:
    """The async driver misses, keeps, then hits; for sync and async tools alike."""

    @tool(writes=False, cache=CachePolicy(ttl=60))
    async def fetch(q: str) -> str:
        """Fetch."""
        return q.upper()

    counted = Counted(CachePolicy(ttl=60))
    rt.register(fetch)
    rt.register(counted.tool)

    async def main() -> list[ToolResult]:
        async with rt.aplan() as ctx:
            return [
                await rt.aexecute("fetch", {"q": "a"}, ctx),
                await rt.aexecute("fetch", {"q": "a"}, ctx),
                await rt.aexecute("lookup", {"q": "a"}, ctx),
                await rt.aexecute("lookup", {"q": "a"}, ctx),
            ]

    results = asyncio.run(main())
    assert [r.trace.cache_hit for r in results if r.trace] == [False, True, False, True]
    assert results[1].output == "A" and len(counted.runs) == 1


def test_aexecute_asks_the_approver_before_a_hit(rt: ToolRuntime) -> None:
    """The async approval path looks the call up after the yes, before activating."""
    asked: list[str] = []

    async def approver(request: Any) -> bool:
        asked.append(request.tool_name)
        return True

    counted = Counted()
    rt.register(counted.tool, cache=CachePolicy(ttl=60))

    async def main() -> list[ToolResult]:
        async with rt.aplan(approver=approver, approval="all") as ctx:
            return [await rt.aexecute("lookup", {"q": "a"}, ctx) for _ in range(2)]

    results = asyncio.run(main())
    assert asked == ["lookup", "lookup"] and len(counted.runs) == 1
    assert results[1].trace is not None and results[1].trace.cache_hit


def _openai_call(arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "lookup", "arguments": json.dumps(arguments)},
    }


def test_a_models_calls_hit_the_cache_through_call_acall_and_call_many(rt: ToolRuntime) -> None:
    """call, acall and call_many share entries with execute; each hit answers its own id."""
    counted = Counted(CachePolicy(ttl=60))
    rt.register(counted.tool)
    with rt.plan() as ctx:
        rt.execute("lookup", {"q": "x"}, ctx)
        called = rt.call(_openai_call({"q": "x"}, "c1"), ctx)
        many = rt.call_many([_openai_call({"q": "x"}, "c2"), _openai_call({"q": "x"}, "c3")], ctx)

        async def one() -> ToolResult:
            return await rt.acall(_openai_call({"q": "x"}, "c4"), ctx)

        acalled = asyncio.run(one())
    results = [called, *many, acalled]
    assert len(counted.runs) == 1
    assert all(r.trace is not None and r.trace.cache_hit for r in results)
    assert [r.to_message()["tool_call_id"] for r in results] == ["c1", "c2", "c3", "c4"]
    assert [r.trace.tool_call_id for r in results if r.trace] == ["c1", "c2", "c3", "c4"]


def test_hits_reach_trace_listeners_with_cache_hit_set() -> None:
    """A listener sees the hit's trace, built at once, with cache_hit=True."""
    seen: list[bool] = []
    counted = Counted(CachePolicy(ttl=60))
    with _runtime() as rt:
        rt.add_trace_listener(lambda trace: seen.append(trace.cache_hit))
        rt.register(counted.tool)
        with rt.plan() as ctx:
            rt.execute("lookup", {"q": "x"}, ctx)
            rt.execute("lookup", {"q": "x"}, ctx)
    assert seen == [False, True]


@settings(max_examples=30, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=1, max_value=3)),
        min_size=1,
        max_size=12,
    )
)
def test_any_sequence_of_calls_runs_the_tool_once_per_distinct_input(
    calls: list[tuple[str, int]],
) -> None:
    """Within one plan and ttl, the body runs exactly once per distinct input, in order."""
    counted = Counted(CachePolicy(ttl=60))
    with _runtime() as rt:
        rt.register(counted.tool)
        with rt.plan() as ctx:
            outputs = [rt.execute("lookup", {"q": q, "n": n}, ctx).output for q, n in calls]
    distinct = list(dict.fromkeys(calls))
    assert [(run["q"], run["n"]) for run in counted.runs] == distinct
    assert outputs == [{"q": q, "n": n, "items": [q] * n} for q, n in calls]


def test_aexecute_answers_invalid_input_and_a_failing_key_like_execute(rt: ToolRuntime) -> None:
    """Async: a rejected input is not looked up; a key that fails runs the tool each time."""
    counted = Counted(CachePolicy(ttl=60, key=lambda data: 1 / 0))
    rt.register(counted.tool)

    async def main() -> list[ToolResult]:
        async with rt.aplan() as ctx:
            return [
                await rt.aexecute("lookup", {"q": 1}, ctx),
                await rt.aexecute("lookup", {"q": "a"}, ctx),
                await rt.aexecute("lookup", {"q": "a"}, ctx),
            ]

    bad, first, second = asyncio.run(main())
    assert bad.trace is not None and bad.trace.status == "invalid_input"
    assert first.success and second.success and len(counted.runs) == 2


def test_keeping_a_key_again_replaces_its_entry() -> None:
    """Two calls that both missed keep one entry: the later value, counted once."""
    store = ResultCache(max_entries=1)
    store.put((1, ("runtime",), "a"), "A", 10, 60, None)
    store.put((1, ("runtime",), "a"), "B", 12, 60, None)
    assert len(store) == 1 and store.bytes_used == 12
    assert store.get((1, ("runtime",), "a")) == "B"


def test_a_hits_span_carries_the_cache_hit_attribute() -> None:
    """With OpenTelemetry, the hit's execute_tool span has toolcycle.cache_hit=True."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    counted = Counted(CachePolicy(ttl=60))
    try:
        with _runtime(instrumentation=OpenTelemetry(tracer_provider=provider)) as rt:
            rt.register(counted.tool)
            with rt.plan() as ctx:
                rt.execute("lookup", {"q": "x"}, ctx)
                rt.execute("lookup", {"q": "x"}, ctx)
    finally:
        provider.shutdown()
    spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool lookup"]
    assert [dict(s.attributes or {}).get("toolcycle.cache_hit") for s in spans] == [None, True]
    assert [dict(s.attributes or {}).get("toolcycle.status") for s in spans] == ["ok", "ok"]


class _Source:
    """A source of one read-only and one writing tool, which can say its list changed."""

    def __init__(self) -> None:
        self.stale = False
        self.runs: list[str] = []

        def read(q: str) -> str:
            """Read."""
            self.runs.append("read")
            return q

        def write(q: str) -> str:
            """Write."""
            self.runs.append("write")
            return q

        self._tools = [wrap(read, writes=False), wrap(write)]

    def tools(self) -> list[Any]:
        return list(self._tools)


def test_a_sources_policy_caches_its_read_only_tools_also_after_a_refresh(
    rt: ToolRuntime,
) -> None:
    """register_source(cache=...) skips the writing tool, and survives the source's refresh."""
    source = _Source()
    rt.register_source(source, cache=CachePolicy(ttl=60))
    for _ in range(2):
        with rt.plan() as ctx:
            for name in ("read", "read", "write", "write"):
                rt.execute(name, {"q": "x"}, ctx)
        source.stale = True  # the next plan registers the source's tools afresh
    assert source.runs == ["read", "write", "write"] * 2


def test_a_hit_of_a_rich_result_shows_the_model_the_same_content_and_keeps_metadata() -> None:
    """A kept rich result answers with its parts, its metadata and their kinds in the trace."""
    runs: list[str] = []

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def chart(city: str) -> ToolReturn[str]:
        """Draw a city's chart."""
        runs.append(city)
        picture = Image(b"\x89PNG\r\n", "image/png")
        return ToolReturn(value=city, content=[Text("a chart"), picture], metadata={"n": [1]})

    with ToolRuntime() as runtime:
        runtime.register(chart)
        with runtime.plan() as ctx:
            first = runtime.execute("chart", {"city": "Oslo"}, ctx)
            hit = runtime.execute("chart", {"city": "Oslo"}, ctx)
            asked = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "chart", "arguments": '{"city": "Oslo"}'},
            }
            answered = runtime.call(asked, ctx)
    assert runs == ["Oslo"]
    assert hit.trace is not None and hit.trace.cache_hit
    assert hit.content == first.content and len(hit.content) == 2
    assert hit.metadata == {"n": [1]} and hit.metadata is not first.metadata
    assert first.trace is not None
    assert hit.trace.content_kinds == first.trace.content_kinds == ("text", "image")
    assert hit.trace.content_bytes == first.trace.content_bytes > 0
    assert answered.trace is not None and answered.trace.cache_hit
    tool_message, user_message = answered.to_messages("openai")  # the image follows
    assert tool_message["tool_call_id"] == "call_1" and user_message["role"] == "user"


def test_a_result_whose_metadata_cannot_be_copied_is_returned_and_not_kept() -> None:
    """Metadata holding a lock is the host's: the call succeeds, and the next one runs again."""
    runs: list[str] = []

    @tool(writes=False, cache=CachePolicy(ttl=60))
    def rows(q: str) -> ToolReturn[int]:
        """Count rows, handing the host the lock that guards them."""
        runs.append(q)
        return ToolReturn(value=1, content=[Text("one row")], metadata={"lock": threading.Lock()})

    async def awaited(runtime: ToolRuntime) -> ToolResult:
        async with runtime.aplan() as ctx:
            return await runtime.aexecute("rows", {"q": "x"}, ctx)

    with _runtime() as rt:
        rt.register(rows)
        with rt.plan() as ctx:
            first = rt.execute("rows", {"q": "x"}, ctx)
            second = rt.execute("rows", {"q": "x"}, ctx)
        third = asyncio.run(awaited(rt))
        assert len(rt.result_cache) == 0
    assert runs == ["x", "x", "x"]
    for result in (first, second, third):
        assert result.success and result.output == 1
        assert result.metadata is not None and "lock" in result.metadata
