"""Tool search for the dispatcher: deferred definitions out, ``search_tools`` calls answered.

The index of deferred tools is built on the first search and again only after
the registry changed (a registration, an unregistration, a source refreshed).
It holds only the tools a plan may run, so that tools the plan may not run
change nothing in its answers (not which words are too common, nor how words
rank): plans that allow the same tools (read-only or not, requiring
checkpoints or not) share one index. A search reads descriptors only: it
never activates or runs a tool.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import TYPE_CHECKING, Any

from toolcycle._bounds import shown_value
from toolcycle._plain import plain_text
from toolcycle.agent._deferred import DEFAULT_LIMIT, SEARCH_TOOL, deferred_definitions, search_plan
from toolcycle.agent._dispatch import refusal
from toolcycle.agent._names import provider_name
from toolcycle.agent._search import MAX_LIMIT, SearchIndex, require_bm25s
from toolcycle.capabilities import is_allowed
from toolcycle.errors import ToolCancelledError, ToolRuntimeError
from toolcycle.execution._threads import athread
from toolcycle.models import ToolResult

if TYPE_CHECKING:
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolCall, ToolDescriptor
    from toolcycle.runtime._interfaces import Catalog
    from toolcycle.runtime._shared import Call
    from toolcycle.runtime._steps import CallSteps

__all__ = ["SEARCH_TOOL", "ToolSearch"]

_DESCRIPTION_CHARS = 200


class ToolSearch:
    """Offers deferred tools to a model and answers its searches.

    Args:
        catalog: the registered tools.
        steps: traces each search call.
    """

    def __init__(self, catalog: Catalog, steps: CallSteps) -> None:
        self._catalog = catalog
        self._steps = steps
        self._lock = threading.Lock()
        # The registry generation the indexes are of, and an index per kind of plan
        # (see `_rules`), replaced together when the registry changes.
        self._indexes: tuple[int, dict[tuple[bool, bool], SearchIndex]] = (-1, {})

    def definitions(
        self, ctx: ToolExecutionContext, format: str, *, strict: bool, search: str
    ) -> list[dict[str, Any]]:
        """The definitions of the tools the plan may run, deferred ones as ``search`` says.

        Raises:
            ValueError: ``search`` does not fit ``format``, or local search is
                needed while a registered tool is itself named ``search_tools``.
            ImportError: local search is needed and ``bm25s`` is not installed.
        """
        plan = search_plan(format, search)
        allowed = [d for d in self._catalog.descriptors() if is_allowed(d, ctx)]
        revealed = ctx.revealed_tools
        if plan == "local" and any(d.defer_loading and d.name not in revealed for d in allowed):
            if SEARCH_TOOL in self._catalog.entries:
                raise ValueError(
                    f"a registered tool is named {SEARCH_TOOL!r}, the name of the tool "
                    "search meta-tool; register it under another name, or use a "
                    "provider's native search (search='native')"
                )
            require_bm25s()
        return deferred_definitions(allowed, format, strict=strict, plan=plan, revealed=revealed)

    def answer(self, call: ToolCall, ctx: ToolExecutionContext) -> ToolResult:
        """Run a model's ``search_tools`` call: rank, reveal what it found, trace it.

        Raises:
            ToolRuntimeError: the plan has ended (traced ``error``), as any call
                of an ended plan is refused: in a batch, an earlier call may
                have ended it since the batch was read.
            ToolCancelledError: the plan is cancelled (traced ``cancelled``), as
                any call of a cancelled plan is refused before it starts.
        """
        record = self._begin(call, ctx)
        problem, query, limit = _read(call.arguments)
        index = self._current(ctx) if problem is None else None
        return self._finish(record, call, ctx, problem or "", index, query, limit)

    async def aanswer(self, call: ToolCall, ctx: ToolExecutionContext) -> ToolResult:
        """Async twin of `answer`: an index to build is built on a thread of its own.

        Importing ``bm25s`` and indexing thousands of tools takes a good part of
        a second, which the caller's event loop must not wait out; an index
        already built is used at once, as `answer` does.

        Raises:
            ToolRuntimeError: as `answer`.
            ToolCancelledError: as `answer`.
            asyncio.CancelledError: the caller was cancelled while the index was
                built (traced ``cancelled``); the build still completes, for the
                next search.
        """
        record = self._begin(call, ctx)
        problem, query, limit = _read(call.arguments)
        index = None
        if problem is None:
            index = self._built(ctx)
            if index is None:
                try:
                    index = await athread(self._current, (ctx,), None)
                except asyncio.CancelledError as exc:
                    self._steps.emit(record, "cancelled", error=exc)
                    if record.observer is not None:
                        self._steps.observed(record)
                    raise
        return self._finish(record, call, ctx, problem or "", index, query, limit)

    def _begin(self, call: ToolCall, ctx: ToolExecutionContext) -> Call:
        """Open the call's record; refuse (traced) a call of an ended or cancelled plan."""
        steps = self._steps
        record = steps.start(SEARCH_TOOL, ctx, call.id)  # raises TypeError for a wrong ctx
        if ctx.ended:
            error = ToolRuntimeError(
                f"plan {ctx.plan_id!r} has ended; start a new plan to run more tools",
                tool_name=SEARCH_TOOL,
                plan_id=ctx.plan_id,
            )
            steps.emit(record, "error", error=error)
            if record.observer is not None:
                steps.observed(record)
            raise error
        if ctx.cancellation_token.is_cancelled:
            try:
                steps.raise_cancelled(record, None)
            except ToolCancelledError:
                if record.observer is not None:
                    steps.observed(record)
                raise
        return record

    def _finish(
        self,
        record: Call,
        call: ToolCall,
        ctx: ToolExecutionContext,
        problem: str,
        index: SearchIndex | None,
        query: str,
        limit: int,
    ) -> ToolResult:
        """Answer the call: the refusal of its ``problem``, or what ``index`` found."""
        steps = self._steps
        if index is None:
            error_type = "ToolSchemaValidationError"
            trace = steps.emit(
                record, "invalid_input", error_message=problem, error_type=error_type
            )
            result = refusal(call, problem, error_type, trace)
        else:
            hits = index.search(query, limit)
            names = tuple(descriptor.name for descriptor in hits.tools)
            ctx.reveal_tools(names)
            output = _output(hits.tools, hits.too_common, call.format)
            record.record.revealed = names
            size = len(json.dumps(output, separators=(",", ":")).encode())
            trace = steps.emit(record, "ok", size=size)
            # The call is kept as sent: the meta-tool's two arguments hold no secret.
            result = ToolResult(success=True, output=output, call=call, trace=trace)
        if record.observer is not None:
            steps.observed(record)
        return result

    def _built(self, ctx: ToolExecutionContext) -> SearchIndex | None:
        """The plan's index if it is built and up to date, else None; never waits."""
        built, indexes = self._indexes
        index = indexes.get(_rules(ctx))
        return index if index is not None and built == self._catalog.generation else None

    def _current(self, ctx: ToolExecutionContext) -> SearchIndex:
        """The index of the deferred tools the plan may run as registered now.

        Built if it is out of date, or if no plan like this one searched since
        the registry last changed.
        """
        index = self._built(ctx)
        if index is not None:
            return index
        rules = _rules(ctx)
        with self._lock:
            generation = self._catalog.generation  # read before the descriptors
            built, indexes = self._indexes
            if built != generation:
                indexes = {}
                self._indexes = (generation, indexes)
            index = indexes.get(rules)
            if index is None:
                index = indexes[rules] = SearchIndex(
                    [
                        d
                        for d in self._catalog.descriptors()
                        if d.defer_loading and is_allowed(d, ctx)
                    ]
                )
            return index


