"""A trace kept as plain values until someone reads it, and the result slot that holds it.

`ToolResult` keeps a `LazyTrace` in its ``trace`` field while nothing has asked
for the trace. The result's ``trace`` attribute (`TraceField`) and its instance
dict (`settled_dict`, which every reader of its data goes through) build the
trace model first, so no one outside the runtime ever sees the lazy form.
This module knows nothing of the models: it only moves values between slots.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["INSTANCE_DICT", "LazyTrace", "TraceField", "settle", "settled_dict"]


class LazyTrace:
    """A finished call's trace kept as plain values until someone reads it.

    The runtime puts one in a result's ``trace`` slot when nothing asked for the
    trace while the call ran (no listener, no kept traces, a tracer that drops
    it). The result turns it into the `ToolExecutionTrace` the first time its
    ``trace`` or its data (``model_dump``, ``==``, pickling, copies) is read;
    nothing outside this module ever sees it.

    Args:
        values: what the trace is made of.
        error: the trace's ``error`` (already redacted), which the result needs at once.
        make: builds the trace from ``values``; called at most once.
    """

    __slots__ = ("_make", "_model", "_values", "error")

    def __init__(self, values: Any, error: str | None, make: Callable[[Any], Any]) -> None:
        self._values = values
        self._make = make
        self._model: Any = None
        self.error = error

    def build(self) -> Any:
        """The trace; the same object every time, from whichever thread asks first."""
        model = self._model
        if model is not None:
            return model
        with _build_lock:
            if self._model is None:
                self._model = self._make(self._values)
            return self._model


_build_lock = threading.Lock()


# The instance dict's own descriptor, which a result's ``__dict__`` property wraps.
INSTANCE_DICT: Any = BaseModel.__dict__["__dict__"]


def settle(values: dict[str, Any]) -> Any:
    """The trace in a result's ``values``, built in place first if it is still lazy."""
    trace = values.get("trace")
    if isinstance(trace, LazyTrace):
        trace = values["trace"] = trace.build()  # the same object from every thread
    return trace


def settled_dict(result: Any) -> dict[str, Any]:
    """A result's instance dict, its trace built: what every reader of its data gets."""
    values: dict[str, Any] = INSTANCE_DICT.__get__(result)
    if isinstance(values.get("trace"), LazyTrace):
        settle(values)
    return values


class TraceField:
    """The ``trace`` attribute of a result: a data descriptor, so it is asked first."""

    __slots__ = ()

    def __get__(self, result: Any, owner: type | None = None) -> Any:
        if result is None:  # as for any pydantic field: no class attribute
            raise AttributeError("trace")
        return settle(INSTANCE_DICT.__get__(result))

    def __set__(self, result: Any, value: Any) -> None:
        raise TypeError("a ToolResult is frozen")  # pragma: no cover - pydantic refuses first
