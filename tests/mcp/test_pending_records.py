"""Resuming a pending elicitation whose stored record was edited or cut short."""

from __future__ import annotations

from typing import Any

import pytest

from toolcycle import NullTracer, ToolRuntime
from toolcycle.sources.mcp import ElicitAnswer, McpServer

from .asking_server import build
from .test_requests import PERSON


def _resume_edited(edit: Any) -> Any:
    """Defer ``greet``, apply ``edit`` to the stored record's dict, resume it; the result."""
    with ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0) as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            first = runtime.execute("greet", {}, ctx)
            assert first.pending is not None
            stored = first.pending.model_dump(mode="json")
            edit(stored["request"])
            return runtime.resume(stored, ElicitAnswer.accept(PERSON).decision(), ctx)


@pytest.mark.parametrize("field", ["question", "answered", "key", "state"])
def test_a_pending_record_missing_a_field_fails_naming_the_field_and_what_to_do(
    field: str,
) -> None:
    """No bare KeyError: a ToolApprovalError that names the field and says to call again."""
    result = _resume_edited(lambda request: request.pop(field))
    assert not result.success and result.error_type == "ToolApprovalError", result.error
    assert f"has no {field!r}" in (result.error or "")
    assert "MCP server 'asking'" in (result.error or "")
    assert "call 'greet' again" in (result.error or "")


def test_a_pending_record_whose_question_lost_its_message_fails_naming_it() -> None:
    """The question's own text is a field too; a question that is not an object is refused."""
    result = _resume_edited(lambda request: request["question"].pop("message"))
    assert result.error_type == "ToolApprovalError"
    assert "has no 'question.message'" in (result.error or "")
    result = _resume_edited(lambda request: request.update(question="Who?"))
    assert result.error_type == "ToolApprovalError"
    assert "'question' is str, not an object" in (result.error or "")
