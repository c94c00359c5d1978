"""An in-process server driven the way the SDK's own ``Client(server)`` drives it.

With ``mode="auto"`` (the default) an in-process server is served through the
SDK's direct dispatcher on the 2026-07-28 protocol: a request awaits the
server's handler in the caller's task, with no streams, no JSON-RPC framing and
no handshake beyond the ``server/discover`` probe. So:

- what a call costs is what an SDK user pays for ``Client(server).call_tool``;
- cancellation is structural: cancelling the task that awaits a call cancels
  the server's handler, which runs in it;
- a changed tool list arrives through a ``subscriptions/listen`` subscription
  (and, from a handler that notifies within its request, as a notification).

With ``mode="legacy"`` the server is served over the SDK's in-memory JSON-RPC
transport with the ``initialize`` handshake, as a handshake-era client sees it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.client._memory import InMemoryTransport
from mcp.client._probe import negotiate_auto
from mcp.client.subscriptions import listen
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import modern_on_request
from mcp.shared.direct_dispatcher import create_direct_dispatcher_pair

from toolcycle.sources.mcp._session import Session

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from contextlib import AbstractAsyncContextManager, AsyncExitStack

    import mcp_types
    from mcp.client import ClientSession
    from mcp.client._transport import TransportStreams
    from mcp.client.session import MessageHandlerFnT

    from toolcycle.sources.mcp._stdio import StdioProcess

__all__ = ["InProcess", "Mode"]

_log = logging.getLogger("toolcycle.sources.mcp")

Mode = Literal["auto", "legacy"]


@dataclass(frozen=True, slots=True)
class InProcess:
    """An SDK server object in this process, and how to drive it."""

    server: Any
    same_loop: bool | None = None
    """Where a plan's connection lives: True or None (the default, plan scope
    only) the loop of the async caller that opens it, False the MCP loop."""
    mode: Mode = "auto"

    @property
    def direct(self) -> bool:
        """Whether calls go through the SDK's direct dispatcher (2026-07-28)."""
        return self.mode == "auto"

    def streams(
        self, on_lost: Callable[[], None]
    ) -> tuple[AbstractAsyncContextManager[TransportStreams], StdioProcess | None]:
        """The in-memory JSON-RPC transport, for ``mode="legacy"``."""
        return InMemoryTransport(self.server), None

    async def open_session(
        self,
        stack: AsyncExitStack,
        on_message: MessageHandlerFnT,
        client_info: mcp_types.Implementation,
        on_list_changed: Callable[[], None],
        options: Mapping[str, Any] | None = None,
    ) -> ClientSession:
        """Serve the server on a direct dispatcher pair and return a negotiated session.

        ``options`` are more keyword arguments of the `Session` (the callbacks
        that answer the server's requests).

        Everything entered is left by ``stack``, in the task that entered it.
        """
        server = _lowlevel(self.server)
        lifespan_state = await stack.enter_async_context(server.lifespan(server))
        # False, as Client(server) defaults to: a handler's unexpected exception
        # reaches the caller as the wire's opaque internal error, not its text.
        client_side, server_side = create_direct_dispatcher_pair(raise_handler_exceptions=False)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(server_side.close)
        await group.start(server_side.run, modern_on_request(server, lifespan_state), _no_notify)
        session = Session(
            dispatcher=client_side,
            message_handler=on_message,
            client_info=client_info,
            **(options or {}),
        )
        await stack.enter_async_context(session)
        await negotiate_auto(session)
        group.start_soon(_follow_tool_list, session, on_list_changed)
        return session


def _lowlevel(server: Any) -> Server[Any]:
    if isinstance(server, MCPServer):
        return server._lowlevel_server
    if not isinstance(server, Server):
        raise TypeError(
            f"in_process needs an SDK MCPServer or low-level Server, got {type(server).__name__}"
        )
    return server


async def _no_notify(_dctx: Any, _method: str, _params: Mapping[str, Any] | None) -> None:
    """The client sends a 2026-07-28 server no notifications; cancellation is structural."""


async def _follow_tool_list(session: ClientSession, on_list_changed: Callable[[], None]) -> None:
    """Mark the tool list changed for each ``tools/list_changed`` event of the subscription."""
    try:
        async with listen(session, tools_list_changed=True) as subscription:
            async for _event in subscription:
                on_list_changed()
    except Exception as exc:
        # A server that serves no subscriptions: calls still work, list changes
        # arrive only as notifications within a request.
        _log.debug("MCP in-process server: no tool-list subscription: %r", exc)
