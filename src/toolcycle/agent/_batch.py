"""Running a model's batch of tool calls at once, in order, losing no result.

The batch is cut at each call of a ``sequential`` tool: the calls between two
such cuts run together (at most ``max_concurrency`` at a time), a sequential
call runs alone, and the groups run one after the other. So while a sequential
tool runs nothing else of the batch does, and sequential calls keep the model's
order. Each call checks the plan's token just before it starts: once the plan is
cancelled, nothing new starts, and every call that did not finish gets a failed
result saying so (one the cancellation kept from starting is answered by the
caller's ``refuse``, which traces it as cancelled). A call whose own hook broke (a
plan's approval rule or a guardrail that raised) fails alone: what ``call`` would
raise for it answers it, and the batch's other calls go on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from toolcycle.errors import ToolCancelledError, ToolRuntimeError, cut_error_text, error_text
from toolcycle.models import ToolResult

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from toolcycle.cancellation import CancellationToken
    from toolcycle.models import ToolCall

    Prepared = tuple[ToolCall, str, dict[str, Any]] | ToolResult
    Run = Callable[[ToolCall, str, dict[str, Any]], Awaitable[ToolResult]]
    Refuse = Callable[[ToolCall, str, str], ToolResult]

__all__ = ["run_batch"]


async def run_batch(
    prepared: Sequence[Prepared],
    *,
    run: Run,
    refuse: Refuse,
    sequential: Callable[[str], bool],
    token: CancellationToken,
    max_concurrency: int | None,
) -> list[ToolResult]:
    """One result per entry of ``prepared``, in its order.

    Args:
        prepared: each call with its tool and arguments, or the refusal that
            already answers it.
        run: runs one call (``runtime.acall`` without the parsing).
        refuse: answers a call that never runs, with its tool and the message
            (a call the cancellation kept from starting), and traces it.
        sequential: whether a tool must run alone.
        token: the plan's cancellation token.
        max_concurrency: the most calls running at once; None for no limit.
    """
    results: list[ToolResult | None] = [p if isinstance(p, ToolResult) else None for p in prepared]
    limit = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def one(index: int, call: ToolCall, name: str, arguments: dict[str, Any]) -> None:
        if limit is not None:
            await limit.acquire()
        try:
            if token.is_cancelled:
                results[index] = refuse(call, name, _CANCELLED + "before this call started")
                return
            try:
                results[index] = await run(call, name, arguments)
            except ToolCancelledError as exc:
                results[index] = _cancelled(call, f"during this call ({exc})", exc)
            except ToolRuntimeError as exc:
                if not exc._one_call:  # the plan ended, or a guardrail said stop: for all
                    raise
                results[index] = _failed(call, exc)
        finally:
            if limit is not None:
                limit.release()

    for group in _groups(prepared, sequential):
        tasks = [asyncio.ensure_future(one(index, *entry)) for index, entry in group]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # A call that raises (the plan ended under the batch) or the caller's
            # cancellation: the other calls are cancelled and waited for, not orphaned.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    answered = [result for result in results if result is not None]
    assert len(answered) == len(results)  # every call was answered, so none is out of place
    return answered


def _groups(
    prepared: Sequence[Prepared], sequential: Callable[[str], bool]
) -> list[list[tuple[int, tuple[ToolCall, str, dict[str, Any]]]]]:
    """The calls to run, cut into groups that run one after the other."""
    groups: list[list[tuple[int, tuple[ToolCall, str, dict[str, Any]]]]] = [[]]
    for index, entry in enumerate(prepared):
        if isinstance(entry, ToolResult):
            continue
        if sequential(entry[1]):
            groups += [[(index, entry)], []]
        else:
            groups[-1].append((index, entry))
    return [group for group in groups if group]


_CANCELLED = "the plan was cancelled "


def _cancelled(call: ToolCall, when: str, exc: ToolCancelledError) -> ToolResult:
    """The failed result of a call cancelled while it ran, with the trace the call got."""
    return ToolResult(
        success=False,
        error=_CANCELLED + when,
        error_type=ToolCancelledError.__name__,
        call=call,
        trace=exc.trace,
    )


def _failed(call: ToolCall, exc: ToolRuntimeError) -> ToolResult:
    """The failed result of a call whose own hook broke (its approval rule, a guardrail).

    It says what ``call`` alone would have raised (a text that quotes no argument:
    a rule sees only the descriptor, a guardrail's message is redacted), with the
    trace the call got.
    """
    return ToolResult(
        success=False,
        error=cut_error_text(error_text(exc)),
        error_type=type(exc).__name__,
        call=call,
        trace=exc._one_call_trace,
    )
