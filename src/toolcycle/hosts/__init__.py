"""Plan hosts: where a plan's tools run when not in the caller's process.

A host takes over one part of a call, the tool's own code: ``activate``,
``execute`` and ``deactivate``. Everything around it (validation, capability
checks, approvals, guardrails, the result cache, redaction, traces and spans)
stays in the caller's runtime, so a call looks the same wherever its body ran;
its trace adds the host's name and where the worker is (``host``, ``host_id``).

    from toolcycle.hosts import ProcessHost

    with runtime.plan(host=ProcessHost()) as ctx:
        runtime.execute("tool", {...}, ctx)

Modules:
    ``_process``: `ProcessHost`, a worker process per plan, and its plans' state.
    ``_child``: the caller's side of one worker process (a pipe and a reading thread).
    ``_worker``: the worker's side: runs the stages it is sent, sends back outcomes.
    ``_proxy``: the stand-ins the runtime drives in place of hosted tools.
    ``_tools``: how a tool travels (pickled, by name, `ToolImport`); `ToolHostError`.
"""

from toolcycle.hosts._process import ProcessHost
from toolcycle.hosts._tools import ToolHostError, ToolImport

__all__ = ["ProcessHost", "ToolHostError", "ToolImport"]
