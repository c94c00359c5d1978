"""JSON Schema, hardened for schemas and values nobody vouches for.

Draft 2020-12 is the dialect of a schema that declares none; a schema may declare
draft 2019-09, 07, 06 or 04 in ``$schema`` and is then validated by that draft's rules.

Schemas come from MCP servers and values from language models, so this module
treats both as hostile:

- Validators are built once per schema and never retrieve anything: the
  registry refuses every retrieval, so a remote or ``file://`` ``$ref`` is never
  fetched. Documents a schema legitimately refers to can be pre-loaded.
  A reference that does not resolve is an error when the schema is compiled,
  naming the pointer, never a surprise at call time; so is a chain of ``$ref``,
  ``$dynamicRef`` or ``$recursiveRef`` that comes back round (`toolcycle.validation._survey`).
- Schemas are capped in size and depth. ``pattern`` / ``patternProperties`` regular
  expressions are read as ECMA-262 and matched in linear time on both backends
  (RE2 for ``jsonschema``, the ``regex`` crate for ``jsonschema-rs``), so no
  pattern can backtrack catastrophically; one that needs backtracking
  (a backreference, a lookahead) is refused at compile time (`toolcycle.validation._patterns`).
- Values are normalised to strict JSON and capped in size, depth and integer
  width before they reach the validator; anything the validator still trips
  over (a ``$ref`` cycle, say) becomes a validation issue, never an exception.
- Messages quote only the schema's own words and the offending value, truncated, in
  toolcycle's own wording (`toolcycle.validation._wording`), the same whichever backend runs.

Two backends run the compiled schemas (see `toolcycle.validation._backends`): ``jsonschema``,
always installed, and ``jsonschema-rs`` (extra ``toolcycle[fast]``), which
``"auto"`` picks when it is installed. Whether a schema is usable is decided once, with
``jsonschema``, for both (`toolcycle.validation._compiler`), so they accept the same
schemas; they differ in speed. Each value is then checked against the
`CompiledSchema` (`toolcycle.validation._compiled`).

``jsonschema`` and ``referencing`` are imported in `toolcycle.validation._compiler` and in `toolcycle.validation._backends`,
``jsonschema_rs`` only in `toolcycle.validation._backends`, and nowhere else. They are imported
when the first `SchemaCompiler` is built, not with this module: together they are
about a third of what ``import toolcycle`` would otherwise cost.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcycle.validation._compiled import CompiledSchema, validate_input, validate_output
    from toolcycle.validation._compiler import VALIDATOR_BACKENDS, SchemaCompiler
    from toolcycle.validation._limits import DRAFT_2020_12, ValidationLimits

__all__ = [
    "DRAFT_2020_12",
    "VALIDATOR_BACKENDS",
    "CompiledSchema",
    "SchemaCompiler",
    "ValidationLimits",
    "validate_input",
    "validate_output",
]

_COMPILED = frozenset({"CompiledSchema", "validate_input", "validate_output"})
_COMPILER = frozenset({"SchemaCompiler", "VALIDATOR_BACKENDS"})
_LIMITS = frozenset({"DRAFT_2020_12", "ValidationLimits"})


def __getattr__(name: str) -> Any:
    # The engine's modules cost a few milliseconds to import; a host pays for
    # them with its first runtime (or first use of these names), not on import.
    if name in _COMPILED:
        import toolcycle.validation._compiled as compiled

        return getattr(compiled, name)
    if name in _COMPILER:
        import toolcycle.validation._compiler as compiler

        return getattr(compiler, name)
    if name in _LIMITS:
        import toolcycle.validation._limits as limits

        return getattr(limits, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
