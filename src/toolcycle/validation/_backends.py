"""The two engines that can check a value against a compiled schema.

`toolcycle.validation` decides whether a schema is usable (its metaschema, its
references, its patterns, its size) with ``jsonschema`` whatever the backend, so
both backends accept exactly the same schemas. A backend only builds the checker
for a schema already accepted and runs it:

- ``jsonschema``: the reference implementation in pure Python, always installed,
  with validator classes whose ``pattern``, ``patternProperties`` (and the keywords
  that look at them) run on RE2 (`toolcycle.validation._re2_keywords`).
- ``jsonschema-rs``: the Rust implementation (extra ``toolcycle[fast]``), about
  40 times faster on a small object (docs/performance.md has the numbers), with
  its patterns on the ``regex`` crate rather than ``fancy-regex``.

Both read a pattern as ECMA-262, as the specification asks, and both match in
time linear in the text: neither engine backtracks.

Neither ever retrieves a document: ``jsonschema`` gets a registry whose
retrieval raises, ``jsonschema-rs`` a retriever that refuses every URI (an empty
registry alone would not stop it from fetching).

Both report problems the same way: `ValidationIssue` records with the JSON
Pointer of the value, the keyword that failed and a message in toolcycle's own
words, read from the engine's errors by `toolcycle.validation._readers` and ranked by
`toolcycle.validation._issues` (shallow before deep, ``anyOf`` and ``oneOf`` after the rest,
then by pointer, keyword and message), identical issues once, at most
`MAX_ISSUES`. Building that list costs far more than the yes/no answer, so the
runtime asks `is_valid` first and `issues` only when the answer is no.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final, Protocol

from toolcycle.validation._issues import MAX_ISSUES, Triple, ranked, truncate
from toolcycle.validation._json import pointer_token
from toolcycle.validation._readers import FALSE_STANDIN, RsReader, jsonschema_errors

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from jsonschema.protocols import Validator
    from referencing import Registry

    from toolcycle._types import JSONSchema
    from toolcycle.models import ValidationIssue

__all__ = [
    "BACKEND_NAMES",
    "MAX_ISSUES",
    "SUBSCHEMA",
    "SUBSCHEMA_ARRAYS",
    "SUBSCHEMA_MAPS",
    "BackendSchemaError",
    "JsonschemaBackend",
    "JsonschemaRsBackend",
    "SchemaChecker",
    "ValidatorBackend",
    "false_standins",
    "fast_backend_available",
    "truncate",
]

BACKEND_NAMES: Final = ("jsonschema", "jsonschema-rs")
"""The backends ``ToolRuntime(validator=...)`` accepts, besides ``"auto"``."""

SUBSCHEMA: Final = (
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
"""Keywords whose value is one subschema (``items`` may also be an array, before 2020-12)."""
SUBSCHEMA_ARRAYS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
"""Keywords whose value is an array of subschemas."""
SUBSCHEMA_MAPS: Final = (
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
)
"""Keywords whose value is an object of subschemas (``dependencies`` may hold arrays too)."""


class SchemaChecker(Protocol):
    """One compiled schema, as a backend runs it."""

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` (plain JSON data) matches; stops at the first problem."""
        ...

    def issues(self, instance: Any) -> tuple[ValidationIssue, ...]:
        """Every problem with ``instance``, ranked and capped; empty when it matches."""
        ...


class ValidatorBackend(Protocol):
    """Builds `SchemaChecker` objects for schemas `toolcycle.validation` accepted."""

    name: str

    def build(self, schema: dict[str, Any] | bool, dialect: str) -> SchemaChecker:
        """The checker for ``schema``, whose dialect is the metaschema URI ``dialect``.

        Raises:
            BackendSchemaError: the engine cannot compile the schema.
        """
        ...


