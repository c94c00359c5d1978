"""Keeping secrets from tool arguments out of everything the runtime exports.

A tool needs its real arguments; nobody else does. The runtime collects the
sensitive values of each call's arguments, and every message it exports for
the call (the result's error, validation messages, the trace, and so the logs
that the tracer writes) has them replaced by ``[redacted]``. A value is
sensitive when a schema that applies to it is marked ``writeOnly: true`` or
``x-sensitive: true``, or when its key matches the policy's pattern (password,
token, secret, API key, authorization and the like by default) and is not one
of its safe keys (counts of tokens, such as ``max_tokens``, by default);
everything under such a key or schema counts, nested values included, and so
do the keys of a sensitive object that its schema does not name (a secret may
be a key) and the keys of an object whose ``propertyNames`` is marked.

Which schemas apply to a value follows the applicators of JSON Schema (see
`_Schemas`); where deciding would mean running a pattern from the schema, every
schema that might apply counts. Every walk here keeps its own stack, so no depth
of value or schema raises `RecursionError`, and each object is walked once per
schema, so cycles end.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from toolcycle._secret_text import CUT, MIN_CUT, REDACTED, cut_starts, replaced
from toolcycle._value import FrozenValue, frozen_value
from toolcycle.validation._applicators import Applied, SchemaReader

__all__ = ["DEFAULT_SAFE_KEYS", "DEFAULT_SENSITIVE_KEYS", "REDACTED", "RedactionPolicy"]

_PLAIN = frozenset({str, int, float, bool})
"""The value types `RedactionPolicy.masked` can judge without walking."""

_MAX_READERS = 256  # the schemas a policy remembers what it read of
_MAX_KEYS = 4096  # the keys a policy remembers its verdict on
_set = object.__setattr__  # how a frozen value's __init__ sets its fields

DEFAULT_SENSITIVE_KEYS = (
    r"pass(word|wd|phrase)?|secret|token|api[-_]?key|authorization|credential|"
    r"private[-_]?key|session[-_]?id|cookie"
)
"""Keys (matched anywhere in the key, ignoring case) whose values are sensitive."""

DEFAULT_SAFE_KEYS = (
    r"((max|min|num|total|prompt|completion|input|output|new)[-_]?)+tokens?"
    r"|tokens?[-_]?(count|limit|budget|usage|used)"
)
"""Keys (matching the whole key, ignoring case) that the key pattern must not make sensitive.