def _read(arguments: dict[str, Any]) -> tuple[str | None, str, int]:
    """The problem with a search's arguments (None if they are fine), the query and limit."""
    query = arguments.get("query")
    limit = arguments.get("limit")
    if limit is None:  # left out, or null as OpenAI's strict mode sends it
        limit = DEFAULT_LIMIT
    elif isinstance(limit, float) and limit.is_integer():
        limit = int(limit)  # 5.0 is an integer to JSON Schema, as for any tool's input
    unknown = sorted(set(arguments) - {"query", "limit"})
    if unknown:
        return f"{SEARCH_TOOL} takes only 'query' and 'limit', not {unknown[0]!r}", "", 0
    if not isinstance(query, str) or not query.strip():
        return (
            f"{SEARCH_TOOL} needs a 'query': a few words saying what you want to do",
            "",
            0,
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        return (
            f"'limit' must be a whole number from 1 to {MAX_LIMIT}, got {shown_value(limit)}",
            "",
            0,
        )
    return None, query, limit


def _output(found: list[ToolDescriptor], too_common: list[str], format: str) -> dict[str, Any]:
    """What the model reads: each tool found (name as it must call it, one-line description).

    The description is cleaned of control characters before its first line is taken,
    so a carriage return or next line (U+0085) ends the line as a line feed does.
    """
    tools = [
        {
            "name": descriptor.name
            if format == "plain"
            else provider_name(descriptor.name, format),
            "description": _one_line(plain_text(descriptor.description)),
        }
        for descriptor in found
    ]
    output: dict[str, Any] = {"tools": tools}
    notes: list[str] = []
    if too_common:
        notes.append(
            "ignored "
            + ", ".join(repr(word) for word in too_common)
            + ": in too many tools to tell them apart"
        )
    if not tools:
        notes.append("no tool matched; try other words for what you want to do")
    if notes:
        output["note"] = "; ".join(notes)
    return output


def _one_line(description: str) -> str:
    line = description.strip().split("\n", 1)[0].strip()
    if len(line) > _DESCRIPTION_CHARS:
        return line[: _DESCRIPTION_CHARS - 3].rstrip() + "..."
    return line


def _rules(ctx: ToolExecutionContext) -> tuple[bool, bool]:
    """The plan's flags `is_allowed` reads: two plans alike in them allow the same tools."""
    return ctx.read_only, ctx.requires_checkpoint
