"""Checks of the objects a host hands `ToolRuntime`: a ledger, a tracer, a store, a pool size.

Each is refused where it is given, with a message that names the option and says
what fits, rather than where it is first used: a ledger at the first resume, a
pool at the first async call, an instrumentation never (its failures are only
logged, so a wrong object would silently record nothing).
"""

from __future__ import annotations

from typing import Any

from toolcycle._bounds import shown_value
from toolcycle.result_cache import ResultCache

__all__ = ["check_hooks", "check_result_cache", "check_workers"]

# What each option must offer, what fits it, and a further hint, for the message.
_HOOKS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "approval_ledger": (
        ("claim",),
        (
            "an object with a claim(approval_id) method, such as "
            "toolcycle.approvals.FileApprovalLedger(folder), or None for a ledger in memory"
        ),
        "",
    ),
    "tracer": (
        ("record",),
        (
            "an object with a record(trace) method, such as toolcycle.NullTracer(), or None "
            "for the default"
        ),
        "; to hand every trace to a function, use runtime.add_trace_listener(function)",
    ),
    "instrumentation": (
        ("call_started", "stage_started"),
        (
            "an object with call_started and stage_started methods, such as "
            "toolcycle.otel.OpenTelemetry(), or None"
        ),
        "",
    ),
}


def check_hooks(option: str, value: Any) -> Any:
    """``value`` as given, once it is None or offers the methods ``option`` needs.

    Raises:
        TypeError: naming ``option``, what it got and what fits; a class given
            where its instance was meant is told so.
    """
    if value is None:
        return None
    methods, fits, hint = _HOOKS[option]
    if isinstance(value, type) and all(callable(getattr(value, m, None)) for m in methods):
        raise TypeError(
            f"{option} must be an instance, got the class {value.__name__}; "
            f"pass {value.__name__}(...) instead"
        )
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        if option == "approval_ledger" and isinstance(value, str):
            hint = f"; to keep claims in that folder, pass FileApprovalLedger({value!r})"
        raise TypeError(
            f"{option} must be {fits}; got {shown_value(value)}, which has no "
            f"{' or '.join(missing)} method{hint}"
        )
    return value


def check_result_cache(value: Any) -> ResultCache | None:
    """``result_cache`` as given, once it is None or a `ResultCache`."""
    if value is not None and not isinstance(value, ResultCache):
        raise TypeError(
            f"result_cache must be a toolcycle.ResultCache or None (a default store), got "
            f"{shown_value(value)}; set its bounds with "
            "ResultCache(max_entries=..., max_bytes=...)"
        )
    return value


def check_workers(value: Any) -> int:
    """``max_workers`` as given, once it is a whole number of threads, 1 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"max_workers must be a whole number of threads, 1 or more, got {shown_value(value)}"
        )
    return value
