r"""Refusing ``pattern`` regular expressions that can backtrack for a very long time.

A pattern that repeats a group which itself repeats a varying number of times
(``(a+)+``) can take exponential time to fail on a string that almost matches.
The checks here parse a pattern with Python's own regular-expression parser and
look for that shape; they need nothing from a JSON Schema library, so every
validation backend shares them.

ECMA-262 has escapes Python's parser does not know (``\p{L}``, ``\cJ``); for a
backend whose engine reads ECMA-262 syntax, `pattern_problems` stands each of
them in for one character before it analyses the shape, which keeps the
quantifiers where they were.
"""

from __future__ import annotations

import importlib
import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["pattern_problems"]

_sre_parser: Any = importlib.import_module("re._parser")
_UNBOUNDED = _sre_parser.MAXREPEAT
# A repeat bounded above this counts as unbounded.
_BOUNDED_REPEAT = 100
# Nested bounded repeats may split a string between them at most this many ways
# (as a natural logarithm: 100,000 ways), which keeps a failed match fast.
_LOG_SPLIT_BUDGET = math.log(100_000)
_OUTER_CAP = 10**6
_REPEATS = {
    _sre_parser.MAX_REPEAT,
    _sre_parser.MIN_REPEAT,
    getattr(_sre_parser, "POSSESSIVE_REPEAT", _sre_parser.MAX_REPEAT),
}

# ECMA-262 escapes Python's parser rejects: Unicode properties and control characters.
_ECMA_ONLY = re.compile(r"\\[pP]\{[^}]*\}|\\c[A-Za-z]")


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pattern_problems(
    pattern: str, pointer: str, max_length: int, *, ecma_syntax: bool = False
) -> Iterator[tuple[str, str, str]]:
    """Yield (pointer, keyword, message) for a pattern that is too long, invalid or unsafe.

    Args:
        pattern: the regular expression, as the schema wrote it.
        pointer: JSON Pointer of the pattern inside its schema, for the message.
        max_length: the longest pattern accepted, in characters.
        ecma_syntax: the validator's own engine reads ECMA-262 syntax and reports
            invalid patterns itself; only the shape is checked here.
    """
    if len(pattern) > max_length:
        yield pointer, "pattern", f"the pattern is longer than {max_length} characters"
        return
    shape = _ECMA_ONLY.sub("x", pattern) if ecma_syntax else pattern
    try:
        parsed = _sre_parser.parse(shape)
        if not ecma_syntax:
            re.compile(pattern)
    except re.error as exc:
        if ecma_syntax:  # the engine decides; Python's parser cannot see the shape
            return
        yield pointer, "pattern", f"the pattern is not a valid regular expression: {exc}"
        return
    if _nested_unbounded(parsed, inside=False):
        yield (
            pointer,
            "pattern",
            (
                f"the pattern {_truncate(pattern, 80)!r} repeats a group that itself repeats a "
                "varying number of times (as in (a+)+ or (a{1,3})+); that can take exponential "
                "time, so rewrite it without the nested quantifier"
            ),
        )


