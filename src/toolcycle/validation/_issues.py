"""Issues from an engine's errors: ranked, capped and the same whichever engine found them.

A backend's reader turns each error into a (path, keyword, message) triple;
`ranked` makes the `ValidationIssue` records from them, and `closest` picks, for a
failed ``anyOf`` or ``oneOf``, the issue of the one branch worth naming.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from toolcycle.models import ValidationIssue
from toolcycle.validation._json import pointer_token

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["MAX_ISSUES", "Triple", "closest", "ranked", "truncate"]

MAX_ISSUES: Final = 20
_MESSAGE_LIMIT = 240
# Keywords whose failure says least about what is wrong (as jsonschema's best_match ranks).
_WEAK = frozenset({"anyOf", "oneOf"})

Triple = tuple[Any, str, str]
"""One error as a reader gives it: the path of the value, the keyword and the message."""


def truncate(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, with ``...`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ranked(raw: Iterable[Triple]) -> tuple[ValidationIssue, ...]:
    """Issues from (path, keyword, message) triples, the most relevant first, capped.

    Shallower errors say more is wrong, so they come first; at one depth ``anyOf``
    and ``oneOf`` come after the rest; ties go by pointer, keyword and message, so
    the order never depends on the order an engine found them in. An issue found
    twice (``required`` reports each missing name, and the message names them all)
    is kept once.
    """
    order = sorted(
        {
            (len(path), keyword in _WEAK, pointer, keyword, truncate(message))
            for path, keyword, message in raw
            for pointer in ["".join(f"/{pointer_token(part)}" for part in path)]
        }
    )
    return tuple(
        ValidationIssue(pointer=pointer, keyword=keyword, message=message)
        for _, _, pointer, keyword, message in order[:MAX_ISSUES]
    )


def closest(path: Iterable[Any], branches: Iterable[list[Triple]]) -> tuple[str, str] | None:
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
    issues = ranked(
        (list(where)[len(here) :], keyword, message) for where, keyword, message in fitting[0]
    )
    return issues[0].pointer, issues[0].message
