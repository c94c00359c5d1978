"""JSON Schema, hardened for schemas and values nobody vouches for.

Draft 2020-12 is the dialect of a schema that declares none; a schema may declare
draft 2019-09, 07, 06 or 04 in ``$schema`` and is then validated by that draft's rules.

Schemas come from MCP servers and values from language models, so this module
treats both as hostile:

- Validators are built once per schema and never retrieve anything: the
  registry refuses every retrieval, so a remote or ``file://`` ``$ref`` is never
  fetched. Documents a schema legitimately refers to can be pre-loaded.
  A reference that does not resolve is an error when the schema is compiled,
  naming the pointer, never a surprise at call time.
- Schemas are capped in size and depth, and ``pattern`` / ``patternProperties``
  regular expressions with nested unbounded quantifiers (the shape behind
  catastrophic backtracking, such as ``(a+)+``) are refused at compile time.
- Values are normalised to strict JSON and capped in size, depth and integer
  width before they reach the validator; anything the validator still trips
  over (a ``$ref`` cycle, say) becomes a validation issue, never an exception.
- Messages quote only the schema's own words and the offending value, truncated.

All ``jsonschema`` and ``referencing`` imports, and the translation of their
exceptions, live here and nowhere else.
"""

from __future__ import annotations

import importlib
import math
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.exceptions import STRONG_MATCHES, WEAK_MATCHES, ValidationError
from jsonschema_specifications import REGISTRY as _SPECIFICATIONS
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT4, DRAFT6, DRAFT7, DRAFT201909, DRAFT202012

from toolcycle._json import JSONCompatibilityError, encode, normalize, pointer_token
from toolcycle.errors import ToolSchemaValidationError
from toolcycle.models import Validation, ValidationIssue

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from jsonschema.protocols import Validator

    from toolcycle._types import JSONSchema