def _nested_unbounded(parsed: Any, *, inside: bool, outer: int = 1) -> bool:
    r"""Whether ``parsed`` nests a variable-length repeat inside a repeat that iterates a lot.

    An unbounded repeat inside an unbounded one (``(a+)+``) is refused, and so is
    any repeat that can match two or more different counts (``(a{1,3})+``) inside
    an unbounded one. Inside bounded repeats, a variable repeat is refused when the
    ways of splitting a string between them exceed a fixed budget
    (``(a{1,10}){1,10}``), while ``(\d{1,3}\.){3}`` stays allowed.

    Args:
        parsed: a parsed (sub)pattern.
        inside: an enclosing repeat is unbounded (or bounded above 100).
        outer: the product of the upper bounds of the bounded repeats enclosing ``parsed``.
    """
    for op, arg in parsed:
        if op in _REPEATS:
            low, high, sub = arg
            unbounded = high == _UNBOUNDED or high > _BOUNDED_REPEAT
            variable = high > 1 and low != high
            if inside and (unbounded or variable):
                return True
            if (
                variable
                and not unbounded
                and outer > 1
                and outer * math.log(high - low + 1) > _LOG_SPLIT_BUDGET
            ):
                return True
            if _delimited(sub):  # each iteration starts at its own separator
                if _nested_unbounded(sub, inside=False, outer=1):
                    return True
                continue
            nested_outer = outer if unbounded else min(outer * max(high, 1), _OUTER_CAP)
            if _nested_unbounded(sub, inside=inside or unbounded, outer=nested_outer):
                return True
        elif op is _sre_parser.SUBPATTERN:
            if _nested_unbounded(arg[-1], inside=inside, outer=outer):
                return True
        elif op is _sre_parser.BRANCH:
            if any(_nested_unbounded(branch, inside=inside, outer=outer) for branch in arg[1]):
                return True
        elif op is _sre_parser.GROUPREF_EXISTS:
            if any(
                branch is not None and _nested_unbounded(branch, inside=inside, outer=outer)
                for branch in arg[1:]
            ):
                return True
        elif op in (_sre_parser.ASSERT, _sre_parser.ASSERT_NOT):
            if _nested_unbounded(arg[1], inside=inside, outer=outer):
                return True
        elif op is getattr(_sre_parser, "ATOMIC_GROUP", None) and _nested_unbounded(
            arg, inside=inside, outer=outer
        ):
            return True
    return False


def _delimited(sub: Any) -> bool:
    r"""Whether every match of ``sub`` starts with a separator nothing else in it can match.

    Then a string splits into iterations of a repeat of ``sub`` in one way only
    (``(\.[a-z]+)*`` cuts at each dot), so the repeat cannot backtrack
    between its iterations. Letters never count as separators (case folding).
    """
    items = list(sub)
    while len(items) == 1 and items[0][0] is _sre_parser.SUBPATTERN:
        items = list(items[0][1][-1])
    if not items or items[0][0] is not _sre_parser.LITERAL:
        return False
    char = chr(items[0][1])
    if char.lower() != char.upper():
        return False
    return not any(_may_consume(op, arg, char) for op, arg in items[1:])


_CATEGORY_REGEX = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _may_consume(op: Any, arg: Any, char: str) -> bool:
    """Whether the parsed item ``(op, arg)`` may consume ``char``; True when unsure."""
    if op is _sre_parser.LITERAL:
        return bool(chr(arg) == char)
    if op is _sre_parser.NOT_LITERAL:
        return bool(chr(arg) != char)
    if op is _sre_parser.AT:
        return False
    if op is _sre_parser.IN:
        return _set_matches(arg, char)
    if op in _REPEATS:
        return any(_may_consume(o, a, char) for o, a in arg[2])
    if op is _sre_parser.SUBPATTERN:
        return any(_may_consume(o, a, char) for o, a in arg[-1])
    if op is _sre_parser.BRANCH:
        return any(_may_consume(o, a, char) for branch in arg[1] for o, a in branch)
    return True  # ANY, backreferences, lookarounds, conditionals: assume it may


def _set_matches(items: Any, char: str) -> bool:
    """Whether a character set ``[...]`` may match ``char``; True when unsure."""
    negate = False
    hit = False
    for op, arg in items:
        if op is _sre_parser.NEGATE:
            negate = True
        elif op is _sre_parser.LITERAL:
            hit = hit or chr(arg) == char
        elif op is _sre_parser.RANGE:
            hit = hit or arg[0] <= ord(char) <= arg[1]
        elif op is _sre_parser.CATEGORY and str(arg) in _CATEGORY_REGEX:
            hit = hit or re.fullmatch(_CATEGORY_REGEX[str(arg)], char) is not None
        else:
            return True
    return hit != negate
