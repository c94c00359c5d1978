"""Shared fixtures: a fresh runtime per test, closed afterwards."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from toolcycle import NullTracer, ToolRuntime


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with a null tracer, closed when the test ends."""
    rt = ToolRuntime(tracer=NullTracer(), deactivate_timeout=5.0)
    try:
        yield rt
    finally:
        rt.close()


class _Draining(logging.Handler):
    """Notes each plan whose end has started waiting for its calls in flight."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.plans: set[str] = set()
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "plan.draining":
            with self.changed:
                self.plans.add(str(vars(record).get("plan_id", "")))
                self.changed.notify_all()

    def wait(self, plan_id: str, timeout: float = 5.0) -> bool:
        """Whether the end of ``plan_id`` started draining within ``timeout`` seconds."""
        with self.changed:
            return self.changed.wait_for(lambda: plan_id in self.plans, timeout)


@pytest.fixture
def draining() -> Iterator[Callable[[str], bool]]:
    """Waits (at most 5 s) until a plan's end is waiting for its calls in flight."""
    logger = logging.getLogger("toolcycle.lifecycle")
    handler = _Draining()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler.wait
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
