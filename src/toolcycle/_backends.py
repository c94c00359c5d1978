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
Pointer of the value, the keyword that failed and a message that
`toolcycle._wording` writes from the facts of the failure (never the engine's
own words), the most relevant first (shallow before deep, ``anyOf`` and
``oneOf`` after the rest, then by pointer, keyword and message, so the order
does not depend on the engine), identical issues once, at most `MAX_ISSUES`.
Building that list costs far more than the yes/no answer, so the runtime asks
`is_valid` first and `issues` only when the answer is no.

Where the engines see one failure differently, each reader brings its engine
to the same report:

- ``jsonschema`` loses the place of a ``false`` subschema under ``properties``,
  ``patternProperties``, ``prefixItems`` and ``items`` (it reports the parent
  object, or one issue for all the extra items). Its copies of the schema and of
  the pre-loaded documents have a stand-in there (`false_standins`) that fails
  the same values and keeps the place.
- ``jsonschema-rs`` does not hand over the schema object that holds the failed
  keyword; its reader finds it from the keyword's location in the document.
"""

from __future__ import annotations

import ast
import importlib
import re
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import unquote, urljoin

from toolcycle._json import pointer_token
from toolcycle._wording import describe, json_key
from toolcycle.models import ValidationIssue

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from jsonschema.protocols import Validator
    from referencing import Registry

    from toolcycle._types import JSONSchema

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

MAX_ISSUES: Final = 20
_MESSAGE_LIMIT = 240
# Keywords whose failure says least about what is wrong (as jsonschema's best_match ranks).
_WEAK = frozenset({"anyOf", "oneOf"})

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


def truncate(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, with ``...`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ranked(raw: Iterable[tuple[list[Any] | Any, str, str]]) -> tuple[ValidationIssue, ...]:
    """Issues from (path, keyword, message) triples, the most relevant first, capped.

    Shallower errors say more is wrong, so they come first; at one depth ``anyOf``
    and ``oneOf`` come after the rest; ties go by pointer, keyword and message, so
    the order never depends on the order an engine found them in. An issue found
    twice (``required`` reports each missing name, and the message names them all)
    is kept once.
    """
    ranked = sorted(
        {
            (len(path), keyword in _WEAK, pointer, keyword, truncate(message))
            for path, keyword, message in raw
            for pointer in ["".join(f"/{pointer_token(part)}" for part in path)]
        }
    )
    return tuple(
        ValidationIssue(pointer=pointer, keyword=keyword, message=message)
        for _, _, pointer, keyword, message in ranked[:MAX_ISSUES]
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

    def __init__(
        self, validator: Any, read: Callable[[Iterable[Any], Any], Iterable[_Triple]]
    ) -> None:
        self._validator = validator
        self._read = read
        self.is_valid = validator.is_valid

    def issues(self, instance: Any) -> tuple[ValidationIssue, ...]:
        return _ranked(self._read(self._validator.iter_errors(instance), instance))


_FALSE_STANDIN: Final[dict[str, Any]] = {"not": {}}
"""Fails every value, as ``false`` does; `_jsonschema_error` reports it as ``false``."""

_LISTED = re.compile(r"\((.*) (?:was|were) (?:unexpected|unevaluated and invalid)\)$", re.DOTALL)


def false_standins(node: Any) -> Any:
    """A copy of the schema ``node`` with `_FALSE_STANDIN` where jsonschema loses a false's place.

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
            copy[keyword] = false_standins(node[keyword])
    items = node.get("items")
    if items is False:
        copy["items"] = _FALSE_STANDIN
    elif isinstance(items, list):  # draft 2019-09 and older: an array of schemas
        copy["items"] = [
            _FALSE_STANDIN if item is False else false_standins(item) for item in items
        ]
    for keyword in SUBSCHEMA_ARRAYS:
        if isinstance(node.get(keyword), list):
            lossy = keyword == "prefixItems"
            copy[keyword] = [
                _FALSE_STANDIN if lossy and item is False else false_standins(item)
                for item in node[keyword]
            ]
    for keyword in SUBSCHEMA_MAPS:
        if isinstance(node.get(keyword), dict):
            lossy = keyword in ("properties", "patternProperties")
            copy[keyword] = {
                key: _FALSE_STANDIN if lossy and item is False else false_standins(item)
                for key, item in node[keyword].items()
            }
    return copy


def _listed(message: str) -> list[Any]:
    """The names (or items) a jsonschema ``unevaluated*`` message lists; [] if none."""
    found = _LISTED.search(message)
    if found is None:
        return []
    try:
        return list(ast.literal_eval(f"[{found.group(1)}]"))
    except (ValueError, SyntaxError):  # a repr that is not a literal: leave the names out
        return []


