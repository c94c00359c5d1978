"""The tools a plan may run, each with the definition a framework offers it under.

Frameworks that hold a fixed list of tools for a run need the deferred tools in it
too, before a search reveals them, so that a tool found later can be called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from toolcycle.agent._deferred import SEARCH_TOOL
from toolcycle.agent._definitions import definition as tool_definition
from toolcycle.agent._names import provider_name
from toolcycle.capabilities import is_allowed

if TYPE_CHECKING:
    from toolcycle import ToolDescriptor, ToolExecutionContext, ToolRuntime

__all__ = ["Offer", "offers", "waiting"]

Offer = tuple["ToolDescriptor | None", dict[str, Any]]
"""A tool's descriptor (None for ``search_tools``) and its definition."""


def offers(
    runtime: ToolRuntime,
    plan: ToolExecutionContext,
    format: Literal["openai", "openai-responses"],
    *,
    strict: bool,
) -> list[Offer]:
    """Each tool the plan may run with its ``format`` definition, then ``search_tools``.

    Definitions pair with descriptors by provider name, never by position: they leave
    out the deferred tools that wait for a search and add ``search_tools`` (the
    runtime's local search, which frameworks can call as a tool). The waiting tools
    are in the list all the same, in registration order, defined as they will be once
    revealed; `waiting` tells them apart. ``search_tools`` comes last, if offered.
    """
    definitions = runtime.tool_definitions(plan, format=format, strict=strict, search="local")
    by_name = {_name(definition): definition for definition in definitions}
    found: list[Offer] = []
    for descriptor in runtime.descriptors():
        if not is_allowed(descriptor, plan):
            continue
        definition = by_name.pop(provider_name(descriptor.name, format), None)
        if definition is None:
            if not descriptor.defer_loading:
                continue  # registered since the definitions were made: next time
            definition = tool_definition(descriptor, format, strict=strict)
        found.append((descriptor, definition))
    search = by_name.get(SEARCH_TOOL)
    if search is not None:
        found.append((None, search))
    return found


def waiting(descriptor: ToolDescriptor, plan: ToolExecutionContext) -> bool:
    """Whether ``descriptor`` is a deferred tool that the plan has not revealed yet."""
    return descriptor.defer_loading and descriptor.name not in plan.revealed_tools


def _name(definition: dict[str, Any]) -> str:
    function = definition.get("function")  # the Chat Completions shape nests it
    name = definition["name"] if function is None else function["name"]
    return str(name)
