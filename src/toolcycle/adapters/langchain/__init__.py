"""LangChain and LangGraph: toolcycle's tools as LangChain tools, and LangChain tools as ours.

`langchain_tools(runtime, plan)` gives the tools a plan may run as LangChain
`BaseTool` objects, for a chat model's ``bind_tools`` and a LangGraph ``ToolNode``.
Each call goes through ``runtime.call`` / ``runtime.acall`` with the tool call's id,
so capabilities, validation, approvals, timeouts, redaction, traces and spans hold:

- ``args_schema`` is the tool's JSON Schema as a dict. LangChain does not validate a
  dict schema; the runtime does, and a model's mistake comes back as a tool message.
- A tool call in (``{"type": "tool_call", "id", "name", "args"}``, which is how a
  ``ToolNode`` calls tools) gives a `ToolMessage` out, ``status="error"`` for a failed
  call with the runtime's actionable message. Nothing the model got wrong raises, so
  nothing depends on LangChain's ``handle_tool_error``. Plain arguments in give the
  output, or the error text of a failed call.
- A call the plan's approver defers pauses a LangGraph run with ``interrupt()``: the
  graph's client sees the approval request, and ``Command(resume=decision)`` resumes the
  call through ``runtime.resume``, which claims it in the runtime's approval ledger.

Deferred tools are found with ``search_tools``, which names what it finds as LangChain
holds it; ``langchain_tools(runtime, plan, include_deferred=True)`` is the list for a
``ToolNode`` that must run them, the model being bound to a fresh list at each step.

`from_langchain(tool)` makes any LangChain tool a toolcycle tool, described by its
``args_schema`` and run through its own ``invoke`` or ``ainvoke``.
"""

from __future__ import annotations

try:
    import langchain_core as _langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without langchain-core
    raise ImportError(
        "toolcycle.adapters.langchain needs langchain-core, an optional extra: "
        "pip install -e '.[langchain]' from a clone (toolcycle[langchain] once published)"
    ) from exc

from toolcycle.adapters.langchain._reverse import from_langchain
from toolcycle.adapters.langchain._tools import langchain_tools

__all__ = ["from_langchain", "langchain_tools"]
