"""Where a plan's calls run and are kept, beyond the caller's process.

A host takes over one part of a call, the tool's own code: ``activate``,
``execute`` and ``deactivate``. Everything around it (validation, capability
checks, approvals, guardrails, the result cache, redaction, traces and spans)
stays in the caller's runtime, so a call looks the same wherever its body ran;
its trace adds the host's name and where the worker is (``host``, ``host_id``).

    from toolcycle.hosts import ProcessHost

    with runtime.plan(host=ProcessHost()) as ctx:
        runtime.execute("tool", {...}, ctx)

- `ProcessHost` (``_process``, no extra dependency): a worker process per plan.
  ``_child`` is the caller's side of one worker process (a pipe and a reading
  thread), ``_worker`` the worker's side (runs the stages it is sent, sends back
  outcomes), ``_proxy`` the stand-ins the runtime drives in place of hosted tools,
  ``_tools`` how a tool travels (pickled, by name, `ToolImport`) and `ToolHostError`.
  ``_base`` holds the bookkeeping both hosts share (`HostBase`, `HostedPlan`).
- `RayHost` (``_ray``, ``toolcycle[ray]``): an async Ray actor per plan, or a pool of
  actors for many plans, on any node of a Ray cluster, driving the same stand-ins as
  `ProcessHost`; ``_ray_actor`` is the actor's side. ``_remote_stage`` is what the
  actor and a worker process share: a stage's context, its tool, its packed outcome.
- `DBOSPlan` (``_dbos``, ``toolcycle[dbos]``): a durable plan whose calls are DBOS
  steps of the plan's workflow, so a plan resumed after a crash does not run the
  completed calls again; ``DBOSPlan.resume`` resumes one by its id (see
  docs/durable-plans.md). An optional extra, imported only when its name is first
  used here. ``_dbos_record`` is what its steps record, and the checks of a replay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcycle.hosts._process import ProcessHost
from toolcycle.hosts._tools import ToolHostError, ToolImport

if TYPE_CHECKING:
    from toolcycle.hosts._dbos import DBOSPlan
    from toolcycle.hosts._ray import RayHost

__all__ = ["DBOSPlan", "ProcessHost", "RayHost", "ToolHostError", "ToolImport"]


def __getattr__(name: str) -> Any:
    if name == "DBOSPlan":
        from toolcycle.hosts._dbos import DBOSPlan  # an optional extra: import on first use

        return DBOSPlan
    if name == "RayHost":
        from toolcycle.hosts._ray import RayHost  # an optional extra: import on first use

        return RayHost
    raise AttributeError(f"module 'toolcycle.hosts' has no attribute {name!r}")
