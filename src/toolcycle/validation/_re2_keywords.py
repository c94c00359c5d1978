"""``jsonschema`` validator classes whose regular expressions run on RE2.

``jsonschema`` matches ``pattern`` and the keys of ``patternProperties`` with
Python's backtracking ``re``, in four places: those two keywords, the
properties ``additionalProperties`` leaves to ``patternProperties``, and the
properties ``unevaluatedProperties`` counts as evaluated. `re2_classes` extends
each dialect's validator class with keyword functions that do the same work with
`toolcycle.validation._patterns.matches` (ECMA-262 read, RE2 run, linear time) and a format
checker whose ``regex`` check compiles with RE2. Everything else is
``jsonschema``'s own.

``jsonschema`` is imported when `re2_classes` is first called, like everywhere in
toolcycle, so that ``import toolcycle`` stays cheap.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from toolcycle.validation._ecma import PatternError
from toolcycle.validation._patterns import compile_pattern, matches

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from jsonschema.protocols import Validator

__all__ = ["re2_classes"]


@functools.cache
def _jsonschema() -> tuple[Any, Any, Any, Any]:
    """What is used of ``jsonschema`` and ``referencing``, imported on first use.

    Returns:
        ``extend``, ``FormatChecker``, ``ValidationError`` and ``lookup_recursive_ref``.
    """
    validators = importlib.import_module("jsonschema.validators")
    jsonschema = importlib.import_module("jsonschema")
    recursive = importlib.import_module("referencing.jsonschema").lookup_recursive_ref
    return validators.extend, jsonschema.FormatChecker, jsonschema.ValidationError, recursive


def _error(message: str) -> Any:
    return _jsonschema()[2](message)


def _is_object(validator: Any, value: Any) -> bool:
    return bool(validator.is_type(value, "object"))


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield _error(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not _is_object(validator, instance):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if matches(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The names of ``instance`` neither ``properties`` nor ``patternProperties`` covers."""
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in declared and not any(matches(pattern, name) for pattern in patterns)
    ]


def _listing(names: list[Any]) -> str:
    return f"{', '.join(map(repr, names))} {'was' if len(names) == 1 else 'were'}"


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not _is_object(validator, instance):
        return
    extras = _extras(instance, schema)
    if _is_object(validator, additional):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        names = sorted(extras)
        yield _error(f"Additional properties are not allowed ({_listing(names)} unexpected)")


def _passes(validator: Any, value: Any, subschema: Any, **where: Any) -> bool:
    """Whether ``value`` passes ``subschema`` applied from where ``validator`` stands."""
    return next(validator.descend(value, subschema, **where), None) is None


def _evaluated(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The names of ``instance`` that ``schema`` evaluates, for ``unevaluatedProperties``.

    The annotations of draft 2020-12 (and 2019-09): ``properties``,
    ``patternProperties`` (matched with RE2), ``additionalProperties`` and
    ``unevaluatedProperties`` where the value passes them, and what the
    subschemas that apply to the whole value evaluate: references, ``allOf``,
    the ``anyOf`` and ``oneOf`` branches that pass, ``if`` with ``then`` or
    ``else``, and ``dependentSchemas`` of the names present.
    """
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    resolver = validator._resolver  # jsonschema's own keywords look references up here too
    for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        if keyword not in schema or keyword not in validator.VALIDATORS:
            continue
        if keyword == "$recursiveRef":
            resolved = _jsonschema()[3](resolver)
        else:
            resolved = resolver.lookup(schema[keyword])
        inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        found |= _evaluated(inner, instance, resolved.contents)
    declared = schema.get("properties")
    if isinstance(declared, dict):
        found |= declared.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            subschema = schema[keyword]
            found |= {
                name for name, value in instance.items() if _passes(validator, value, subschema)
            }
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        found |= {name for name in instance if any(matches(p, name) for p in patterns)}
    dependents = schema.get("dependentSchemas")
    if isinstance(dependents, dict):
        for name, subschema in dependents.items():
            if name in instance:
                found |= _evaluated(validator, instance, subschema)
    for keyword in ("allOf", "anyOf", "oneOf"):
        for subschema in schema.get(keyword, ()):
            if _passes(validator, instance, subschema):
                found |= _evaluated(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            found |= _evaluated(validator, instance, schema["if"])
            found |= _evaluated(validator, instance, schema.get("then"))
        else:
            found |= _evaluated(validator, instance, schema.get("else"))
    return found


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not _is_object(validator, instance):
        return
    evaluated = _evaluated(validator, instance, schema)
    refused = [
        name
        for name in instance
        if name not in evaluated and not _passes(validator, instance[name], unevaluated, path=name)
    ]
    if not refused:
        return
    if unevaluated is False:
        names = sorted(refused)
        yield _error(f"Unevaluated properties are not allowed ({_listing(names)} unexpected)")
    else:
        yield _error(
            "Unevaluated properties are not valid under the given schema "
            f"({_listing(refused)} unevaluated and invalid)"
        )


def _is_regex(value: object) -> bool:
    """The ``regex`` format: a string RE2 can run with its ECMA-262 meaning."""
    if not isinstance(value, str):
        return True
    compile_pattern(value)
    return True


def _format_checker() -> Any:
    checker = _jsonschema()[1](formats=())
    checker.checks("regex", raises=PatternError)(_is_regex)
    return checker


def re2_classes(classes: Mapping[str, type[Validator]]) -> dict[str, type[Validator]]:
    """Each validator class of ``classes`` extended to match patterns with RE2.

    Args:
        classes: ``jsonschema`` validator classes, by the metaschema URI of their dialect.
    """
    extend = _jsonschema()[0]
    checker = _format_checker()
    extended = {}
    for uri, cls in classes.items():
        keywords: dict[str, Any] = {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        }
        if "unevaluatedProperties" in cls.VALIDATORS:
            keywords["unevaluatedProperties"] = _unevaluated_properties
        extended[uri] = extend(cls, keywords, format_checker=checker)
    return extended
