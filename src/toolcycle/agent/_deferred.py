"""Definitions with deferred tools: what a model is shown when some tools wait for a search.

| search | format | deferred tools not yet revealed | added once |
| --- | --- | --- | --- |
| ``bm25`` (``auto``, ``native``) | ``anthropic`` | sent with ``"defer_loading": true`` | Anthropic's BM25 tool-search tool |
| ``regex`` | ``anthropic`` | sent with ``"defer_loading": true`` | Anthropic's regex tool-search tool |
| ``hosted`` (``auto``, ``native``) | ``openai-responses`` | sent with ``"defer_loading": true`` | ``{"type": "tool_search"}`` |
| ``local`` (``auto`` elsewhere) | any | left out | the ``search_tools`` meta-tool |

A format without a native search never receives ``defer_loading``, which its
provider would reject or, worse, ignore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from toolcycle.agent._definitions import definition
from toolcycle.agent._search import MAX_LIMIT
from toolcycle.models import ToolCapability, ToolDescriptor

if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Set as AbstractSet

__all__ = ["DEFAULT_LIMIT", "SEARCH_TOOL", "Plan", "deferred_definitions", "search_plan"]

Plan = Literal["bm25", "regex", "hosted", "local"]
"""How one ``tool_definitions`` call offers deferred tools."""

SEARCH_TOOL = "search_tools"
"""The name of the local meta-tool."""

DEFAULT_LIMIT = 5
"""How many tools a search returns when the model does not say."""

_NATIVE: dict[str, Plan] = {"anthropic": "bm25", "openai-responses": "hosted"}
# Each provider-specific search: the one format that has it.
_ONLY: dict[str, tuple[str, Plan]] = {
    "bm25": ("anthropic", "bm25"),
    "regex": ("anthropic", "regex"),
    "hosted": ("openai-responses", "hosted"),
}
_ANTHROPIC_SEARCH = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
_META = ToolDescriptor(
    name=SEARCH_TOOL,
    description=(
        "Find more tools. Only some of the available tools are listed; describe what "
        "you want to do in a few words and this returns the names and descriptions of "
        "the best matching tools, which you can call from then on."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "words for what you want to do, such as 'create github issue'",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "how many tools to return at most",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    capability=ToolCapability(writes=False),
)


def search_plan(format: str, search: str) -> Plan:
    """How ``search`` offers deferred tools in ``format``.

    Raises:
        ValueError: ``search`` is unknown, or asks for a native search that
            ``format`` does not have.
    """
    if search == "local":
        return "local"
    if search == "auto":
        return _NATIVE.get(format, "local")
    if search == "native":
        native = _NATIVE.get(format)
        if native is None:
            raise ValueError(
                f"format {format!r} has no native tool search; use search='local' "
                "(the search_tools meta-tool) or search='auto'"
            )
        return native
    only = _ONLY.get(search)
    if only is None:
        raise ValueError(
            f"unknown search {search!r}; use 'auto', 'native', 'local', 'bm25', 'regex' or 'hosted'"
        )
    if format != only[0]:
        raise ValueError(f"search={search!r} is for format {only[0]!r}, not {format!r}")
    return only[1]


def deferred_definitions(
    descriptors: Iterable[ToolDescriptor],
    format: str,
    *,
    strict: bool,
    plan: Plan,
    revealed: AbstractSet[str],
) -> list[dict[str, Any]]:
    """The definitions of ``descriptors`` (the tools the plan may run) with deferral applied.

    Args:
        descriptors: the tools, in registration order.
        format: the provider format.
        strict: offer OpenAI's strict mode where the schema allows it.
        plan: how deferred tools are offered (see `search_plan`).
        revealed: the deferred tools to show in full (found earlier in the plan).
    """
    shown: list[dict[str, Any]] = []
    waiting = False
    for descriptor in descriptors:
        if not descriptor.defer_loading or descriptor.name in revealed:
            shown.append(definition(descriptor, format, strict=strict))
            continue
        waiting = True
        if plan != "local":
            shown.append({**definition(descriptor, format, strict=strict), "defer_loading": True})
    if not waiting:
        return shown
    if plan == "local":
        return [*shown, definition(_META, format, strict=strict)]
    if plan == "hosted":
        return [{"type": "tool_search"}, *shown]
    return [dict(_ANTHROPIC_SEARCH[plan]), *shown]
