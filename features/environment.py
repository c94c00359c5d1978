"""Behave hooks: every scenario gets its own runtime, closed when the scenario ends."""

from __future__ import annotations

import functools
import sqlite3
import sys
import threading
from typing import Any

from behave import register_type

from toolcycle import NullTracer, ToolRuntime


def _quoted_name(text: str) -> str:
    return text


# Names and plan ids are written in double quotes; this type stops a name at the
# closing quote, so that no step pattern can swallow the rest of another one.
_quoted_name.pattern = r'[^"]+'  # type: ignore[attr-defined]
register_type(Name=_quoted_name)


def _make_runtime(context: Any, **options: Any) -> ToolRuntime:
    """Replace the scenario's runtime by one built with ``options``; returns it."""
    old = getattr(context, "runtime", None)
    if old is not None:
        old.close()
    options.setdefault("tracer", NullTracer())
    options.setdefault("deactivate_timeout", 5.0)
    runtime = ToolRuntime(**options)
    runtime.add_trace_listener(context.traces.append)
    context.runtime = runtime
    return runtime


def before_feature(context: Any, feature: Any) -> None:
    # As tests/conftest.py: DBOS's SQLite tables need SQLite 3.42+ on Python 3.12+.
    if (
        feature.filename.endswith("durable_plans.feature")
        and sys.version_info >= (3, 12)
        and sqlite3.sqlite_version_info < (3, 42)
    ):
        feature.skip(
            f"DBOS on Python 3.12+ needs SQLite 3.42 or later; this one has {sqlite3.sqlite_version}"
        )


def before_scenario(context: Any, scenario: Any) -> None:
    context.traces = []
    context.tools = {}
    context.plans = {}
    context.plan = None
    context.order = []
    context.result = None
    context.results = []
    context.error = None
    context.deactivation_errors = []
    # Set in after_scenario: anything a scenario left blocked on it ends then.
    context.hang = threading.Event()
    context.make_runtime = functools.partial(_make_runtime, context)
    context.runtime = None
    context.make_runtime()


def after_scenario(context: Any, scenario: Any) -> None:
    context.hang.set()
    context.runtime.close()
