"""A call a server deferred, made as a model's tool call, is resumed as that same tool call."""

from __future__ import annotations

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.mcp import ELICITATION_PENDING, ElicitAnswer, McpServer

from .asking_server import build


def test_a_deferred_model_call_resumes_with_its_tool_call_id() -> None:
    """The pending record carries the model's call; the resumed result and trace answer its id."""
    model_call = {
        "id": "call-7",
        "type": "function",
        "function": {"name": "greet", "arguments": "{}"},
    }
    with ToolRuntime(tracer=NullTracer(), keep_traces=10) as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            first = runtime.call(model_call, ctx)
            assert first.error_type == ELICITATION_PENDING and first.pending is not None
            assert first.pending.call is not None and first.pending.call.id == "call-7"
            stored = first.pending.model_dump_json()
            answer = ElicitAnswer.accept({"name": "Ann", "age": 37}).decision()
            done = runtime.resume(stored, answer, ctx)
    assert done.success and done.call is not None and done.call.id == "call-7"
    assert done.trace is not None and done.trace.tool_call_id == "call-7"
