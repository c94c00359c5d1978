"""What a tool and a tool source must provide; the layer between tools and the runtime.

Above this module is the runtime, which drives tools through their stages and
enforces plans. Below it are the implementations: MCP servers, Agent Skills,
built-ins, wrapped functions, and anything a user writes. A tool needs four
methods and nothing else; the runtime supplies caching, capability checks,
validation, tracing and cancellation around them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterable

    from toolcycle.context import ToolExecutionContext
    from toolcycle.models import ToolDescriptor

__all__ = ["PlanHost", "ToolInstance", "ToolSource"]


@runtime_checkable
class ToolInstance(Protocol):
    """A tool the runtime can drive through discover, activate, execute and deactivate.

    ``activate``, ``execute`` and ``deactivate`` may each be a plain method or an
    ``async def``; the runtime detects which at registration.

    A tool whose coroutine stages must run on one event loop of its own (an
    MCP connection lives on one loop) may name it in an optional ``event_loop``
    attribute: a sync ``runtime.execute`` then runs its ``async def execute``
    on that loop directly, crossing one thread instead of two. When the loop
    depends on the plan, an optional ``event_loop_for(ctx)`` method names it
    for that plan's sync activations and calls (None falls back to
    ``event_loop``); a sync call made on that loop's own thread is then refused
    instead of waiting on itself. Deactivation always uses ``event_loop``.

    Duties:
        - ``discover`` is cheap and side-effect free: it returns metadata only.
        - ``activate`` prepares the tool for one plan (start a process, open a
          client, load instructions). The runtime calls it at most once per plan.
        - ``execute`` runs one call with parameters the runtime has already
          validated against ``input_schema``. It returns JSON-compatible output,
          or a `ToolResult` to report its own failure.
        - ``deactivate`` releases what ``activate`` acquired. The runtime calls
          it exactly once per activated plan, in reverse order of activation.
    """

    def discover(self) -> ToolDescriptor:
        """Describe the tool without activating it."""
        ...

    def activate(self, ctx: ToolExecutionContext) -> None | Awaitable[None]:
        """Prepare the tool for the plan of ``ctx``."""
        ...

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        """Run one call with validated ``params``."""
        ...

    def deactivate(self, ctx: ToolExecutionContext) -> None | Awaitable[None]:
        """Release what ``activate`` acquired for the plan of ``ctx``."""
        ...


@runtime_checkable
class ToolSource(Protocol):
    """Something that yields tool instances, such as one MCP server or a skills folder."""

    def tools(self) -> Iterable[ToolInstance]:
        """Return the tools to register, in the order they should be listed."""
        ...


@runtime_checkable
class PlanHost(Protocol):
    """Where a plan's tools run when not in the caller's process (`toolcycle.hosts`).

    A plan opened with ``host=`` runs each tool's ``activate``, ``execute`` and
    ``deactivate`` through the stand-in the host gives for it; the runtime keeps
    every other step of the call. Once the plan's tools are deactivated, the
    runtime calls ``end``.
    """

    @property
    def name(self) -> str:
        """The host's name, as traces show it."""
        ...

    def tool(
        self, name: str, tool: ToolInstance, ctx: ToolExecutionContext, *, asynchronous: bool
    ) -> ToolInstance:
        """The stand-in whose stages run ``tool``'s in the plan's host (async ones if asked)."""
        ...

    def placement(self, ctx: ToolExecutionContext) -> str | None:
        """Where the plan's tools run now (a process, a node), for its traces."""
        ...

    def end(self, ctx: ToolExecutionContext) -> None:
        """The plan ended and its tools are deactivated: release what it held."""
        ...
