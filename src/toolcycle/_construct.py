"""Building the package's own records: without a second validation, and detached copies.

`trusted` makes a frozen model from values the runtime made and checked itself;
`detached` copies a descriptor so that nothing in it is shared with the tool
that made it, however deep its schemas go.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from toolcycle._lazy_trace import INSTANCE_DICT

if TYPE_CHECKING:
    from toolcycle.models import ToolDescriptor

__all__ = ["detached", "tree_copy", "trusted"]

_Model = TypeVar("_Model", bound=BaseModel)
_new = object.__new__
# The setters of BaseModel's own slots, bound once: ``object.__setattr__`` by name
# looks each one up on the class first, which made up half of building a record.
_set_dict = INSTANCE_DICT.__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_fields_sets: dict[type[BaseModel], set[str]] = {}


def trusted(cls: type[_Model], values: dict[str, Any], private: dict[str, Any] | None) -> _Model:
    """Build ``cls`` from values the runtime made itself, without validating them again.

    Validating a frozen model costs about 3 us; a call builds a result (and its
    trace, when something reads it), which would be a third of the runtime's own
    cost per call.
    ``values`` must hold every field, in the order the model declares them
    (`tests/test_models.py` checks each caller against a validated twin), and
    ``private`` every private attribute, or be None when the model has none.
    """
    obj = _new(cls)
    _set_dict(obj, values)
    every = _fields_sets.get(cls)
    if every is None:
        every = _fields_sets[cls] = set(cls.model_fields)
    # Every field is set, so the records of a class share one set: pydantic copies
    # it before it adds to it (model_copy), and adding a field name changes nothing.
    _set_fields_set(obj, every)
    _set_extra(obj, None)
    _set_private(obj, private)
    return obj


def detached(descriptor: ToolDescriptor) -> ToolDescriptor:
    """A copy of ``descriptor`` that shares no mutable data with it, made without recursion.

    ``model_copy(deep=True)`` recurses once per level of a schema or annotation, so
    a tool (or an MCP server) could make registration overflow the stack with a
    schema a few hundred levels deep; this copy is a loop however deep it goes, so
    the schema reaches the compiler, which refuses it properly.
    """
    fields = type(descriptor).model_fields
    return descriptor.model_copy(
        update={name: tree_copy(getattr(descriptor, name)) for name in fields}
    )


def tree_copy(value: Any) -> Any:
    """A deep copy of ``value``: its dicts and lists in a loop, anything else by `copy.deepcopy`.

    Shared and self-containing containers stay shared and self-containing in the copy.
    An object that cannot be deep-copied (its copy raises) is shared, not copied.
    """
    memo: dict[int, Any] = {}

    def shell(node: Any) -> tuple[Any, bool]:
        """The copy of ``node``, and whether it is a new container still to fill."""
        kind = type(node)
        if kind is not dict and kind is not list:
            try:
                return copy.deepcopy(node), False
            except Exception:  # a hostile object: sharing it is all that can be done
                return node, False
        known = memo.get(id(node))
        if known is not None:
            return known, False
        fresh: Any = {} if kind is dict else []
        memo[id(node)] = fresh
        return fresh, True

    top, fill = shell(value)
    pending: list[tuple[Any, Any]] = [(value, top)] if fill else []
    while pending:
        source, target = pending.pop()
        if type(source) is dict:
            for key, item in source.items():
                target[key], fill = shell(item)
                if fill:
                    pending.append((item, target[key]))
        else:
            for item in source:
                fresh, fill = shell(item)
                target.append(fresh)
                if fill:
                    pending.append((item, fresh))
    return top
