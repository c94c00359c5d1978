"""A fresh runtime per scenario; nothing is shared between scenarios."""

from __future__ import annotations

import threading
from typing import Any

from toolcycle import NullTracer, ToolRuntime


def before_scenario(context: Any, scenario: Any) -> None:
    context.runtime = ToolRuntime(tracer=NullTracer(), deactivate_timeout=0.2)
    context.traces = []
    context.runtime.add_trace_listener(context.traces.append)
    context.tools = {}
    context.plans = {}
    context.results = []
    context.errors = []
    context.deactivation_errors = []
    context.order = []
    context.release = threading.Event()


def after_scenario(context: Any, scenario: Any) -> None:
    context.release.set()
    context.runtime.close()
