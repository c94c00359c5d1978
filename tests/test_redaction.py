"""Redaction: a planted secret never appears in anything the runtime exports."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel, Field, SecretStr

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
from toolcycle.cli import main
from toolcycle.otel import OpenTelemetry
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


def test_a_list_of_keys_is_refused_with_how_to_join_them() -> None:
    """A list where a pattern goes is refused by name, not as an unhashable type."""
    with pytest.raises(TypeError, match=r"key_pattern must be a regular expression.*'iban\|ssn'"):
        RedactionPolicy(key_pattern=["iban", "ssn"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"safe_keys must be a regular expression"):
        RedactionPolicy(safe_keys=("max_tokens",))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "error", "says"),
    [
        ("schema_marks", "no", TypeError, "schema_marks must be True or False, got str"),
        ("min_length", "3", ValueError, "min_length must be a whole number, 0 or more, got str"),
        ("min_length", -1, ValueError, "got a negative number"),
        ("min_length", True, ValueError, "got bool"),
    ],
)
def test_flags_and_lengths_of_the_wrong_kind_are_refused_when_made(
    field: str, value: object, error: type[Exception], says: str
) -> None:
    """A policy that would fail at its first call (or judge nothing) is refused at once."""
    with pytest.raises(error, match=re.escape(says)):
        RedactionPolicy(**{field: value})  # type: ignore[arg-type]


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
    named = {"properties": {"credentials": {"properties": {"max_tokens": {"type": "integer"}}}}}
    assert policy.masked(nested, named) == {"credentials": {"max_tokens": "[redacted]"}}
    assert policy.secrets(nested, named) == ("2048",)


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
    assert result.error == "max_tokens=9000 is over the model's limit"


_PASSWORD = {"type": "object", "properties": {"password": {"type": "string"}}}


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


_PIN = {"type": "string", "writeOnly": True}


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        (  # "#/..." inside a subschema with its own $id points into that subschema
            {
                "properties": {"auth": {"$ref": "https://example.com/auth"}},
                "$defs": {
                    "auth": {
                        "$id": "https://example.com/auth",
                        "properties": {"pin": {"$ref": "#/$defs/pin"}},
                        "$defs": {"pin": _PIN},
                    }
                },
            },
            {"auth": {"pin": "983271"}},
        ),
        (  # a relative reference to a subschema's $id
            {
                "$id": "https://example.com/root.json",
                "properties": {"pin": {"$ref": "pin.json"}},
                "$defs": {"pin": {"$id": "pin.json", **_PIN}},
            },
            {"pin": "983271"},
        ),
        (  # an absolute reference back into the document itself
            {
                "$id": "https://example.com/login.json",
                "properties": {"pin": {"$ref": "https://example.com/login.json#/$defs/pin"}},
                "$defs": {"pin": _PIN},
            },
            {"pin": "983271"},
        ),
        (  # draft 7's dependencies, in its schema form
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "properties": {"user": {"type": "string"}},
                "dependencies": {"user": {"properties": {"pin": _PIN}}},
            },
            {"user": "bob", "pin": "983271"},
        ),
        (  # draft 2019-09's $recursiveRef
            {
                "$schema": "https://json-schema.org/draft/2019-09/schema",
                "$recursiveAnchor": True,
                "properties": {"pin": _PIN, "child": {"$recursiveRef": "#"}},
            },
            {"child": {"pin": "983271"}},
        ),
    ],
    ids=["ref-in-embedded-resource", "relative-ref", "absolute-ref", "dependencies", "recursive"],
)
def test_a_mark_is_found_through_every_kind_of_reference(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    """References resolve against the nearest $id, as validation resolves them."""
    schema = {"type": "object", **schema}

    def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError(f"login failed for {params}")

    with ToolRuntime() as runtime:
        runtime.register(FakeTool(name="login", input_schema=schema, output=boom))
        with capture_traces(runtime) as traces, runtime.plan() as ctx:
            result = runtime.call({"id": "1", "name": "login", "arguments": arguments}, ctx)
    assert result.error is not None and "[redacted]" in result.error
    assert "983271" not in result.model_dump_json() + traces[0].model_dump_json()


def test_values_under_a_reference_to_a_preloaded_document_count_as_secret() -> None:
    """Redaction cannot read a schema outside the document: it fails closed."""
    account = "https://schemas.example.com/account.json"
    schema = {"type": "object", "properties": {"account": {"$ref": account}, "note": {}}}
    documents = {account: {"type": "object", "properties": {"id": {"type": "string"}}}}

    def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError(f"refused {params}")

    with ToolRuntime(schema_documents=documents) as runtime:
        runtime.register(FakeTool(name="t", input_schema=schema, output=boom))
        with runtime.plan() as ctx:
            arguments = {"account": {"id": "acct-7781"}, "note": "shown"}
            result = runtime.call({"id": "1", "name": "t", "arguments": arguments}, ctx)
    assert result.error == "refused {'account': {'id': '[redacted]'}, 'note': 'shown'}"


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


# -- every applicator of the schema, with pydantic's own schemas, through every export ----

KEY_A = "sk-dict-9f8e7d6c"
KEY_B = "sk-pair-1a2b3c4d"
KEY_C = "sk-pair-5e6f7a8b"
LONG = "sk-long-" + "q7" * 10  # over the maximum of 8: the validation message quotes it
HIDDEN = (KEY_A, KEY_B, KEY_C, LONG)
Short = Annotated[SecretStr, Field(max_length=8)]


@tool(writes=False)
def vault(keys: dict[str, SecretStr]) -> str:
    """Open a vault with named keys (pydantic puts them under additionalProperties)."""
    shown = {name: key.get_secret_value() for name, key in keys.items()}
    raise PermissionError(f"no vault takes {shown}")


@tool(writes=False)
def pair(keys: tuple[SecretStr, SecretStr]) -> str:
    """Sign with two keys (pydantic puts them under prefixItems)."""
    first, second = (key.get_secret_value() for key in keys)
    raise PermissionError(f"no signer takes {first} and {second}")


@tool(writes=False)
def short_vault(keys: dict[str, Short]) -> str:
    """Open a vault with short named keys."""
    return "opened"


@tool(writes=False)
def short_pair(keys: tuple[Short, Short]) -> str:
    """Sign with two short keys."""
    return "signed"


HOLE_CALLS = [
    ("vault", {"keys": {"prod": KEY_A}}),
    ("pair", {"keys": [KEY_B, KEY_C]}),
    ("short_vault", {"keys": {"prod": LONG}}),
    ("short_pair", {"keys": [LONG, LONG]}),
]


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A tracer provider that keeps its finished spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _span_text(exporter: InMemorySpanExporter) -> str:
    """Every name, attribute, status and event of the finished spans, as text."""
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [span.name, str(span.status.description)]
        parts += [str(value) for value in (span.attributes or {}).values()]
        for event in span.events:
            parts += [event.name, *(str(value) for value in (event.attributes or {}).values())]
    return "\n".join(parts)


def _result_text(results: list[ToolResult]) -> list[str]:
    text = [r.model_dump_json() for r in results] + [repr(r) for r in results]
    return text + [json.dumps(r.to_message()) for r in results if r.call is not None]


def _export_everything(
    calls: list[tuple[str, dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
    spans: tuple[TracerProvider, InMemorySpanExporter],
    **options: Any,
) -> str:
    """Run ``calls`` every way there is; return every byte the runtime exported."""
    provider, exporter = spans
    otel = OpenTelemetry(tracer_provider=provider, record_payloads=True)
    runtime = ToolRuntime(keep_traces=100, instrumentation=otel, **options)
    for item in (vault, pair, short_vault, short_pair):
        runtime.register(item)
    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    results: list[ToolResult] = []
    raw = [{"id": f"c{i}", "name": name, "arguments": a} for i, (name, a) in enumerate(calls)]
    with caplog.at_level(logging.DEBUG, logger="toolcycle"), runtime, runtime.plan() as ctx:
        for (name, arguments), call in zip(calls, raw, strict=True):
            results.append(runtime.execute(name, arguments, ctx))
            results.append(runtime.call(call, ctx))
            results.append(asyncio.run(runtime.acall(call, ctx)))
        results += runtime.call_many(raw, ctx)
        recent = runtime.recent_traces()
    text = _result_text(results)
    text += [t.model_dump_json() for t in [*traces, *recent]]
    text += [caplog.text, repr([record.__dict__ for record in caplog.records])]
    text += [_span_text(exporter)]
    return "\n".join(text)


def test_secrets_under_additional_properties_and_prefix_items_reach_no_export(
    caplog: pytest.LogCaptureFixture, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """dict[str, SecretStr] and tuple[SecretStr, ...]: hidden from results, traces, logs, spans."""
    text = _export_everything(HOLE_CALLS, caplog, spans)
    for secret in HIDDEN:
        assert secret not in text
    assert "no vault takes {'prod': '[redacted]'}" in text
    assert "no signer takes [redacted] and [redacted]" in text
    assert '{"keys":{"prod":"[redacted]"}}' in text  # the span's payload of the call


def test_the_export_check_sees_secrets_when_redaction_is_off(
    caplog: pytest.LogCaptureFixture, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """The check above can see a leak: without a policy every secret is exported."""
    text = _export_everything(HOLE_CALLS, caplog, spans, redaction=None)
    for secret in HIDDEN:
        assert secret in text


CLI_MODULE = """
from pydantic import SecretStr
from toolcycle import tool


