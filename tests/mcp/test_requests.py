"""Servers' requests during a call: elicitation, sampling, roots, logging and progress.

Against the SDK's own ``MCPServer`` (tests/mcp/asking_server.py), in both protocol
eras: ``protocol="legacy"`` (the server sends requests of its own) and
``protocol="auto"`` (the 2026-07-28 era, where the call comes back asking).
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from toolcycle import (
    ApprovalDecision,
    NullTracer,
    ProgressEvent,
    ToolRuntime,
    current_resumption,
)
from toolcycle.sources.mcp import (
    ELICITATION_PENDING,
    ElicitAnswer,
    Elicitation,
    LogMessage,
    McpRequests,
    McpServer,
    RequestContext,
    Root,
    SamplingAnswer,
    SamplingRequest,
)
from toolcycle.sources.mcp._answering import Answerer
from toolcycle.sources.mcp._rounds import answer_all
from toolcycle.sources.mcp._translate import elicit_result, sampling_of

from .asking_server import build

ASKING = Path(__file__).with_name("asking_server.py")
ERAS = ["legacy", "auto"]
PERSON = {"name": "Ann", "age": 37}


def _answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
    return ElicitAnswer.accept(PERSON) if question.mode == "form" else ElicitAnswer.accept()


async def _sample(request: SamplingRequest, call: RequestContext) -> SamplingAnswer:
    return SamplingAnswer(f"answer to {request.messages[0]['text']}", "host-model")


HANDLERS = McpRequests(on_elicit=_answer, on_sample=_sample, roots=[Root("file:///work", "work")])


def _runtime() -> ToolRuntime:
    return ToolRuntime(tracer=NullTracer(), deactivate_timeout=15.0)


@pytest.mark.parametrize("protocol", ERAS)
def test_elicitation_sampling_and_roots_are_answered_by_the_handlers_in_each_era(
    protocol: str,
) -> None:
    """One set of handlers answers the same tools whichever era the connection speaks."""
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol=protocol, requests=HANDLERS))
        with runtime.plan() as ctx:
            assert runtime.execute("greet", {}, ctx).output == {"result": "hello Ann, 37"}
            sampled = runtime.execute("summarise", {"topic": "sky"}, ctx)
            assert sampled.output == {"result": "host-model: answer to sky"}
            listed = runtime.execute("roots", {}, ctx)
            assert listed.output == {"result": ["work=file:///work"]}
            signed = runtime.execute("sign_in", {}, ctx)
            assert signed.output == [{"type": "text", "text": "accept"}]


@pytest.mark.parametrize("protocol", ERAS)
def test_a_handler_sees_the_question_and_the_call_it_belongs_to(protocol: str) -> None:
    """The handler gets the message, schema and mode, and the plan, tool and call id."""
    seen: list[tuple[Elicitation, RequestContext]] = []

    def answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
        seen.append((question, call))
        return ElicitAnswer.accept(PERSON)

    with _runtime() as runtime:
        source = McpServer.in_process(build(), protocol=protocol, on_elicit=answer, prefix="a_")
        runtime.register_source(source)
        with runtime.plan() as ctx:
            result = runtime.execute("a_greet", {}, ctx)
    ((question, call),) = seen
    assert question.message == "Who is asking?" and question.mode == "form"
    assert question.schema is not None and set(question.schema["required"]) == {"name", "age"}
    assert call.tool_name == "a_greet" and call.call_id == result.trace.call_id
    assert call.plan is ctx and call.token is not None and call.server == "asking"
    assert call.era == ("legacy" if protocol == "legacy" else "2026-07-28")


@pytest.mark.parametrize("protocol", ERAS)
def test_url_mode_reaches_the_handler_with_its_url(protocol: str) -> None:
    """A URL-mode elicitation carries its URL (and, in the legacy era, the server's id)."""
    seen: list[Elicitation] = []

    async def answer(question: Elicitation, call: RequestContext) -> ElicitAnswer:
        seen.append(question)
        return ElicitAnswer.decline()

    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol=protocol, on_elicit=answer))
        with runtime.plan() as ctx:
            assert runtime.execute("sign_in", {}, ctx).output[0]["text"] == "decline"
    # The 2026-07-28 era has no elicitation id: URL completion is the retry itself.
    identity = "e-1" if protocol == "legacy" else None
    url = "https://example.invalid/sign-in"
    assert seen == [Elicitation("Sign in to continue", None, "url", url, identity)]


