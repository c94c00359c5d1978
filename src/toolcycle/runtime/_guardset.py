"""The guardrails of one registered tool, chained once at registration.

The registry asks `chain` for a tool's guardrails (the runtime's, its source's,
its own) and keeps the answer on the tool's `Entry`; a tool with none gets None,
so an unguarded call pays one attribute check.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from toolcycle.guardrails import Guardrail

__all__ = ["Guard", "Guards", "chain", "guards_of"]


class Guard:
    """One guardrail, with what the runner needs to know about it worked out once.

    Attributes:
        fn: the guardrail.
        name: its ``__name__`` (or its class's name), as traces record it.
        coroutine: whether calling it makes a coroutine to await.
    """

    __slots__ = ("coroutine", "fn", "name")

    def __init__(self, fn: Guardrail) -> None:
        self.fn = fn
        self.name: str = getattr(fn, "__name__", None) or type(fn).__name__
        self.coroutine = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ is what is asked
        )


class Guards:
    """Input and output guardrails, in the order they run.

    Attributes:
        input: the input guardrails.
        output: the output guardrails.
        after_approval: the input guardrails run after the approval step, not before.
    """

    __slots__ = ("after_approval", "input", "output")

    def __init__(
        self,
        input: tuple[Guard, ...] = (),
        output: tuple[Guard, ...] = (),
        after_approval: bool = False,
    ) -> None:
        self.input = input
        self.output = output
        self.after_approval = after_approval


def guards_of(guardrails: Iterable[Guardrail] | None, where: str) -> tuple[Guard, ...]:
    """Check that each guardrail is callable and wrap it; ``where`` names the option.

    Raises:
        TypeError: ``guardrails`` is not an iterable of callables (a single
            function, say, instead of a list of one), or holds ``allow``,
            ``reject`` or ``stop`` themselves.
    """
    if guardrails is None:
        return ()
    if callable(guardrails) or isinstance(guardrails, str | bytes):
        raise TypeError(f"{where} takes a list of guardrails, got {guardrails!r}; wrap it in [...]")
    try:
        items = tuple(guardrails)
    except TypeError:
        raise TypeError(
            f"{where} takes a list of guardrails, got {type(guardrails).__name__}"
        ) from None
    for item in items:
        misused = _misused(item)
        if misused is not None:
            raise TypeError(f"{where} holds {misused}")
        if not callable(item):
            raise TypeError(
                f"{where} holds {item!r}, which is not callable; a guardrail is a function "
                "of (call, ctx) returning allow(), reject(message) or stop(message)"
            )
    return tuple(Guard(item) for item in items)


def _misused(item: object) -> str | None:
    if getattr(item, "__module__", None) != "toolcycle.guardrails":
        return None
    # Imported here: its module waits for the first tool definition, and only one of
    # the decision helpers themselves gets this far.
    from toolcycle._tool_options import misused_decision

    return misused_decision(item)


def chain(
    runtime: Guards | None,
    source: Guards | None,
    instance: Any,
    tool_name: str,
    input: tuple[Guard, ...],
    output: tuple[Guard, ...],
) -> Guards | None:
    """A tool's guardrails: the runtime's, its source's, the tool's own, then ``register``'s.

    The tool's own are its ``input_guardrails`` and ``output_guardrails``
    attributes (``@tool`` and ``wrap`` set them); ``input`` and ``output`` are
    those given to ``register``. None when there are none at all.

    Raises:
        TypeError: an attribute of the tool is not a list of callables.
    """
    name = tool_name
    own_input = guards_of(
        getattr(instance, "input_guardrails", None), f"the input_guardrails of {name!r}"
    )
    own_output = guards_of(
        getattr(instance, "output_guardrails", None), f"the output_guardrails of {name!r}"
    )
    inputs: tuple[Guard, ...] = ()
    outputs: tuple[Guard, ...] = ()
    for guards in (runtime, source):
        if guards is not None:
            inputs += guards.input
            outputs += guards.output
    inputs += own_input + input
    outputs += own_output + output
    if not inputs and not outputs:
        return None
    after = runtime.after_approval if runtime is not None else False
    return Guards(inputs, outputs, after)
