"""A model's JSON arguments are read exactly as ``json.loads`` reads them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from toolcycle.agent._calls import _loads

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _read(reader: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", reader(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


@given(
    value=st.dictionaries(st.text(), _JSON, max_size=5),
    before=st.sampled_from(["", " ", "\n\t"]),
    after=st.sampled_from(["", " ", "\r\n", "\u00a0", "\u2028", "x", "}", "{}", "\x00"]),
)
@example(value={"a": 1}, before="", after="\u00a0")
def test_reading_arguments_agrees_with_json_loads(
    value: dict[str, Any], before: str, after: str
) -> None:
    """Value or error, the fast reader and json.loads give the same answer for any text."""
    text = before + json.dumps(value) + after
    assert _read(_loads, text) == _read(json.loads, text)


@given(st.text(max_size=40))
def test_reading_any_text_agrees_with_json_loads(text: str) -> None:
    """Not even JSON: the same value or the same error as json.loads."""
    assert _read(_loads, text) == _read(json.loads, text)