@pytest.mark.parametrize("protocol", ERAS)
def test_sampling_without_a_handler_fails_the_call_clearly_and_never_hangs(protocol: str) -> None:
    """No on_sample: the server learns the client cannot sample, and the call fails at once."""
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol=protocol))
        with runtime.plan() as ctx:
            result = runtime.execute("summarise", {"topic": "sky"}, ctx, timeout=10)
    assert not result.success and "sampling" in (result.error or "")
    assert result.trace is not None and result.trace.status == "error"


def test_a_sampling_request_the_handler_cannot_answer_is_declined_to_the_server() -> None:
    """In the 2026-07-28 era, a sampling input with no handler fails the call naming the server."""
    answerer = Answerer("s", McpRequests(), "auto")
    request = types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[], max_tokens=5)
    )
    with pytest.raises(Exception, match="no on_sample handler"):
        asyncio.run(answer_all(answerer.handlers, {"k": request}, RequestContext("s")))


def test_a_handler_that_answers_the_wrong_type_fails_the_call() -> None:
    """An on_sample that returns something else is an error to the server, not a crash."""
    answerer = Answerer("s", McpRequests(on_sample=lambda request, call: "text"), "auto")
    params = types.CreateMessageRequestParams(messages=[], max_tokens=5)
    answered = asyncio.run(answerer.handlers.sample(params, RequestContext("s")))
    assert isinstance(answered, types.ErrorData) and "not a SamplingAnswer" in answered.message
    asker = Answerer("s", McpRequests(on_elicit=lambda question, call: True), "auto")
    with pytest.raises(Exception, match="not an ElicitAnswer"):
        asyncio.run(asker.handlers.ask(Elicitation("?"), RequestContext("s")))


def test_a_question_nobody_answers_defers_the_call_and_resume_continues_it() -> None:
    """2026-07-28 era, no handler: a pending result with the question; resume finishes the call."""
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            first = runtime.execute("greet", {}, ctx)
            assert not first.success and first.error_type == ELICITATION_PENDING
            assert first.trace is not None and first.trace.status == "pending"
            pending = first.pending
            assert pending is not None and pending.request is not None
            assert pending.request["question"]["message"] == "Who is asking?"
            assert "Who is asking?" in (first.error or "")
            stored = pending.model_dump_json()
            done = runtime.resume(stored, ElicitAnswer.accept(PERSON).decision(), ctx)
    assert done.success and done.output == {"result": "hello Ann, 37"}


def test_an_answer_that_breaks_the_schema_is_refused_and_can_be_given_again() -> None:
    """The answer is checked against the requested schema; a bad one gives a new pending call."""
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            pending = runtime.execute("greet", {}, ctx).pending
            assert pending is not None
            bad = ElicitAnswer.accept({"name": "Ann", "age": "old"}).decision()
            again = runtime.resume(pending, bad, ctx)
            assert again.error_type == ELICITATION_PENDING and "/age" in (again.error or "")
            assert again.pending is not None and again.pending.approval_id != pending.approval_id
            done = asyncio.run(
                runtime.aresume(again.pending, ElicitAnswer.accept(PERSON).decision(), ctx)
            )
    assert done.output == {"result": "hello Ann, 37"}


def test_a_declined_question_reaches_the_server_on_resume() -> None:
    """Declining is an answer too: the server's tool hears it (and here refuses to go on)."""
    with _runtime() as runtime:
        runtime.register_source(
            McpServer.in_process(
                build(), protocol="auto", on_elicit=lambda q, c: ElicitAnswer.defer("later")
            )
        )
        with runtime.plan() as ctx:
            first = runtime.execute("greet", {}, ctx)
            assert first.pending is not None and "(later)" in (first.error or "")
            done = runtime.resume(first.pending, ElicitAnswer.decline().decision(), ctx)
    assert not done.success and done.error_type != ELICITATION_PENDING


def test_a_legacy_handler_that_defers_cancels_the_question_with_a_warning(caplog) -> None:
    """The legacy era cannot park a call: the server hears a cancel, and a warning says why."""
    with _runtime() as runtime:
        runtime.register_source(
            McpServer.in_process(
                build(), protocol="legacy", on_elicit=lambda q, c: ElicitAnswer.defer()
            )
        )
        with runtime.plan() as ctx, caplog.at_level(logging.WARNING, "toolcycle.mcp.asking"):
            result = runtime.execute("greet", {}, ctx)
    assert not result.success and result.pending is None
    assert "2026-07-28" in caplog.text


def test_a_server_that_keeps_asking_fails_the_call_after_max_rounds() -> None:
    """The retry loop is bounded: past max_rounds the call fails, naming the server."""
    answer = lambda question, call: ElicitAnswer.accept()
    with _runtime() as runtime:
        handlers = McpRequests(on_elicit=answer, max_rounds=3)
        runtime.register_source(McpServer.in_process(build(), protocol="auto", requests=handlers))
        events: list[ProgressEvent] = []
        with runtime.plan(on_progress=events.append) as ctx:
            result = runtime.execute("nag", {}, ctx)
    assert not result.success and "'asking' asked for input more than 3 times" in (
        result.error or ""
    )
    assert [e.message for e in events] == [
        f"input round {n}: elicitation/create" for n in (1, 2, 3)
    ]
    assert result.trace is not None and result.trace.progress_count == 3


