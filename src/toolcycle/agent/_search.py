"""Ranking deferred tools for a model's search: words in, the best few tools out.

Each deferred tool becomes a bag of words: its name (twice, as names say the
most), its description and its parameter names. Names are split at ``_``, ``-``,
``.``, ``/`` and spaces, and a camelCase word also gives its parts, so
``github_createIssue`` gives ``github``, ``createissue``, ``create`` and ``issue``. The bags are scored with BM25 by the
``bm25s`` package (the optional extra ``search``), imported here only.

A query word found in more than half of the indexed tools (the deferred tools
a plan may run), and in more of them than one answer may list, tells the tools
apart no better than chance (the ``mcp`` of 200 tools named
``mcp__server__...``): it is left out of the scoring and reported back, so the
model learns to use other words rather than receive an arbitrary few tools as if
they were the best.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolcycle.models import ToolDescriptor

__all__ = ["MAX_LIMIT", "SearchHits", "SearchIndex", "require_bm25s", "words"]

MAX_LIMIT = 50
"""The most tools one search may return."""

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
# Written as one string to read as the short list it is.
_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the "  # noqa: SIM905
    "their then there these they this to was will with".split()
)


def words(text: str) -> list[str]:
    """The case-folded words of ``text``, split at non-letters.

    Case folding, not lowering, so that ``GRÖSSE`` and ``Größe`` are one word.
    The text is NFKC-normalised first: a combining accent is no letter, so
    ``résumé`` written with one (as macOS names files) would otherwise split into
    ``re`` and ``sume``, and full-width ``ＧｉｔＨｕｂ`` would not be ``github``.

    A word with camelCase humps gives itself and each part (``GitHub``:
    ``github``, ``git``, ``hub``), so a query may use either.
    """
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    found: list[str] = []
    for word in _WORD.findall(text):
        # Most words have no hump (all lower case, or a capital only first): no regex.
        parts = [word] if word[1:].islower() or word.isupper() else _HUMP.sub(" ", word).split()
        for each in [word, *parts] if len(parts) > 1 else parts:
            lowered = each.casefold()
            if len(lowered) > 1 and lowered not in _STOPWORDS:
                found.append(lowered)
    return found


def _document(descriptor: ToolDescriptor) -> list[str]:
    """The words BM25 scores a tool by."""
    name = words(descriptor.name)
    properties = descriptor.input_schema.get("properties")
    parameters: list[str] = []
    if isinstance(properties, dict):
        for key in properties:
            parameters.extend(words(str(key)))
    return name + name + words(descriptor.description) + parameters


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise ImportError(
            "tool search needs the bm25s package, which is an optional extra: "
            "pip install -e '.[search]' from a clone (toolcycle[search] once published)"
        ) from exc
    return bm25s


def require_bm25s() -> None:
    """Raise `ImportError`, with the install hint, when ``bm25s`` is missing.

    The package is looked for, not imported: importing it (and numpy) takes a
    tenth of a second or more, which offering the search must not cost an async
    caller's event loop. The first index build imports it, off that loop.
    """
    if sys.modules.get("bm25s") is None and importlib.util.find_spec("bm25s") is None:
        _bm25s()  # raises, with the hint


@dataclass(frozen=True, slots=True)
class SearchHits:
    """What one search found, best first, and the query words it could not use."""

    tools: list[ToolDescriptor]
    too_common: list[str]
    """Query words in so many tools that they were left out of the scoring."""


class SearchIndex:
    """The deferred tools of one registry state, ready to be searched.

    Index only the tools a search may return (those the plan may run): the
    tools indexed decide which query words are too common, and how rare, so
    how well, each word tells tools apart.

    Args:
        descriptors: the tools to search, in registration order (ties keep it).
    """

    def __init__(self, descriptors: Sequence[ToolDescriptor]) -> None:
        self.descriptors = tuple(descriptors)
        documents = [_document(descriptor) for descriptor in self.descriptors]
        self._frequency = Counter(word for document in documents for word in set(document))
        self._retriever: Any = None
        if documents:
            retriever = _bm25s().BM25()
            retriever.index(documents, show_progress=False)
            self._retriever = retriever

    def search(self, query: str, limit: int) -> SearchHits:
        """The ``limit`` best tools for ``query``.

        A tool none of the query's words appear in is never returned.
        """
        count = len(self.descriptors)
        common = max(limit, count // 2)
        usable: list[str] = []
        too_common: list[str] = []
        for word in dict.fromkeys(words(query)):
            frequency = self._frequency.get(word, 0)
            if frequency > common:
                too_common.append(word)
            elif frequency:
                usable.append(word)
        if not usable:
            return SearchHits([], too_common)
        scores = self._retriever.get_scores(usable)
        matched = scores.nonzero()[0]  # ascending, so a stable sort keeps ties in order
        ordered = matched[(-scores[matched]).argsort(kind="stable")]
        found = [self.descriptors[index] for index in ordered[:limit].tolist()]
        return SearchHits(found, too_common)
