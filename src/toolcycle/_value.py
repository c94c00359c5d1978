"""`FrozenValue`: the equality, hash and repr that the public frozen dataclasses share.

A frozen dataclass has its ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` written out as source and compiled when its
class is defined, about 0.1 ms each; ``import toolcycle`` defines a dozen such
classes. Declared with ``repr=False, eq=False`` on top of this base, a class
compiles three of them instead of six and behaves the same: these methods read
the class's dataclass fields exactly as the generated ones do (``repr``,
``compare`` and ``hash`` of each field), only by looking them up on each call,
which none of the runtime's call paths makes.
"""

from __future__ import annotations

import reprlib
from dataclasses import fields
from typing import Any

__all__ = ["FrozenValue"]


class FrozenValue:
    """A base for ``@dataclass(frozen=True, repr=False, eq=False)`` classes.

    Equality holds between instances of the exact same class whose compared
    fields are equal; the hash is that of the hashed fields (the compared
    ones unless a field says otherwise); the repr names the class and its
    shown fields. This is what ``@dataclass(frozen=True)`` generates.
    """

    __slots__ = ()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)  # type: ignore[arg-type]
            if f.repr
        )
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def __hash__(self) -> int:
        return hash(
            tuple(
                getattr(self, f.name)
                for f in fields(self)  # type: ignore[arg-type]
                if (f.compare if f.hash is None else f.hash)
            )
        )


def _compared(value: Any) -> tuple[Any, ...]:
    return tuple(getattr(value, f.name) for f in fields(value) if f.compare)
