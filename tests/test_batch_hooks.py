"""Batches whose calls meet a broken hook: only that call fails, the others finish."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolcycle import (
    CachePolicy,
    GuardrailTripped,
    ToolApprovalError,
    ToolDescriptor,
    ToolExecutionContext,
    ToolResult,
    ToolRuntime,
)
from toolcycle.guardrails import allow, stop
from toolcycle.testing import FakeTool, capture_traces

WAIT = 5.0
POSITIONS = {"first": 0, "middle": 1, "last": 2}
MODES = ["together", "one-at-a-time", "sequential"]


class SequentialFake(FakeTool):
    """A fake tool that must run alone in a batch."""

    def discover(self) -> ToolDescriptor:
        """Describe the fake as sequential."""
        described = super().discover()
        capability = described.capability.model_copy(update={"sequential": True})
        return described.model_copy(update={"capability": capability})


def _waiting_for(release: threading.Event) -> Any:
    """A fake's output: its label, once ``release`` is set (bounded)."""

    def output(params: dict[str, Any], ctx: ToolExecutionContext) -> str:
        return str(params["label"]) if release.wait(WAIT) else "never released"

    return output


def _batch(position: int, name: str = "deploy") -> list[dict[str, Any]]:
    """Two calls of ``read`` with the call of ``name`` placed at ``position``."""
    batch: list[dict[str, Any]] = [
        {"id": f"r{i}", "name": "read", "arguments": {"label": f"r{i}"}} for i in range(2)
    ]
    batch.insert(position, {"id": "d", "name": name, "arguments": {"label": "d"}})
    return batch


def _run_batch(
    runtime: ToolRuntime,
    batch: list[dict[str, Any]],
    ctx: ToolExecutionContext,
    entry: str,
    max_concurrency: int | None = None,
) -> list[ToolResult]:
    """The batch's results through ``call_many`` or ``acall_many``."""
    if entry == "sync":
        return runtime.call_many(batch, ctx, max_concurrency=max_concurrency)

    async def main() -> list[ToolResult]:
        return await runtime.acall_many(batch, ctx, max_concurrency=max_concurrency)

    return asyncio.run(main())


