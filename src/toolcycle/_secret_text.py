"""Secrets in message text: where they stand, cut short or whole, and their replacement.

`toolcycle.redaction` decides which values of a call are secret; this module
only works on text: it finds the start of a secret that a message cut short with
``...`` (a message shows only the start of a long value), and replaces spans of
text by ``[redacted]``.
"""

from __future__ import annotations

__all__ = ["CUT", "MIN_CUT", "REDACTED", "cut_starts", "replaced"]

REDACTED = "[redacted]"
"""What a sensitive value becomes in exported text."""
CUT = "..."
"""How a message ends a value it shows only the start of."""
MIN_CUT = 4
"""A shorter start of a secret is too little to hide (or to tell apart)."""


def cut_starts(text: str, secret: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that hold a start of ``secret`` right before a ``...`` mark.

    The longest start (of at least `MIN_CUT` characters) counts. One pass of a
    prefix automaton over ``text``, so the cost is linear, however long the
    secret and however many marks.
    """
    pattern = secret[:-1]  # the whole secret is replaced already
    fallback = [0] * len(pattern)  # the usual prefix function of the pattern
    matched = 0
    for index in range(1, len(pattern)):
        while matched and pattern[index] != pattern[matched]:
            matched = fallback[matched - 1]
        if pattern[index] == pattern[matched]:
            matched += 1
        fallback[index] = matched
    spans: list[tuple[int, int]] = []
    matched = 0
    start = text.find(secret[:MIN_CUT])
    for index in range(start, len(text)):
        if matched >= MIN_CUT and text.startswith(CUT, index):
            spans.append((index - matched, index))
        if matched == len(pattern):
            matched = fallback[matched - 1]
        char = text[index]
        while matched and char != pattern[matched]:
            matched = fallback[matched - 1]
        if char == pattern[matched]:
            matched += 1
    return spans


def replaced(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by ``[redacted]``."""
    if not spans:
        return text
    pieces: list[str] = []
    end = 0
    for start, stop in sorted(spans):
        if start < end:  # overlaps the previous span: widen that one
            pieces[-1] = REDACTED
            end = max(end, stop)
            continue
        pieces += [text[end:start], REDACTED]
        end = stop
    pieces.append(text[end:])
    return "".join(pieces)
