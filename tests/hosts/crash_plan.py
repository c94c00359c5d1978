"""A durable plan in its own process, for tests/hosts/test_dbos_crash.py.

``python crash_plan.py FOLDER start BLOCKED_IDEMPOTENT`` runs plan ``order-1``:
``pay`` (asks the plan's approver, records a Change), then ``ship``, which says
``RUNNING`` on stdout and waits on stdin (the test kills the process there), then
``notify``. ``resume VERSION`` launches DBOS with that application version and
resumes the plan with ``DBOSPlan.resume``, then prints the plan's status and
result (or the resume's error) as JSON. Each body appends its name to
FOLDER/runs, and each approval asked ``asked:<tool>``, so the test counts what ran.
The environment's ``DBOS__VMID`` names the executor, as DBOS reads it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, SetWorkflowID

from toolcycle import (
    ApprovalDecision,
    ApprovalRequest,
    Change,
    NullTracer,
    PlanResumeError,
    ToolExecutionContext,
    ToolRuntime,
    tool,
)
from toolcycle.hosts import DBOSPlan

FOLDER = Path(sys.argv[1])
MODE = sys.argv[2]


def ran(name: str) -> None:
    with (FOLDER / "runs").open("a") as file:
        file.write(name + "\n")


@tool(writes=True)
def pay(amount: int, ctx: ToolExecutionContext) -> str:
    """Pay once, with the approver's yes; records the payment."""
    ran("pay")
    ctx.record_change(Change(kind="payment", target=f"card/{amount}"))
    return f"paid {amount}"


def approver(request: ApprovalRequest) -> ApprovalDecision:
    """Say yes, and note it in FOLDER/runs."""
    ran(f"asked:{request.descriptor.name}")
    return ApprovalDecision.approve(reason="fine")


IDEMPOTENT = (MODE == "start" and sys.argv[3] == "1") or (FOLDER / "idem").exists()


@tool(writes=False, idempotent=IDEMPOTENT)
def ship() -> str:
    """Ship; the first process is killed while this runs."""
    ran("ship")
    if MODE == "start":
        print("RUNNING", flush=True)
        sys.stdin.readline()  # the test kills the process while it waits here
    return "shipped"


@tool(writes=False, idempotent=True)
def notify() -> str:
    """Tell someone."""
    ran("notify")
    return "told"


runtime = ToolRuntime(tracer=NullTracer())
for fn in (pay, ship, notify):
    runtime.register(fn)


@DBOS.workflow()
def order() -> dict[str, Any]:
    with runtime.plan(durable=DBOSPlan(), approver=approver) as ctx:
        results = [
            runtime.execute("pay", {"amount": 3}, ctx),
            runtime.execute("ship", {}, ctx),
            runtime.execute("notify", {}, ctx),
        ]
        return {
            "calls": [[r.output, r.error_type] for r in results],
            "approved": [bool(r.trace and r.trace.approval) for r in results],
            "changes": [c.target for c in ctx.changes],
        }


version = "v1" if MODE == "start" else sys.argv[3]
DBOS(
    config=DBOSConfig(
        name="crash-plan",
        # SQLite in FOLDER unless the test gives a PostgreSQL server.
        system_database_url=os.environ.get("CRASH_PLAN_DATABASE_URL")
        or f"sqlite:///{FOLDER}/system.sqlite",
        application_version=version,
    )
)
DBOS.launch()  # recovers the pending plans of this version and this executor
if MODE == "start":
    if sys.argv[3] == "1":
        (FOLDER / "idem").touch()
    with SetWorkflowID("order-1"):
        order()
else:
    report: dict[str, Any] = {}
    try:
        report["result"] = DBOSPlan.resume("order-1").get_result()
    except PlanResumeError as exc:
        report["error"] = type(exc).__name__
    status = DBOS.get_workflow_status("order-1")
    report["status"] = status.status if status else None
    print(json.dumps(report), flush=True)
DBOS.destroy()
