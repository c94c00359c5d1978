"""A cached tool's side of result caching: its keys, what is kept, and a hit's result.

The registry binds each cached tool's `CachePolicy` to the runtime's
`ResultCache` (a `CacheBinding` on the tool's entry). The pipeline asks the
binding before it activates the tool, and hands it the result after a miss;
a hit becomes a result here, traced with ``cache_hit``.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import TYPE_CHECKING, Any

from toolcycle._construct import trusted
from toolcycle.errors import ToolRegistrationError, error_text
from toolcycle.models import ToolResult
from toolcycle.result_cache import CachePolicy
from toolcycle.runtime._results import RETURNED
from toolcycle.tracing import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolcycle.content import ContentPart
    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolCall, ToolDescriptor
    from toolcycle.result_cache import ResultCache
    from toolcycle.runtime._record import CallRecord
    from toolcycle.runtime._recorder import TraceRecorder

__all__ = ["CacheBinding", "Kept", "bind", "hit_result"]

_log = get_logger("toolcycle.runtime")

# Each registration gets its own number in its keys: a tool registered again under
# the same name (or a source's tool refreshed) never sees the old one's results.
_serials = itertools.count(1)
_SCALARS = frozenset({str, int, float, bool, type(None)})
_AS_TEXT: Any = object()  # a Kept's output that is kept only as its JSON text


class Kept:
    """A successful result as kept: its output, the output's JSON text and its size in bytes.

    A scalar output is kept as it is (immutable); a list or a dict only as its JSON
    text, so that what the store holds is what its byte bound counts, and not the
    object the first call's host got (and may have changed, or grown, since).
    A rich result's content parts (immutable) and a copy of its metadata are kept too,
    so that a hit shows the model what the first call showed it.
    """

    __slots__ = ("content", "content_bytes", "metadata", "output", "output_valid", "size", "text")

    def __init__(
        self,
        output: Any,
        text: str,
        size: int,
        output_valid: bool | None,
        content: tuple[ContentPart, ...] = (),
        content_bytes: int = 0,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.output = output
        self.text = text
        self.size = size
        self.output_valid = output_valid
        self.content = content
        self.content_bytes = content_bytes
        self.metadata = metadata

    def fresh_output(self) -> Any:
        """The output as first returned: a scalar as is, a list or a dict read anew from its text.

        Each hit (and its output guardrails) gets an object of its own, which is
        what the model will be shown.
        """
        output = self.output
        return json.loads(self.text) if output is _AS_TEXT else output


class CacheBinding:
    """One registered tool's policy over the runtime's store.

    Args:
        name: the tool's name (for log lines).
        policy: the tool's policy.
        store: the runtime's store of results.
    """

    __slots__ = ("_serial", "name", "policy", "store")

    def __init__(self, name: str, policy: CachePolicy, store: ResultCache) -> None:
        self.name = name
        self.policy = policy
        self.store = store
        self._serial = next(_serials)

    def look_up(
        self,
        ctx: ToolExecutionContext,
        data: dict[str, Any],
        scrub: Callable[[str], str] | None = None,
    ) -> tuple[Any, Kept | None]:
        """The call's key (None: not cacheable) and what is kept under it, if anything.

        ``scrub`` hides the call's secret arguments in what is logged about it.
        """
        key = self._key(ctx, data, scrub)
        if key is None:
            return None, None
        kept: Kept | None = self.store.get(key)
        return key, kept

    def keep(self, key: Any, ctx: ToolExecutionContext, result: ToolResult) -> None:
        """Keep a successful result; failures, cut outputs and changes are never kept."""
        if not result.success or result.truncated or result.changes or result.pending is not None:
            return
        if ctx.ended:  # its plan ended while the call ran: whatever the scope, not kept
            return
        trace = result.trace
        assert trace is not None  # every result the pipeline returns has one
        output = result.output
        kind = type(output)
        text = ""  # a string is its own text: a hit's result makes none of it
        if kind is not str:
            encoded = result._text
            if encoded is None:
                encoded = json.dumps(output, separators=(",", ":"), ensure_ascii=False)
            text = encoded
            if kind not in _SCALARS:
                output = _AS_TEXT
        size = trace.result_size_bytes
        kept = Kept(output, text, size, trace.output_valid)
        if result.content:
            kept.content, kept.content_bytes = result.content, trace.content_bytes
        if result.metadata is not None:
            try:
                kept.metadata = copy.deepcopy(result.metadata)
            except Exception as exc:  # the host's objects (a lock, a cursor): not kept
                _log.warning("result_cache.keep_failed", tool=self.name, error=type(exc).__name__)
                return
        policy = self.policy
        # The store checks again, under its lock, that the plan has not ended since.
        plan = ctx if policy.scope == "plan" else None
        # Counted against the store's bytes: the output's text, its parts' and the key's.
        weight = size + kept.content_bytes + len(key[2].encode())
        self.store.put(key, kept, weight, policy.ttl, plan)

    def _key(
        self,
        ctx: ToolExecutionContext,
        data: dict[str, Any],
        scrub: Callable[[str], str] | None,
    ) -> tuple[Any, ...] | None:
        policy = self.policy
        try:
            # A copy for the host's function: one that changes what it is given must
            # not change the input the tool then runs with.
            part = data if policy.key is None else policy.key(copy.deepcopy(data))
            text = json.dumps(
                part, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
            )
            text.encode()  # a lone surrogate is JSON to json.dumps, but no UTF-8 (keep sizes it)
        except Exception as exc:  # the key function is the host's code: skip, do not fail
            # Its error may quote an argument (int(data["token"])): no secret in a log record.
            # Read without its __repr__, which is host code and may raise too.
            error = f"{type(exc).__name__}: {error_text(exc)}"
            if scrub is not None:
                error = scrub(error)
            _log.warning("result_cache.key_failed", tool=self.name, error=error)
            return None
        # The context, not its id: two plans of one id (one after the other, or in two
        # runtimes sharing the store) never see each other's results.
        scope = ("plan", ctx) if policy.scope == "plan" else ("runtime",)
        return (self._serial, scope, text)


def bind(descriptor: ToolDescriptor, policy: object, store: ResultCache) -> CacheBinding | None:
    """The binding of a tool's policy, or None when it has none.

    Raises:
        ToolRegistrationError: the policy is not a `CachePolicy`, or the tool writes.
    """
    if policy is None:
        return None
    name = descriptor.name
    if not isinstance(policy, CachePolicy):
        raise ToolRegistrationError(
            f"cache= of tool {name!r} must be a toolcycle.CachePolicy, got {type(policy).__name__}",
            tool_name=name,
        )
    if descriptor.capability.writes:
        raise ToolRegistrationError(
            f"tool {name!r} writes (its capability has writes=True), so its results cannot "
            "be cached: a cached call would skip a change the caller expects. Declare "
            "writes=False if the tool only reads, or register it without cache=",
            tool_name=name,
        )
    return CacheBinding(name, policy, store)


def hit_result(
    traces: TraceRecorder, record: CallRecord, kept: Kept, answers: ToolCall | None
) -> ToolResult:
    """The result of a call answered from the cache, its trace marked ``cache_hit``."""
    record.cache_hit = True
    size = kept.size
    if kept.content:
        kinds = tuple(part.type for part in kept.content)
        finished = traces.end(
            record,
            "ok",
            None,
            None,
            size,
            size,
            kept.output_valid,
            content=(kinds, kept.content_bytes),
        )
    else:
        finished = traces.end(record, "ok", None, None, size, size, kept.output_valid)
    output = kept.fresh_output()  # a copy of its own: the host may change what it gets
    values = RETURNED.copy()
    values["output"] = output
    values["trace"] = finished
    if answers is not None:
        values["call"] = answers
    if kept.content:
        values["content"] = kept.content
    if kept.metadata is not None:
        values["metadata"] = copy.deepcopy(kept.metadata)
    return trusted(ToolResult, values, {"_text": None if type(output) is str else kept.text})
