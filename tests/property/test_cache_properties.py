"""Properties of ToolLifecycleCache under any interleaving of threads."""

from __future__ import annotations

import threading
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcycle import ToolLifecycleCache
from toolcycle.testing import FakeTool, make_context

WAIT = 5.0


@settings(max_examples=40, deadline=None, database=None)
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["p1", "p2"]), st.sampled_from(["a", "b", "c"]), st.booleans()),
        min_size=1,
        max_size=20,
    )
)
def test_any_interleaving_activates_once_and_tears_down_once(
    calls: list[tuple[str, str, bool]],
) -> None:
    """Threads racing to activate leave one activation per (plan, tool), torn down once."""
    cache = ToolLifecycleCache()
    contexts = {plan: make_context(plan) for plan in ("p1", "p2")}
    owners: Counter[tuple[str, str]] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(len(calls))

    def worker(plan: str, name: str, fail: bool) -> None:
        start.wait(WAIT)
        ctx = contexts[plan]
        activation, owner = cache.begin(ctx, name, FakeTool(name=name))
        if owner:
            error = OSError("failed") if fail else None
            if cache.finish(ctx, activation, error):
                with lock:
                    owners[(plan, name)] += 1
        else:
            activation.wait()

    threads = [threading.Thread(target=worker, args=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert all(count == 1 for count in owners.values())
    torn: Counter[tuple[str, str]] = Counter()
    for plan, ctx in contexts.items():
        cache.end_plan(
            ctx, lambda activation, _ctx, plan=plan: torn.update([(plan, activation.name)])
        )
        cache.end_plan(
            ctx, lambda activation, _ctx, plan=plan: torn.update([(plan, activation.name)])
        )
    assert torn == owners