class BackendSchemaError(Exception):
    """A schema the engine cannot compile, with where and why."""

    def __init__(self, pointer: str, keyword: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.keyword = keyword
        self.message = message


class _Checker:
    """A compiled validator, with how to read its errors as (path, keyword, message)."""

    __slots__ = ("_read", "_validator", "is_valid")

    def __init__(
        self, validator: Any, read: Callable[[Iterable[Any], Any], Iterable[Triple]]
    ) -> None:
        self._validator = validator
        self._read = read
        self.is_valid = validator.is_valid

    def issues(self, instance: Any) -> tuple[ValidationIssue, ...]:
        return ranked(self._read(self._validator.iter_errors(instance), instance))


def false_standins(node: Any) -> Any:
    """A copy of the schema ``node`` with `FALSE_STANDIN` where jsonschema loses a false's place.

    ``jsonschema`` reports a ``false`` under ``properties``, ``patternProperties`` or
    ``prefixItems`` without the property or index it refused, and an ``items: false``
    as one issue for all the extra items; ``jsonschema-rs`` reports each refused value
    at its own pointer. The stand-in refuses the same values, keeping their place.
    """
    if not isinstance(node, dict):
        return node
    copy = dict(node)
    for keyword in SUBSCHEMA:
        if keyword in node:
            value = node[keyword]
            if keyword == "items" and isinstance(value, list):  # draft 2019-09 and older
                copy[keyword] = [_standin(item, lossy=True) for item in value]
            else:
                copy[keyword] = _standin(value, lossy=keyword == "items")
    for keyword in SUBSCHEMA_ARRAYS:
        if isinstance(node.get(keyword), list):
            lossy = keyword == "prefixItems"
            copy[keyword] = [_standin(item, lossy=lossy) for item in node[keyword]]
    for keyword in SUBSCHEMA_MAPS:
        if isinstance(node.get(keyword), dict):
            lossy = keyword in ("properties", "patternProperties")
            copy[keyword] = {
                key: _standin(item, lossy=lossy) for key, item in node[keyword].items()
            }
    return copy


def _standin(subschema: Any, *, lossy: bool) -> Any:
    """``subschema`` with its stand-ins; itself `FALSE_STANDIN` if it is a lossy ``false``."""
    return FALSE_STANDIN if lossy and subschema is False else false_standins(subschema)


class JsonschemaBackend:
    """The reference backend: ``jsonschema``'s validator class for the schema's dialect.

    Args:
        classes: the ``jsonschema`` validator class of each dialect, by metaschema URI.
        registry: the pre-loaded documents, passed through `false_standins`; its
            retrieval raises.
    """

    name = "jsonschema"

    def __init__(self, classes: Mapping[str, type[Validator]], registry: Registry[Any]) -> None:
        self._classes = classes
        self._registry = registry

    @staticmethod
    def issues_of(validator: Validator, instance: Any) -> tuple[ValidationIssue, ...]:
        """The ranked, capped issues a ``jsonschema`` validator finds in ``instance``."""
        return _Checker(validator, jsonschema_errors).issues(instance)

    def build(self, schema: dict[str, Any] | bool, dialect: str) -> SchemaChecker:
        """The checker for ``schema``; ``jsonschema`` compiles lazily, so this never fails."""
        validator = self._classes[dialect](false_standins(schema), registry=self._registry)
        return _Checker(validator, jsonschema_errors)


def _refuse(uri: str) -> Any:
    raise LookupError(f"{uri} is not pre-loaded, and toolcycle never retrieves a document")


def fast_backend_available() -> bool:
    """Whether ``jsonschema-rs`` can be imported (the ``fast`` extra)."""
    try:
        importlib.import_module("jsonschema_rs")
    except ImportError:
        return False
    return True


class JsonschemaRsBackend:
    """The fast backend: ``jsonschema-rs``, with every retrieval refused.

    Args:
        documents: the pre-loaded documents, by the URI references use.

    Raises:
        ImportError: ``jsonschema-rs`` is not installed, naming the extra to install.
        ValueError: a pre-loaded document that ``jsonschema-rs`` cannot load (one
            whose ``$schema`` it does not know, say), naming its URI.
    """

    name = "jsonschema-rs"

    def __init__(self, documents: Mapping[str, JSONSchema]) -> None:
        try:
            rs = importlib.import_module("jsonschema_rs")
        except ImportError as exc:
            raise ImportError(
                "the jsonschema-rs validator needs the optional dependency jsonschema-rs; "
                "install it with pip install -e '.[fast]' from a clone (toolcycle[fast] once "
                "published), or use validator='jsonschema'"
            ) from exc
        self._rs = rs
        self._documents = documents
        resources = [(uri, dict(doc)) for uri, doc in documents.items()]
        try:
            self._registry = rs.Registry(resources, retriever=_refuse)
        except Exception as exc:
            raise ValueError(
                f"jsonschema-rs cannot load the pre-loaded schema documents: "
                f"{truncate(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}; "
                "remove the document it names or use validator='jsonschema'"
            ) from None

    def build(self, schema: dict[str, Any] | bool, dialect: str) -> SchemaChecker:
        """The checker for ``schema``; ``jsonschema-rs`` reads the dialect from ``$schema``.

        Raises:
            BackendSchemaError: a ``pattern`` that is not a valid ECMA-262 regular
                expression, or anything else the engine refuses, with its pointer.
        """
        rs = self._rs
        try:
            validator = rs.validator_for(
                schema,
                registry=self._registry,
                retriever=_refuse,
                validate_formats=False,
                # The regex crate, without fancy-regex's backtracking: linear time.
                pattern_options=rs.RegexOptions(),
            )
        except rs.ValidationError as exc:
            pointer = "".join(f"/{pointer_token(part)}" for part in exc.instance_path)
            if exc.kind.name == "format" and 'is not a "regex"' in exc.message:
                keyword = "pattern"
                message = "the pattern is not a valid regular expression (read as ECMA-262)"
            else:
                keyword = str(exc.kind.name)
                message = truncate(exc.message.splitlines()[0])
            raise BackendSchemaError(pointer, keyword, message) from None
        except Exception as exc:  # a referencing error, say: never an escape
            message = truncate(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise BackendSchemaError("", "$schema", message) from None
        return _Checker(validator, RsReader(schema, self._documents))
