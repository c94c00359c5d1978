"""Shared fixtures: a fresh runtime per test, closed afterwards."""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolcycle import NullTracer, ToolRuntime

# The Robot Framework smoke suite (`python -m robot tests/smoke`), not pytest's to collect.
collect_ignore = ["smoke"]


def dbos_sqlite_gap() -> str | None:
    """Why DBOS cannot keep its record in SQLite on this interpreter, or None if it can.

    On Python 3.12 and later, DBOS's SQLite tables default their timestamps to
    ``unixepoch('subsec')``, which SQLite learnt in 3.42: with an older library every
    launch fails with a NOT NULL constraint (see docs/durable-plans.md).
    """
    if sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42):
        return (
            f"DBOS on Python 3.12+ needs SQLite 3.42 or later for its SQLite system "
            f"database; this interpreter has SQLite {sqlite3.sqlite_version}"
        )
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the durable-plan tests and examples where DBOS cannot use SQLite."""
    reason = dbos_sqlite_gap()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if (
            item.nodeid.startswith("tests/hosts/test_dbos")
            or "docs/durable-plans.md" in item.nodeid
        ):
            item.add_marker(skip)


@pytest.fixture
def runtime() -> Iterator[ToolRuntime]:
    """A runtime with a null tracer, closed when the test ends."""
    rt = ToolRuntime(tracer=NullTracer(), deactivate_timeout=5.0)
    try:
        yield rt
    finally:
        rt.close()


class LogWaiter(logging.Handler):
    """Notes the plan of each record of one event (with given fields), for tests to wait on.

    Log records are how the runtime says that something happened on another thread,
    so waiting for one proves an interleaving without sleeping.
    """

    def __init__(self, event: str, level: int, **fields: object) -> None:
        super().__init__(level)
        self.event = event
        self.fields = fields
        self.plans: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        attributes = vars(record)
        if record.getMessage() == self.event and all(
            attributes.get(name) == value for name, value in self.fields.items()
        ):
            with self.changed:
                self.plans.append(str(attributes.get("plan_id", "")))
                self.changed.notify_all()

    def wait(self, plan_id: str, timeout: float = 5.0) -> bool:
        """Whether the event was logged for ``plan_id`` within ``timeout`` seconds."""
        with self.changed:
            return self.changed.wait_for(lambda: plan_id in self.plans, timeout)


@pytest.fixture
def log_waiter() -> Iterator[Callable[..., LogWaiter]]:
    """Attaches a `LogWaiter` for an event to a logger, detached when the test ends.

    Call it as ``log_waiter(logger_name, event, level, **fields)``.
    """
    attached: list[tuple[logging.Logger, LogWaiter, int]] = []

    def attach(logger_name: str, event: str, level: int, **fields: object) -> LogWaiter:
        logger = logging.getLogger(logger_name)
        waiter = LogWaiter(event, level, **fields)
        attached.append((logger, waiter, logger.level))
        logger.setLevel(level)
        logger.addHandler(waiter)
        return waiter

    try:
        yield attach
    finally:
        for logger, waiter, level in reversed(attached):
            logger.removeHandler(waiter)
            logger.setLevel(level)


@pytest.fixture
def draining(log_waiter: Callable[..., LogWaiter]) -> Callable[[str], bool]:
    """Waits (at most 5 s) until a plan's end is waiting for its calls in flight."""
    return log_waiter("toolcycle.lifecycle", "plan.draining", logging.DEBUG).wait


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the workspace, with a file the tools must never touch."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.txt").write_text("precious")
    return folder
