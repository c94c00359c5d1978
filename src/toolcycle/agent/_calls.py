"""Reading a model's tool call, whatever provider format it arrives in.

Recognised shapes (a pydantic object from a provider SDK is read through
``model_dump()`` first):

| format | shape |
| --- | --- |
| ``openai`` | ``{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}`` |
| ``openai-responses`` | ``{"type": "function_call", "call_id", "name", "arguments": "<JSON>"}`` |
| ``anthropic`` | ``{"type": "tool_use", "id", "name", "input": {...}}`` |
| ``gemini`` | ``{"functionCall": {"id", "name", "args": {...}}}`` |
| ``mcp`` | a ``tools/call`` request: ``{"method": "tools/call", "id", "params": {"name", "arguments"}}`` |
| ``plain`` | ``{"name", "arguments"}``, arguments as an object or a JSON text, with an optional ``id`` |

Nothing here raises for a malformed call: the problem comes back as text the
model can act on. That covers hostile calls too: JSON arguments nested deeper
than the decoder can follow, a number too long to convert, and (for calls
handed over as Python objects) containers that raise while they are read or
hold anything but plain JSON data.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from toolcycle._construct import trusted
from toolcycle.models import ToolCall
from toolcycle.validation._json import short_repr

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["parse_tool_call"]


def parse_tool_call(raw: Any) -> tuple[ToolCall | None, str | None]:
    """The call ``raw`` holds, and what is wrong with it (None if nothing).

    A call that can be read at all comes back even when it has a problem (no
    name, unreadable arguments), so that its result can still quote its id;
    only something that is not an object at all gives no call.
    """
    try:
        return _parse(raw)
    except RecursionError:
        return None, "the tool call nests too deeply to be read; send a flatter call"
    except Exception as exc:  # a hostile object, such as a mapping whose iteration raises
        return None, f"the tool call could not be read ({type(exc).__name__}); send it as JSON data"


def _parse(raw: Any) -> tuple[ToolCall | None, str | None]:
    if type(raw) is not dict:  # the usual shape needs neither check
        if isinstance(raw, ToolCall):
            return raw, None
        if hasattr(raw, "model_dump"):
            raw = raw.model_dump(mode="json")
    if not isinstance(raw, dict):
        return None, (
            f"a tool call must be an object with a name and arguments, got {type(raw).__name__}"
        )
    format_, call_id, name, arguments = _fields(raw)
    identifier = None if call_id is None else str(call_id)
    if not isinstance(name, str) or not name:
        call = ToolCall(id=identifier, name="", format=format_)
        return call, "the tool call names no tool: give the tool's name as a non-empty string"
    parsed, problem = _arguments(arguments)
    # Every field is checked above (an id as text, a non-empty name, an object of
    # arguments, a known format), so the model is not validated again.
    values = {"id": identifier, "name": name, "arguments": parsed or {}, "format": format_}
    return trusted(ToolCall, values, None), problem


def _fields(raw: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """(format, id, name, arguments) of each recognised shape."""
    function = raw.get("function")
    if isinstance(function, dict):
        return "openai", raw.get("id"), function.get("name"), function.get("arguments")
    kind = raw.get("type")
    if kind == "function_call":
        call_id = raw.get("call_id", raw.get("id"))
        return "openai-responses", call_id, raw.get("name"), raw.get("arguments")
    if kind == "tool_use":
        return "anthropic", raw.get("id"), raw.get("name"), raw.get("input")
    gemini = raw.get("functionCall", raw.get("function_call"))
    if isinstance(gemini, dict):
        return "gemini", gemini.get("id"), gemini.get("name"), gemini.get("args")
    if raw.get("method") == "tools/call":
        params = raw.get("params")
        params = params if isinstance(params, dict) else {}
        return "mcp", raw.get("id"), params.get("name"), params.get("arguments")
    arguments = raw.get("arguments", raw.get("args", raw.get("input")))
    return "plain", raw.get("id"), raw.get("name"), arguments


def _arguments(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    if value is None or value == "":
        return {}, None
    if isinstance(value, str):
        try:
            value = _loads(value)
        except json.JSONDecodeError as exc:
            return None, (
                f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}); "
                "send them as one JSON object"
            )
        except RecursionError:
            return None, (
                "the arguments nest too deeply to be read; send them as a flatter JSON object"
            )
        except ValueError:  # a number longer than Python converts to an int
            return None, (
                "the arguments hold a number with more digits than can be read (at most "
                f"{_max_digits()}); send large numbers as strings"
            )
        if not isinstance(value, dict):
            return None, (
                f"the arguments must be a JSON object of named values, got {type(value).__name__}"
            )
        return value, None
    if not isinstance(value, dict):
        return None, (
            f"the arguments must be a JSON object of named values, got {type(value).__name__}"
        )
    problem = _not_plain(value)
    # A copy: the call a result carries must not change when the caller's dict does.
    return (None, problem) if problem is not None else (dict(value), None)


# The C scanner json.loads drives, called without the checks around it: half the
# cost for the arguments of a model's call, which nearly always open with "{".
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """``json.loads(text)``, the same value or the same error, faster for an object."""
    if text[:1] == "{":
        value, end = _scan(text, 0)
        if end == len(text) or not text[end:].strip(" \t\n\r"):  # JSON's whitespace only
            return value
    return json.loads(text)  # anything else, and the error for trailing data


def _max_digits() -> str:
    """How many digits an integer may have in this process, as text."""
    limit: int = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return f"{limit:,}" if limit else "what memory allows"


_PLAIN_LEAVES = (str, int, float, bool, type(None))


def _not_plain(arguments: dict[Any, Any]) -> str | None:
    """What keeps ``arguments`` from being plain JSON data, or None if nothing.

    Arguments given as objects rather than JSON text must be what a JSON decoder
    returns: dicts with string keys, lists (or tuples), strings, numbers, booleans and None,
    each of exactly that type. Anything else (a mapping or sequence of another
    class, whose reading could run arbitrary code) is refused before any other
    part of the runtime walks it. The walk is iterative, so any depth is safe.
    """
    stack: list[Any] = [arguments]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            for key in node:
                if type(key) is not str:
                    return f"the arguments' names must be strings, got {short_repr(key)}"
            stack.extend(node.values())
        elif kind is list or kind is tuple:
            stack.extend(node)
        elif kind not in _PLAIN_LEAVES:
            return (
                f"the arguments must be plain JSON data, got a {kind.__name__}; send "
                "objects, arrays, strings, numbers, booleans and null only"
            )
    return None
