"""Redaction: a planted secret never appears in anything the runtime exports."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from toolcycle import (
    RedactionPolicy,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolRuntime,
)

MARKER = "s3cr3t-MARKER-7f3a"

SCHEMA = {
    "type": "object",
    "properties": {
        "mode": {"enum": ["raise", "fail", "ok", "echo-note"]},
        "user": {"type": "string"},
        "password": {"type": "string", "maxLength": 10},
        "note": {"type": "string", "writeOnly": True},
        "pin": {"type": "string", "x-sensitive": True},
        "config": {"type": "object"},
    },
    "required": ["mode"],
}


class Login:
    """A tool that leaks its arguments into every kind of failure it can produce."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def discover(self) -> ToolDescriptor:
        return ToolDescriptor(name="login", input_schema=SCHEMA, capability={"writes": False})

    def activate(self, ctx: ToolExecutionContext) -> None:
        pass

    def execute(self, params: dict[str, Any], ctx: ToolExecutionContext) -> Any:
        self.seen.append(params)
        everything = repr(params)
        if params["mode"] == "raise":
            raise ValueError(f"login failed for {everything}")
        if params["mode"] == "fail":
            return ToolResult(success=False, error=f"refused: {everything}")
        return {"user": params.get("user")}

    def deactivate(self, ctx: ToolExecutionContext) -> None:
        pass


CALLS = [
    {"mode": "raise", "password": MARKER[:10]},  # 10 characters: a valid length
    {"mode": "raise", "note": MARKER},
    {"mode": "fail", "pin": MARKER},
    {"mode": "raise", "config": {"api_key": MARKER, "nested": {"Authorization": MARKER}}},
    {"mode": "ok", "password": MARKER},  # too long: a validation message quotes it
    {"mode": "fail", "user": "ann", "token": MARKER},
]


def exported(runtime: ToolRuntime, caplog: pytest.LogCaptureFixture) -> tuple[str, Login]:
    """Run every call and return every byte the runtime exported, with the tool."""
    tool = Login()
    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    runtime.register(tool)
    results = []
    with caplog.at_level(logging.DEBUG, logger="toolcycle"), runtime.plan() as ctx:
        for params in CALLS:
            results.append(runtime.execute("login", params, ctx))
            results.append(runtime.call({"id": "c", "name": "login", "arguments": params}, ctx))
    text = [r.model_dump_json() for r in results]
    text += [repr(r) for r in results]
    text += [t.model_dump_json() for t in traces]
    text += [caplog.text, repr([record.__dict__ for record in caplog.records])]
    text += [str(r.to_message()) for r in results if r.call is not None]
    return "\n".join(text), tool


def test_no_secret_reaches_results_traces_logs_or_messages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Keys, writeOnly and x-sensitive properties, nested values: all [redacted]."""
    with ToolRuntime() as runtime:
        text, tool = exported(runtime, caplog)
    assert MARKER not in text
    assert MARKER[:10] not in text
    assert "[redacted]" in text
    # The tool itself got the real values.
    assert next(p for p in tool.seen if "note" in p)["note"] == MARKER
    config = next(p for p in tool.seen if "config" in p)["config"]
    assert config["nested"]["Authorization"] == MARKER


def test_without_a_policy_the_same_calls_do_leak(caplog: pytest.LogCaptureFixture) -> None:
    """The leak test can see leaks: with redaction=None the marker is everywhere."""
    with ToolRuntime(redaction=None) as runtime:
        text, _ = exported(runtime, caplog)
    assert MARKER in text


def test_a_policy_can_name_its_own_keys_and_ignore_schema_marks() -> None:
    """Only the configured pattern applies when schema marks are off."""
    policy = RedactionPolicy(key_pattern="^ssn$", schema_marks=False)
    secrets = policy.secrets(
        {"ssn": "123-45-6789", "password": "visible", "note": "also visible"},
        {"properties": {"note": {"writeOnly": True}}},
    )
    assert secrets == ("123-45-6789",)
    assert policy.scrub("ssn 123-45-6789 ok", secrets) == "ssn [redacted] ok"


def test_short_values_and_non_text_are_handled_sensibly() -> None:
    """Values under min_length stay; numbers are redacted as their text; lists are walked."""
    policy = RedactionPolicy()
    secrets = policy.secrets(
        {"password": "ab", "token": 123456, "secrets": ["one-two", True, None]}, {}
    )
    assert set(secrets) == {"123456", "one-two"}
