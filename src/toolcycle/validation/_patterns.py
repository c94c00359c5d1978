r"""JSON Schema patterns run on RE2, whose matching time is linear in the text.

Python's ``re`` backtracks, so a pattern such as ``^(a|a)*$`` can take seconds on
25 characters. RE2 (``google-re2``) never backtracks: whatever the pattern, it
matches in time linear in the length of the text. Each pattern is read as
ECMA-262 and rewritten for RE2 by `toolcycle.validation._ecma.to_re2`, compiled once and
cached; a pattern that cannot be (a backreference, a lookahead) is refused when
its schema is compiled, by `pattern_problems`, with the reason.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from toolcycle.validation._ecma import PatternError, to_re2

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["compile_pattern", "matches", "pattern_problems"]


@functools.cache
def _re2() -> Any:
    """The ``re2`` module (``google-re2``), imported on first use: ``import toolcycle`` stays cheap."""
    return importlib.import_module("re2")


def _options() -> Any:
    """RE2 options that never log (RE2 writes errors to stderr) and never capture."""
    options = _re2().Options()
    options.log_errors = False
    options.never_capture = True
    return options


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 program of the ECMA-262 ``pattern``, cached.

    Raises:
        PatternError: the pattern cannot be translated, or RE2 cannot compile it.
    """
    translated = to_re2(pattern)
    try:
        return _re2().compile(translated, _options())
    except _re2().error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(f"RE2 cannot compile it ({detail})") from None


def matches(pattern: str, text: str) -> bool:
    """Whether ``text`` contains a match of the ECMA-262 ``pattern``, in linear time.

    A text with a lone surrogate, which UTF-8 cannot hold, is matched as the
    bytes ``surrogatepass`` gives it.

    Raises:
        PatternError: the pattern cannot be compiled (schemas check this first).
    """
    program = compile_pattern(pattern)
    try:
        return program.search(text) is not None
    except UnicodeEncodeError:
        return program.search(text.encode("utf-8", "surrogatepass")) is not None


def pattern_problems(pattern: str, pointer: str, max_length: int) -> Iterator[tuple[str, str, str]]:
    """Yield (pointer, keyword, message) if ``pattern`` is too long or cannot run on RE2.

    Args:
        pattern: the regular expression, as the schema wrote it.
        pointer: JSON Pointer of the pattern inside its schema, for the message.
        max_length: the longest pattern accepted, in characters.
    """
    if len(pattern) > max_length:
        yield pointer, "pattern", f"the pattern is longer than {max_length} characters"
        return
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        yield pointer, "pattern", f"the pattern {shown!r} cannot be used: {exc}"
