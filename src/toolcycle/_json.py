"""Strict JSON: turn a Python value into plain JSON data, or say exactly why not.

Tool inputs and outputs pass through here before they are validated or measured.
The rules are those of RFC 8259 with no extensions: NaN and the infinities are
refused, object keys must be strings, and a value that contains itself is
refused. Tuples become lists; pydantic models and dataclasses become objects.
The result is always a fresh structure, so a tool never sees (or mutates) the
caller's containers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["JSONCompatibilityError", "encode", "normalize", "pointer_token"]


class JSONCompatibilityError(ValueError):
    """A value cannot be represented as strict JSON (or is larger than allowed)."""

    def __init__(self, pointer: str, reason: str, *, keyword: str = "type") -> None:
        super().__init__(f"{pointer or '/'}: {reason}")
        self.pointer = pointer
        self.reason = reason
        self.keyword = keyword


def pointer_token(key: object) -> str:
    """Escape one reference token of a JSON Pointer (RFC 6901)."""
    return str(key).replace("~", "~0").replace("/", "~1")


class _Walker:
    __slots__ = ("active", "max_depth", "max_integer_bits", "max_nodes", "nodes")

    def __init__(self, max_depth: int, max_nodes: int, max_integer_bits: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.max_integer_bits = max_integer_bits
        self.nodes = 0
        self.active: set[int] = set()

    def walk(self, value: Any, pointer: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise JSONCompatibilityError(
                pointer, f"the value has more than {self.max_nodes} elements", keyword="maxNodes"
            )
        if value is None or value is True or value is False or type(value) is str:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > self.max_integer_bits:
                raise JSONCompatibilityError(
                    pointer,
                    f"the integer has more than {self.max_integer_bits} bits",
                    keyword="maxIntegerBits",
                )
            return int(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise JSONCompatibilityError(pointer, f"{value!r} is not a JSON number")
            return float(value)
        if isinstance(value, str):
            return str(value)
        if depth >= self.max_depth:
            raise JSONCompatibilityError(
                pointer, f"the value nests deeper than {self.max_depth} levels", keyword="maxDepth"
            )
        if isinstance(value, BaseModel):
            return self.walk(value.model_dump(mode="json"), pointer, depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self._container(value, fields, pointer, depth)
        if isinstance(value, Mapping | list | tuple):
            return self._container(value, value, pointer, depth)
        raise JSONCompatibilityError(
            pointer, f"a value of type {type(value).__name__} is not JSON-compatible"
        )

    def _container(self, owner: object, value: Any, pointer: str, depth: int) -> Any:
        marker = id(owner)
        if marker in self.active:
            raise JSONCompatibilityError(pointer, "the value contains itself", keyword="cycle")
        self.active.add(marker)
        try:
            if isinstance(value, Mapping):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if type(key) is not str:
                        raise JSONCompatibilityError(
                            pointer,
                            f"object keys must be strings, got {type(key).__name__} {key!r:.40}",
                        )
                    out[key] = self.walk(item, f"{pointer}/{pointer_token(key)}", depth + 1)
                return out
            return [
                self.walk(item, f"{pointer}/{index}", depth + 1) for index, item in enumerate(value)
            ]
        finally:
            self.active.discard(marker)


def normalize(
    value: Any, *, max_depth: int = 64, max_nodes: int = 100_000, max_integer_bits: int = 4096
) -> Any:
    """Return ``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Raises:
        JSONCompatibilityError: naming the JSON Pointer of the first offending value.
    """
    return _Walker(max_depth, max_nodes, max_integer_bits).walk(value, "", 0)


def encode(value: Any) -> bytes:
    """Serialise already-normalised JSON data compactly as UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
