"""Tool names that a model provider accepts, and the way back to ours.

Providers restrict tool names (OpenAI and Anthropic: ASCII letters, digits, ``_``
and ``-``, at most 64 characters; Gemini also ``.``, starting with a letter or
``_``; MCP: letters, digits, ``_``, ``-`` and ``.``, at most 128). A name that
already fits is used as it is. Any other name has each character that does not
fit replaced by ``_``, is cut to leave room, and ends with ``_`` and 8 hex digits
of its SHA-256: the same name always maps to the same provider name, in every
process, and two names that differ map to different ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["FORMATS", "ProviderNames", "provider_name", "resolve"]


@dataclass(frozen=True, slots=True)
class _Rule:
    valid: re.Pattern[str]
    invalid_char: re.Pattern[str]
    max_length: int
    must_start: re.Pattern[str] | None = None


_OPENAI = _Rule(re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[^A-Za-z0-9_-]"), 64)
_RULES = {
    "openai": _OPENAI,
    "openai-responses": _OPENAI,
    "anthropic": _OPENAI,
    "gemini": _Rule(
        re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"),
        re.compile(r"[^A-Za-z0-9_.-]"),
        64,
        must_start=re.compile(r"[A-Za-z_]"),
    ),
    "mcp": _Rule(re.compile(r"[A-Za-z0-9_.-]{1,128}"), re.compile(r"[^A-Za-z0-9_.-]"), 128),
}
FORMATS = tuple(_RULES)
"""The provider formats, in the order the docs list them."""


def provider_name(name: str, format: str) -> str:
    """The name ``format`` accepts for the tool ``name``."""
    rule = _RULES[format]
    if rule.valid.fullmatch(name):
        return name
    base = rule.invalid_char.sub("_", name)
    if rule.must_start is not None and not rule.must_start.match(base):
        base = "_" + base
    suffix = "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return base[: rule.max_length - len(suffix)] + suffix


def resolve(name: str, format: str, registered: Iterable[str]) -> str | None:
    """The registered tool the model's ``name`` means, or None.

    A name is ours as it is, or the provider-safe form of one of ours (see
    `provider_name`): in the call's format, or in any format for a plain call.
    """
    names = list(registered)
    if name in names:
        return name
    formats = FORMATS if format == "plain" else (format,)
    for candidate in names:
        if any(provider_name(candidate, each) == name for each in formats):
            return candidate
    return None


class ProviderNames:
    """`resolve` for many calls: the way back from provider names, kept per format.

    Mapping a name back means computing the provider name of every registered tool,
    which at 10,000 tools costs milliseconds; a model that keeps calling a tool it
    made up must not pay that on every call. The map of a format is built on its
    first lookup and kept while the registry's ``generation`` stays the same.

    Safe across threads without a lock: the kept state is replaced as one object,
    and two threads that build the same map at once build equal ones.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: tuple[int, dict[str, dict[str, str]]] = (-1, {})

    def resolve(
        self, name: str, format: str, generation: int, registered: Callable[[], Iterable[str]]
    ) -> str | None:
        """The registered tool whose provider name in ``format`` is ``name``, or None.

        ``registered`` lists the names of ``generation``, in order of registration;
        it is called only when the map must be built. A name that is registered as
        it is must be looked up before (as `resolve` does first).
        """
        kept_generation, maps = self._kept
        if kept_generation != generation:
            maps = {}
            self._kept = (generation, maps)
        back = maps.get(format)
        if back is None:
            back = maps[format] = _reverse(
                registered(), FORMATS if format == "plain" else (format,)
            )
        return back.get(name)


def _reverse(names: Iterable[str], formats: tuple[str, ...]) -> dict[str, str]:
    """Each provider name in ``formats`` to the first registered name that maps to it."""
    back: dict[str, str] = {}
    for candidate in names:
        for each in formats:
            back.setdefault(provider_name(candidate, each), candidate)
    return back
