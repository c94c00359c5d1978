"""The two engines that can check a value against a compiled schema.

`toolcycle.validation` decides whether a schema is usable (its metaschema, its
references, its patterns, its size) with ``jsonschema`` whatever the backend, so
both backends accept exactly the same schemas. A backend only builds the checker
for a schema already accepted and runs it:

- ``jsonschema``: the reference implementation in pure Python, always installed.
- ``jsonschema-rs``: the Rust implementation (extra ``toolcycle[fast]``), about
  40 times faster on a small object (docs/performance.md has the numbers). It reads
  ``pattern`` with ECMA-262 syntax and meaning, as the specification asks.

Neither ever retrieves a document: ``jsonschema`` gets a registry whose
retrieval raises, ``jsonschema-rs`` a retriever that refuses every URI (an empty
registry alone would not stop it from fetching).

Both report problems the same way: `ValidationIssue` records with the JSON
Pointer of the value, the keyword that failed and a short message, the most
relevant first (shallow before deep, ``anyOf`` and ``oneOf`` after the rest), at
most `MAX_ISSUES`. Building that list costs far more than the yes/no answer, so
the runtime asks `is_valid` first and `issues` only when the answer is no.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final, Protocol

from toolcycle._json import pointer_token
from toolcycle.models import ValidationIssue

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from jsonschema.protocols import Validator
    from referencing import Registry

    from toolcycle._types import JSONSchema

__all__ = [
    "BACKEND_NAMES",
    "MAX_ISSUES",
    "BackendSchemaError",
    "JsonschemaBackend",
    "JsonschemaRsBackend",
    "SchemaChecker",
    "ValidatorBackend",
    "fast_backend_available",
    "truncate",
]

BACKEND_NAMES: Final = ("jsonschema", "jsonschema-rs")
"""The backends ``ToolRuntime(validator=...)`` accepts, besides ``"auto"``."""

MAX_ISSUES: Final = 20
_MESSAGE_LIMIT = 240
# Keywords whose failure says least about what is wrong (as jsonschema's best_match ranks).
_WEAK = frozenset({"anyOf", "oneOf"})


def truncate(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, with ``...`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ranked(raw: Iterable[tuple[list[Any] | Any, str, str]]) -> tuple[ValidationIssue, ...]:
    """Issues from (path, keyword, message) triples, the most relevant first, capped.

    Shallower errors say more is wrong, so they come first; at one depth ``anyOf``
    and ``oneOf`` come after the rest. The sort is stable, so errors of equal rank
    keep the validator's order.
    """
    triples = sorted(
        ((list(path), keyword, message) for path, keyword, message in raw),
        key=lambda triple: (len(triple[0]), triple[1] in _WEAK),
    )
    return tuple(
        ValidationIssue(
            pointer="".join(f"/{pointer_token(part)}" for part in path),
            keyword=keyword,
            message=truncate(message),
        )
        for path, keyword, message in triples[:MAX_ISSUES]
    )


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
    ecma_patterns: bool
    """The engine reads ``pattern`` as ECMA-262 and refuses an invalid one itself."""

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


_Triple = tuple[Any, str, str]


class _Checker:
    """A compiled validator, with how to read its errors as (path, keyword, message)."""

    __slots__ = ("_read", "_validator", "is_valid")

    def __init__(self, validator: Any, read: Callable[[Any], _Triple]) -> None:
        self._validator = validator
        self._read = read
        self.is_valid = validator.is_valid

    def issues(self, instance: Any) -> tuple[ValidationIssue, ...]:
        return _ranked(self._read(error) for error in self._validator.iter_errors(instance))


def _jsonschema_error(error: Any) -> _Triple:
    # jsonschema reports the boolean schema false with no keyword at all.
    keyword = "false" if error.validator is None else str(error.validator)
    return error.absolute_path, keyword, error.message


def _rs_error(error: Any) -> _Triple:
    return error.instance_path, _rs_keyword(error), error.message


class JsonschemaBackend:
    """The reference backend: ``jsonschema``'s validator class for the schema's dialect.

    Args:
        classes: the ``jsonschema`` validator class of each dialect, by metaschema URI.
        registry: the pre-loaded documents; its retrieval raises.
    """

    name = "jsonschema"
    ecma_patterns = False

    def __init__(self, classes: Mapping[str, type[Validator]], registry: Registry[Any]) -> None:
        self._classes = classes
        self._registry = registry

    @staticmethod
    def issues_of(validator: Validator, instance: Any) -> tuple[ValidationIssue, ...]:
        """The ranked, capped issues a ``jsonschema`` validator finds in ``instance``."""
        return _Checker(validator, _jsonschema_error).issues(instance)

    def build(self, schema: dict[str, Any] | bool, dialect: str) -> SchemaChecker:
        """The checker for ``schema``; ``jsonschema`` compiles lazily, so this never fails."""
        validator = self._classes[dialect](schema, registry=self._registry)
        return _Checker(validator, _jsonschema_error)


def _refuse(uri: str) -> Any:
    raise LookupError(f"{uri} is not pre-loaded, and toolcycle never retrieves a document")


def _rs_keyword(error: Any) -> str:
    """The keyword ``jsonschema`` would name: the last step of the schema path.

    ``jsonschema-rs`` names some errors by their kind (``required`` for a failed
    ``dependentRequired``, ``contains`` for ``maxContains``); the schema path ends
    at the keyword itself.
    """
    name = str(error.kind.name)
    if name == "falseSchema":
        return "false"
    path = error.schema_path
    return path[-1] if path and isinstance(path[-1], str) else name


def fast_backend_available() -> bool:
    """Whether ``jsonschema-rs`` can be imported (``pip install 'toolcycle[fast]'``)."""
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
    ecma_patterns = True

    def __init__(self, documents: Mapping[str, JSONSchema]) -> None:
        try:
            rs = importlib.import_module("jsonschema_rs")
        except ImportError as exc:
            raise ImportError(
                "the jsonschema-rs validator needs the optional dependency jsonschema-rs; "
                "install it with: pip install 'toolcycle[fast]' (or use validator='jsonschema')"
            ) from exc
        self._rs = rs
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
        return _Checker(validator, _rs_error)
