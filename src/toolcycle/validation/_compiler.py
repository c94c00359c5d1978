"""Compile each schema once, and validate inputs and outputs against it (the public API)."""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from toolcycle.errors import ToolSchemaValidationError
from toolcycle.models import Validation, ValidationIssue
from toolcycle.validation._backends import (
    BACKEND_NAMES,
    BackendSchemaError,
    JsonschemaBackend,
    JsonschemaRsBackend,
    SchemaChecker,
    ValidatorBackend,
    false_standins,
    fast_backend_available,
    truncate,
)
from toolcycle.validation._json import JSONCompatibilityError, _flat_copy, encode, normalize
from toolcycle.validation._limits import DRAFT_2020_12, ValidationLimits
from toolcycle.validation._re2_keywords import re2_classes
from toolcycle.validation._survey import schema_problems

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Literal

    from jsonschema.protocols import Validator
    from referencing import Registry

    from toolcycle._types import JSONSchema

__all__ = [
    "VALIDATOR_BACKENDS",
    "CompiledSchema",
    "SchemaCompiler",
    "validate_input",
    "validate_output",
]

# The dialects a schema may declare in $schema (servers written with TypeScript
# tooling often emit draft-07); `_Engine.dialects` has their validator and rules.
_DIALECTS = (
    DRAFT_2020_12,
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
)


class _Engine(NamedTuple):
    """What this module uses from ``jsonschema`` and ``referencing``."""

    dialects: dict[str, tuple[type[Validator], Any]]
    """Each of `_DIALECTS`: its validator class and its referencing specification."""
    registry: type[Registry[Any]]
    resource: Any
    draft202012: Any
    specifications: Registry[Any]
    """The metaschemas of every draft, which references to them resolve against."""
    unresolvable: type[Exception]


@functools.cache
def _engine() -> _Engine:
    """Import ``jsonschema`` and ``referencing`` on first use (see the module docstring)."""
    from jsonschema import (
        Draft4Validator,
        Draft6Validator,
        Draft7Validator,
        Draft201909Validator,
        Draft202012Validator,
    )
    from jsonschema_specifications import REGISTRY
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT4, DRAFT6, DRAFT7, DRAFT201909, DRAFT202012

    # Each draft's validator class, with its regular expressions run on RE2.
    classes = re2_classes(
        dict(
            zip(
                _DIALECTS,
                (
                    Draft202012Validator,
                    Draft201909Validator,
                    Draft7Validator,
                    Draft6Validator,
                    Draft4Validator,
                ),
                strict=True,
            )
        )
    )
    specifications = (DRAFT202012, DRAFT201909, DRAFT7, DRAFT6, DRAFT4)
    return _Engine(
        dialects={
            uri: (classes[uri], spec) for uri, spec in zip(_DIALECTS, specifications, strict=True)
        },
        registry=Registry,
        resource=Resource,
        draft202012=DRAFT202012,
        specifications=REGISTRY,
        unresolvable=Unresolvable,
    )


VALIDATOR_BACKENDS = ("auto", *BACKEND_NAMES)
"""What ``validator=`` accepts: ``"auto"`` is ``jsonschema-rs`` when installed, else ``jsonschema``."""


def _crash(exc: BaseException) -> Validation:
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
            return _crash(exc)

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


