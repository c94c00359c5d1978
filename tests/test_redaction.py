"""Redaction: a planted secret never appears in anything the runtime exports."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from toolcycle import (
    ApprovalDecision,
    NullTracer,
    RedactionPolicy,
    ToolDescriptor,
    ToolExecutionContext,
    ToolExecutionTrace,
    ToolResult,
    ToolRuntime,
    tool,
)
from toolcycle.testing import FakeTool, capture_traces

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


@pytest.mark.parametrize(
    "key",
    ["max_tokens", "maxOutputTokens", "max_new_tokens", "num_tokens", "token_limit", "TOKEN_COUNT"],
)
def test_counts_of_tokens_are_not_secrets(key: str) -> None:
    """A language model's token budget is a number anyone may read, not a token."""
    policy = RedactionPolicy()
    assert policy.secrets({key: 1024, "api_token": "tok-abc"}, {}) == ("tok-abc",)
    assert policy.masked({key: 1024}, {}) == {key: 1024}


@pytest.mark.parametrize("key", ["token", "tokens", "access_token", "refresh_tokens", "tokenizer"])
def test_keys_that_only_contain_a_count_word_stay_secret(key: str) -> None:
    """Only a whole key that names a count is safe: other token keys are still masked."""
    assert RedactionPolicy().masked({key: "abc123"}, {}) == {key: "[redacted]"}


def test_a_safe_key_is_still_masked_when_marked_or_under_a_secret() -> None:
    """A schema mark and a sensitive parent win over the safe keys."""
    policy = RedactionPolicy()
    schema = {"properties": {"max_tokens": {"type": "integer", "writeOnly": True}}}
    assert policy.masked({"max_tokens": 1024}, schema) == {"max_tokens": "[redacted]"}
    nested = {"credentials": {"max_tokens": 2048}}
    assert policy.masked(nested, {}) == {"credentials": {"max_tokens": "[redacted]"}}


def test_safe_keys_can_be_replaced_or_turned_off() -> None:
    """safe_keys=None masks every key the pattern matches; a pattern of your own replaces ours."""
    strict = RedactionPolicy(safe_keys=None)
    assert strict.masked({"max_tokens": 1024}, {}) == {"max_tokens": "[redacted]"}
    own = RedactionPolicy(safe_keys="session_id_hint")
    assert own.masked({"session_id_hint": "s-1", "max_tokens": 5}, {}) == {
        "session_id_hint": "s-1",
        "max_tokens": "[redacted]",
    }


def test_an_error_message_keeps_a_token_budget_readable() -> None:
    """The digits of max_tokens are not blanked out of the call's messages."""

    @tool(writes=False)
    def summarise(text: str, max_tokens: int) -> str:
        """Summarise a text."""
        raise ValueError(f"max_tokens={max_tokens} is over the model's limit")

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register(summarise)
        with runtime.plan() as ctx:
            result = runtime.execute("summarise", {"text": "hi", "max_tokens": 9000}, ctx)
    assert result.error == "ValueError: max_tokens=9000 is over the model's limit"


def _checked(schema: dict[str, Any]) -> ToolRuntime:
    """A runtime with one read-only tool ``t`` of that input schema."""
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(FakeTool(name="t", input_schema=schema))
    return runtime


def test_the_cut_start_of_a_long_secret_is_scrubbed_from_messages() -> None:
    """A message shows a long value cut short with "..."; the start it shows is hidden too."""
    schema = {"type": "object", "properties": {"api_key": {"type": "string", "pattern": "^x$"}}}
    secret = "sk-" + "A1b2C3d4" * 20
    with _checked(schema) as runtime, runtime.plan() as ctx:
        result = runtime.execute("t", {"api_key": secret}, ctx)
    assert not result.success and result.error is not None and result.trace is not None
    assert "[redacted]..." in result.error
    for text in (result.error, result.trace.model_dump_json(), result.validation.summary()):
        assert secret[:8] not in text


def test_a_secret_with_a_quote_is_scrubbed_as_json_shows_it() -> None:
    schema = {"type": "object", "properties": {"password": {"type": "string", "maxLength": 5}}}
    with _checked(schema) as runtime, runtime.plan() as ctx:
        result = runtime.execute("t", {"password": 'correct"horse'}, ctx)
    assert result.error is not None
    assert "horse" not in result.error
    assert "[redacted]" in result.error


def test_scrub_hides_the_start_of_a_secret_only_before_the_cut_mark() -> None:
    policy = RedactionPolicy()
    secrets = ("abcdefgh",)
    assert policy.scrub('"abcdef..." and abc...', secrets) == '"[redacted]..." and abc...'
    assert policy.scrub("abcdef is not cut", secrets) == "abcdef is not cut"


