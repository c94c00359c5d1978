"""Checks of the options a Python function is made a tool with (``@tool``, ``wrap``).

`toolcycle.callables.FunctionTool` takes its retry limit and policy, its result
cache and its own guardrails as keyword options; each is refused here, with a
`ToolDefinitionError` naming the tool, when it cannot work, so that a bad
definition fails where it is written rather than at the first call. Loaded
with the first function made a tool, as the signature reader is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle._bounds import shown_value
from toolcycle.errors import ToolDefinitionError
from toolcycle.retries import _NOT_IDEMPOTENT, RetryPolicy

if TYPE_CHECKING:
    from toolcycle.guardrails import Guardrail
    from toolcycle.result_cache import CachePolicy

__all__ = ["check_cache", "check_guardrails", "check_retries", "misused_decision"]


def check_retries(
    name: str, idempotent: bool, max_retries: int | None, retry: RetryPolicy | None
) -> tuple[int | None, RetryPolicy | None]:
    """The tool's own retry limit and policy, refused here when they cannot work."""
    if max_retries is not None and (
        isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0
    ):
        raise ToolDefinitionError(
            f"tool {name!r}: max_retries must be a whole number, 0 or more, "
            f"got {shown_value(max_retries)}",
            tool_name=name,
        )
    if retry is not None:
        if not isinstance(retry, RetryPolicy):
            raise ToolDefinitionError(
                f"tool {name!r}: retry must be a toolcycle.RetryPolicy, got {retry!r}",
                tool_name=name,
            )
        if not idempotent:
            raise ToolDefinitionError(_NOT_IDEMPOTENT.format(name=name), tool_name=name)
    return max_retries, retry


def check_cache(name: str, writes: bool, cache: CachePolicy | None) -> CachePolicy | None:
    """The tool's result cache, refused for a tool that writes."""
    if cache is not None and writes:
        raise ToolDefinitionError(
            f"tool {name!r} writes (writes=True is the default), so its results "
            "cannot be cached; pass writes=False if it only reads, or drop cache=",
            tool_name=name,
        )
    return cache


def misused_decision(item: object) -> str | None:
    """What to say when ``allow``, ``reject`` or ``stop`` itself is given as a guardrail.

    Checked where guardrails are given, not at the first call, where the helper
    would fail on (call, ctx). Matched by name, as ``toolcycle.guardrails`` loads
    only when used.
    """
    name = getattr(item, "__name__", None)
    if name not in _DECISIONS or getattr(item, "__module__", None) != "toolcycle.guardrails":
        return None
    return (
        f"{name} is the decision a guardrail returns, not a guardrail; pass a function "
        "of (call, ctx) that returns allow(), reject(message) or stop(message)"
    )


_DECISIONS = frozenset({"allow", "reject", "stop"})


def check_guardrails(value: Any, option: str, name: str) -> tuple[Guardrail, ...]:
    """The guardrails given as ``option``, checked where the tool is defined."""
    if callable(value) or isinstance(value, str | bytes):
        raise ToolDefinitionError(
            f"{option} of tool {name!r} takes a list of guardrails; wrap {value!r} in [...]",
            tool_name=name,
        )
    items = tuple(value)
    for item in items:
        misused = misused_decision(item)
        if misused is not None:
            raise ToolDefinitionError(f"{option} of tool {name!r} holds {misused}", tool_name=name)
        if not callable(item):
            raise ToolDefinitionError(
                f"{option} of tool {name!r} holds {item!r}, which is not callable; a "
                "guardrail is a function of (call, ctx)",
                tool_name=name,
            )
    return items
