"""Where a plan's calls run and are kept, beyond the caller's process.

Each engine is an optional extra, imported only by its own module and only when
its name is first used here, so ``import toolcycle.hosts`` costs nothing:

- `DBOSPlan` (``_dbos``, ``toolcycle[dbos]``): a durable plan whose calls are DBOS
  steps of the plan's workflow, so a plan resumed after a crash does not run the
  completed calls again (see docs/durable-plans.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolcycle.hosts._dbos import DBOSPlan

__all__ = ["DBOSPlan"]


def __getattr__(name: str) -> Any:
    if name == "DBOSPlan":
        from toolcycle.hosts._dbos import DBOSPlan  # an optional extra: import on first use

        return DBOSPlan
    raise AttributeError(f"module 'toolcycle.hosts' has no attribute {name!r}")