def test_a_deferred_calls_error_hides_a_secret_its_approver_quoted() -> None:
    """The pending result's error is the trace's, which is scrubbed, as for a denial."""
    secret = "sk-live-123456"

    def approver(request: Any) -> ApprovalDecision:
        return ApprovalDecision.defer(f"ask the owner of key {request.arguments['api_key']}")

    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}}
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(FakeTool(name="w", writes=True, input_schema=schema))
    with runtime, runtime.plan(approver=approver) as ctx:
        result = runtime.execute("w", {"api_key": secret}, ctx)
    assert result.pending is not None and result.error is not None
    assert secret not in result.error
    assert "ask the owner of key [redacted]" in result.error


_PASSWORDS = {
    "type": "object",
    "properties": {
        "password": {"type": "string", "maxLength": 3},
        "creds": {"type": "object", "properties": {"password": {"type": "string", "maxLength": 3}}},
    },
}


def test_secrets_are_found_in_arguments_given_as_any_mapping() -> None:
    import types

    with _checked(_PASSWORDS) as runtime, runtime.plan() as ctx:
        params = types.MappingProxyType({"password": "hunter2-secret"})
        result = runtime.execute("t", params, ctx)
    assert result.error is not None
    assert "hunter2-secret" not in result.error
    assert "[redacted]" in result.error


def test_secrets_are_found_inside_a_dataclass_argument() -> None:
    """Messages show a dataclass as the object it normalises to; its secrets are hidden."""
    import dataclasses

    @dataclasses.dataclass
    class Creds:
        password: str

    with _checked(_PASSWORDS) as runtime, runtime.plan() as ctx:
        result = runtime.execute("t", {"creds": Creds("hunter2-secret")}, ctx)
    assert result.error is not None
    assert "hunter2-secret" not in result.error
    assert "/creds/password" in result.error


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {"pin": {"$ref": "#/$defs/Pin"}},
            "$defs": {"Pin": {"type": "string", "writeOnly": True}},
        },
        {
            "type": "object",
            "properties": {
                "pin": {"anyOf": [{"type": "string", "writeOnly": True}, {"type": "null"}]}
            },
        },
    ],
    ids=["ref", "anyOf"],
)
def test_a_write_only_mark_behind_a_ref_or_in_a_branch_is_honoured(schema: dict[str, Any]) -> None:
    def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError(f"login failed for {params}")

    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="login", input_schema=schema, output=boom))
        with capture_traces(runtime) as traces, runtime.plan() as ctx:
            result = runtime.execute("login", {"pin": "983271"}, ctx)
    assert "983271" not in (result.error or "")
    assert "983271" not in traces[0].model_dump_json()
    policy = RedactionPolicy()
    assert policy.masked({"pin": "983271"}, schema) == {"pin": "[redacted]"}


class Creds(BaseModel):
    user: str
    pin: SecretStr


def test_pydantic_secret_fields_in_nested_and_optional_models_are_redacted() -> None:
    """A SecretStr in a nested model (a $ref) or an optional one (an anyOf) is a secret."""

    @tool(writes=False)
    def login(creds: Creds, otp: SecretStr | None = None) -> str:
        """Log in."""
        assert otp is not None
        raise RuntimeError(f"bad login {creds.pin.get_secret_value()} {otp.get_secret_value()}")

    with ToolRuntime() as runtime:
        runtime.register(login)
        with capture_traces(runtime) as traces, runtime.plan() as ctx:
            arguments = {"creds": {"user": "ada", "pin": "983271"}, "otp": "554433"}
            runtime.execute("login", arguments, ctx)
    dumped = traces[0].model_dump_json()
    assert "983271" not in dumped and "554433" not in dumped
    assert "bad login [redacted] [redacted]" in dumped


def test_a_self_referencing_schema_is_walked_without_end() -> None:
    """A $ref cycle is followed once per value, so masking a tree ends."""
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "pin": {"type": "string", "writeOnly": True},
                    "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
                },
            }
        },
    }
    tree = {"pin": "s1-xyz", "child": {"pin": "s2-xyz", "child": None}}
    policy = RedactionPolicy()
    assert policy.masked(tree, schema) == {
        "pin": "[redacted]",
        "child": {"pin": "[redacted]", "child": None},
    }
    assert set(policy.secrets(tree, schema)) >= {"s1-xyz", "s2-xyz"}
