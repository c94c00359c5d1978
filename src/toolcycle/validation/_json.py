r"""Strict JSON: turn a Python value into plain JSON data, or say exactly why not.

Tool inputs and outputs pass through here before they are validated or measured.
The rules are those of RFC 8259 with no extensions: NaN and the infinities are
refused, object keys must be strings, and a value that contains itself is
refused. Text must be valid Unicode, as I-JSON (RFC 7493) requires: a lone
surrogate (``"\ud800"`` with no partner), in a value or a key, is refused, since
no UTF-8 text can carry it. Tuples become lists; pydantic models and dataclasses
become objects. The result is always a fresh structure, so a tool never sees (or
mutates) the caller's containers.

Hostile values are refused, never raised past the caller: a container whose
iteration raises, a model whose serialisation raises, and nesting deeper than
the interpreter's stack can walk all become a `JSONCompatibilityError`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = [
    "JSONCompatibilityError",
    "encode",
    "encode_text",
    "normalize",
    "pointer_token",
    "short_repr",
]

# A UTF-16 surrogate code point: in a Python string, only ever a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONCompatibilityError(ValueError):
    """A value cannot be represented as strict JSON (or is larger than allowed)."""

    def __init__(self, pointer: str, reason: str, *, keyword: str = "type") -> None:
        super().__init__(reason)
        self.pointer = pointer
        self.reason = reason
        self.keyword = keyword

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.reason}"

    def _within(self, key: object) -> JSONCompatibilityError:
        """Prefix the pointer with one more reference token, as the error unwinds."""
        self.pointer = f"/{pointer_token(key)}{self.pointer}"
        return self


def pointer_token(key: object) -> str:
    """Escape one reference token of a JSON Pointer (RFC 6901)."""
    if type(key) is not str:
        key = short_repr(key, 80) if not isinstance(key, str) else str.__str__(key)
    if not key.isascii() and _SURROGATE.search(key) is not None:
        # Exported text must be valid Unicode: a lone surrogate shows as its escape.
        key = _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", key)
    return key.replace("~", "~0").replace("/", "~1")


def short_repr(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters; never raises.

    An integer too long for Python's decimal conversion is described by its
    size, and an object whose ``__repr__`` raises by its type.
    """
    if isinstance(value, int) and value.bit_length() > 1024:
        return f"<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__: say what it is instead
        return f"<a {type(value).__name__} that cannot be shown>"
    if not isinstance(text, str):  # pragma: no cover - repr() checks the type itself
        return f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def _surrogate_error(text: str, index: int, what: str) -> JSONCompatibilityError:
    return JSONCompatibilityError(
        "",
        f"the {what} holds a lone surrogate ({text[index]!r} at index {index}), which is "
        "not valid Unicode; send the text as valid Unicode (UTF-8)",
        keyword="unicode",
    )