"token" is in the sensitive keys for session and API tokens, but tools that
drive language models take counts of tokens (``max_tokens``, ``maxOutputTokens``,
``token_limit``); masking those hides numbers nobody needs hidden and blanks
the same digits out of every message of the call.
"""


@frozen_value
class RedactionPolicy(FrozenValue):
    """Which argument values are secret, for `ToolRuntime(redaction=...)`.

    Attributes:
        key_pattern: a regular expression searched in each key, ignoring case;
            None to rely on schema marks alone.
        safe_keys: a regular expression for whole keys, ignoring case, that
            ``key_pattern`` does not make sensitive (a schema mark or a
            sensitive parent still does); None for no exceptions.
        schema_marks: treat values whose schema is marked ``writeOnly: true``
            or ``x-sensitive: true`` in the input schema as sensitive.
        min_length: shorter values are not replaced (a one-letter secret would
            blank out every occurrence of that letter in a message).
    """

    key_pattern: str | None = DEFAULT_SENSITIVE_KEYS
    schema_marks: bool = True
    min_length: int = 3
    safe_keys: str | None = DEFAULT_SAFE_KEYS
    _readers: dict[int, SchemaReader] = field(init=False, repr=False, compare=False)
    _hits: dict[str, bool] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        key_pattern: str | None = DEFAULT_SENSITIVE_KEYS,
        schema_marks: bool = True,
        min_length: int = 3,
        safe_keys: str | None = DEFAULT_SAFE_KEYS,
    ) -> None:
        _check_fields(key_pattern, safe_keys, schema_marks, min_length)
        _set(self, "key_pattern", key_pattern)
        _set(self, "schema_marks", schema_marks)
        _set(self, "min_length", min_length)
        _set(self, "safe_keys", safe_keys)
        self.__post_init__()

    def __post_init__(self) -> None:
        for pattern in (self.key_pattern, self.safe_keys):
            # A pattern of the caller's is compiled now, so that a bad one fails here.
            # The defaults wait for the first key judged: import builds a default policy.
            if pattern is not None and pattern not in (DEFAULT_SENSITIVE_KEYS, DEFAULT_SAFE_KEYS):
                _compile(pattern)
        _set(self, "_readers", {})
        _set(self, "_hits", {})  # key -> whether the pattern makes it secret

    def secrets(self, arguments: Any, schema: Any) -> tuple[str, ...]:
        """The sensitive values (and keys) in ``arguments``, longest first, as text shows them."""
        top = self._reader(schema).top()
        if type(arguments) is dict and self._nothing_to_hide(top, arguments):
            return ()  # the common call: one object of plain values, none secret
        found: set[str] = set()
        _collect(self, top, arguments, found)
        return tuple(sorted(sorted(found), key=len, reverse=True))  # stable: alike in order

    def masked(self, arguments: Any, schema: Any, *, sensitive: bool = False) -> Any:
        """``arguments`` with every sensitive value replaced by ``[redacted]``.

        Containers come back as new dicts and lists, unless nothing in
        ``arguments`` is sensitive: then ``arguments`` itself comes back. A
        sensitive object whose keys its schema does not all name (a free-form
        mapping, whose keys may be secrets too) becomes ``[redacted]`` as a whole.
        """
        top = self._reader(schema).top()
        if not sensitive and type(arguments) is dict and self._nothing_to_hide(top, arguments):
            return arguments  # the common call: one object of plain values, none secret
        return _mask(self, top, arguments, sensitive)

    def hides_nothing(self, arguments: Any, schema: Any) -> bool:
        """Whether ``arguments`` certainly hold no sensitive value, judged without a walk.

        True only for one JSON object of plain values (a dict with `str` keys
        and strings, numbers, booleans or nulls) in which neither the key
        pattern nor ``schema`` marks anything: then `secrets` finds nothing
        and `masked` changes nothing, in the object as it is and in its
        normalised copy (which has the same keys and values). False means only
        that finding out takes the walk of `secrets`.
        """
        if type(arguments) is not dict:
            return False
        for key in arguments:
            if type(key) is not str:  # a str subclass may name a key differently once plain
                return False
        return self._nothing_to_hide(self._reader(schema).top(), arguments)

    def masked_without_schema(self, arguments: Mapping[Any, Any]) -> dict[Any, Any]:
        """The arguments of a call to a tool nobody registered, as they may be exported.

        There is no schema to say which values are secret (the tool the call
        meant may mark any of them ``writeOnly``) and the key pattern cannot
        know, so no value is shown: every one is ``[redacted]``. The argument
        names stay, to show what the call tried.
        """
        return dict.fromkeys(arguments, REDACTED)

    def scrub(self, text: str, secrets: tuple[str, ...]) -> str:
        """``text`` with every secret replaced by ``[redacted]``.

        ``secrets`` come from `secrets`, in each form a message may quote them
        (plain, inside a ``repr``, inside JSON with or without its non-ASCII
        escaped, as a key in a JSON Pointer). A message that cuts a long
        value short ends it with ``...``: the start of a secret right before
        that mark is replaced too, down to `MIN_CUT` characters. The work is
        linear in the length of ``text`` and of each secret.
        """
        for secret in secrets:
            if len(secret) <= len(text):
                text = text.replace(secret, REDACTED)
        if CUT not in text:
            return text
        spans = [
            span
            for secret in secrets
            if len(secret) > MIN_CUT and secret[:MIN_CUT] in text
            for span in cut_starts(text, secret)
        ]
        return replaced(text, spans)

    def _reader(self, schema: Any) -> SchemaReader:
        """The reader of ``schema``: one per schema, so that each is read once.

        Schemas are taken to stay as they are once used, as validation does.
        """
        readers = self._readers
        reader = readers.get(id(schema))
        if reader is None or reader.root is not schema:
            reader = SchemaReader(schema, self._marked)
            if len(readers) >= _MAX_READERS:
                readers.clear()
            readers[id(schema)] = reader  # holds the schema, so its id stays its own
        return reader

    def _nothing_to_hide(self, top: Applied, arguments: dict[Any, Any]) -> bool:
        """Whether a flat object of plain values has no value `_mask` would replace.

        The same verdict as the full walk, reached without copying anything: no
        schema of the object or its keys is marked, and no value sits under a
        marked schema or a key the pattern matches. Anything nested goes the
        long way.
        """
        if top.marked or top.keys_marked:
            return False
        clear = top.clear  # declared keys judged before: a bounded set, the schema's names
        for key, value in arguments.items():
            if value is None:
                continue  # a null is never replaced
            if type(value) not in _PLAIN:
                return False
            if key in clear:
                continue
            if self._hit(key) or top.under(key).marked:
                return False
            if top.declares(key):
                clear.add(key)
        return True

    def _marked(self, schema: dict[str, Any]) -> bool:
        return self.schema_marks and (
            schema.get("writeOnly") is True or schema.get("x-sensitive") is True
        )

    def _hit(self, key: object) -> bool:
        if type(key) is not str:
            return self._matches(key)
        hits = self._hits  # the same few keys come back call after call
        hit = hits.get(key)
        if hit is None:
            hit = self._matches(key)
            if len(hits) >= _MAX_KEYS:
                hits.clear()
            hits[key] = hit
        return hit

    def _matches(self, key: object) -> bool:
        text = _text(key)
        pattern, safe = self.key_pattern, self.safe_keys
        if pattern is None or text is None or _compile(pattern).search(text) is None:
            return False
        return safe is None or _compile(safe).fullmatch(text) is None

    def _add(self, value: object, found: set[str]) -> None:
        """Add sensitive ``value`` to ``found``, in each form a message may show it."""
        if isinstance(value, bool) or value is None:
            return
        text = _text(value)  # a 5,000-digit integer has none, so no message quotes it
        if text is None or len(text) < self.min_length:
            return
        found.add(text)
        found.add(repr(text)[1:-1])  # how the value shows inside a quoted repr
        found.add(json.dumps(text, ensure_ascii=False)[1:-1])  # ... and inside JSON,
        found.add(json.dumps(text)[1:-1])  # ... with its non-ASCII escaped (json's default)
        # ... and as a key in a JSON Pointer (RFC 6901), as validation issues name it.
        found.add(text.replace("~", "~0").replace("/", "~1"))


def _collect(policy: RedactionPolicy, top: Applied, value: Any, found: set[str]) -> None:
    """Add every sensitive value (and secret key) of ``value`` to ``found``."""
    stack: list[tuple[Any, Applied, bool]] = [(value, top, False)]
    seen: set[tuple[int, bool, int]] = set()
    alive: list[Any] = []  # what ``seen`` names by id stays alive while it is used
    while stack:
        value, node, sensitive = stack.pop()
        sensitive = sensitive or node.marked
        if isinstance(value, Mapping | list | tuple):
            mark = (id(value), sensitive, id(node))
            if mark in seen:  # met before (shared, or a cycle)
                continue
            seen.add(mark)
            alive.append(value)
        if isinstance(value, Mapping):
            for key, item in _items(value) or ():
                if node.keys_marked or (sensitive and not node.declares(key)):
                    policy._add(key, found)
                stack.append((item, node.under(key), sensitive or policy._hit(key)))
        elif isinstance(value, list | tuple):
            elements = _elements(value) or []
            for item, inner in zip(elements, node.along(len(elements)), strict=True):
                stack.append((item, inner, sensitive))
        elif sensitive:
            policy._add(value, found)


def _mask(policy: RedactionPolicy, top: Applied, value: Any, sensitive: bool) -> Any:
    """``value`` with its sensitive parts replaced; ``value`` itself if it has none."""
    holder: list[Any] = [None]
    stack: list[tuple[Any, Applied, bool, Any, Any]] = [(value, top, sensitive, holder, 0)]
    copies: dict[tuple[int, bool, int], tuple[Any, Any]] = {}  # id -> (original, copy)
    changed = False
    while stack:
        item, node, sensitive, target, slot = stack.pop()
        sensitive = sensitive or node.marked
        if not isinstance(item, Mapping | list | tuple):
            hidden = sensitive and item is not None
            changed = changed or hidden
            target[slot] = REDACTED if hidden else item
            continue
        mark = (id(item), sensitive, id(node))
        if mark in copies:  # met before (shared, or a cycle): the same copy
            target[slot] = copies[mark][1]
            continue
        copy: Any
        if isinstance(item, Mapping):
            pairs = _items(item)
            if (
                pairs is None
                or node.keys_marked
                or (sensitive and not all(node.declares(key) for key, _ in pairs))
            ):
                copy, changed = REDACTED, True  # its keys may be secrets
            else:
                copy = {}
                for key, child in pairs:
                    copy[key] = None  # keeps the order; filled when its turn comes
                    hit = sensitive or policy._hit(key)
                    stack.append((child, node.under(key), hit, copy, key))
        else:
            elements = _elements(item)
            if elements is None:
                copy, changed = REDACTED, True
            else:
                copy = [None] * len(elements)
                inner = node.along(len(elements))
                for index, (child, applied) in enumerate(zip(elements, inner, strict=True)):
                    stack.append((child, applied, sensitive, copy, index))
        copies[mark] = (item, copy)
        target[slot] = copy
    return holder[0] if changed else value


def _items(value: Mapping[Any, Any]) -> list[tuple[Any, Any]] | None:
    """The pairs of a mapping; None if it cannot give them."""
    try:
        return list(value.items())
    except Exception:
        return None


def _elements(value: list[Any] | tuple[Any, ...]) -> list[Any] | None:
    """The items of a list or tuple; None if it cannot give them."""
    try:
        return list(value)
    except Exception:
        return None


def _text(value: object) -> str | None:
    """``str(value)``; None where that fails (as for a 5,000-digit integer)."""
    try:
        return value if isinstance(value, str) else str(value)
    except Exception:
        return None


def _check_fields(key_pattern: Any, safe_keys: Any, schema_marks: Any, min_length: Any) -> None:
    """Refuse a field of the wrong kind now, not at the first key judged (a list of keys, say)."""
    for name, pattern in (("key_pattern", key_pattern), ("safe_keys", safe_keys)):
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(
                f"{name} must be a regular expression (a str) or None, got "
                f"{type(pattern).__name__}; for several keys, join them with '|': 'iban|ssn'"
            )
    if not isinstance(schema_marks, bool):
        raise TypeError(f"schema_marks must be True or False, got {type(schema_marks).__name__}")
    if type(min_length) is not int or min_length < 0:  # the value may be too long to print
        got = "a negative number" if type(min_length) is int else type(min_length).__name__
        raise ValueError(f"min_length must be a whole number, 0 or more, got {got}")


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled once: `_matches` asks only for keys it has not judged."""
    return re.compile(pattern, re.IGNORECASE)
