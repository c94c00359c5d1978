"""Traces of calls, and where they go.

Every call that reaches ``execute`` yields one `ToolExecutionTrace`. The runtime
hands it to a `Tracer` (structlog by default, silent until the host configures
standard logging) and to any listeners the host adds.

toolcycle is a guest in its host's process, so it never configures logging: its
structlog loggers are built with explicit processors and write through the
standard ``logging`` module under the ``toolcycle`` logger name, which is silent
until the host attaches a handler or sets a level. The module-level structlog
configuration (which prints to stdout by default) is never consulted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from toolcycle.models import ToolExecutionTrace

# A library must not print: without this, a WARNING on an unconfigured host would
# reach the standard library's last-resort handler and appear on stderr.
logging.getLogger("toolcycle").addHandler(logging.NullHandler())

__all__ = [
    "NullTracer",
    "StructlogTracer",
    "TraceListener",
    "Tracer",
    "get_logger",
    "iso_utc",
    "lifecycle_enabled",
    "lifecycle_event",
]

TraceListener = Callable[[ToolExecutionTrace], object]
"""A callable that receives every trace; its return value is ignored."""


class Tracer(Protocol):
    """Receives the trace of every call; the runtime's one built-in sink."""

    def record(self, trace: ToolExecutionTrace) -> None:
        """Take one finished trace; must not block for long."""
        ...


class NullTracer:
    """A tracer that drops every trace."""

    def record(self, trace: ToolExecutionTrace) -> None:
        """Drop the trace."""


def get_logger(name: str = "toolcycle") -> Any:
    """Return a structlog logger that writes through standard ``logging`` logger ``name``.

    The processors are fixed here, so the host's structlog configuration, or its
    absence, changes nothing. The logger is built, and structlog imported, on its
    first use: a host that never enables toolcycle's logging never loads structlog.
    """
    return _LazyLogger(name)


class _LazyLogger:
    """Stands in for a structlog logger until something calls it."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        # Only reached for names the slots do not have: the logger's methods.
        logger = self._logger
        if logger is None:
            logger = self._logger = _structlog_logger(self._name)
        return getattr(logger, attribute)


def _structlog_logger(name: str) -> Any:
    import structlog

    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.processors.format_exc_info,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


class StructlogTracer:
    """Logs each trace as one ``tool.call`` event on the ``toolcycle.trace`` logger.

    Successful calls, and calls left ``pending`` (waiting for an approval or an
    answer, which is no failure), log at INFO; all other outcomes at WARNING. When
    the logger is disabled for the level, the trace is dropped without building an
    event.
    """

    def __init__(self, name: str = "toolcycle.trace") -> None:
        self._stdlib = logging.getLogger(name)
        self._log = get_logger(name)

    def drops(self, success: bool) -> bool:
        """Whether a trace logged at INFO (``success``) or WARNING would be dropped unlogged.

        True while the logger is off for the level, as it is on a host that has
        not configured logging; the runtime then need not build the trace for it.
        """
        return not self._stdlib.isEnabledFor(logging.INFO if success else logging.WARNING)

    def record(self, trace: ToolExecutionTrace) -> None:
        """Log the trace if the ``toolcycle.trace`` logger is enabled for its level."""
        quiet = trace.success or trace.status == "pending"
        if self.drops(quiet):
            return
        fields = trace.model_dump()
        if quiet:
            self._log.info("tool.call", **fields)
        else:
            self._log.warning("tool.call", **fields)


_log = get_logger("toolcycle.tracing")
_lifecycle_stdlib = logging.getLogger("toolcycle.lifecycle")
_lifecycle_log = get_logger("toolcycle.lifecycle")


def lifecycle_enabled() -> bool:
    """Whether lifecycle events are logged: the host enabled ``toolcycle.lifecycle`` at DEBUG."""
    return _lifecycle_stdlib.isEnabledFor(logging.DEBUG)


def lifecycle_event(event: str, **fields: Any) -> None:
    """Log one lifecycle step at DEBUG on ``toolcycle.lifecycle``, if anyone listens.

    The check comes first, so that on a host that has not enabled the logger a
    step costs one level lookup and no event is built.
    """
    if _lifecycle_stdlib.isEnabledFor(logging.DEBUG):
        _lifecycle_log.debug(event, **fields)


_second_cache: tuple[int, str] = (-1, "")


def iso_utc(seconds: float) -> str:
    """Format seconds since the epoch as ISO-8601 in UTC, with microseconds.

    The date and time up to the second are formatted once per second and reused:
    every call formats two timestamps, and most fall in the same second.
    """
    global _second_cache
    whole = int(seconds // 1)
    micros = round((seconds - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    cached_second, prefix = _second_cache
    if cached_second != whole:
        prefix = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second_cache = (whole, prefix)
    return f"{prefix}.{micros:06d}+00:00"
