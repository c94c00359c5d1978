"""What a call's watchers hear of it beyond its trace: the observer and a resumed decision.

When the runtime has `Instrumentation`, every traced call gets an observer,
opened when the call is announced and told how it ended, with its arguments and
output as they may leave the process (redacted, and cut after redaction) when it
asks for payloads. A hook that raises is logged, never passed to the caller. A
resumed call's decision, made before it started, is logged as the approval step
logs a live one. The call steps (``_steps``) decide when; this module does it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.errors import error_text
from toolcycle.runtime._results import redacted_cut
from toolcycle.tracing import get_logger, lifecycle_event

if TYPE_CHECKING:
    from toolcycle.instrumentation import CallObserver, Instrumentation
    from toolcycle.models import ApprovalRecord
    from toolcycle.runtime._interfaces import Catalog
    from toolcycle.runtime._settings import Settings
    from toolcycle.runtime._shared import Call

__all__ = ["finish_observer", "open_observer", "resumed_decision"]

_log = get_logger("toolcycle.runtime")


def finish_observer(call: Call, catalog: Catalog, settings: Settings) -> None:
    """Tell the call's observer how it ended (with payloads, if it wants them)."""
    observer = call.observer
    assert observer is not None
    try:
        arguments = output = None
        if observer.record_payloads:
            arguments, output = _payloads(call, catalog, settings)
        observer.finish(call.trace, arguments=arguments, output=output)
    except Exception as exc:
        _log.warning("instrumentation.failed", hook="finish", error=_described(exc))


def _payloads(call: Call, catalog: Catalog, settings: Settings) -> tuple[Any, Any]:
    """The call's arguments and output as they may leave the process (redacted)."""
    arguments = call.arguments
    result = call.result
    output = result.output if result is not None and result.success else None
    redaction = settings.redaction
    if redaction is None:
        return arguments, output
    entry = catalog.entries.get(call.name)
    if entry is None:  # unregistered meanwhile: no schema to go by
        return None, None
    descriptor = entry.descriptor
    if arguments is not None:
        arguments = redaction.masked(arguments, descriptor.input_schema)
    uncut = getattr(call.record, "uncut", None)
    if uncut is not None and output is not None:  # cut text hides no key: redact first
        return arguments, redacted_cut(uncut, redaction, descriptor.output_schema)
    return arguments, redaction.masked(output, descriptor.output_schema)


def open_observer(
    instrumentation: Instrumentation, catalog: Catalog, call: Call, tool_call_id: str | None
) -> CallObserver | None:
    """The instrumentation's observer of the call, or None if its hook failed."""
    entry = catalog.entries.get(call.name)
    try:
        observer = instrumentation.call_started(
            tool_name=call.name,
            descriptor=entry.descriptor if entry is not None else None,
            ctx=call.ctx,
            call_id=call.record.call_id,
            tool_call_id=tool_call_id,
        )
    except Exception as exc:
        _log.warning("instrumentation.failed", hook="call_started", error=_described(exc))
        return None
    hook = getattr(observer, "progress", None)  # optional: older observers lack it
    if callable(hook):
        call.record.listen(hook)
    return observer


def _described(exc: Exception) -> str:
    """A hook's error for a log record, read without running its ``__repr__`` (host code)."""
    return f"{type(exc).__name__}: {error_text(exc)}"


# An approval record's outcome as the decision named it, which `tool.approval` logs.
_DECIDED = {"approved": "approve", "denied": "deny"}


def resumed_decision(call: Call, approval: ApprovalRecord) -> None:
    """Log the decision a resumed call was given, as the approval step logs a live one."""
    lifecycle_event(
        "tool.approval",
        tool=call.name,
        plan_id=call.ctx.plan_id,
        call_id=call.record.call_id,
        outcome=_DECIDED.get(approval.outcome, approval.outcome),
    )
