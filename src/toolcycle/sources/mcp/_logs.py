"""A server's log messages, handed to the standard `logging` module and to ``on_log``.

Each message goes to ``toolcycle.mcp.<server name>``, or to a child of it named
after the server's own logger (``toolcycle.mcp.<server name>.<its logger>``), at
the level that matches the message's. `logging` keeps every logger it makes for
the life of the process, so a server that names a new logger in every message
would grow its host's memory without end: only the first `LOGGERS_KEPT` names of
a server (each at most `LOGGER_NAME_MAX` characters) get a logger of their own,
and the messages of any other go to the server's logger with the name before
their text, in brackets. For the same reason only the first `SERVERS_KEPT`
server names of the process get a logger: a host that names a server after each
user or session would otherwise add one for each. The messages of the servers
past that go to ``toolcycle.mcp``, with the server's name in brackets first.
"""

from __future__ import annotations

import inspect
import logging
import threading
from typing import TYPE_CHECKING

from toolcycle.sources.mcp._requests import LogMessage

if TYPE_CHECKING:
    import mcp_types

    from toolcycle.sources.mcp._requests import LogHandler

__all__ = ["LOGGERS_KEPT", "LOGGER_NAME_MAX", "SERVERS_KEPT", "ServerLog"]

LOGGERS_KEPT = 64
"""How many distinct logger names of one server get a child logger of their own."""
LOGGER_NAME_MAX = 200
"""The longest logger name of a server that gets a child logger."""
SERVERS_KEPT = 256
"""How many distinct server names get a logger of their own, in one process."""
_named: set[str] = set()  # the server names that have one
_named_lock = threading.Lock()
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class ServerLog:
    """Where one server's log messages go.

    Args:
        server: the server's name.
        on_log: the host's handler, if any; it sees every message too.
    """

    def __init__(self, server: str, on_log: LogHandler | None) -> None:
        self.server = server
        own = _own_logger(server)
        self.logger = own if own is not None else logging.getLogger("toolcycle.mcp")
        # Past the bound, the shared logger's messages say which server sent them.
        self._tag = "" if own is not None else f"[{server[:LOGGER_NAME_MAX]}] "
        self._on_log = on_log
        self._children: dict[str, logging.Logger] = {}

    async def __call__(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        """Log one message, then hand it to ``on_log``; an exception it raises is logged."""
        level = _LEVELS.get(params.level, logging.INFO)
        source = params.logger
        logger = self._child(source) if source and not self._tag else None
        if logger is not None:
            logger.log(level, "%s", params.data)
        elif source:
            self.logger.log(level, "%s[%s] %s", self._tag, source[:LOGGER_NAME_MAX], params.data)
        else:
            self.logger.log(level, "%s%s", self._tag, params.data)
        handler = self._on_log
        if handler is not None:
            try:
                # Called here, in order; a coroutine handler is awaited like the others.
                seen = handler(LogMessage(params.level, params.data, params.logger), self.server)
                if inspect.isawaitable(seen):
                    await seen
            except Exception:
                self.logger.exception("the on_log handler of MCP server %r raised", self.server)

    def _child(self, source: str) -> logging.Logger | None:
        """The logger of the server's logger ``source``; None past the bound."""
        logger = self._children.get(source)
        if logger is None:
            if len(self._children) >= LOGGERS_KEPT or len(source) > LOGGER_NAME_MAX:
                return None
            logger = self._children[source] = logging.getLogger(f"{self.logger.name}.{source}")
        return logger


def _own_logger(server: str) -> logging.Logger | None:
    """The logger of ``server``; None once `SERVERS_KEPT` other names have one."""
    with _named_lock:
        if server not in _named:
            if len(_named) >= SERVERS_KEPT:
                return None
            _named.add(server)
    return logging.getLogger(f"toolcycle.mcp.{server}")