class SchemaCompiler:
    """Compiles schemas offline against a fixed set of pre-loaded documents.

    Args:
        documents: schemas that ``$ref`` may point to, by absolute URI (the
            URI a reference uses, not necessarily the document's ``$id``).
        limits: the caps for schemas and for the values validated against them.
        backend: the engine that runs compiled schemas, one of `VALIDATOR_BACKENDS`:
            ``"jsonschema"``, ``"jsonschema-rs"`` (extra ``toolcycle[fast]``), or
            ``"auto"``, the second when it is installed and the first otherwise.

    Raises:
        ValueError: an unknown ``backend``, or documents ``jsonschema-rs`` cannot load.
        ImportError: ``backend="jsonschema-rs"`` without ``jsonschema-rs`` installed.
    """

    __slots__ = ("_backend", "_compiled", "_lock", "_meta", "_registry", "limits")

    _meta: dict[str, Validator]
    _CACHE_SIZE = 1024
    """How many compiled schemas are kept, least recently used first out."""

    def __init__(
        self,
        documents: Mapping[str, JSONSchema] | None = None,
        *,
        limits: ValidationLimits | None = None,
        backend: Literal["auto", "jsonschema", "jsonschema-rs"] = "auto",
    ) -> None:
        if backend not in VALIDATOR_BACKENDS:
            raise ValueError(
                f"validator must be one of {', '.join(map(repr, VALIDATOR_BACKENDS))}, "
                f"got {backend!r}"
            )
        self.limits = limits or ValidationLimits()
        engine = _engine()
        self._registry: Registry[Any] = _registry(documents or {})
        self._meta = {
            uri: cls(cls.META_SCHEMA, registry=self._registry)
            for uri, (cls, _) in engine.dialects.items()
        }
        if backend == "auto":
            backend = "jsonschema-rs" if fast_backend_available() else "jsonschema"
        self._backend: ValidatorBackend = (
            JsonschemaRsBackend(self._loadable(documents or {}))
            if backend == "jsonschema-rs"
            else JsonschemaBackend(
                {uri: cls for uri, (cls, _) in engine.dialects.items()},
                # Its own copy of the documents, with false subschemas that keep their place.
                _registry(documents or {}, prepare=false_standins),
            )
        )
        # Sources list many tools with the same schema (every skill has one
        # shape); checking the metaschema and the patterns again for each
        # would dominate their registration.
        self._compiled: dict[bytes, CompiledSchema] = {}
        self._lock = threading.Lock()

    def _loadable(self, documents: Mapping[str, JSONSchema]) -> dict[str, JSONSchema]:
        """The documents in a dialect we know; ``jsonschema-rs`` refuses to load any other.

        No schema we accept can use a document written in an unknown dialect as its
        metaschema, and a ``$ref`` into one is refused when the schema is compiled.
        """
        return {
            uri: doc
            for uri, doc in documents.items()
            if not isinstance(doc.get("$schema"), str) or self._dialect(doc["$schema"]) is not None
        }

    @property
    def backend(self) -> str:
        """The name of the engine in use: ``"jsonschema"`` or ``"jsonschema-rs"``."""
        return self._backend.name

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
                against the metaschema, with a ``pattern`` RE2 cannot run, with a reference loop, or
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
        except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 text can hold it
            raise fail(
                "",
                "type",
                f"the schema holds text that is not valid Unicode ({exc.reason}: {exc.object[exc.start : exc.end]!r})",
            ) from None
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
                f"the dialect {truncate(str(declared), 80)!r} is not supported; use draft "
                "2020-12, 2019-09, 07, 06 or 04, or pre-load a metaschema built on one",
            )
        engine = _engine()
        specification = engine.dialects[dialect][1]
        meta = self._meta[dialect]
        try:
            meta_ok = meta.is_valid(data)
            meta_issues = () if meta_ok else JsonschemaBackend.issues_of(meta, data)
        except Exception as exc:  # the metaschema check itself crashed
            raise fail("", "$schema", _crash(exc).issues[0].message) from None
        if meta_issues:
            first = meta_issues[0]
            raise fail(first.pointer, first.keyword, first.message)
        if isinstance(data, dict):
            resource = specification.create_resource(data)
            resolver = self._registry.combine(engine.specifications).resolver_with_root(resource)
            for pointer, keyword, message in schema_problems(
                data,
                resolver,
                specification,
                max_pattern_length=limits.max_pattern_length,
                unresolvable=engine.unresolvable,
            ):
                raise fail(pointer, keyword, message)
        try:
            checker = self._backend.build(data, dialect)
        except BackendSchemaError as exc:
            raise fail(exc.pointer, exc.keyword, exc.message) from None
        return CompiledSchema(data, checker, limits)


def _registry(
    documents: Mapping[str, JSONSchema], prepare: Callable[[Any], Any] = dict
) -> Registry[Any]:
    """A registry of the pre-loaded ``documents``, each passed through ``prepare``.

    The default retrieve of a ``Registry`` raises, so nothing is ever fetched.
    """
    engine = _engine()
    return engine.registry().with_resources(
        (
            uri,
            engine.resource.from_contents(
                prepare(dict(doc)), default_specification=engine.draft202012
            ),
        )
        for uri, doc in documents.items()
    )


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
