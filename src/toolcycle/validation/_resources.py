"""Where the references of one schema document point, for readers that walk it by hand.

A reference is resolved against the base URI of the schema that holds it: the
nearest enclosing ``$id``. So ``#/$defs/pw`` inside an embedded resource (a
subschema with its own ``$id``) points into that resource, not into the root,
and ``pw.json`` points at the subschema whose ``$id`` is ``pw.json``. `Resources`
indexes one document once: each subschema's base URI, each resource by its URI,
and the anchors of each resource.

The index follows the keywords that hold subschemas, never data keywords
(``enum``, ``const``, ``default``, ``examples``), so a value that happens to hold
``$id`` is not taken for a resource. A reference that leaves the document (to a
pre-loaded schema) resolves to nothing here: `Resources.resolve` says so with
None, and the caller decides what that means.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

__all__ = ["Resources"]

# Keywords whose value is one subschema, a list of them, or a map of them.
_ONE = (
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
    "items",  # or a list, in older drafts
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAPS = ("$defs", "definitions", "properties", "patternProperties", "dependentSchemas")


class Resources:
    """The resources, anchors and base URIs of one schema document.

    Args:
        root: the document.
    """

    __slots__ = ("_anchors", "_bases", "_dynamic", "_recursive", "_resources", "root_base")

    def __init__(self, root: Any) -> None:
        self._bases: dict[int, str] = {}  # id(subschema) -> its base URI
        self._resources: dict[str, Any] = {}  # base URI -> the resource's schema
        self._anchors: dict[tuple[str, str], list[Any]] = {}  # (base URI, name) -> schemas
        self._dynamic: dict[str, list[Any]] = {}  # $dynamicAnchor name -> schemas, anywhere
        self._recursive: list[Any] = []  # schemas with "$recursiveAnchor": true
        draft4 = isinstance(root, dict) and "draft-04" in str(root.get("$schema", ""))
        self.root_base = _own_id(root, "", draft4)
        self._index(root, draft4)

    def base(self, schema: Any) -> str:
        """The base URI ``schema`` resolves its references against."""
        return self._bases.get(id(schema), self.root_base)

    def resolve(self, ref: str, base: str) -> list[Any] | None:
        """What ``ref``, written in a schema of base URI ``base``, points at; None if nothing."""
        if ref.startswith("#"):  # within the current resource (urljoin drops it for a urn:)
            uri, fragment = base, ref[1:]
        else:
            uri, fragment = urldefrag(urljoin(base, ref))
            if uri not in self._resources:
                uri, fragment = urldefrag(ref)  # an absolute URI urljoin could not join
        resource = self._resources.get(uri)
        if resource is None:
            return None
        fragment = unquote(fragment)
        if fragment == "" or fragment.startswith("/"):
            target = _pointer(resource, fragment)
            return None if target is None else [target]
        return self._anchors.get((uri, fragment))

    def dynamic(self, name: str) -> list[Any]:
        """Every schema of the document with ``"$dynamicAnchor": name``, wherever it is."""
        return self._dynamic.get(name, [])

    def recursive(self) -> list[Any]:
        """Every schema of the document with ``"$recursiveAnchor": true``."""
        return self._recursive

    def _index(self, root: Any, draft4: bool) -> None:
        pending: list[tuple[Any, str]] = [(root, "")]
        seen: set[int] = set()
        while pending:
            schema, base = pending.pop()
            if not isinstance(schema, dict) or id(schema) in seen:
                continue
            seen.add(id(schema))
            base = _own_id(schema, base, draft4)
            self._bases[id(schema)] = base
            self._resources.setdefault(base, schema)
            self._anchor(schema, base, draft4)
            pending.extend((schema.get(keyword), base) for keyword in _ONE)
            for keyword in _MANY:
                value = schema.get(keyword)
                if isinstance(value, list):
                    pending.extend((item, base) for item in value)
            for keyword in (*_MAPS, "dependencies"):  # dependencies: schema values only
                value = schema.get(keyword)
                if isinstance(value, dict):
                    pending.extend((item, base) for item in value.values())

    def _anchor(self, schema: dict[str, Any], base: str, draft4: bool) -> None:
        names = [schema.get("$anchor"), schema.get("$dynamicAnchor")]
        plain = schema.get("id" if draft4 else "$id")
        if isinstance(plain, str) and plain.startswith("#"):  # draft 7's anchor: "$id": "#a"
            names.append(plain[1:])
        for name in names:
            if isinstance(name, str):
                self._anchors.setdefault((base, name), []).append(schema)
        dynamic = schema.get("$dynamicAnchor")
        if isinstance(dynamic, str):
            self._dynamic.setdefault(dynamic, []).append(schema)
        if schema.get("$recursiveAnchor") is True:
            self._recursive.append(schema)


def _own_id(schema: Any, base: str, draft4: bool) -> str:
    """The base URI inside ``schema``: its ``$id`` joined to ``base``, else ``base``."""
    if not isinstance(schema, dict):
        return base
    own = schema.get("id" if draft4 else "$id")
    if not isinstance(own, str) or own.startswith("#"):
        return base
    joined = urljoin(base, own) if base else own
    return urldefrag(joined).url


def _pointer(root: Any, pointer: str) -> Any:
    """What a JSON pointer ("", "/$defs/A", "/items/0") points at in ``root``; None if nothing."""
    target = root
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict):
            target = target.get(key)
        elif isinstance(target, list) and key.isdigit() and int(key) < len(target):
            target = target[int(key)]
        else:
            return None
    return target