__all__ = [
    "DRAFT_2020_12",
    "CompiledSchema",
    "SchemaCompiler",
    "ValidationLimits",
    "validate_input",
    "validate_output",
]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` URI of draft 2020-12, the dialect of a schema that names none."""

# The dialects a schema may declare in $schema (servers written with TypeScript
# tooling often emit draft-07), with their validator and referencing rules.
_DIALECTS: dict[str, tuple[type[Validator], Any]] = {
    DRAFT_2020_12: (Draft202012Validator, DRAFT202012),
    "https://json-schema.org/draft/2019-09/schema": (Draft201909Validator, DRAFT201909),
    "http://json-schema.org/draft-07/schema": (Draft7Validator, DRAFT7),
    "http://json-schema.org/draft-06/schema": (Draft6Validator, DRAFT6),
    "http://json-schema.org/draft-04/schema": (Draft4Validator, DRAFT4),
}

_MESSAGE_LIMIT = 240
_MAX_ISSUES = 20

# Keywords whose value is one subschema, an array of them, or an object of them.
_SUBSCHEMA = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = (
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
)

_sre_parser: Any = importlib.import_module("re._parser")
_UNBOUNDED = _sre_parser.MAXREPEAT
# A repeat bounded above this counts as unbounded.
_BOUNDED_REPEAT = 100
# Nested bounded repeats may split a string between them at most this many ways
# (as a natural logarithm: 100,000 ways), which keeps a failed match fast.
_LOG_SPLIT_BUDGET = math.log(100_000)
_OUTER_CAP = 10**6
_REPEATS = {
    _sre_parser.MAX_REPEAT,
    _sre_parser.MIN_REPEAT,
    getattr(_sre_parser, "POSSESSIVE_REPEAT", _sre_parser.MAX_REPEAT),
}


@dataclass(frozen=True, slots=True)
class ValidationLimits:
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


def _truncate(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pointer(path: Iterator[Any] | Any) -> str:
    return "".join(f"/{pointer_token(part)}" for part in path)


def _issue(error: ValidationError) -> ValidationIssue:
    return ValidationIssue(
        pointer=_pointer(error.absolute_path),
        # jsonschema reports the boolean schema false with no keyword at all.
        keyword="false" if error.validator is None else str(error.validator),
        message=_truncate(error.message),
    )


def _rank(error: ValidationError) -> tuple[int, bool, bool]:
    """Sort key putting the most relevant error first, as ``best_match`` ranks them.

    Shallower errors say more is wrong, so they come first; at one depth the weak
    keywords (``anyOf``, ``oneOf``) come after the rest. The sort is stable, so
    errors of equal rank keep the validator's order.
    """
    keyword = error.validator
    return (len(error.path), keyword in WEAK_MATCHES, keyword not in STRONG_MATCHES)


def _issues(validator: Validator, instance: Any) -> tuple[ValidationIssue, ...]:
    errors = sorted(validator.iter_errors(instance), key=_rank)
    return tuple(_issue(error) for error in errors[:_MAX_ISSUES])


def _crash(exc: BaseException) -> Validation:
    if isinstance(exc, RecursionError):
        why = "the schema or the value nests too deeply, or the schema refers to itself in a loop"
    else:
        why = f"{type(exc).__name__}: {_truncate(str(exc), 120)}"
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

    __slots__ = ("_limits", "_validator", "schema")

    def __init__(
        self,
        schema: dict[str, Any] | bool,
        validator: Validator,
        limits: ValidationLimits,
    ) -> None:
        self.schema = schema
        self._validator = validator
        self._limits = limits

    def normalize(self, value: Any) -> Any:
        """Return ``value`` as plain JSON data within this schema's limits.

        Raises:
            JSONCompatibilityError: naming the pointer of the first bad value.
        """
        limits = self._limits
        return normalize(
            value,
            max_depth=limits.max_instance_depth,
            max_nodes=limits.max_instance_nodes,
            max_integer_bits=limits.max_integer_bits,
        )

    def check(self, instance: Any) -> Validation:
        """Validate already-normalised JSON data; never raises."""
        validator = self._validator
        try:
            if validator.is_valid(instance):
                return _VALID
            return Validation(valid=False, issues=_issues(validator, instance))
        except Exception as exc:  # a validator crash is a verdict, never an escape
            return _crash(exc)

    def validate(self, value: Any) -> tuple[Any, Validation]:
        """Normalise then validate ``value``; return the JSON data and the verdict."""
        try:
            data = self.normalize(value)
        except JSONCompatibilityError as exc:
            issue = ValidationIssue(pointer=exc.pointer, keyword=exc.keyword, message=exc.reason)
            return None, Validation(valid=False, issues=(issue,))
        return data, self.check(data)


_VALID = Validation(valid=True)


class SchemaCompiler:
    """Compiles schemas offline against a fixed set of pre-loaded documents.

    Args:
        documents: schemas that ``$ref`` may point to, by absolute URI (the
            URI a reference uses, not necessarily the document's ``$id``).
        limits: the caps for schemas and for the values validated against them.
    """

    __slots__ = ("_compiled", "_lock", "_meta", "_registry", "limits")

    _meta: dict[str, Validator]
    _CACHE_SIZE = 1024
    """How many compiled schemas are kept, least recently used first out."""

    def __init__(
        self,
        documents: Mapping[str, JSONSchema] | None = None,
        *,
        limits: ValidationLimits | None = None,
    ) -> None:
        self.limits = limits or ValidationLimits()
        resources = [
            (uri, Resource.from_contents(dict(doc), default_specification=DRAFT202012))
            for uri, doc in (documents or {}).items()
        ]
        # The default retrieve of a Registry raises, so nothing is ever fetched.
        self._registry: Registry[Any] = Registry().with_resources(resources)
        self._meta = {
            uri: cls(cls.META_SCHEMA, registry=self._registry)
            for uri, (cls, _) in _DIALECTS.items()
        }
        # Sources list many tools with the same schema (every skill has one
        # shape); checking the metaschema and the patterns again for each
        # would dominate their registration.
        self._compiled: dict[bytes, CompiledSchema] = {}
        self._lock = threading.Lock()

    def _dialect(self, uri: object) -> str | None:
        """The known dialect ``uri`` names, directly or through a pre-loaded metaschema."""
        if not isinstance(uri, str):
            return None
        plain = uri.rstrip("#")
        if plain in _DIALECTS:
            return plain
        try:
            contents = self._registry.contents(plain)
        except Exception:  # not pre-loaded: an unknown dialect
            return None
        declared = contents.get("$schema") if isinstance(contents, dict) else None
        if isinstance(declared, str) and declared.rstrip("#") in _DIALECTS:
            return declared.rstrip("#")
        return None

    def compile(
        self, schema: Any, *, kind: str = "input", tool_name: str | None = None
    ) -> CompiledSchema:
        """Check ``schema`` and build its validator.

        Raises:
            ToolSchemaValidationError: when the schema is not usable (draft 2020-12
                unless its ``$schema`` names a supported older draft): not an object or boolean, too large or deep, invalid
                against the metaschema, with an unsafe or invalid ``pattern``, or
                with a ``$ref`` that does not resolve offline.
        """

        def fail(pointer: str, keyword: str, message: str) -> ToolSchemaValidationError:
            issue = ValidationIssue(pointer=pointer, keyword=keyword, message=message)
            where = f" of tool {tool_name!r}" if tool_name else ""
            return ToolSchemaValidationError(
                f"the {kind} schema{where} is not usable: {pointer or '/'}: {message}",
                validation=Validation(valid=False, issues=(issue,)),
                schema_kind=kind,
                tool_name=tool_name,
            )

        if not isinstance(schema, dict | bool):
            raise fail(
                "", "type", f"a schema must be an object or a boolean, got {type(schema).__name__}"
            )
        limits = self.limits
        try:
            data = normalize(schema, max_depth=limits.max_schema_depth, max_nodes=10**9)
            key = encode(data)
        except JSONCompatibilityError as exc:
            raise fail(exc.pointer, exc.keyword, exc.reason) from None
        if len(key) > limits.max_schema_bytes:
            raise fail(
                "",
                "maxSchemaBytes",
                f"{len(key)} bytes is over the limit of {limits.max_schema_bytes}",
            )
        with self._lock:
            cached = self._compiled.pop(key, None)
            if cached is not None:
                self._compiled[key] = cached  # now the most recently used
                return cached
        compiled = self._compile(data, fail)
        with self._lock:
            self._compiled[key] = compiled
            if len(self._compiled) > self._CACHE_SIZE:
                del self._compiled[next(iter(self._compiled))]
        return compiled

    def _compile(
        self, data: Any, fail: Callable[[str, str, str], ToolSchemaValidationError]
    ) -> CompiledSchema:
        """Check normalised schema data against its metaschema and the limits."""
        limits = self.limits
        declared = data.get("$schema", DRAFT_2020_12) if isinstance(data, dict) else DRAFT_2020_12
        dialect = self._dialect(declared)
        if dialect is None:
            raise fail(
                "/$schema",
                "$schema",
                f"the dialect {_truncate(str(declared), 80)!r} is not supported; use draft "
                "2020-12, 2019-09, 07, 06 or 04, or pre-load a metaschema built on one",
            )
        validator_class, specification = _DIALECTS[dialect]
        meta = self._meta[dialect]
        try:
            meta_ok = meta.is_valid(data)
            meta_issues = () if meta_ok else _issues(meta, data)
        except Exception as exc:  # the metaschema check itself crashed
            raise fail("", "$schema", _crash(exc).issues[0].message) from None
        if meta_issues:
            first = meta_issues[0]
            raise fail(first.pointer, first.keyword, first.message)
        if isinstance(data, dict):
            resource = specification.create_resource(data)
            resolver = self._registry.combine(_SPECIFICATIONS).resolver_with_root(resource)
            for pointer, keyword, message in _problems(
                data, resolver, "", limits, specification, root=True
            ):
                raise fail(pointer, keyword, message)
        validator = validator_class(data, registry=self._registry)
        return CompiledSchema(data, validator, limits)


def _problems(
    node: Any,
    resolver: Any,
    pointer: str,
    limits: ValidationLimits,
    specification: Any,
    *,
    root: bool = False,
) -> Iterator[tuple[str, str, str]]:
    """Yield (pointer, keyword, message) for unresolvable refs and unsafe patterns."""
    if isinstance(node, list):  # draft-07 and older allow an array of schemas in items
        for index, item in enumerate(node):
            yield from _problems(item, resolver, f"{pointer}/{index}", limits, specification)
        return
    if not isinstance(node, dict):
        return
    if not root and isinstance(node.get("$id", node.get("id")), str):
        resolver = resolver.in_subresource(specification.create_resource(node))
    for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        ref = node.get(keyword)
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except Unresolvable:
                hint = (
                    "; fix the pointer or add the missing definition"
                    if ref.startswith("#")
                    else "; documents are never retrieved, so pre-load it with schema_documents"
                )
                yield (
                    f"{pointer}/{pointer_token(keyword)}",
                    keyword,
                    f"the reference {_truncate(ref, 120)!r} does not resolve{hint}",
                )
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        yield from _pattern_problems(pattern, f"{pointer}/pattern", limits)
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict):
        for key in patterns:
            yield from _pattern_problems(
                key, f"{pointer}/patternProperties/{pointer_token(key)}", limits
            )
    for keyword in _SUBSCHEMA:
        if keyword in node:
            yield from _problems(
                node[keyword], resolver, f"{pointer}/{keyword}", limits, specification
            )
    for keyword in _SUBSCHEMA_ARRAYS:
        items = node.get(keyword)
        if isinstance(items, list):
            for index, item in enumerate(items):
                yield from _problems(
                    item, resolver, f"{pointer}/{keyword}/{index}", limits, specification
                )
    for keyword in _SUBSCHEMA_MAPS:
        members = node.get(keyword)
        if isinstance(members, dict):
            for key, item in members.items():
                yield from _problems(
                    item,
                    resolver,
                    f"{pointer}/{keyword}/{pointer_token(key)}",
                    limits,
                    specification,
                )


def _pattern_problems(
    pattern: str, pointer: str, limits: ValidationLimits
) -> Iterator[tuple[str, str, str]]:
    if len(pattern) > limits.max_pattern_length:
        yield (
            pointer,
            "pattern",
            f"the pattern is longer than {limits.max_pattern_length} characters",
        )
        return
    try:
        parsed = _sre_parser.parse(pattern)
        re.compile(pattern)
    except re.error as exc:
        yield pointer, "pattern", f"the pattern is not a valid regular expression: {exc}"
        return
    if _nested_unbounded(parsed, inside=False):
        yield (
            pointer,
            "pattern",
            (
                f"the pattern {_truncate(pattern, 80)!r} repeats a group that itself repeats a "
                "varying number of times (as in (a+)+ or (a{1,3})+); that can take exponential "
                "time, so rewrite it without the nested quantifier"
            ),
        )


def _nested_unbounded(parsed: Any, *, inside: bool, outer: int = 1) -> bool:
    r"""Whether ``parsed`` nests a variable-length repeat inside a repeat that iterates a lot.

    An unbounded repeat inside an unbounded one (``(a+)+``) is refused, and so is
    any repeat that can match two or more different counts (``(a{1,3})+``) inside
    an unbounded one. Inside bounded repeats, a variable repeat is refused when the
    ways of splitting a string between them exceed a fixed budget
    (``(a{1,10}){1,10}``), while ``(\d{1,3}\.){3}`` stays allowed.

    Args:
        parsed: a parsed (sub)pattern.
        inside: an enclosing repeat is unbounded (or bounded above 100).
        outer: the product of the upper bounds of the bounded repeats enclosing ``parsed``.
    """
    for op, arg in parsed:
        if op in _REPEATS:
            low, high, sub = arg
            unbounded = high == _UNBOUNDED or high > _BOUNDED_REPEAT
            variable = high > 1 and low != high
            if inside and (unbounded or variable):
                return True
            if (
                variable
                and not unbounded
                and outer > 1
                and outer * math.log(high - low + 1) > _LOG_SPLIT_BUDGET
            ):
                return True
            if _delimited(sub):  # each iteration starts at its own separator
                if _nested_unbounded(sub, inside=False, outer=1):
                    return True
                continue
            nested_outer = outer if unbounded else min(outer * max(high, 1), _OUTER_CAP)
            if _nested_unbounded(sub, inside=inside or unbounded, outer=nested_outer):
                return True
        elif op is _sre_parser.SUBPATTERN:
            if _nested_unbounded(arg[-1], inside=inside, outer=outer):
                return True
        elif op is _sre_parser.BRANCH:
            if any(_nested_unbounded(branch, inside=inside, outer=outer) for branch in arg[1]):
                return True
        elif op is _sre_parser.GROUPREF_EXISTS:
            if any(
                branch is not None and _nested_unbounded(branch, inside=inside, outer=outer)
                for branch in arg[1:]
            ):
                return True
        elif op in (_sre_parser.ASSERT, _sre_parser.ASSERT_NOT):
            if _nested_unbounded(arg[1], inside=inside, outer=outer):
                return True
        elif op is getattr(_sre_parser, "ATOMIC_GROUP", None) and _nested_unbounded(
            arg, inside=inside, outer=outer
        ):
            return True
    return False


def _delimited(sub: Any) -> bool:
    r"""Whether every match of ``sub`` starts with a separator nothing else in it can match.

    Then a string splits into iterations of a repeat of ``sub`` in one way only
    (``(\.[a-z]+)*`` cuts at each dot), so the repeat cannot backtrack
    between its iterations. Letters never count as separators (case folding).
    """
    items = list(sub)
    while len(items) == 1 and items[0][0] is _sre_parser.SUBPATTERN:
        items = list(items[0][1][-1])
    if not items or items[0][0] is not _sre_parser.LITERAL:
        return False
    char = chr(items[0][1])
    if char.lower() != char.upper():
        return False
    return not any(_may_consume(op, arg, char) for op, arg in items[1:])


_CATEGORY_REGEX = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _may_consume(op: Any, arg: Any, char: str) -> bool:
    """Whether the parsed item ``(op, arg)`` may consume ``char``; True when unsure."""
    if op is _sre_parser.LITERAL:
        return bool(chr(arg) == char)
    if op is _sre_parser.NOT_LITERAL:
        return bool(chr(arg) != char)
    if op is _sre_parser.AT:
        return False
    if op is _sre_parser.IN:
        return _set_matches(arg, char)
    if op in _REPEATS:
        return any(_may_consume(o, a, char) for o, a in arg[2])
    if op is _sre_parser.SUBPATTERN:
        return any(_may_consume(o, a, char) for o, a in arg[-1])
    if op is _sre_parser.BRANCH:
        return any(_may_consume(o, a, char) for branch in arg[1] for o, a in branch)
    return True  # ANY, backreferences, lookarounds, conditionals: assume it may


def _set_matches(items: Any, char: str) -> bool:
    """Whether a character set ``[...]`` may match ``char``; True when unsure."""
    negate = False
    hit = False
    for op, arg in items:
        if op is _sre_parser.NEGATE:
            negate = True
        elif op is _sre_parser.LITERAL:
            hit = hit or chr(arg) == char
        elif op is _sre_parser.RANGE:
            hit = hit or arg[0] <= ord(char) <= arg[1]
        elif op is _sre_parser.CATEGORY and str(arg) in _CATEGORY_REGEX:
            hit = hit or re.fullmatch(_CATEGORY_REGEX[str(arg)], char) is not None
        else:
            return True
    return hit != negate


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
    """Validate already-normalised output and return the verdict for the runtime to log."""
    return compiled.check(output)
