"""Retries: the model's, counted per plan and tool, and a `RetryPolicy`'s, inside one call.

A *model retry* is the model calling a tool again after a failure it can fix:
an invalid input, or the tool raising `ModelRetry`. `ModelRetries` counts such
failures per plan (kept with the plan's context, gone with it) and per tool;
a call of the tool that returns a successful result resets the count, so ``max_retries`` bounds a
model stuck on one mistake, not the mistakes of a long plan. While retries
remain the failed result says so and what to fix; past the limit it says the
limit was reached.

An *attempt* is one more run of an idempotent tool inside the same call, after
a transient fault. `run_attempts` and `arun_attempts` drive them with tenacity,
with a wait that the call's cancellation wakes at once and a stop that never
starts an attempt the call's time limit would cut.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from toolcycle._bounds import shown_value
from toolcycle.errors import (
    ModelRetry,
    ToolCancelledError,
    ToolFailed,
    ToolRegistrationError,
)
from toolcycle.execution._portal import as_deadline
from toolcycle.execution._threads import InvokeTimeoutError
from toolcycle.models import RetryAttempt
from toolcycle.retries import _NOT_IDEMPOTENT, RetryPolicy
from toolcycle.runtime._results import failed_result, invalid_result

if TYPE_CHECKING:
    from toolcycle.cancellation import CancellationToken
    from toolcycle.context import ToolExecutionContext
    from toolcycle.execution._invoke import Invoker
    from toolcycle.execution._portal import Deadline
    from toolcycle.models import Change, ToolDescriptor, ToolResult, Validation
    from toolcycle.runtime._record import CallRecord
    from toolcycle.runtime._recorder import TraceRecorder
    from toolcycle.runtime._results import Outcome
    from toolcycle.runtime._shared import Call, Entry

__all__ = [
    "INSTALL_HINT",
    "ModelRetries",
    "arun_attempts",
    "check_max_retries",
    "default_policy",
    "load_tenacity",
    "resolve",
    "run_attempts",
]

INSTALL_HINT = (
    "retry= needs tenacity: pip install -e '.[retry]' from a clone "
    "(toolcycle[retry] once published)"
)

# Never an attempt again, whatever a policy's retry_on says: the tool's own verdicts,
# a cancellation, and the call's own time running out.
_NEVER = (ModelRetry, ToolFailed, ToolCancelledError, InvokeTimeoutError)


class ModelRetries:
    """Counts each tool's model-fixable failures in each plan; one per runtime.

    ``failing`` turns true with the first failure counted, so a runtime whose
    calls never failed that way pays one attribute check per returned call.
    """

    __slots__ = ("_counts", "_lock", "failing")

    def __init__(self) -> None:
        self._counts: weakref.WeakKeyDictionary[ToolExecutionContext, dict[str, int]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self.failing = False

    def invalid(
        self, traces: TraceRecorder, call: Call, limit: int, validation: Validation
    ) -> ToolResult:
        """The result of a refused input, counted against the tool's retries.

        Not so for a resumed call: it runs the arguments that were approved, which
        passed this check before the call was deferred, so the tool's schema has
        changed since. A resume cannot change them, and the model is not to blame.
        """
        if call.approved:
            name = call.name if call.answers is None else call.answers.name
            hint = (
                f"\nThe tool {name!r} changed after this call was deferred for approval: "
                "the approved arguments no longer match its input schema, and resuming "
                f"the call cannot change them. Make a new call of {name!r} instead."
            )
            return invalid_result(traces, call.record, validation, hint)
        left, hint = self._count(call, limit, "Correct the arguments")
        return invalid_result(traces, call.record, validation, hint, left)

    def asked(
        self,
        traces: TraceRecorder,
        call: Call,
        limit: int,
        outcome: Outcome,
        changes: list[Change],
    ) -> ToolResult:
        """The result of a tool raising `ModelRetry`, counted against its retries."""
        left, hint = self._count(call, limit, "Change the call as the message says")
        return failed_result(traces, call.record, outcome, changes, hint, left)

    def returned(self, call: Call) -> None:
        """The tool ran and returned: note which retry that was (`succeeded` resets)."""
        counts = self._counts.get(call.ctx)
        if counts:
            call.record.retry = counts.get(call.name, 0)

    def succeeded(self, call: Call) -> None:
        """The call returned a successful result: count its tool's failures anew."""
        counts = self._counts.get(call.ctx)
        if counts:
            with self._lock:
                counts.pop(call.name, None)

    def _count(self, call: Call, limit: int, fix: str) -> tuple[int, str]:
        """Count one failure; the retries left after it, and what to tell the model."""
        with self._lock:
            counts = self._counts.get(call.ctx)
            if counts is None:
                counts = self._counts[call.ctx] = {}
            before = counts.get(call.name, 0)
            counts[call.name] = before + 1
            self.failing = True
        call.record.retry = before
        left = max(0, limit - before)
        # The name the model knows the tool by: a provider's format may rename it.
        name = call.name if call.answers is None else call.answers.name
        if left:
            retries = "1 retry" if left == 1 else f"{left} retries"
            return left, f"\n{fix} and call {name!r} again ({retries} left)."
        allowed = "no retries" if limit == 0 else ("1 retry" if limit == 1 else f"{limit} retries")
        return 0, (
            f"\nThe retry limit of tool {name!r} is reached ({allowed} allowed): "
            "do not call it again for this; report the failure instead."
        )