@tool(writes=False)
def vault(keys: dict[str, SecretStr]) -> str:
    \"\"\"Open a vault.\"\"\"
    raise PermissionError(f"no vault takes {[k.get_secret_value() for k in keys.values()]}")
"""


def test_the_command_line_prints_no_secret_of_a_failed_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call command prints the error and the trace, with the secret hidden."""
    (tmp_path / "redaction_cli_tools.py").write_text(CLI_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "redaction_cli_tools", raising=False)
    arguments = json.dumps({"keys": {"prod": KEY_A}})
    code = main(["call", "vault", "--args", arguments, "--module", "redaction_cli_tools"])
    out, err = capsys.readouterr()
    assert code == 1
    assert KEY_A not in out + err
    assert "no vault takes ['[redacted]']" in json.loads(out)["error"]


def test_a_progress_message_quoting_a_secret_is_redacted_for_spans_and_listeners(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Progress messages go to the span, a stream and on_progress: redacted in each."""

    @tool(writes=False)
    def login(user: str, password: str, ctx: ToolExecutionContext) -> str:
        """Log in."""
        ctx.report_progress(1, 2, f"trying {user}:{password}")
        return user

    provider, exporter = spans
    heard: list[str | None] = []
    runtime = ToolRuntime(instrumentation=OpenTelemetry(tracer_provider=provider))
    runtime.register(login)
    with runtime, runtime.plan(on_progress=lambda event: heard.append(event.message)) as ctx:
        runtime.execute("login", {"user": "ada", "password": "hunter2-secret"}, ctx)
    [span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool login"]
    shown = [event.attributes["message"] for event in span.events if event.attributes]
    assert shown == heard == ["trying ada:[redacted]"]


def test_a_call_to_an_unknown_tool_shows_none_of_its_argument_values(
    caplog: pytest.LogCaptureFixture, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """No schema says what is secret, so every value is hidden, whatever its key."""
    arguments = {"pin": "483920-unknown", "nested": {"otp": "771199-unknown"}, "note": None}
    call = {"id": "u1", "name": "no_such_tool", "arguments": arguments}
    provider, exporter = spans
    runtime = ToolRuntime(instrumentation=OpenTelemetry(tracer_provider=provider))
    runtime.register(vault)
    traces: list[ToolExecutionTrace] = []
    runtime.add_trace_listener(traces.append)
    with caplog.at_level(logging.DEBUG, logger="toolcycle"), runtime, runtime.plan() as ctx:
        results = [runtime.call(call, ctx), asyncio.run(runtime.acall(call, ctx))]
        results += runtime.call_many([call, {**call, "id": "u2"}], ctx)
    expected = {"pin": "[redacted]", "nested": "[redacted]", "note": "[redacted]"}
    for result in results:
        assert result.error_type == "ToolNotFoundError"
        assert result.call is not None and result.call.arguments == expected
    text = "\n".join(
        _result_text(results)
        + [t.model_dump_json() for t in traces]
        + [caplog.text, _span_text(exporter)]
    )
    assert "483920-unknown" not in text and "771199-unknown" not in text


def test_the_arguments_of_an_unknown_tool_are_kept_without_a_policy() -> None:
    """redaction=None turns this off too: the call is answered with what it sent."""
    call = {"id": "u1", "name": "no_such_tool", "arguments": {"pin": "483920"}}
    with ToolRuntime(tracer=NullTracer(), redaction=None) as runtime, runtime.plan() as ctx:
        result = runtime.call(call, ctx)
    assert result.call is not None and result.call.arguments == {"pin": "483920"}


def _quoting(schema: dict[str, Any]) -> ToolRuntime:
    """A runtime with tool ``t`` of that input schema, failing with its whole arguments."""

    def boom(params: Any, ctx: Any) -> Any:
        raise RuntimeError(f"refused {params}")

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(FakeTool(name="t", input_schema=schema, output=boom))
    return runtime


def test_a_secret_used_as_a_key_under_a_sensitive_parent_is_hidden() -> None:
    """Under api_keys the key is the secret: hidden from the error, trace and the call."""
    secret = "sk-live-KEY123456"
    runtime = _quoting({"type": "object", "properties": {"api_keys": {"type": "object"}}})
    with runtime, capture_traces(runtime) as traces, runtime.plan() as ctx:
        call = {"id": "k", "name": "t", "arguments": {"api_keys": {secret: "prod"}}}
        result = runtime.call(call, ctx)
    assert result.error == "refused {'api_keys': {'[redacted]': '[redacted]'}}"
    assert result.call is not None and result.call.arguments == {"api_keys": "[redacted]"}
    assert secret not in result.model_dump_json() + traces[0].model_dump_json()


@pytest.mark.parametrize("secret", ["sk-live-KEY123456", "sk/live~KEY123456"])
def test_a_secret_key_is_hidden_from_the_pointers_of_validation_issues(secret: str) -> None:
    """An issue's pointer names the keys on its way, escaped as RFC 6901 says (/ is ~1)."""
    tokens = {"type": "object", "additionalProperties": {"type": "integer"}}
    runtime = _checked({"type": "object", "properties": {"tokens": tokens}})
    with runtime, capture_traces(runtime) as traces, runtime.plan() as ctx:
        result = runtime.call({"id": "k", "name": "t", "arguments": {"tokens": {secret: "x"}}}, ctx)
    assert result.validation is not None
    assert [issue.pointer for issue in result.validation.issues] == ["/tokens/[redacted]"]
    exported = result.model_dump_json() + traces[0].model_dump_json()
    assert "KEY123456" not in exported


def test_a_secret_quoted_as_ascii_json_is_scrubbed() -> None:
    """json.dumps escapes non-ASCII by default: that form of a secret is hidden too."""
    secret = "pässwörd-Geheim"

    def boom(params: Any, ctx: Any) -> Any:
        raise PermissionError(f"rejected {json.dumps(params)}")

    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(FakeTool(name="t", input_schema=_PASSWORD, output=boom))
    with runtime, runtime.plan() as ctx:
        result = runtime.execute("t", {"password": secret}, ctx)
    assert result.error == 'rejected {"password": "[redacted]"}'


def test_keys_of_a_dict_of_secret_keys_are_hidden() -> None:
    """dict[SecretStr, str]: pydantic marks propertyNames, so every key is a secret."""

    @tool(writes=False)
    def sign(keys: dict[SecretStr, str]) -> str:
        """Sign with each key."""
        raise PermissionError(f"no signer takes {[key.get_secret_value() for key in keys]}")

    with ToolRuntime(tracer=NullTracer()) as runtime, runtime.plan() as ctx:
        runtime.register(sign)
        call = {"id": "k", "name": "sign", "arguments": {"keys": {KEY_A: "prod"}}}
        result = runtime.call(call, ctx)
    assert result.error == "no signer takes ['[redacted]']"
    assert result.call is not None and result.call.arguments == {"keys": "[redacted]"}


def test_a_sensitive_object_keeps_the_names_its_schema_declares() -> None:
    """Declared property names are the schema's, not secrets: only their values are hidden."""
    schema = {
        "type": "object",
        "properties": {
            "login": {"writeOnly": True, "properties": {"user": {}, "pin": {}}},
        },
    }
    policy = RedactionPolicy()
    arguments = {"login": {"user": "ada-lovelace", "pin": "4321"}}
    assert policy.masked(arguments, schema) == {
        "login": {"user": "[redacted]", "pin": "[redacted]"}
    }
    assert set(policy.secrets(arguments, schema)) == {"ada-lovelace", "4321"}


WRITE_ONLY = {"type": "string", "writeOnly": True}
KEYWORD_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("properties", {"properties": {"k": WRITE_ONLY}}, {"k": "hidden-value"}),
    ("patternProperties", {"patternProperties": {"^k": WRITE_ONLY}}, {"k": "hidden-value"}),
    ("additionalProperties", {"additionalProperties": WRITE_ONLY}, {"k": "hidden-value"}),
    ("unevaluatedProperties", {"unevaluatedProperties": WRITE_ONLY}, {"k": "hidden-value"}),
    ("propertyNames", {"propertyNames": {"writeOnly": True}}, {"hidden-value": 1}),
    ("items", {"items": WRITE_ONLY}, ["hidden-value"]),
    ("prefixItems", {"prefixItems": [{}, WRITE_ONLY]}, ["shown", "hidden-value"]),
    ("items-array", {"items": [{}, WRITE_ONLY]}, ["shown", "hidden-value"]),
    ("additionalItems", {"items": [{}], "additionalItems": WRITE_ONLY}, ["a", "hidden-value"]),
    ("unevaluatedItems", {"prefixItems": [{}], "unevaluatedItems": WRITE_ONLY}, ["a", "hidden-value"]),
    ("contains", {"contains": WRITE_ONLY}, ["hidden-value"]),
    ("$ref", {"$ref": "#/$defs/S"}, "hidden-value"),
    ("$ref-anchor", {"$ref": "#secret"}, "hidden-value"),
    ("$ref-array-index", {"$ref": "#/$defs/list/1"}, "hidden-value"),
    ("$dynamicRef", {"$dynamicRef": "#secret"}, "hidden-value"),
    ("allOf", {"allOf": [{}, WRITE_ONLY]}, "hidden-value"),
    ("anyOf", {"anyOf": [{"type": "null"}, WRITE_ONLY]}, "hidden-value"),
    ("oneOf", {"oneOf": [{"type": "null"}, WRITE_ONLY]}, "hidden-value"),
    ("if", {"if": WRITE_ONLY}, "hidden-value"),
    ("then", {"if": {}, "then": WRITE_ONLY}, "hidden-value"),
    ("else", {"if": {}, "else": WRITE_ONLY}, "hidden-value"),
    ("dependentSchemas", {"dependentSchemas": {"k": {"properties": {"k": WRITE_ONLY}}}}, {"k": "hidden-value"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("schema", "value"), [case[1:] for case in KEYWORD_CASES], ids=[c[0] for c in KEYWORD_CASES]
)
def test_sensitivity_follows_every_applicator_keyword(schema: dict[str, Any], value: Any) -> None:
    """A mark reached through any applicator hides the value it applies to."""
    root = {
        "type": "object",
        "properties": {"v": schema},
        "$defs": {"S": WRITE_ONLY, "A": {"$anchor": "secret", **WRITE_ONLY}, "list": [{}, WRITE_ONLY]},
    }  # fmt: skip
    policy = RedactionPolicy()
    assert "hidden-value" in policy.secrets({"v": value}, root)
    assert "hidden-value" not in json.dumps(policy.masked({"v": value}, root))
    assert "shown" not in policy.secrets({"v": value}, root)


def _deep_dicts(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _deep_lists(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _bottom(value: Any) -> Any:
    """The leaf at the end of the first key (or item) at every level."""
    while isinstance(value, dict | list):
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return value


@pytest.mark.parametrize("depth", [5_000, 20_000])
def test_redaction_walks_values_of_any_depth(depth: int) -> None:
    """Collecting and masking keep their own stack: no RecursionError however deep."""
    policy = RedactionPolicy()
    for value in (
        _deep_dicts(depth, {"token": "deep-secret"}),
        _deep_lists(depth, {"token": "deep-secret"}),
    ):
        assert policy.secrets(value, {}) == ("deep-secret",)
        assert _bottom(policy.masked(value, {})) == "[redacted]"


@pytest.mark.parametrize("depth", [5_000, 20_000])
def test_a_call_with_deep_secret_arguments_gets_a_failed_result(depth: int) -> None:
    """execute, call and call_many answer arguments thousands deep instead of raising."""
    runtime = ToolRuntime(tracer=NullTracer())
    runtime.register(FakeTool(name="t", input_schema={"type": "object"}))
    arguments = {"password": _deep_dicts(depth, "deep-secret")}
    call = {"id": "d", "name": "t", "arguments": arguments}
    with runtime, runtime.plan() as ctx:
        results = [runtime.execute("t", arguments, ctx), runtime.call(call, ctx)]
        results += runtime.call_many([call, call], ctx)
    for result in results:
        assert not result.success and result.error_type == "ToolSchemaValidationError"
        assert "deep-secret" not in (result.error or "")
    assert results[1].call is not None and results[1].call.arguments == {"password": "[redacted]"}


def test_a_schema_1000_deep_is_read_without_recursion() -> None:
    """A schema as deep as its value, by properties and by nested allOf, is walked with a stack."""
    by_properties: Any = WRITE_ONLY
    by_branches: Any = WRITE_ONLY
    for _ in range(1_000):
        by_properties = {"type": "object", "properties": {"a": by_properties}}
        by_branches = {"allOf": [by_branches]}
    value = _deep_dicts(1_000, "deep-secret")
    policy = RedactionPolicy()
    assert policy.secrets(value, by_properties) == ("deep-secret",)
    assert _bottom(policy.masked(value, by_properties)) == "[redacted]"
    assert policy.secrets("deep-secret", by_branches) == ("deep-secret",)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#/$defs/A"}], "$defs": {"A": {"anyOf": [{"$ref": "#"}]}}},
        {"$dynamicAnchor": "n", "$dynamicRef": "#n"},
        {"$anchor": "me", "items": {"$ref": "#me"}, "additionalProperties": {"$ref": "#"}},
        {"if": {"$ref": "#"}, "then": {"$ref": "#"}, "dependentSchemas": {"a": {"$ref": "#"}}},
    ],
    ids=["self", "through-defs", "dynamic", "anchor", "conditional"],
)
def test_a_reference_cycle_in_the_schema_ends(schema: dict[str, Any]) -> None:
    """Each schema object is read once per value, so a cycle of references ends."""
    value = {"a": [{"token": "loop-secret", "b": [1, 2]}], "c": "plain"}
    policy = RedactionPolicy()
    assert policy.secrets(value, schema) == ("loop-secret",)
    assert policy.masked(value, schema) == {
        "a": [{"token": "[redacted]", "b": [1, 2]}],
        "c": "plain",
    }


def test_a_value_or_schema_that_contains_itself_is_walked_once() -> None:
    """Python objects may hold themselves; each is walked once per schema, so walks end."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    schema["allOf"] = [schema]
    value: dict[str, Any] = {"token": "loop-secret"}
    value["self"] = value
    policy = RedactionPolicy()
    assert policy.secrets(value, schema) == ("loop-secret",)
    masked = policy.masked(value, schema)
    assert masked["token"] == "[redacted]"
    assert masked["self"] is masked


class _Unreadable(Mapping[str, Any]):
    """A mapping whose every read raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no")

    def __len__(self) -> int:
        return 1


def test_values_that_cannot_be_shown_do_not_stop_redaction() -> None:
    """A 5,000-digit integer has no text and an unreadable mapping no items: neither raises."""
    arguments = {"token": 10**5000, "secret": _Unreadable(), "password": "shown-secret"}
    policy = RedactionPolicy()
    assert policy.secrets(arguments, {}) == ("shown-secret",)
    masked = policy.masked(arguments, {})
    assert masked == {"token": "[redacted]", "secret": "[redacted]", "password": "[redacted]"}


def test_masked_gives_back_the_arguments_themselves_when_nothing_is_secret() -> None:
    """Nothing to hide, nothing copied: the same object comes back."""
    arguments = {"city": "Oslo", "days": [1, 2], "max_tokens": 5}
    assert RedactionPolicy().masked(arguments, {}) is arguments


def test_the_cut_start_of_a_very_long_secret_is_scrubbed_in_linear_time() -> None:
    """A 1,000,000-character secret over a maxLength is hidden at once (it took 48 s)."""
    schema = {"type": "object", "properties": {"api_key": {"type": "string", "maxLength": 5}}}
    secret = "sk-" + "a1b2c3d4" * 125_000
    started = time.perf_counter()
    with _checked(schema) as runtime, runtime.plan() as ctx:
        result = runtime.execute("t", {"api_key": secret}, ctx)
    assert time.perf_counter() - started < 5.0
    assert result.error is not None and '"[redacted]... has 1000003 characters' in result.error
    assert secret[:12] not in result.error


def test_overlapping_cut_starts_are_replaced_once() -> None:
    """Two secrets whose starts overlap before one mark leave one [redacted]."""
    policy = RedactionPolicy()
    secrets = ("xyzw-abcd-1234", "abcd-1234-wxyz")
    assert policy.scrub("see xyzw-abcd-12... end", secrets) == "see [redacted]... end"
    assert policy.scrub("see abcd-12... end", secrets) == "see [redacted]... end"


def test_a_span_gets_no_payload_of_a_tool_unregistered_during_its_call(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """With its schema gone, nothing says what is secret: the span records no arguments."""
    provider, exporter = spans
    otel = OpenTelemetry(tracer_provider=provider, record_payloads=True)
    runtime = ToolRuntime(tracer=NullTracer(), instrumentation=otel)

    def leave(params: Any, ctx: Any) -> Any:
        runtime.unregister("t")
        return "done"

    schema = {"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}}}
    runtime.register(FakeTool(name="t", input_schema=schema, output=leave))
    with runtime, runtime.plan() as ctx:
        assert runtime.execute("t", {"pin": "998877"}, ctx).success
    assert "998877" not in _span_text(exporter)
