"""The validation layer's constants and caps: what ``import toolcycle`` needs of it.

The engine (`SchemaCompiler` and what it imports) is loaded with the first
runtime, not with the package.
"""

from __future__ import annotations

from toolcycle._value import FrozenValue, frozen_value

__all__ = ["DRAFT_2020_12", "ValidationLimits"]

_set = object.__setattr__  # how a frozen value's __init__ sets its fields

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` URI of draft 2020-12, the dialect of a schema that names none."""


@frozen_value
class ValidationLimits(FrozenValue):
    """Caps applied before anything reaches the validator. All are inclusive.

    Attributes:
        max_schema_bytes: size of a schema serialised as compact JSON.
        max_schema_depth: nesting of objects and arrays in a schema.
        max_instance_nodes: values (scalars and containers) in one input or output.
        max_instance_depth: nesting of objects and arrays in one input or output.
        max_integer_bits: width of any integer in an input or output; 4096 bits is
            about 1,233 decimal digits, well under Python's 4,300-digit
            conversion limit.
        max_pattern_length: characters of one ``pattern`` regular expression.
    """

    max_schema_bytes: int = 1_000_000
    max_schema_depth: int = 64
    max_instance_nodes: int = 100_000
    max_instance_depth: int = 64
    max_integer_bits: int = 4096
    max_pattern_length: int = 1_000

    def __init__(
        self,
        max_schema_bytes: int = 1_000_000,
        max_schema_depth: int = 64,
        max_instance_nodes: int = 100_000,
        max_instance_depth: int = 64,
        max_integer_bits: int = 4096,
        max_pattern_length: int = 1_000,
    ) -> None:
        _set(self, "max_schema_bytes", max_schema_bytes)
        _set(self, "max_schema_depth", max_schema_depth)
        _set(self, "max_instance_nodes", max_instance_nodes)
        _set(self, "max_instance_depth", max_instance_depth)
        _set(self, "max_integer_bits", max_integer_bits)
        _set(self, "max_pattern_length", max_pattern_length)
