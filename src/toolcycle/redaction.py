"""Keeping secrets from tool arguments out of everything the runtime exports.

A tool needs its real arguments; nobody else does. The runtime collects the
sensitive values of each call's arguments, and every message it exports for
the call (the result's error, validation messages, the trace, and so the logs
that the tracer writes) has them replaced by ``[redacted]``. A value is
sensitive when its property is marked ``writeOnly: true`` or ``x-sensitive:
true`` in the input schema, or when its key matches the policy's pattern
(password, token, secret, API key, authorization and the like by default) and
is not one of its safe keys (counts of tokens, such as ``max_tokens``, by
default); everything under such a key or property counts, nested values included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_SAFE_KEYS", "DEFAULT_SENSITIVE_KEYS", "REDACTED", "RedactionPolicy"]

REDACTED = "[redacted]"
_CUT = "..."  # how a message ends a value it shows only the start of
_MIN_CUT = 4  # a shorter start of a secret is too little to hide (or to tell apart)
"""What a sensitive value becomes in exported text."""

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


@dataclass(frozen=True, slots=True)
class RedactionPolicy:
    """Which argument values are secret, for `ToolRuntime(redaction=...)`.

    Attributes:
        key_pattern: a regular expression searched in each key, ignoring case;
            None to rely on schema marks alone.
        safe_keys: a regular expression for whole keys, ignoring case, that
            ``key_pattern`` does not make sensitive (a schema mark or a
            sensitive parent still does); None for no exceptions.
        schema_marks: treat properties marked ``writeOnly: true`` or
            ``x-sensitive: true`` in the input schema as sensitive.
        min_length: shorter values are not replaced (a one-letter secret would
            blank out every occurrence of that letter in a message).
    """

    key_pattern: str | None = DEFAULT_SENSITIVE_KEYS
    schema_marks: bool = True
    min_length: int = 3
    safe_keys: str | None = DEFAULT_SAFE_KEYS
    _compiled: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _safe: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", _compile(self.key_pattern))
        object.__setattr__(self, "_safe", _compile(self.safe_keys))

    def secrets(self, arguments: Any, schema: Any) -> tuple[str, ...]:
        """The sensitive values in ``arguments``, longest first, as the text they show as."""
        found: set[str] = set()
        self._collect(arguments, [schema], False, found, schema)
        return tuple(sorted(found, key=len, reverse=True))

    def masked(self, arguments: Any, schema: Any, *, sensitive: bool = False) -> Any:
        """A copy of ``arguments`` with every sensitive value replaced by ``[redacted]``."""
        return self._mask(arguments, [schema], sensitive, schema)

    def _mask(self, value: Any, schemas: list[Any], sensitive: bool, root: Any) -> Any:
        parts = _parts(schemas, root)
        sensitive = sensitive or any(self._marked(part) for part in parts)
        if isinstance(value, Mapping):
            return {
                key: self._mask(item, _at(parts, key), sensitive or self._hit(key), root)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            items = [part.get("items") for part in parts]
            return [self._mask(item, items, sensitive, root) for item in value]
        return REDACTED if sensitive and value is not None else value

    def scrub(self, text: str, secrets: tuple[str, ...]) -> str:
        """``text`` with every secret replaced by ``[redacted]``.

        ``secrets`` come from `secrets`, in each form a message may quote them
        (plain, inside a ``repr``, inside JSON). A message that cuts a long
        value short ends it with ``...``: the start of a secret right before
        that mark is replaced too, down to `_MIN_CUT` characters.
        """
        for secret in secrets:
            text = text.replace(secret, REDACTED)
        if _CUT in text:
            for secret in secrets:
                for end in range(len(secret) - 1, _MIN_CUT - 1, -1):
                    text = text.replace(secret[:end] + _CUT, REDACTED + _CUT)
        return text

    def _marked(self, schema: dict[str, Any]) -> bool:
        return self.schema_marks and (
            schema.get("writeOnly") is True or schema.get("x-sensitive") is True
        )

    def _hit(self, key: object) -> bool:
        if self._compiled is None or self._compiled.search(text := str(key)) is None:
            return False
        return self._safe is None or self._safe.fullmatch(text) is None

    def _collect(
        self, value: Any, schemas: list[Any], sensitive: bool, found: set[str], root: Any
    ) -> None:
        parts = _parts(schemas, root)
        sensitive = sensitive or any(self._marked(part) for part in parts)
        if isinstance(value, Mapping):
            for key, item in value.items():
                self._collect(item, _at(parts, key), sensitive or self._hit(key), found, root)
        elif isinstance(value, list | tuple):
            items = [part.get("items") for part in parts]
            for item in value:
                self._collect(item, items, sensitive, found, root)
        elif sensitive and not isinstance(value, bool) and value is not None:
            text = str(value)
            if len(text) >= self.min_length:
                found.add(text)
                found.add(repr(text)[1:-1])  # how the value shows inside a quoted repr
                found.add(json.dumps(text, ensure_ascii=False)[1:-1])  # ... and inside JSON


def _parts(schemas: list[Any], root: Any) -> list[dict[str, Any]]:
    """The schema objects that describe one value, whichever way they are reached.

    That is ``schemas``, the local ``$ref``s they follow (each once) and their
    ``anyOf``/``oneOf``/``allOf`` branches. A mark in any of them counts:
    pydantic puts a nested model behind a ``$ref`` and an optional
    ``SecretStr`` in an ``anyOf``.
    """
    parts: list[dict[str, Any]] = []
    pending, followed = list(schemas), set()
    while pending:
        schema = pending.pop()
        if not isinstance(schema, dict):
            continue
        parts.append(schema)
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in followed:
            followed.add(ref)
            pending.append(_pointer(root, ref))
        for keyword in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                pending.extend(branches)
    return parts


def _at(parts: list[dict[str, Any]], key: Any) -> list[Any]:
    """The subschemas ``parts`` give the property ``key``."""
    found = []
    for part in parts:
        properties = part.get("properties")
        if isinstance(properties, dict) and key in properties:
            found.append(properties[key])
    return found


def _pointer(root: Any, ref: str) -> Any:
    """What a local ``$ref`` ("#", "#/$defs/A") points at in ``root``; None if nothing."""
    target = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, dict) else None
    return target


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    return None if pattern is None else re.compile(pattern, re.IGNORECASE)
