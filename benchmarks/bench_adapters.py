"""The three framework adapters beside each framework's own tool path (issue target: +15 %).

Each ``adapters_*`` module measures one adapter in interleaved rounds in one process and
returns the medians; this module runs the three one after another for ``python -m
benchmarks --only adapters`` and lists them in one table. A framework that is not
installed is left out with a note. Each module also runs on its own (``python -m
benchmarks.adapters_langchain`` and so on) and prints more detail.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

TARGET = 1.15
"""Adapter per call against the framework's own tool per call: at most this."""

ADAPTERS = {
    "pydantic-ai": "benchmarks.adapters_pydantic_ai",
    "OpenAI Agents": "benchmarks.adapters_openai_agents",
    "LangChain": "benchmarks.adapters_langchain",
}
"""The framework's name and the module that measures its adapter."""


def setup() -> None:
    """Nothing to prepare: each adapter module builds its own runtime."""


def teardown() -> None:
    """Nothing to release."""


def _measure_one(module_name: str) -> dict[str, float]:
    """``native_us``, ``adapter_us`` and ``ratio`` from one adapter module."""
    module = importlib.import_module(module_name)
    found: Any = module.measure()
    if asyncio.iscoroutine(found):  # the pydantic-ai module's measure is a coroutine
        found = asyncio.run(found)
    native = found.get("native_us", found.get("sdk_us"))
    return {"native_us": native, "adapter_us": found["adapter_us"], "ratio": found["ratio"]}


def measure_adapters() -> dict[str, dict[str, float] | str]:
    """Each framework's numbers, or why it was not measured."""
    rows: dict[str, dict[str, float] | str] = {}
    for framework, module_name in ADAPTERS.items():
        try:
            rows[framework] = _measure_one(module_name)
        except ImportError as exc:
            rows[framework] = f"not measured: {exc.name or exc} is not installed"
    return rows
