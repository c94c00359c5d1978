"""Two keywords on which the ``jsonschema`` backend is brought in line with `jsonschema-rs`.

- ``multipleOf`` with a fractional divisor. ``jsonschema`` divides two binary
  floats and asks whether the quotient is whole, so ``1.13`` is not a multiple of
  ``0.01`` there (``1.13 / 0.01`` is ``112.99999999999999``) while
  ``0.6999000000000001`` is one of ``0.0001``; `jsonschema-rs` answers the other
  way on both. Here a float is read as the shortest decimal that names it (its
  ``repr``, which is how JSON text writes it) and the remainder is taken exactly
  on those decimals: what a person reading the JSON expects, and what
  `jsonschema-rs` answers. A whole-number divisor keeps ``jsonschema``'s check.
- ``dependencies`` under drafts 2019-09 and 2020-12, which split it into
  ``dependentRequired`` and ``dependentSchemas``. `jsonschema-rs` still applies it
  there, as the test suite's optional compatibility cases ask; ``jsonschema``
  ignored it, so one schema gave two verdicts. It now applies it too, with its
  draft 7 meaning.
"""

from __future__ import annotations

import importlib
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from jsonschema.protocols import Validator

__all__ = ["aligned_classes", "is_multiple"]

_EXTRA_DIGITS = 40
"""Digits of precision beyond the quotient's own, so that the remainder is exact."""


def is_multiple(value: float, divisor: float) -> bool:
    """Whether ``value`` is a whole multiple of ``divisor``, read as decimals."""
    exact = Decimal(value) if type(value) is int else Decimal(repr(value))
    step = Decimal(repr(divisor))
    with localcontext() as context:
        # Room for every digit of the quotient: a huge value over a tiny divisor
        # would otherwise stop the division (DivisionImpossible).
        context.prec = max(28, exact.adjusted() - step.adjusted() + _EXTRA_DIGITS)
        return exact % step == 0


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "number"):
        return
    if isinstance(divisor, float):
        failed = not is_multiple(instance, divisor)
    else:
        failed = bool(instance % divisor)
    if failed:
        error = importlib.import_module("jsonschema.exceptions").ValidationError
        yield error(f"{instance!r} is not a multiple of {divisor}")


def aligned_classes(classes: Mapping[str, type[Validator]]) -> dict[str, type[Validator]]:
    """Each validator class of ``classes`` with the two keywords above."""
    validators = importlib.import_module("jsonschema.validators")
    extend = validators.extend
    dependencies = validators.Draft7Validator.VALIDATORS["dependencies"]
    aligned = {}
    for uri, cls in classes.items():
        keywords: dict[str, Any] = {"multipleOf": _multiple_of}
        if "dependencies" not in cls.VALIDATORS:
            keywords["dependencies"] = dependencies
        aligned[uri] = extend(cls, keywords)
    return aligned
