"""How a tool travels to a host (pickled, by its module's name for it, or by import path).

Also how a stage's outcome settles the caller's future for it: a stage that failed
after recording changes, or revealing tools, brings them back with its error
(`StageFailed`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import pickle
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from toolcycle import ToolRuntimeError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolcycle import ToolExecutionContext, ToolInstance

__all__ = [
    "Call",
    "Settled",
    "StageFailed",
    "ToolHostError",
    "ToolImport",
    "call_of",
    "pack",
    "settle",
    "tool_key",
    "tool_name",
]

Call: TypeAlias = tuple[str | None, tuple[str, ...]]
"""What a stage's context in a worker takes from the caller's at the stage's start:
the call's id and the deferred tools the plan has revealed."""

Settled: TypeAlias = tuple[Any, list[Any], tuple[str, ...]]
"""A stage that ended well: its value, the changes it recorded, the deferred tools it revealed."""


def tool_key(name: str, number: int) -> str:
    """The key a worker holds the ``number``-th tool registered as ``name`` in a plan under.

    The first is held under its name; one registered anew while the plan was open
    under its name with a NUL and the number added, beside the one it replaced.
    """
    return name if number == 0 else f"{name}\x00{number}"


def tool_name(key: str) -> str:
    """The registered name of the tool a worker holds under ``key`` (see `tool_key`)."""
    return key.partition("\x00")[0]


def call_of(ctx: ToolExecutionContext) -> Call:
    """The `Call` that a stage sent now, from ``ctx``, carries to its worker."""
    return ctx.call_id, tuple(ctx.revealed_tools)


class ToolHostError(ToolRuntimeError):
    """A host could not run a stage: the tool cannot travel, or the worker died."""


class StageFailed(Exception):
    """A stage that failed in a host after recording changes; it never leaves the stand-ins.

    A stand-in records ``changes`` on the caller's context, where they would have
    landed without a host, then raises ``error``: a tool that wrote a file and
    then failed leaves that write in the plan's record, so a rollback undoes it.
    The tools it revealed stay revealed in the plan, as they would without a host.

    Args:
        error: what the stage raised.
        changes: what it recorded with ``ctx.record_change`` before that.
        revealed: the deferred tools it revealed with ``ctx.reveal_tools`` before that.
    """

    def __init__(
        self, error: BaseException, changes: list[Any], revealed: tuple[str, ...] = ()
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.changes = changes
        self.revealed = revealed


def settle(
    future: concurrent.futures.Future[Settled],
    ok: bool,
    value: Any,
    changes: list[Any],
    revealed: tuple[str, ...] = (),
) -> None:
    """Settle a stage's future with its outcome: ``(value, changes, revealed)``, or its error.

    A failure that recorded changes or revealed tools settles with a `StageFailed`
    holding them; a future settled already (the stage's worker died meanwhile)
    stays as it is.
    """
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if ok:
            future.set_result((value, changes, revealed))
        elif changes or revealed:
            future.set_exception(StageFailed(value, changes, revealed))
        else:
            future.set_exception(value)


@dataclass(frozen=True)
class ToolImport:
    """A tool the host builds itself, from an import path and arguments.

    Use it for a tool that does not pickle (it holds a client, a lock, a file) or
    that should be built where it runs. ``path`` is ``"package.module:attribute"``
    (dots after the colon reach nested attributes). A class or a function found
    there is called with ``args`` and ``kwargs`` inside the worker to make the
    tool; anything else found there (a ``@tool`` function, an instance) is the tool.

    Args:
        path: where the tool or its factory is, ``"module:attribute"``.
        args: positional arguments for the factory (must pickle).
        kwargs: keyword arguments for the factory (must pickle).
    """

    path: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        module, colon, attribute = self.path.partition(":")
        if not (module and colon and attribute):
            raise ValueError(
                f"ToolImport path must be 'package.module:attribute', got {self.path!r}"
            )


def pack(name: str, tool: ToolInstance, imports: Mapping[str, ToolImport]) -> tuple[Any, ...]:
    """The payload that rebuilds ``tool`` inside a worker.

    The host's ``tools`` mapping wins; then the tool is pickled; a tool that does
    not pickle but is its module's own global (a ``@tool`` function) goes by name.

    Raises:
        ToolHostError: the tool can travel none of these ways; the message names it
            and says what to do.
    """
    recipe = imports.get(name)
    if recipe is not None:
        payload = ("import", recipe.path, tuple(recipe.args), dict(recipe.kwargs))
        try:  # checked here: the pipe would refuse them with no word of the tool
            pickle.dumps(payload)
        except Exception as exc:
            raise ToolHostError(
                f"tool {name!r} cannot be sent to the host: the args or kwargs of its "
                f"ToolImport({recipe.path!r}) do not pickle ({exc}); pass plain values and "
                "let the factory build the rest in the worker",
                tool_name=name,
            ) from None
        return payload
    try:
        return ("pickle", pickle.dumps(tool))
    except Exception as exc:
        reference = _by_name(tool)
        if reference is not None:
            return ("ref", reference)
        if getattr(getattr(tool, "__wrapped__", tool), "__module__", None) == "__main__":
            # A worker never imports the caller's script: say where the tool must live.
            raise ToolHostError(
                f"tool {name!r} cannot be sent to the host: it is defined in the script "
                "run as __main__, which a worker does not import; move it into a module "
                "of its own and import it from the script (the worker then imports it by "
                f"name), or name a factory: tools={{{name!r}: "
                "ToolImport('package.module:factory')}",
                tool_name=name,
            ) from None
        raise ToolHostError(
            f"tool {name!r} cannot be sent to the host: it does not pickle ({exc}); make "
            f"it picklable, or name a factory the worker imports: "
            f"tools={{{name!r}: ToolImport('package.module:factory')}}",
            tool_name=name,
        ) from None


def _by_name(tool: object) -> str | None:
    """``"module:qualname"`` when that name finds ``tool`` itself, in an importable module."""
    named = getattr(tool, "__wrapped__", tool)  # a @tool function: the function's name
    module_name = getattr(named, "__module__", None)
    qualname = getattr(named, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        return None
    module = sys.modules.get(module_name)
    if module is None or module_name == "__main__" or "<" in qualname:
        return None
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not tool:
        return None
    try:  # the worker imports it by this name: so must a fresh interpreter
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    return f"{module_name}:{qualname}"