def check_max_retries(value: object, where: str) -> int:
    """``value`` as a retry limit, or a ValueError saying what a limit is."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} must be a whole number, 0 or more, got {shown_value(value)}")
    return value


def default_policy(value: object) -> RetryPolicy | None:
    """The runtime's ``retry=``: a `RetryPolicy` (tenacity installed) or None.

    Raises:
        TypeError: it is something else.
        ToolRegistrationError: tenacity is not installed.
    """
    if value is None:
        return None
    if not isinstance(value, RetryPolicy):
        raise TypeError(f"retry must be a toolcycle.RetryPolicy or None, got {value!r}")
    load_tenacity()
    return value


def resolve(
    instance: object,
    descriptor: ToolDescriptor,
    max_retries: int | None,
    retry: RetryPolicy | None,
    default_max: int,
    default_retry: RetryPolicy | None,
) -> tuple[int, RetryPolicy | None]:
    """A registered tool's retry limit and policy: ``register``'s, the tool's, the runtime's.

    A tool gives its own as ``max_retries`` and ``retry_policy`` attributes (as
    `toolcycle.tool` does). The runtime's policy applies to idempotent tools only.

    Raises:
        ValueError: a limit is not a whole number of 0 or more.
        ToolRegistrationError: a policy for a tool that is not idempotent, a policy
            that is not a `RetryPolicy`, or one without tenacity installed.
    """
    name = descriptor.name
    own_max = getattr(instance, "max_retries", None)
    if max_retries is not None:
        limit = check_max_retries(max_retries, "max_retries")
    elif own_max is not None:
        limit = check_max_retries(own_max, f"the max_retries of tool {name!r}")
    else:
        limit = default_max
    policy = retry if retry is not None else getattr(instance, "retry_policy", None)
    if policy is None:
        if default_retry is None or not descriptor.capability.idempotent:
            return limit, None
        policy = default_retry
    elif not isinstance(policy, RetryPolicy):
        raise ToolRegistrationError(
            f"the retry policy of tool {name!r} is a {type(policy).__name__}; "
            "pass a toolcycle.RetryPolicy",
            tool_name=name,
        )
    elif not descriptor.capability.idempotent:
        raise ToolRegistrationError(_NOT_IDEMPOTENT.format(name=name), tool_name=name)
    load_tenacity()
    return limit, policy


def load_tenacity() -> Any:
    """The tenacity module, or a `ToolRegistrationError` with the install hint."""
    try:
        import tenacity  # an optional dependency: imported only where a policy is used
    except ImportError as exc:
        raise ToolRegistrationError(INSTALL_HINT) from exc
    return tenacity


def run_attempts(
    invoker: Invoker,
    call: Call,
    entry: Entry,
    data: dict[str, Any],
    limit: float | Deadline | None,
) -> Any:
    """Run the tool until it returns, or raises what ``entry.retry`` does not retry.

    Each attempt gets the call's one deadline, so together they keep its limit.

    Raises:
        ToolCancelledError: the plan was cancelled, or ended, while waiting for the
            next attempt.
        Exception: the last attempt's error, when no attempt returned.
    """
    assert entry.retry is not None
    tenacity = load_tenacity()
    deadline = as_deadline(limit)
    record = call.record
    token = call.flight or call.ctx.cancellation_token
    attempts: list[RetryAttempt] = []
    record.attempts = attempts
    sleep = _Sleep(token, record, call.ctx.cancellation_token)
    for step in tenacity.Retrying(**_options(tenacity, entry.retry, deadline), sleep=sleep):
        with step:
            started = time.perf_counter()
            try:
                output = invoker.call(
                    entry.instance.execute,
                    data,
                    call.ctx,
                    token=token,
                    timeout=deadline,
                    loop=entry.call_loop(call.ctx),
                    coroutine=entry.coroutine,
                )
            except BaseException as exc:
                attempts.append(_attempt(started, exc))
                raise
            attempts.append(_attempt(started, None))
            return output
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover


async def arun_attempts(
    invoker: Invoker,
    call: Call,
    entry: Entry,
    data: dict[str, Any],
    limit: float | Deadline | None,
    task: asyncio.Task[Any] | None,
) -> Any:
    """Async twin of `run_attempts`; the caller cancelling its task stops the wait too."""
    assert entry.retry is not None
    tenacity = load_tenacity()
    deadline = as_deadline(limit)
    record = call.record
    token = call.flight or call.ctx.cancellation_token
    attempts: list[RetryAttempt] = []
    record.attempts = attempts
    sleep = _ASleep(token, record, call.ctx.cancellation_token)
    # A sync attempt runs on when the caller's task is cancelled: it stays in flight.
    on_abandon = call.flight.leave if call.flight is not None else None
    async for step in tenacity.AsyncRetrying(
        **_options(tenacity, entry.retry, deadline), sleep=sleep
    ):
        with step:
            started = time.perf_counter()
            try:
                output = await invoker.acall(
                    entry.instance.execute,
                    data,
                    call.ctx,
                    token=token,
                    timeout=deadline,
                    coroutine=entry.coroutine,
                    on_abandon=on_abandon,
                    task=task,
                )
            except BaseException as exc:
                attempts.append(_attempt(started, exc))
                raise
            attempts.append(_attempt(started, None))
            return output
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover


def _options(tenacity: Any, policy: RetryPolicy, deadline: Deadline | None) -> dict[str, Any]:
    """Tenacity's stop, wait and retry for ``policy`` within ``deadline``."""
    retry_on = policy.retry_on

    def transient(exc: BaseException) -> bool:
        return isinstance(exc, retry_on) and not isinstance(exc, _NEVER)

    def out_of_time(state: Any) -> bool:
        # tenacity works out the next wait before it asks whether to stop.
        left = deadline.remaining() if deadline is not None else None
        return left is not None and left <= state.upcoming_sleep

    wait = tenacity.wait_exponential(multiplier=policy.backoff, max=policy.max_backoff)
    if policy.jitter:
        wait = wait + tenacity.wait_random(0, policy.jitter)
    return {
        "stop": tenacity.stop_after_attempt(policy.attempts) | out_of_time,
        "wait": wait,
        "retry": tenacity.retry_if_exception(transient),
        "reraise": True,
    }