@pytest.mark.parametrize("protocol", ERAS)
def test_server_logs_go_to_standard_logging_and_progress_to_listeners(
    protocol: str, caplog
) -> None:
    """Log messages land under toolcycle.mcp.<server>; progress reaches the plan's listener."""
    logged: list[tuple[LogMessage, str]] = []
    events: list[ProgressEvent] = []

    def on_log(message: LogMessage, server: str) -> None:
        logged.append((message, server))
        raise RuntimeError("a broken log handler is only logged")

    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol=protocol, on_log=on_log))
        with runtime.plan(on_progress=events.append) as ctx, caplog.at_level(logging.INFO):
            assert runtime.execute("chatty", {"steps": 2}, ctx).success
    records = [r for r in caplog.records if r.name == "toolcycle.mcp.asking"]
    assert any(r.getMessage() == "starting the chatty tool" for r in records)
    assert any("on_log handler" in r.getMessage() for r in records)
    assert logged and logged[0][0].level == "info" and logged[0][1] == "asking"
    assert [e.message for e in events] == ["step 1", "step 2"]


def test_handler_records_and_bundles_check_their_values() -> None:
    """Bad bundles are refused early; overrides replace only what is given; defer cannot resume."""
    with pytest.raises(ValueError, match="max_rounds"):
        McpRequests(max_rounds=0)
    with pytest.raises(TypeError, match="on_elicit must be callable"):
        McpRequests(on_elicit="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="protocol must be"):
        McpServer.in_process(build(), protocol="2026")  # type: ignore[arg-type]
    base = McpRequests(roots=[Root("file:///a")])
    assert base.with_overrides(on_log=None) is base
    assert base.with_overrides(max_rounds=2).max_rounds == 2
    with pytest.raises(ValueError, match="cannot resume"):
        ElicitAnswer.defer().decision()
    assert ElicitAnswer.cancel().decision() == ApprovalDecision.approve(
        reply={"action": "cancel", "content": None}
    )


def test_translations_keep_every_sampling_field_and_drop_content_outside_form_mode() -> None:
    """Sampling params become plain Python; URL-mode accepts carry no content."""
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    params = types.CreateMessageRequestParams(
        messages=[
            types.SamplingMessage(
                role="user", content=[types.TextContent(type="text", text="hi"), image]
            )
        ],
        max_tokens=9,
        temperature=0.5,
        stop_sequences=["."],
        model_preferences=types.ModelPreferences(speed_priority=1.0),
    )
    request = sampling_of(params)
    assert request.messages[0] == {"role": "user", "text": "hi"}
    assert request.messages[1]["content"]["mimeType"] == "image/png"
    assert request.stop_sequences == (".",) and request.model_preferences == {"speedPriority": 1.0}
    url = Elicitation("go", mode="url", url="https://x.invalid")
    assert elicit_result(ElicitAnswer.accept({"a": 1}), url).content is None
    answerer = Answerer("s", McpRequests(on_elicit=_answer))
    outside = ClientRequestContext(session=cast("Any", object()), request_id=1)
    assert answerer._owner(outside) == RequestContext("s")


def test_outside_a_resumed_call_there_is_no_resumption_and_no_call_id() -> None:
    """The core's hooks are empty outside the calls they describe."""
    assert current_resumption() is None
    with _runtime() as runtime, runtime.plan() as ctx:
        assert ctx.call_id is None


def test_roots_may_come_from_a_function_of_the_call() -> None:
    """A roots callable is asked per request with the call's context."""
    asked: list[RequestContext] = []

    async def roots(call: RequestContext) -> list[Root]:
        asked.append(call)
        return [Root("file:///one"), Root("file:///two", "two")]

    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto", roots=roots))
        with runtime.plan() as ctx:
            assert runtime.execute("roots", {}, ctx).output == {
                "result": ["None=file:///one", "two=file:///two"]
            }
    assert [call.tool_name for call in asked] == ["roots"]


_DEFER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from asking_server import build
    from toolcycle import NullTracer, ToolRuntime
    from toolcycle.sources.mcp import McpServer

    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            result = runtime.execute("greet", {}, ctx)
    print(result.pending.model_dump_json())
    """
)


def test_a_deferred_question_is_answered_and_resumed_in_another_process() -> None:
    """The pending record is plain JSON; a different process resumes the call with the answer."""
    done = subprocess.run(
        [sys.executable, "-c", _DEFER, str(ASKING.parent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pending: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert pending["request"]["question"]["message"] == "Who is asking?"
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            result = runtime.resume(pending, ElicitAnswer.accept(PERSON).decision(), ctx)
    assert result.output == {"result": "hello Ann, 37"}


def test_a_handler_answer_that_breaks_the_schema_fails_the_call() -> None:
    """A handler's accepted content is checked like a person's; a bad one fails the call."""
    bad = lambda question, call: _later(ElicitAnswer.accept({"name": 1}))
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto", on_elicit=bad))
        with runtime.plan() as ctx:
            result = runtime.execute("greet", {}, ctx)
    assert not result.success and "on_elicit answer to MCP server 'asking' was refused" in (
        result.error or ""
    )


async def _later(answer: ElicitAnswer) -> ElicitAnswer:
    return answer


def test_a_resume_whose_reply_is_not_an_answer_asks_again() -> None:
    """A reply that is neither accept, decline nor cancel leaves the call pending."""
    with _runtime() as runtime:
        runtime.register_source(McpServer.in_process(build(), protocol="auto"))
        with runtime.plan() as ctx:
            pending = runtime.execute("greet", {}, ctx).pending
            assert pending is not None
            again = runtime.resume(
                pending, ApprovalDecision.approve(reply={"action": "maybe"}), ctx
            )
    assert again.error_type == ELICITATION_PENDING and "'maybe' is not an answer" in (
        again.error or ""
    )


def test_a_server_naming_ever_new_loggers_gets_a_bounded_number_of_them(caplog) -> None:
    """The logging module keeps every logger: past the bound, the name goes in the message."""
    from toolcycle.sources.mcp._logs import LOGGER_NAME_MAX, LOGGERS_KEPT, ServerLog

    log = ServerLog("flood", None)
    prefix = "toolcycle.mcp.flood."

    async def send(count: int, long: str) -> None:
        for n in range(count):
            await log(types.LoggingMessageNotificationParams(level="info", logger=f"l{n}", data=n))
        await log(types.LoggingMessageNotificationParams(level="info", logger="l0", data="again"))
        await log(types.LoggingMessageNotificationParams(level="error", logger=long, data="long"))

    long_name = "x" * (LOGGER_NAME_MAX + 1)
    with caplog.at_level(logging.INFO):
        asyncio.run(send(LOGGERS_KEPT + 100, long_name))
    made = [name for name in logging.Logger.manager.loggerDict if name.startswith(prefix)]
    assert len(made) == LOGGERS_KEPT
    by_text = {r.getMessage(): r for r in caplog.records}
    assert by_text["0"].name == prefix + "l0" and by_text["again"].name == prefix + "l0"
    past = by_text[f"[l{LOGGERS_KEPT}] {LOGGERS_KEPT}"]  # the first name past the bound
    assert past.name == "toolcycle.mcp.flood" and past.levelno == logging.INFO
    cut = by_text[f"[{long_name[:LOGGER_NAME_MAX]}] long"]
    assert cut.name == "toolcycle.mcp.flood" and cut.levelno == logging.ERROR


def test_ever_new_server_names_get_a_bounded_number_of_loggers(caplog, monkeypatch) -> None:
    """Past the bound of server names, messages go to toolcycle.mcp with the name in brackets."""
    from toolcycle.sources.mcp import _logs

    monkeypatch.setattr(_logs, "_named", set())  # the bound counts from here, and is restored
    prefix = "toolcycle.mcp.session-"
    logs = [_logs.ServerLog(f"session-{n}", None) for n in range(_logs.SERVERS_KEPT + 50)]
    made = [name for name in logging.Logger.manager.loggerDict if name.startswith(prefix)]
    assert len(made) == _logs.SERVERS_KEPT
    assert logs[0].logger.name == prefix + "0"

    async def send() -> None:
        last = types.LoggingMessageNotificationParams
        await logs[-1](last(level="warning", data="full"))
        await logs[-1](last(level="info", logger="db", data="named"))

    with caplog.at_level(logging.INFO):
        asyncio.run(send())
    late = f"session-{_logs.SERVERS_KEPT + 49}"
    by_text = {r.getMessage(): r for r in caplog.records}
    assert by_text[f"[{late}] full"].name == "toolcycle.mcp"
    assert by_text[f"[{late}] full"].levelno == logging.WARNING
    assert by_text[f"[{late}] [db] named"].name == "toolcycle.mcp"
    assert not any(
        name.startswith(f"toolcycle.mcp.{late}") for name in logging.Logger.manager.loggerDict
    )
