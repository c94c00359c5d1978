"""Steps for servers' requests during a call, against tests/mcp/asking_server.py."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from behave import given, then, when

ASKING = Path(__file__).resolve().parents[2] / "tests" / "mcp" / "asking_server.py"


def _build() -> Any:
    """The asking server (a file, not a package module)."""
    spec = importlib.util.spec_from_file_location("toolcycle_asking_server", ASKING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def _register(context: Any, protocol: str, **handlers: Any) -> None:
    from toolcycle.sources.mcp import McpServer

    source = McpServer.in_process(_build(), protocol=protocol, **handlers)
    context.runtime.register_source(source)
    context.plan = context.runtime.new_context()


@given(
    'the asking MCP server in process with protocol "{protocol}" and a handler that answers "{name}", {age:d}'
)
def given_answering_server(context: Any, protocol: str, name: str, age: int) -> None:
    from toolcycle.sources.mcp import ElicitAnswer

    _register(
        context, protocol, on_elicit=lambda q, c: ElicitAnswer.accept({"name": name, "age": age})
    )


@given('the asking MCP server in process with protocol "{protocol}" and no handlers')
def given_silent_server(context: Any, protocol: str) -> None:
    _register(context, protocol)


@when('I call the MCP tool "{tool}"')
def when_call(context: Any, tool: str) -> None:
    context.result = context.runtime.execute(
        tool, {"topic": "x"} if tool == "summarise" else {}, context.plan, timeout=10
    )


@when('I call the MCP tool "{tool}" while capturing logs')
def when_call_logging(context: Any, tool: str) -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("toolcycle.mcp")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        context.result = context.runtime.execute(tool, {}, context.plan, timeout=10)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    context.records = records


def _resume(context: Any, content: dict[str, Any]) -> None:
    from toolcycle.sources.mcp import ElicitAnswer

    pending = context.result.pending
    assert pending is not None, context.result
    decision = ElicitAnswer.accept(content).decision()
    context.result = context.runtime.resume(pending.model_dump_json(), decision, context.plan)


@when('I resume it with the answer "{name}", {age:d}')
def when_resume(context: Any, name: str, age: int) -> None:
    _resume(context, {"name": name, "age": age})


@when('I resume it with the answer "{name}", "{age}"')
def when_resume_text(context: Any, name: str, age: str) -> None:
    _resume(context, {"name": name, "age": age})


@then('the MCP call returned "{text}"')
def then_returned(context: Any, text: str) -> None:
    assert context.result.success, context.result.error
    assert context.result.output == {"result": text}, context.result.output


@then('the MCP call is pending with the question "{question}"')
def then_pending(context: Any, question: str) -> None:
    pending = context.result.pending
    assert pending is not None and pending.request is not None, context.result
    assert pending.request["question"]["message"] == question, pending.request


@then('the MCP call is pending with an error mentioning "{text}"')
def then_pending_error(context: Any, text: str) -> None:
    assert context.result.pending is not None, context.result
    assert text in (context.result.error or ""), context.result.error


@then('the MCP call failed mentioning "{text}"')
def then_failed(context: Any, text: str) -> None:
    assert not context.result.success and text in (context.result.error or ""), context.result


@then('the logger "{name}" received "{message}"')
def then_logged(context: Any, name: str, message: str) -> None:
    assert any(r.name == name and r.getMessage() == message for r in context.records), [
        (r.name, r.getMessage()) for r in context.records
    ]