def _additional(instance: Any, schema: dict[str, Any]) -> list[str]:
    """The properties of ``instance`` that ``additionalProperties`` applies to (as jsonschema)."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in properties and not any(re.search(p, name) for p in patterns)
    ]


def _jsonschema_errors(errors: Iterable[Any], instance: Any) -> Iterable[_Triple]:
    """Read ``jsonschema`` errors; unlike `_RsReader`, nothing needs the whole value."""
    return map(_jsonschema_error, errors)


def _jsonschema_error(error: Any) -> _Triple:
    # jsonschema reports the boolean schema false with no keyword at all.
    if error.validator is None or error.schema is _FALSE_STANDIN:
        names = list(error.relative_schema_path)[-1:] == ["propertyNames"]
        keyword, message = describe("false", error.instance, None, names)
        return error.absolute_path, keyword, message
    keyword = str(error.validator)
    detail: Any = None
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        detail = _additional(error.instance, error.schema)
    elif keyword in ("unevaluatedProperties", "unevaluatedItems"):
        detail = _listed(error.message)
    elif keyword in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[_Triple]] = {}
        for sub in error.context:
            # A false branch's error has no schema path at all; it is left out,
            # and a branch that refuses every value is never the closest anyway.
            if sub.relative_schema_path:
                branches.setdefault(sub.relative_schema_path[0], []).append(_jsonschema_error(sub))
        detail = _closest(error.absolute_path, branches.values())
    elif keyword == "oneOf":
        detail = True  # no subschema's errors: more than one matched
    keyword, message = describe(keyword, error.instance, error.schema, detail)
    return error.absolute_path, keyword, message


def _closest(path: Iterable[Any], branches: Iterable[list[_Triple]]) -> tuple[str, str] | None:
    """Where and why the closest branch of a failed ``anyOf`` or ``oneOf`` fails.

    A branch that refuses the value's type (or is ``false``) is far from it. If
    exactly one branch is not, its most relevant issue is the closest, with a
    pointer relative to the value; otherwise there is no closest.
    """
    here = list(path)
    fitting = [
        branch
        for branch in branches
        if branch
        and not any(
            list(where) == here and keyword in ("type", "false") for where, keyword, _ in branch
        )
    ]
    if len(fitting) != 1:
        return None
    issues = _ranked(
        (list(where)[len(here) :], keyword, message) for where, keyword, message in fitting[0]
    )
    return issues[0].pointer, issues[0].message


class JsonschemaBackend:
    """The reference backend: ``jsonschema``'s validator class for the schema's dialect.

    Args:
        classes: the ``jsonschema`` validator class of each dialect, by metaschema URI.
        registry: the pre-loaded documents, passed through `false_standins`; its
            retrieval raises.
    """

    name = "jsonschema"
    ecma_patterns = False

    def __init__(self, classes: Mapping[str, type[Validator]], registry: Registry[Any]) -> None:
        self._classes = classes
        self._registry = registry

    @staticmethod
    def issues_of(validator: Validator, instance: Any) -> tuple[ValidationIssue, ...]:
        """The ranked, capped issues a ``jsonschema`` validator finds in ``instance``."""
        return _Checker(validator, _jsonschema_errors).issues(instance)

    def build(self, schema: dict[str, Any] | bool, dialect: str) -> SchemaChecker:
        """The checker for ``schema``; ``jsonschema`` compiles lazily, so this never fails."""
        validator = self._classes[dialect](false_standins(schema), registry=self._registry)
        return _Checker(validator, _jsonschema_errors)


def _refuse(uri: str) -> Any:
    raise LookupError(f"{uri} is not pre-loaded, and toolcycle never retrieves a document")


def _resources(root: Any, documents: Mapping[str, Any]) -> dict[str, Any]:
    """Every schema resource ``jsonschema-rs`` may name in a keyword location, by URI.

    The pre-loaded documents by the URI they were loaded under, and each schema with
    an ``$id`` (``id`` before draft 6) by that identifier resolved against its parent.
    """
    found: dict[str, Any] = {}

    def walk(node: Any, base: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, base)
            return
        if not isinstance(node, dict):
            return
        ident = node.get("$id", node.get("id"))
        if isinstance(ident, str) and not ident.startswith("#"):
            base = urljoin(base, ident).partition("#")[0]
            found.setdefault(base, node)
        for value in node.values():
            walk(value, base)

    for uri, document in documents.items():
        found[uri.partition("#")[0]] = document
        walk(document, uri)
    walk(root, "")
    return found


class _RsReader:
    """Reads a ``jsonschema-rs`` error as (path, keyword, message), in toolcycle's words.

    `describe` needs the schema object that holds the failed keyword. The error
    gives the keyword's place: the path within the root schema, or, when the
    keyword sits in a resource with a URI, that URI with a JSON Pointer fragment.
    """

    __slots__ = ("_documents", "_resources", "_root")

    def __init__(self, root: Any, documents: Mapping[str, Any]) -> None:
        self._root = root
        self._documents = documents
        self._resources: dict[str, Any] | None = None  # built on the first failure

    def _holder(self, error: Any) -> Any:
        location = error.absolute_keyword_location
        if location:
            if self._resources is None:
                self._resources = _resources(self._root, self._documents)
            base, _, fragment = location.partition("#")
            node = self._resources.get(base)
            steps: list[Any] = [
                unquote(step).replace("~1", "/").replace("~0", "~")
                for step in fragment.split("/")[1:]
            ]
        else:
            node, steps = self._root, list(error.schema_path)
        for step in steps[:-1]:
            if isinstance(node, dict):
                node = node.get(str(step))
            elif isinstance(node, list) and str(step).isdigit() and int(step) < len(node):
                node = node[int(step)]
            else:
                return None
        return node

    def __call__(self, errors: Iterable[Any], instance: Any) -> Iterator[_Triple]:
        """Read each of ``errors``, which ``instance`` gave."""
        root = instance if _has_empty_key(instance) else None
        for error in errors:
            yield self._read(error, root)

    def _read(self, error: Any, root: Any) -> _Triple:
        """One error; ``root`` is the whole value if it has empty keys to put back, else None."""
        path = error.instance_path
        if root is not None:
            path = _with_empty_keys(root, list(path), error.instance)
        name = str(error.kind.name)
        if name == "propertyNames":  # the name's own error, reported at the object
            error = error.kind.error
            name = str(error.kind.name)
        if name == "falseSchema":
            names = error.schema_path[-1:] == ["propertyNames"]
            keyword, message = describe("false", error.instance, None, names)
            return path, keyword, message
        kind = error.kind
        detail: Any = None
        if name in ("additionalProperties", "unevaluatedProperties", "unevaluatedItems"):
            detail = list(kind.unexpected)
        elif type(kind).__name__ == "OneOfMultipleValid":
            detail = True
        elif name in ("anyOf", "oneOf"):
            branches = [[self._read(sub, root) for sub in branch] for branch in kind.context]
            detail = _closest(path, branches)
        keyword = _rs_keyword(error)
        holder = self._holder(error)
        if not isinstance(holder, dict) or keyword not in holder:
            holder = _kind_holder(keyword, kind)
        keyword, message = describe(keyword, error.instance, holder, detail)
        return path, keyword, message


def _has_empty_key(node: Any) -> bool:
    """Whether an object anywhere in ``node`` has the empty string as a key."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _with_empty_keys(root: Any, path: list[Any], value: Any) -> list[Any]:
    """``path`` with the empty keys that ``jsonschema-rs`` leaves out of it put back.

    The engine drops an empty-string key from the paths it reports (``{"": 1}``
    fails at ``[]``, not ``[""]``). Of the paths through ``root`` that read as
    ``path`` without their empty keys, this returns the first that leads to a
    value equal to ``value``, or ``path`` itself if none does.
    """
    wanted = json_key(value)

    def search(node: Any, rest: list[Any], taken: list[Any]) -> list[Any] | None:
        if not rest and json_key(node) == wanted:
            return taken
        if isinstance(node, dict) and "" in node:
            found = search(node[""], rest, [*taken, ""])
            if found is not None:
                return found
        if not rest:
            return None
        step, *after = rest
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            return search(node[step], after, [*taken, step])
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            return search(node[step], after, [*taken, step])
        return None

    found = search(root, path, [])
    return path if found is None else found


def _kind_holder(keyword: str, kind: Any) -> dict[str, Any]:
    """What the error's kind says of the failed keyword's value, for a schema not found.

    Each kind carries the value that matters (``limit``, ``types``, ``options``...)
    as its first field; ``required`` carries one name, as a list of one.
    """
    fields = getattr(kind, "__match_args__", ())
    if not fields or keyword in ("anyOf", "oneOf"):  # their field is the errors, not schemas
        return {}
    value = getattr(kind, fields[0])
    return {keyword: [value] if keyword == "required" else value}


def _rs_keyword(error: Any) -> str:
    """The keyword ``jsonschema`` would name: the last step of the schema path.

    ``jsonschema-rs`` names some errors by their kind (``required`` for a failed
    ``dependentRequired``, ``contains`` for ``maxContains``); the schema path ends
    at the keyword itself.
    """
    name = str(error.kind.name)
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
        return _Checker(validator, _RsReader(schema, self._documents))
