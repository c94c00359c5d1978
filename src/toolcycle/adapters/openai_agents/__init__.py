"""The OpenAI Agents SDK and toolcycle, both ways (extra ``openai-agents``).

- `function_tools` offers the tools a plan may run as the SDK's ``FunctionTool``
  objects. Each call goes through ``runtime.acall`` with the model's raw JSON
  arguments and its ``call_id``, so the plan's capabilities, validation, timeouts,
  redaction, traces and spans hold. A failed call answers the model with the
  runtime's message saying what to do instead; only a guardrail's stop
  (`GuardrailTripped`) raises, which ends the SDK's run, since a stop is for the
  host. A result with content parts answers with the SDK's structured tool outputs
  (``ToolOutputText``, ``ToolOutputImage``, ``ToolOutputFileContent``), built from
  the runtime's Responses API message.
- Deferred tools are found with the runtime's ``search_tools``, offered as one
  more function tool; each is enabled (``is_enabled``) once revealed in the plan.
  `tool_not_found_formatter` reveals one that the model calls by name before.
- `from_function_tool` is the other way: an SDK ``FunctionTool`` as a toolcycle
  `ToolInstance`, run under a plan's capabilities, validation and traces.

Approvals have one home. A tool that needs approval (by the runtime's rule for the
plan, or the rule `function_tools` is given) is offered with ``needs_approval=True``:
the SDK interrupts the run, and the host answers with ``RunState.approve`` or
`reject`. An approved call reaches
the runtime through ``runtime.aresume``, which claims it in the runtime's approval
ledger (so a run state resumed twice runs it once) and records the decision in the
call's trace; the plan's approver is not asked a second time. `reject` rejects a
call in the run state and in the runtime's ledger as one decision.
"""

from __future__ import annotations

try:
    import agents as _agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise ImportError(
        "toolcycle.adapters.openai_agents needs openai-agents, an optional extra: "
        "pip install -e '.[openai-agents]' from a clone (toolcycle[openai-agents] once published)"
    ) from exc

from toolcycle.adapters.openai_agents._approvals import reject
from toolcycle.adapters.openai_agents._reverse import SdkFunctionTool, from_function_tool
from toolcycle.adapters.openai_agents._tools import function_tools, tool_not_found_formatter

__all__ = [
    "SdkFunctionTool",
    "from_function_tool",
    "function_tools",
    "reject",
    "tool_not_found_formatter",
]
