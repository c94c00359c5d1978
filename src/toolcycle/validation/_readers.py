"""Readers: an engine's errors as (path, keyword, message) triples in toolcycle's words.

Each reader hands `toolcycle.validation._wording.describe` the facts of a failure (the
keyword, the failing value, the schema object that holds the keyword) and so
gives the same triple for the same failure, whichever engine found it. Where the
engines see one failure differently, the reader brings its engine to the same
report:

- ``jsonschema`` loses the place of a ``false`` subschema under ``properties``,
  ``patternProperties``, ``prefixItems`` and ``items`` (it reports the parent
  object, or one issue for all the extra items). Its copies of the schema and of
  the pre-loaded documents carry `FALSE_STANDIN` there instead (see
  ``toolcycle.validation._backends.false_standins``), which fails the same values, keeps the
  place, and is read as ``false``.
- ``jsonschema-rs`` does not hand over the schema object that holds the failed
  keyword; `RsReader` finds it from the keyword's location in the document. It
  also leaves empty-string keys out of the paths it reports, and `RsReader` puts
  them back.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urljoin

from toolcycle.validation._issues import Triple, closest
from toolcycle.validation._patterns import matches
from toolcycle.validation._wording import describe, json_key

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = ["FALSE_STANDIN", "RsReader", "jsonschema_errors"]

FALSE_STANDIN: Final[dict[str, Any]] = {"not": {}}
"""Fails every value, as ``false`` does; `_jsonschema_error` reports it as ``false``."""

_LISTED_ENDS = tuple(
    f" {verb} {what})"
    for verb in ("was", "were")
    for what in ("unexpected", "unevaluated and invalid")
)


def _listed(message: str) -> list[Any]:
    """The names (or items) a jsonschema ``unevaluated*`` message lists; [] if none.

    The list runs from the message's first ``(`` to one of the known endings. It is
    cut out with string methods rather than a regular expression, which would take
    time quadratic in the number of ``(`` the (model-chosen) names hold.
    """
    start = message.find("(")
    end = next((len(message) - len(e) for e in _LISTED_ENDS if message.endswith(e)), -1)
    if start < 0 or end <= start:
        return []
    try:
        return list(ast.literal_eval(f"[{message[start + 1 : end]}]"))
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return []  # a repr that is not a literal, or too deep to read: leave the names out


def _additional(instance: Any, schema: dict[str, Any]) -> list[str]:
    """The properties of ``instance`` that ``additionalProperties`` applies to (as jsonschema)."""
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in properties and not any(matches(p, name) for p in patterns)
    ]


def jsonschema_errors(errors: Iterable[Any], instance: Any) -> Iterable[Triple]:
    """Read ``jsonschema`` errors; unlike `RsReader`, nothing needs the whole value."""
    return map(_jsonschema_error, errors)


def _jsonschema_error(error: Any) -> Triple:
    # jsonschema reports the boolean schema false with no keyword at all.
    if error.validator is None or error.schema is FALSE_STANDIN:
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
        branches: dict[Any, list[Triple]] = {}
        for sub in error.context:
            # A false branch's error has no schema path at all; it is left out,
            # and a branch that refuses every value is never the closest anyway.
            if sub.relative_schema_path:
                branches.setdefault(sub.relative_schema_path[0], []).append(_jsonschema_error(sub))
        detail = closest(error.absolute_path, branches.values())
    elif keyword == "oneOf":
        detail = True  # no subschema's errors: more than one matched
    keyword, message = describe(keyword, error.instance, error.schema, detail)
    return error.absolute_path, keyword, message


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


class RsReader:
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

    def __call__(self, errors: Iterable[Any], instance: Any) -> Iterator[Triple]:
        """Read each of ``errors``, which ``instance`` gave."""
        root = instance if _has_empty_key(instance) else None
        for error in errors:
            yield self._read(error, root)

    def _read(self, error: Any, root: Any) -> Triple:
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
            detail = closest(path, branches)
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
