"""register_source(max_retries=..., retry=...): retries for every tool of a source."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle import ModelRetry, NullTracer, RetryPolicy, ToolRuntime, wrap

FAST = RetryPolicy(attempts=3, backoff=0.0, jitter=0.0, retry_on=(ConnectionError,))


class _Source:
    """A source of an idempotent, a plain and a self-limited tool; it can say it changed."""

    def __init__(self) -> None:
        self.stale = False
        self.faults: dict[str, int] = {}

        def fetch(q: str) -> str:
            """Fetch, after as many connection faults as are queued for it."""
            return self._run("fetch", q)

        def send(q: str) -> str:
            """Send, once per call."""
            return self._run("send", q)

        def strict(q: str) -> str:
            """A tool that sets its own retry limit."""
            return self._run("strict", q)

        self._tools = [
            wrap(fetch, writes=False, idempotent=True),
            wrap(send),
            wrap(strict, writes=False, max_retries=0),
        ]

    def _run(self, name: str, q: str) -> str:
        if q == "wrong":
            raise ModelRetry("say it right")
        if self.faults.get(name, 0):
            self.faults[name] -= 1
            raise ConnectionError("connection reset")
        return q

    def tools(self) -> list[Any]:
        return list(self._tools)


def _left(runtime: ToolRuntime, name: str) -> int | None:
    """The retries a first model-fixable failure of ``name`` leaves in a new plan."""
    with runtime.plan() as ctx:
        return runtime.execute(name, {"q": "wrong"}, ctx).retries_left


def test_a_sources_max_retries_applies_to_its_tools_without_their_own() -> None:
    """The source's limit takes the runtime's place; a tool's own limit still wins."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(_Source(), max_retries=3)
        assert (_left(runtime, "fetch"), _left(runtime, "send")) == (3, 3)
        assert _left(runtime, "strict") == 0


def test_without_a_sources_limit_the_runtimes_default_holds() -> None:
    """register_source without max_retries leaves the runtime's default in place."""
    with ToolRuntime(tracer=NullTracer(), max_retries=2) as runtime:
        runtime.register_source(_Source())
        assert _left(runtime, "fetch") == 2


def test_a_sources_retry_policy_retries_only_its_idempotent_tools() -> None:
    """The idempotent tool retries a transient fault; the others keep failing at once."""
    source = _Source()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source, retry=FAST)
        source.faults = {"fetch": 2, "send": 1}
        with runtime.plan() as ctx:
            fetched = runtime.execute("fetch", {"q": "x"}, ctx)
            sent = runtime.execute("send", {"q": "x"}, ctx)
    assert fetched.success and fetched.trace is not None
    assert [a.error_type for a in fetched.trace.attempts] == [
        "ConnectionError",
        "ConnectionError",
        None,
    ]
    assert not sent.success and sent.trace is not None and sent.trace.attempts == ()


def test_a_sources_retry_settings_survive_its_refresh() -> None:
    """A stale source is registered afresh with the same limit and policy."""
    source = _Source()
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source, max_retries=4, retry=FAST)
        source.stale = True
        assert _left(runtime, "send") == 4  # the plan's start registered the source again
        source.faults = {"fetch": 1}
        with runtime.plan() as ctx:
            fetched = runtime.execute("fetch", {"q": "x"}, ctx)
    assert fetched.success and fetched.trace is not None and len(fetched.trace.attempts) == 2


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_retries": -1}, ValueError),
        ({"max_retries": True}, ValueError),
        ({"retry": 3}, TypeError),
    ],
)
def test_a_sources_unusable_retry_settings_are_refused_before_any_tool_registers(
    options: dict[str, Any], error: type[Exception]
) -> None:
    """A wrong limit or policy raises, and none of the source's tools is registered."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        with pytest.raises(error):
            runtime.register_source(_Source(), **options)
        assert runtime.descriptors() == ()
