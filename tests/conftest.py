"""Shared fixtures: a fresh runtime per test, closed afterwards."""

from __future__ import annotations

from collections.abc import Iterator

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
