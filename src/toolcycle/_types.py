"""Type aliases shared by the package; nothing here has behaviour."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

__all__ = ["Clock", "JSONObject", "JSONSchema", "JSONValue"]

JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"
"""A value that survives a round trip through strict JSON."""

JSONObject: TypeAlias = dict[str, Any]
"""A JSON object as a Python dict (values are `JSONValue`s)."""

JSONSchema: TypeAlias = Mapping[str, Any]
"""A JSON Schema document (draft 2020-12) as a mapping."""

Clock: TypeAlias = Callable[[], float]
"""A callable returning seconds: wall time since the epoch, or a monotonic timer."""