class _Walker:
    """One normalisation pass.

    Pointers are built only while an error unwinds, so the success path pays
    nothing for them.
    """

    __slots__ = ("active", "max_depth", "max_integer_bits", "max_nodes", "nodes")

    def __init__(self, max_depth: int, max_nodes: int, max_integer_bits: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.max_integer_bits = max_integer_bits
        self.nodes = 0
        self.active: set[int] = set()

    def walk(self, value: Any, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise JSONCompatibilityError(
                "", f"the value has more than {self.max_nodes} elements", keyword="maxNodes"
            )
        kind = type(value)
        if kind is str:
            return _text(value)
        if kind is bool or value is None:
            return value
        if kind is int:
            return self._integer(value)
        if kind is float:
            return self._float(value)
        if kind is dict or kind is list or kind is tuple:
            return self._container(value, value, depth)
        return self._other(value, depth)

    def _integer(self, value: int) -> int:
        if value.bit_length() > self.max_integer_bits:
            raise JSONCompatibilityError(
                "",
                f"the integer has more than {self.max_integer_bits} bits",
                keyword="maxIntegerBits",
            )
        return int(value)

    def _float(self, value: float) -> float:
        if not math.isfinite(value):
            raise JSONCompatibilityError("", f"{value!r} is not a JSON number")
        return float(value)

    def _other(self, value: Any, depth: int) -> Any:
        """Subclasses of the JSON types, models, dataclasses and other mappings."""
        if isinstance(value, bool):  # pragma: no cover - bool cannot be subclassed
            return bool(value)
        # The base type's own conversion gives the plain value the subclass holds,
        # whatever its __str__ or __int__ say (an IntEnum member becomes its int).
        if isinstance(value, int):
            return self._integer(int.__int__(value))
        if isinstance(value, float):
            return self._float(float.__float__(value))
        if isinstance(value, str):
            return _text(str.__str__(value))
        if isinstance(value, BaseModel):
            return self.walk(self._dump(value), depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            try:
                fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            except Exception as exc:  # a property or descriptor that raises
                raise _unreadable(value, exc) from None
            return self._container(value, fields, depth)
        if isinstance(value, Mapping | list | tuple):
            return self._container(value, value, depth)
        raise JSONCompatibilityError(
            "", f"a value of type {type(value).__name__} is not JSON-compatible"
        )

    @staticmethod
    def _dump(model: BaseModel) -> Any:
        """Dump a model in JSON mode; its serialisation errors become ours."""
        try:
            return model.model_dump(mode="json", by_alias=True)  # the keys its schema names
        except RecursionError:
            raise
        except Exception as exc:  # pydantic's PydanticSerializationError is a ValueError
            message = _message(exc)
            keyword = "cycle" if "Circular reference" in message else "type"
            raise JSONCompatibilityError(
                "",
                f"the {type(model).__name__} model cannot be serialised: {message:.160}",
                keyword=keyword,
            ) from None

    def _container(self, owner: object, value: Any, depth: int) -> Any:
        if depth >= self.max_depth:
            raise JSONCompatibilityError(
                "", f"the value nests deeper than {self.max_depth} levels", keyword="maxDepth"
            )
        marker = id(owner)
        active = self.active
        if marker in active:
            raise JSONCompatibilityError("", "the value contains itself", keyword="cycle")
        active.add(marker)
        try:
            if type(value) is dict or isinstance(value, Mapping):
                return self._object(value, depth + 1)
            return self._array(value, depth)
        except (JSONCompatibilityError, RecursionError):
            raise
        except Exception as exc:  # iterating a hostile container raised
            raise _unreadable(owner, exc) from None
        finally:
            active.discard(marker)

    def _array(self, value: Any, depth: int) -> list[Any]:
        """A list or tuple (or another sequence) as a fresh list."""
        out: list[Any] = []
        append = out.append
        bits = self.max_integer_bits
        for index, item in enumerate(value):
            # The commonest leaves inline (see _object).
            kind = type(item)
            if (
                (kind is str and (item.isascii() or _SURROGATE.search(item) is None))
                or kind is bool
                or item is None
                or (kind is int and item.bit_length() <= bits)
                or (kind is float and item - item == 0.0)
            ) and self.nodes < self.max_nodes:
                self.nodes += 1
                append(item)
                continue
            if kind is dict:  # an array of flat objects is the commonest large input
                flat = self._flat_child(item, depth + 1)
                if flat is not None:
                    append(flat)
                    continue
            try:
                append(self.walk(item, depth + 1))
            except JSONCompatibilityError as error:
                raise error._within(index) from None
        return out

    def _flat_child(self, item: dict[Any, Any], depth: int) -> dict[str, Any] | None:
        """``item`` copied in one loop if it is a flat object within the caps, else None.

        ``depth`` is the depth `walk` would be given for it; None sends it to `walk`.
        """
        if depth >= self.max_depth or self.nodes + 1 + len(item) > self.max_nodes:
            return None
        flat = _flat_copy(item, self.max_integer_bits)
        if flat is not None:
            self.nodes += 1 + len(flat)
        return flat

    def _object(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        converted = False
        bits = self.max_integer_bits
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise JSONCompatibilityError(
                        "",
                        f"object keys must be strings, got {type(key).__name__} {short_repr(key)}",
                    )
                key = str.__str__(key)  # a str subclass such as a StrEnum member
                converted = True
            if not key.isascii() and (found := _SURROGATE.search(key)) is not None:
                raise _surrogate_error(key, found.start(), "key")._within(key)
            # The commonest leaves, inline: a call per leaf would be most of the cost.
            # A leaf over a cap is left to walk, which counts it and says why.
            # (inf - inf and nan - nan are nan, so a finite float gives 0.0.)
            kind = type(item)
            if (
                (kind is str and (item.isascii() or _SURROGATE.search(item) is None))
                or kind is bool
                or item is None
                or (kind is int and item.bit_length() <= bits)
                or (kind is float and item - item == 0.0)
            ) and self.nodes < self.max_nodes:
                self.nodes += 1
                out[key] = item
                continue
            if kind is dict:
                flat = self._flat_child(item, depth)
                if flat is not None:
                    out[key] = flat
                    continue
            try:
                out[key] = self.walk(item, depth)
            except JSONCompatibilityError as error:
                raise error._within(key) from None
        if converted and len(out) != len(value):
            raise JSONCompatibilityError(
                "", "two keys are the same string once converted to plain strings"
            )
        return out


def normalize(
    value: Any, *, max_depth: int = 64, max_nodes: int = 100_000, max_integer_bits: int = 4096
) -> Any:
    """Return ``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Raises:
        JSONCompatibilityError: naming the JSON Pointer of the first offending value.
    """
    if type(value) is dict and max_depth >= 1 and len(value) < max_nodes:
        flat = _flat_copy(value, max_integer_bits)
        if flat is not None:
            return flat
    try:
        return _Walker(max_depth, max_nodes, max_integer_bits).walk(value, 0)
    except RecursionError:
        # Only a max_depth raised far above the default lets the walk get here:
        # the interpreter's stack ran out first. That is a refusal, not a crash.
        raise JSONCompatibilityError(
            "",
            f"the value nests too deeply to be read (the limit is {max_depth} levels, but "
            "the interpreter's stack ran out first); send a flatter value",
            keyword="maxDepth",
        ) from None


def _flat_copy(value: dict[Any, Any], max_integer_bits: int) -> dict[str, Any] | None:
    """A copy of a dict whose keys are str and whose values are all plain leaves, or None.

    Most tool arguments and outputs are such an object; copying it in one loop,
    without the walker, costs a third as much. Anything else (a nested
    container, a subclass, a value over a cap) returns None, and the walker
    handles the whole value, with its messages.
    """
    for key, item in value.items():
        if type(key) is not str or not (key.isascii() or _SURROGATE.search(key) is None):
            return None
        kind = type(item)
        if kind is str:  # the commonest leaves first, each decided in one test
            if item.isascii() or _SURROGATE.search(item) is None:
                continue
            return None
        if kind is int:
            if item.bit_length() <= max_integer_bits:
                continue
            return None
        if kind is float:
            if item - item == 0.0:  # finite
                continue
            return None
        if kind is not bool and item is not None:
            return None
    return dict(value)


def _text(value: str) -> str:
    """``value`` if it is valid Unicode."""
    if not value.isascii() and (found := _SURROGATE.search(value)) is not None:
        raise _surrogate_error(value, found.start(), "text")
    return value


def _message(exc: BaseException) -> str:
    """``str(exc)``, cut to 160 characters; never raises."""
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        return type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _unreadable(owner: object, exc: Exception) -> JSONCompatibilityError:
    """The refusal of a container, dataclass or model that raised while it was read."""
    detail = _message(exc)
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return JSONCompatibilityError(
        "", f"reading the {type(owner).__name__} raised {what}", keyword="type"
    )


# Built once: json.dumps with non-default options builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# JSONEncoder.encode also builds its C encoder anew on every call; the C encoder
# itself can be built once and reused (a small output then costs about 1 us,
# not 2.4). No circular-reference markers: normalised data has no cycles.
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Callable[[Any, int], Any] | None = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)


def encode(value: Any) -> bytes:
    """Serialise already-normalised JSON data compactly as UTF-8."""
    return encode_text(value).encode()


def encode_text(value: Any) -> str:
    """Serialise already-normalised JSON data compactly, as text."""
    if _C_ENCODE is None:  # pragma: no cover - CPython always has the C encoder
        return _ENCODER.encode(value)
    if type(value) is str:  # the C encoder wants a container; JSONEncoder does the same
        return json.encoder.encode_basestring(value)
    return "".join(_C_ENCODE(value, 0))
