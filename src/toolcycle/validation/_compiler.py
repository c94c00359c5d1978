"""Compile each schema once: decide whether it is usable, and build its validator.

A schema is checked against its dialect's metaschema, the limits and the survey of
its patterns and references (`toolcycle.validation._survey`), then built by the
backend into a `CompiledSchema` (`toolcycle.validation._compiled`), which is cached
by the schema's text. ``jsonschema`` and ``referencing`` are imported on first use.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from toolcycle.errors import ToolSchemaValidationError
from toolcycle.models import Validation, ValidationIssue
from toolcycle.validation._aligned import aligned_classes
from toolcycle.validation._backends import (
    BACKEND_NAMES,
    BackendSchemaError,
    JsonschemaBackend,
    JsonschemaRsBackend,
    ValidatorBackend,
    false_standins,
    fast_backend_available,
    truncate,
)
from toolcycle.validation._compiled import CompiledSchema, crash_verdict
from toolcycle.validation._json import JSONCompatibilityError, encode, normalize
from toolcycle.validation._limits import DRAFT_2020_12, ValidationLimits
from toolcycle.validation._re2_keywords import re2_classes
from toolcycle.validation._survey import schema_problems

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Literal

    from jsonschema.protocols import Validator
    from referencing import Registry

    from toolcycle._types import JSONSchema

__all__ = ["VALIDATOR_BACKENDS", "SchemaCompiler"]

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

    # Each draft's validator class, with its regular expressions run on RE2 and a
    # fractional multipleOf and the legacy dependencies as jsonschema-rs has them.
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
    classes = aligned_classes(classes)
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
            raise fail("", "$schema", crash_verdict(exc).issues[0].message) from None
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