def _attempt(started: float, error: BaseException | None) -> RetryAttempt:
    return RetryAttempt(
        error_type=None if error is None else type(error).__name__,
        duration_ms=(time.perf_counter() - started) * 1000.0,
    )


def _cancelled(token: Any, record: CallRecord, plan: CancellationToken) -> ToolCancelledError:
    # The call's token may be its flight, whose reason is set only when the plan ends.
    reason = getattr(token, "reason", None) or plan.reason
    return ToolCancelledError(
        f"tool {record.tool_name!r} was cancelled while it waited to retry"
        + (f": {reason}" if reason else ""),
        reason=reason,
        tool_name=record.tool_name,
        plan_id=record.plan_id,
    )


class _Sleep:
    """tenacity's sleep from sync code: a wait that the call's token ends at once."""

    def __init__(self, token: Any, record: CallRecord, plan: CancellationToken) -> None:
        self._token = token
        self._record = record
        self._plan = plan

    def __call__(self, seconds: float) -> None:
        woken = threading.Event()
        unregister = self._token.on_cancel(woken.set)  # runs at once if cancelled already
        try:
            cancelled = woken.wait(seconds)
        finally:
            unregister()
        if cancelled:
            raise _cancelled(self._token, self._record, self._plan)


class _ASleep:
    """tenacity's sleep from async code: the token or the caller's cancel ends it."""

    def __init__(self, token: Any, record: CallRecord, plan: CancellationToken) -> None:
        self._token = token
        self._record = record
        self._plan = plan

    async def __call__(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:  # from any thread
            loop.call_soon_threadsafe(_settle, woken)

        unregister = self._token.on_cancel(wake)
        try:
            await asyncio.wait((woken,), timeout=seconds)
        finally:
            unregister()
            woken.cancel()
        if woken.done() and not woken.cancelled():
            raise _cancelled(self._token, self._record, self._plan)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
