"""Where a wrapped function's arguments and result may skip their pydantic round trip.

A function tool's arguments reach pydantic after the runtime validated them
against the schema pydantic made, and its result goes through pydantic's JSON
serialisation. For the commonest signatures both steps give back what they got:
a ``str``, ``int``, ``float`` or ``bool`` parameter (or one of them ``| None``)
given a value of exactly that type, or a default used as it is; and a result
annotated as one of those scalars, ``dict`` or ``dict[str, Any]`` whose value is
of exactly that type, holding plain JSON leaves for a dict. Reading such values
directly costs a fraction of the round trip. Any other value, and every other
signature, still goes through pydantic, with its coercions and its errors: a
reader here answers None for "ask pydantic".
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Field", "argument_fields", "read_arguments", "result_check"]

_SCALARS = (str, int, float, bool)
_NONE = type(None)
_REQUIRED: Any = inspect.Parameter.empty
# The JSON leaves a dict result may hold and still serialise to itself.
_LEAVES = frozenset({str, int, bool, _NONE})
# The largest int a float holds exactly: beyond it, pydantic decides.
_EXACT = 2**53

Field = tuple[str, tuple[type, ...], Any]
"""A parameter read directly: its name, the exact types it takes as they are, its default."""


def argument_fields(
    signature: inspect.Signature, hints: dict[str, Any]
) -> tuple[Field, ...] | None:
    """The parameters of a function whose arguments pydantic would pass on unchanged.

    None unless every parameter is one of the plain annotations above, with no
    default or an immutable plain one (pydantic does not validate defaults).
    """
    fields: list[Field] = []
    for parameter in signature.parameters.values():
        kinds = _kinds(hints.get(parameter.name, Any))
        default = parameter.default
        if kinds is None or (default is not _REQUIRED and type(default) not in (*_SCALARS, _NONE)):
            return None
        fields.append((parameter.name, kinds, default))
    return tuple(fields)


def _kinds(annotation: Any) -> tuple[type, ...] | None:
    """The exact types a value of ``annotation`` keeps through pydantic, or None."""
    if annotation in _SCALARS:
        return (annotation,)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        if len(members) == 2 and _NONE in members:
            (kind,) = (member for member in members if member is not _NONE)
            if kind in _SCALARS:
                return (kind, _NONE)
    return None


def read_arguments(fields: tuple[Field, ...], params: dict[str, Any]) -> dict[str, Any] | None:
    """The keyword arguments pydantic would make of ``params``, or None to ask it.

    ``params`` passed the schema pydantic made of these fields; a value of
    another type (``1.0`` for an ``int``, which pydantic turns into ``1``) and a
    missing required one are left to pydantic. Keys that name no parameter are
    ignored, as pydantic ignores them.
    """
    kwargs = {}
    for name, kinds, default in fields:
        value = params.get(name, _REQUIRED)
        if value is _REQUIRED:
            if default is _REQUIRED:
                return None  # pydantic says what is missing
            value = default
        elif type(value) not in kinds:
            if kinds[0] is not float or type(value) is not int or not -_EXACT <= value <= _EXACT:
                return None
            value = float(value)  # as pydantic does for a float parameter; exact up to 2**53
        kwargs[name] = value
    return kwargs


def result_check(annotation: Any) -> Callable[[Any], bool] | None:
    """A test of whether a result of ``annotation`` serialises to itself, or None.

    None for annotations whose results always go through pydantic.
    """
    if annotation in _SCALARS:
        return lambda value: type(value) is annotation
    if annotation is dict or annotation == dict[str, Any]:
        return _plain_object
    return None


def _plain_object(value: Any) -> bool:
    """Whether ``value`` is a dict of str keys and plain JSON leaves (finite floats)."""
    if type(value) is not dict:
        return False
    for key, item in value.items():
        if type(key) is not str:
            return False
        kind = type(item)
        if kind not in _LEAVES and (kind is not float or item - item != 0.0):
            return False
    return True
