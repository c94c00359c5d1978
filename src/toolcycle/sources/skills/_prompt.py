r"""The ``<available_skills>`` block an agent puts in its system prompt.

The layout is the reference library's (``skills-ref to-prompt``): one
``<skill>`` element per skill with its name, description and the location of
its ``SKILL.md``, each escaped for XML. A description may hold control
characters the YAML wrote as escapes (``"\a"``, ``"\x1b[31m"``, ``"\0"``),
and a location those of a folder's name. `plain_text` strips them from the
block, and from the description of the skill's tool: they are no text a model
should read, a terminal showing the prompt would obey them, and XML 1.0 allows
no C0 control but tab, line feed and carriage return. Tab and line feed stay;
the other line-breaking controls (carriage return, vertical tab, form feed,
next line U+0085) become line feeds, a CRLF pair one. The skill's own
``description`` and ``location`` keep the text as written.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

__all__ = ["Listed", "plain_text", "render_prompt"]

# The core cleans definitions alike; a source imports only public names, so it has its own.
# C0 and C1 control characters and DEL, but not tab or line feed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BREAK = re.compile(r"\r\n|[\r\x0b\x0c\x85]")


class Listed(Protocol):
    """What the block shows of a skill."""

    @property
    def name(self) -> str:
        """The skill's name."""

    @property
    def description(self) -> str:
        """What it does and when to use it."""

    @property
    def location(self) -> Path:
        """Its ``SKILL.md``."""


def render_prompt(skills: Iterable[Listed]) -> str:
    """The ``<available_skills>`` block for ``skills``, in the reference library's layout."""
    lines = ["<available_skills>"]
    for skill in skills:
        lines += [
            "<skill>",
            "<name>",
            html.escape(skill.name),
            "</name>",
            "<description>",
            html.escape(plain_text(skill.description)),
            "</description>",
            "<location>",
            html.escape(plain_text(str(skill.location))),
            "</location>",
            "</skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def plain_text(value: str) -> str:
    """``value`` without control characters; line-breaking ones become line feeds."""
    return _CONTROL.sub("", _BREAK.sub("\n", value))
