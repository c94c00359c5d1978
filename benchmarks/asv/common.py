"""The tools every benchmark runs, in the asv suite and in ``python -m benchmarks`` alike.

- The small tool: input ``a``, ``b``, ``label``, ``scale`` (`INPUT_SCHEMA`), output
  ``{"sum": a + b, "label": label}`` (`OUTPUT_SCHEMA`), as a hand-written sync tool
  (`AddTool`, named ``add``), its async twin (`AsyncAddTool`, ``aadd``) and as plain
  functions for ``@tool`` and the peer libraries (`add_fields`, `add_fields_async`).
  The work is trivial on purpose, so that what runs around it shows.
- The items tool (`CountTool`, ``count``): its input is ``{"items": [...]}``, an array
  of objects with four typed fields each (`items_input` builds one of any length); it
  only counts them, so the cost is the input's validation and copying.

The module imports nothing from the rest of ``benchmarks``: asv imports its suite
(this folder) as a package of its own, without the repository on ``sys.path``.
"""

from __future__ import annotations

from typing import Any, Literal

from toolcycle import ToolCapability, ToolDescriptor, ToolExecutionContext

Backend = Literal["jsonschema", "jsonschema-rs"]
"""A validator backend, as ``ToolRuntime(validator=...)`` names it."""

ASYNC_BATCH = 100
"""Calls awaited per run of an async benchmark, so that starting the loop does not swamp them."""

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
        "label": {"type": "string"},
        "scale": {"type": "number"},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["sum"],
}
PARAMS = {"a": 2, "b": 3, "label": "total", "scale": 1.5}


def add(params: dict[str, Any]) -> dict[str, Any]:
    """The work itself: trivial on purpose, so the overhead shows."""
    return {"sum": params["a"] + params["b"], "label": params.get("label", "")}


def add_fields(a: int, b: int, label: str = "", scale: float = 1.0) -> dict[str, Any]:
    """Add two integers (``add`` with its fields as parameters)."""
    return {"sum": a + b, "label": label}


async def add_fields_async(a: int, b: int, label: str = "", scale: float = 1.0) -> dict[str, Any]:
    """Add two integers (the async twin of ``add_fields``)."""
    return {"sum": a + b, "label": label}


class AddTool:
    """``add`` as a hand-written sync tool."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="add",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return add(params)

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None


class AsyncAddTool(AddTool):
    """``add`` as an async tool."""

    def discover(self) -> ToolDescriptor:
        return super().discover().model_copy(update={"name": "aadd"})

    async def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return add(params)


ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "price": {"type": "number"},
        "active": {"type": "boolean"},
    },
    "required": ["id", "name", "price", "active"],
    "additionalProperties": False,
}
ITEMS_INPUT_SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": ITEM_SCHEMA}},
    "required": ["items"],
    "additionalProperties": False,
}
ITEMS_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def items_input(count: int) -> dict[str, Any]:
    """An input of ``count`` objects that the items schema accepts."""
    return {
        "items": [
            {"id": i, "name": f"item-{i}", "price": i * 0.25, "active": i % 2 == 0}
            for i in range(count)
        ]
    }


class CountTool:
    """Counts the objects of its input: the work is nothing, the input is large."""

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="count",
            input_schema=ITEMS_INPUT_SCHEMA,
            output_schema=ITEMS_OUTPUT_SCHEMA,
            capability=ToolCapability(writes=False, checkpointable=True),
        )

    def activate(self, ctx: ToolExecutionContext) -> None:
        return None

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        return {"count": len(params["items"])}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        return None
