"""`frozen_value` and `FrozenValue`: public frozen dataclasses that compile nothing on import.

``@dataclass(frozen=True)`` writes its class's ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` out as source text
and compiles each one when the class is defined: about 0.2 ms apiece on Python
3.11, and ``import toolcycle`` defines nine such classes. A class declared with
``@frozen_value`` on top of `FrozenValue` compiles none of them and behaves the
same:

- it writes its own ``__init__``, which sets each field with
  ``object.__setattr__`` and then calls ``__post_init__``, where the class checks
  its values, as a generated ``__init__`` would. pydantic, which builds a
  dataclass held in a model's field without calling ``__init__``, and a
  dataclass that subclasses one call ``__post_init__`` too, so the checks hold
  for them as well;
- `FrozenValue` gives the other five, which read the class's dataclass fields
  exactly as the generated ones do (``repr``, ``compare`` and ``hash`` of each
  field), only by looking them up on each call, which no call path of the
  runtime makes; and the pickle state, which a frozen slotted class needs.

The class stays a frozen dataclass for everyone who asks: ``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work, its ``__dataclass_params__``
says frozen (so a frozen dataclass may subclass it), assigning to a field
raises ``dataclasses.FrozenInstanceError``, and type checkers read the decorator
as a frozen dataclass (``dataclass_transform``). `tests/test_frozen_values.py`
checks each public class's ``__init__`` against its fields.

A class in a module that ``import toolcycle`` does not load (approvals,
guardrails) keeps ``@dataclass(frozen=True, slots=True, repr=False, eq=False)``
on the same base, and lets the dataclass write its ``__init__``: there the
compile is paid on first use, not by every program.
"""

from __future__ import annotations

import reprlib
from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import Any, TypeVar, dataclass_transform

__all__ = ["FrozenValue", "fields_repr", "frozen_value"]

_V = TypeVar("_V", bound=type)


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(field,))
def frozen_value(cls: _V) -> _V:
    """Make ``cls`` (a `FrozenValue` with its own ``__init__``) a frozen, slotted dataclass."""
    if "__init__" not in cls.__dict__:
        raise TypeError(f"{cls.__qualname__} must define __init__ to be a frozen_value")
    made: Any = dataclass(init=False, repr=False, eq=False, slots=True)(cls)
    made.__dataclass_params__.frozen = True  # what ``frozen=True`` would have recorded
    return made  # type: ignore[no-any-return]


class FrozenValue:
    """The base of a `frozen_value` class: what ``@dataclass(frozen=True)`` would generate.

    Equality holds between instances of the exact same class whose compared
    fields are equal; the hash is that of the hashed fields (the compared
    ones unless a field says otherwise); the repr names the class and its
    shown fields; a field cannot be assigned or deleted.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return fields_repr(self)

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

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    # Slots are pickled as state that the default unpickler sets with setattr, which a
    # frozen value refuses; these set it directly, as a frozen slotted dataclass does.
    def __getstate__(self) -> list[Any]:
        return [getattr(self, f.name) for f in fields(self)]  # type: ignore[arg-type]

    def __setstate__(self, state: list[Any]) -> None:
        for f, value in zip(fields(self), state, strict=True):  # type: ignore[arg-type]
            object.__setattr__(self, f.name, value)


@reprlib.recursive_repr()
def fields_repr(value: Any) -> str:
    """What a dataclass's generated ``__repr__`` returns: its class and shown fields."""
    shown = ", ".join(f"{f.name}={getattr(value, f.name)!r}" for f in fields(value) if f.repr)
    return f"{type(value).__qualname__}({shown})"


def _compared(value: Any) -> tuple[Any, ...]:
    return tuple(getattr(value, f.name) for f in fields(value) if f.compare)