@pytest.mark.parametrize("entry", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("position", list(POSITIONS))
def test_an_approval_rule_that_raises_fails_only_its_own_call_of_a_batch(
    position: str, mode: str, entry: str
) -> None:
    """The other calls run to the end, even while the rule breaks; nothing stays active."""
    release = threading.Event()  # set by the broken rule when the calls run together
    if mode != "together":
        release.set()
    read = FakeTool("read", output=_waiting_for(release))
    deploy = (SequentialFake if mode == "sequential" else FakeTool)("deploy", writes=True)

    def rule(descriptor: ToolDescriptor) -> bool:
        if descriptor.name == "deploy":
            release.set()
            raise KeyError("tier")
        return False

    index = POSITIONS[position]
    with ToolRuntime() as runtime:
        runtime.register(read)
        runtime.register(deploy)
        with capture_traces(runtime) as traces:
            with runtime.plan(approver=lambda request: True, approval=rule) as ctx:
                limit = 1 if mode == "one-at-a-time" else None
                results = _run_batch(runtime, _batch(index), ctx, entry, limit)
    others = [result for i, result in enumerate(results) if i != index]
    assert [r.call.id for r in results if r.call is not None] == [c["id"] for c in _batch(index)]
    assert [(r.success, r.output) for r in others] == [(True, "r0"), (True, "r1")]
    broken = results[index]
    assert (broken.success, broken.error_type) == (False, "ToolApprovalError")
    assert "approval rule" in (broken.error or "") and "KeyError" in (broken.error or "")
    assert "approval= function" in (broken.error or "")  # says what to fix
    assert broken.trace is not None and broken.trace.status == "error"
    assert sorted(t.status for t in traces) == ["error", "ok", "ok"]
    assert deploy.stages() == ["discover"]  # never activated, never run
    assert read.stages()[-1] == "deactivate" and read.count("activate") == 1


def _forgetful_rule(descriptor: ToolDescriptor) -> Any:
    """A rule whose author forgot to return its answer for one tool."""
    if descriptor.name != "deploy":
        return False


def _raising_rule(descriptor: ToolDescriptor) -> bool:
    if descriptor.name == "deploy":
        raise KeyError("tier")
    return False


@pytest.mark.parametrize("entry", ["sync", "async"])
@pytest.mark.parametrize("rule", [_raising_rule, _forgetful_rule], ids=["raises", "no-bool"])
def test_a_broken_rule_answers_its_batch_call_with_what_call_alone_raises(
    rule: Any, entry: str
) -> None:
    """The failed result carries the error and trace status a lone `call` raises with."""
    read = FakeTool("read", output=lambda params, ctx: params["label"])
    with ToolRuntime() as runtime:
        runtime.register(read)
        runtime.register(FakeTool("deploy", writes=True))
        with capture_traces(runtime) as traces:
            with runtime.plan(approver=lambda request: True, approval=rule) as ctx:
                with pytest.raises(ToolApprovalError) as alone:
                    runtime.call(_batch(0)[0], ctx)
                results = _run_batch(runtime, _batch(1), ctx, entry)
    assert [r.success for r in results] == [True, False, True]
    assert results[1].error == str(alone.value)
    assert results[1].error_type == type(alone.value).__name__
    assert [t.status for t in traces if t.tool_name == "deploy"] == ["error", "error"]


def _raising_guardrail(call: Any, ctx: Any) -> Any:
    raise KeyError("limit")


def _forgetful_guardrail(call: Any, ctx: Any) -> Any:
    """A guardrail whose author forgot to return its decision."""


@pytest.mark.parametrize("entry", ["sync", "async"])
@pytest.mark.parametrize("stage", ["input", "output"])
@pytest.mark.parametrize(
    "guardrail", [_raising_guardrail, _forgetful_guardrail], ids=["raises", "no-decision"]
)
@pytest.mark.parametrize("position", list(POSITIONS))
def test_a_broken_guardrail_fails_only_its_own_call_of_a_batch(
    position: str, guardrail: Any, stage: str, entry: str
) -> None:
    """Its call fails as `call` would raise it, traced stopped; the others finish."""
    release = threading.Event()
    guarded = FakeTool("deploy", output="done")

    def broken(call: Any, ctx: Any) -> Any:
        release.set()  # the other calls are running by now, or will run
        return guardrail(call, ctx)

    index = POSITIONS[position]
    with ToolRuntime() as runtime:
        runtime.register(FakeTool("read", output=_waiting_for(release)))
        runtime.register(guarded, **{f"{stage}_guardrails": [broken]})
        with capture_traces(runtime) as traces:
            with runtime.plan() as ctx:
                with pytest.raises(GuardrailTripped) as alone:
                    runtime.call(_batch(0)[0], ctx)
                results = _run_batch(runtime, _batch(index), ctx, entry)
    others = [result for i, result in enumerate(results) if i != index]
    assert [(r.success, r.output) for r in others] == [(True, "r0"), (True, "r1")]
    failed = results[index]
    assert (failed.success, failed.error_type) == (False, "GuardrailTripped")
    assert failed.error == str(alone.value)
    assert failed.call is not None and failed.call.id == "d"
    assert failed.trace is not None and failed.trace.status == "stopped"
    assert sorted(t.status for t in traces) == ["ok", "ok", "stopped", "stopped"]


def test_a_guardrails_stop_still_halts_the_whole_batch() -> None:
    """A deliberate stop is for the host: call_many raises it, as documented."""
    with ToolRuntime() as runtime:
        runtime.register(FakeTool("read", output="r"))
        runtime.register(FakeTool("deploy"), input_guardrails=[lambda call, ctx: stop("halt")])
        with runtime.plan() as ctx, pytest.raises(GuardrailTripped, match="halt"):
            runtime.call_many(_batch(1), ctx)


@pytest.mark.parametrize("entry", ["sync", "async"])
def test_an_approver_or_cache_key_that_raises_fails_nothing_else_in_a_batch(entry: str) -> None:
    """A raising approver denies its call; a raising cache key skips the cache; others run."""

    def key(arguments: dict[str, Any]) -> Any:
        raise KeyError("label")

    def approver(request: Any) -> bool:
        raise RuntimeError("approver down")

    with ToolRuntime() as runtime:
        runtime.register(FakeTool("read", output="r"), cache=CachePolicy(ttl=60, key=key))
        runtime.register(FakeTool("deploy", writes=True), input_guardrails=[lambda c, x: allow()])
        with runtime.plan(approver=approver) as ctx:
            results = _run_batch(runtime, _batch(1), ctx, entry)
    assert [(r.success, r.error_type) for r in results] == [
        (True, None),
        (False, "ApprovalDenied"),
        (True, None),
    ]
