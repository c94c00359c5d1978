"""A compiled schema: what every call's validation runs, and the public functions over it.

`toolcycle.validation._compiler` decides once, at registration, whether a schema is
usable and builds a `CompiledSchema` for it; this module is what happens on each
call after that: a value is normalised to strict JSON within the limits, checked
by the backend's compiled validator, and the verdict returned as a `Validation`.
A validator that crashes gives a verdict too, never an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.errors import ToolSchemaValidationError
from toolcycle.models import Validation, ValidationIssue
from toolcycle.validation._backends import truncate
from toolcycle.validation._json import JSONCompatibilityError, _flat_copy, normalize

if TYPE_CHECKING:
    from toolcycle.validation._backends import SchemaChecker
    from toolcycle.validation._limits import ValidationLimits

__all__ = ["CompiledSchema", "crash_verdict", "validate_input", "validate_output"]


def crash_verdict(exc: BaseException) -> Validation:
    """The verdict on a value the validator crashed on (or a schema the metaschema check did)."""
    if isinstance(exc, RecursionError):
        why = "the schema or the value nests too deeply, or the schema refers to itself in a loop"
    else:
        why = f"{type(exc).__name__}: {truncate(str(exc), 120)}"
    return Validation(
        valid=False,
        issues=(
            ValidationIssue(
                pointer="", keyword="$validator", message=f"the value could not be checked: {why}"
            ),
        ),
    )


class CompiledSchema:
    """A schema checked once and compiled into a reusable validator."""

    __slots__ = ("_bits", "_checker", "_flat", "_limits", "schema")

    def __init__(
        self,
        schema: dict[str, Any] | bool,
        checker: SchemaChecker,
        limits: ValidationLimits,
    ) -> None:
        self.schema = schema
        self._checker = checker
        self._limits = limits
        # What the flat-object fast path of `normalize` needs, read once.
        self._flat = limits.max_instance_nodes if limits.max_instance_depth >= 1 else 0
        self._bits = limits.max_integer_bits

    def normalize(self, value: Any) -> Any:
        """Return ``value`` as plain JSON data within this schema's limits.

        Raises:
            JSONCompatibilityError: naming the pointer of the first bad value.
        """
        if type(value) is dict and len(value) < self._flat:  # as `normalize` would, sooner
            flat = _flat_copy(value, self._bits)
            if flat is not None:
                return flat
        limits = self._limits
        return normalize(
            value,
            max_depth=limits.max_instance_depth,
            max_nodes=limits.max_instance_nodes,
            max_integer_bits=limits.max_integer_bits,
        )

    def check(self, instance: Any) -> Validation:
        """Validate JSON data (dicts, lists, strings, numbers, booleans, None); never raises.

        The data is not normalised, but nesting deeper than the limit is refused
        before the validator sees it (a compiled validator may recurse once per
        level, and no stack survives every depth).
        """
        if _deeper_than(instance, self._limits.max_instance_depth):
            message = f"the value nests deeper than {self._limits.max_instance_depth} levels"
            issue = ValidationIssue(pointer="", keyword="maxDepth", message=message)
            return Validation(valid=False, issues=(issue,))
        return self.check_normalized(instance)

    def check_normalized(self, instance: Any) -> Validation:
        """Validate data that `normalize` returned (so within the limits); never raises."""
        checker = self._checker
        try:
            if checker.is_valid(instance):
                return _VALID
            return Validation(valid=False, issues=checker.issues(instance))
        except Exception as exc:  # a validator crash is a verdict, never an escape
            return crash_verdict(exc)

    def validate(self, value: Any) -> tuple[Any, Validation]:
        """Normalise then validate ``value``; return the JSON data and the verdict."""
        if type(value) is dict and len(value) < self._flat:  # `normalize`'s first case
            flat = _flat_copy(value, self._bits)
            if flat is not None:
                return flat, self.check_normalized(flat)
        try:
            data = self.normalize(value)
        except JSONCompatibilityError as exc:
            issue = ValidationIssue(pointer=exc.pointer, keyword=exc.keyword, message=exc.reason)
            return None, Validation(valid=False, issues=(issue,))
        return data, self.check_normalized(data)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers in ``value`` nest more than ``limit`` levels (iteratively)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


# Built without validation, so importing this module does not build the model.
_VALID = Validation.model_construct(valid=True)


def validate_input(compiled: CompiledSchema, params: Any, *, tool_name: str | None = None) -> Any:
    """Normalise and validate a tool's input; return the JSON data the tool receives.

    Raises:
        ToolSchemaValidationError: with the `Validation` when the input is rejected.
    """
    data, validation = compiled.validate(params)
    if not validation.valid:
        raise ToolSchemaValidationError(
            "the input does not match the tool's input schema:\n" + validation.summary(),
            validation=validation,
            schema_kind="input",
            tool_name=tool_name,
        )
    return data


def validate_output(compiled: CompiledSchema, output: Any) -> Validation:
    """Validate a tool's JSON output and return the verdict for the caller to log or act on."""
    return compiled.check(output)
