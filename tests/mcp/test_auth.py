"""Remote MCP servers with credentials, against a loopback server that requires a bearer token."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from mcp.shared.exceptions import MCPError
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolcycle import NullTracer, ToolActivationError, ToolExecutionContext, ToolRuntime
from toolcycle.otel import OpenTelemetry
from toolcycle.sources.mcp import (
    FileTokenStorage,
    HttpCredentials,
    McpAuthError,
    McpCallError,
    McpServer,
    McpTool,
    MemoryTokenStorage,
    _auth,
)

from .asgi import read_body, replay, send_json_error
from .auth_server import Tokens, serve


@pytest.fixture(scope="module")
def tokens() -> Tokens:
    """The token table of the module's server."""
    return Tokens()


@pytest.fixture(scope="module")
def url(tokens: Tokens) -> Iterator[str]:
    """The MCP URL of a loopback server that requires a bearer token."""
    with serve(tokens) as address:
        yield address


@pytest.fixture
def service(tokens: Tokens) -> dict[str, str]:
    """Headers of a service account, valid for discovery."""
    return {"Authorization": "Bearer " + tokens.issue("service-token-0001", "service")}


class Bearer(httpx2.Auth):
    """A plain httpx2 auth that signs each request with a fixed token."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


def whoami(runtime: ToolRuntime, ctx: ToolExecutionContext) -> Any:
    result = runtime.execute("whoami", {}, ctx)
    assert result.success, result.error
    return result.output["result"]


def test_headers_carry_a_token_to_a_server_that_requires_one(
    url: str, service: dict[str, str]
) -> None:
    """Discovery and calls present the headers; the server sees the service identity."""
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(McpServer.http(url, headers=service, name="guarded"))
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "service"


def test_an_httpx_auth_signs_every_request(url: str, tokens: Tokens) -> None:
    """auth= takes any httpx2.Auth; it signs discovery and calls alike."""
    token = tokens.issue("auth-object-token", "robot")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(McpServer.http(url, auth=Bearer(token), name="guarded"))
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "robot"


def test_a_refused_token_fails_registration_naming_the_server_and_hiding_the_token(
    url: str,
) -> None:
    """An unknown token: McpAuthError with the server's name, and no token in the message."""
    source = McpServer.http(url, headers={"Authorization": "Bearer not-a-known-token"}, name="g")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        with pytest.raises(McpAuthError, match=r"MCP server 'g' refused the credentials") as info:
            runtime.register_source(source)
    assert info.value.server == "g" and info.value.status == 401
    assert "not-a-known-token" not in str(info.value)


def test_each_plan_presents_its_own_credentials_on_its_own_connection(
    url: str, tokens: Tokens, service: dict[str, str]
) -> None:
    """Two users' plans, open at once, are two identities to the server."""
    tokens.issue("alice-token-1", "alice")
    tokens.issue("bob-token-1", "bob")

    def per_user(ctx: ToolExecutionContext) -> dict[str, str]:
        return {"Authorization": f"Bearer {ctx.metadata['user']}-token-1"}

    source = McpServer.http(url, headers=service, credentials=per_user, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan(metadata={"user": "alice"}) as alice:
            with runtime.plan(metadata={"user": "bob"}) as bob:
                assert whoami(runtime, alice) == "alice"
                assert whoami(runtime, bob) == "bob"
                assert whoami(runtime, alice) == "alice"
                connections = {id(share.connection) for share in source._sharing._shares.values()}
                assert len(connections) == 2


def test_discovery_during_a_plan_presents_the_fixed_credentials_not_the_plans(
    url: str, tokens: Tokens, service: dict[str, str]
) -> None:
    """A re-listing while a plan's connection is open goes out with headers= alone."""
    tokens.issue("dave-token-1", "dave")
    source = McpServer.http(
        url,
        headers=service,
        credentials=lambda ctx: {"Authorization": "Bearer dave-token-1"},
        name="guarded",
    )
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "dave"
            start = len(tokens.presented)
            names = [tool.discover().name for tool in source.tools()]
            assert names == ["whoami", "echo", "quote"]
            listed_with = set(tokens.presented[start:])
    assert listed_with == {"service-token-0001"}


def test_an_async_resolver_may_return_credentials_with_an_auth(url: str, tokens: Tokens) -> None:
    """The resolver may be a coroutine function and give an httpx2.Auth of its own."""
    token = tokens.issue("carol-token-1", "carol")

    async def resolve(ctx: ToolExecutionContext) -> HttpCredentials:
        await asyncio.sleep(0)
        return HttpCredentials(auth=Bearer(token))

    source = McpServer.http(url, auth=Bearer(token), credentials=resolve, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "carol"


def test_a_token_that_expires_mid_plan_is_refreshed_once_then_the_call_fails(
    url: str, tokens: Tokens, service: dict[str, str]
) -> None:
    """A 401 asks the resolver again and retries; a second 401 fails the call, naming the server."""
    current = {"token": tokens.issue("dave-token-1", "dave")}
    asked: list[str] = []

    def resolve(ctx: ToolExecutionContext) -> HttpCredentials:
        asked.append(current["token"])
        return HttpCredentials(headers={"Authorization": f"Bearer {current['token']}"})

    source = McpServer.http(url, headers=service, credentials=resolve, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "dave"
            tokens.revoke("dave-token-1")  # it expires
            current["token"] = tokens.issue("dave-token-2", "dave")
            assert whoami(runtime, ctx) == "dave"
            assert asked == ["dave-token-1", "dave-token-2"]
            tokens.revoke("dave-token-2")  # and no fresh one comes
            failed = runtime.execute("whoami", {}, ctx)
            assert asked == ["dave-token-1", "dave-token-2", "dave-token-2"]
            assert not failed.success and failed.error_type == "McpAuthError"
            assert "MCP server 'guarded' refused the credentials" in (failed.error or "")
            assert "dave-token" not in (failed.error or "")
            current["token"] = tokens.issue("dave-token-3", "dave")
            assert whoami(runtime, ctx) == "dave"  # the same connection goes on


def test_fixed_credentials_are_not_retried_after_a_401(url: str, tokens: Tokens) -> None:
    """Without a resolver there is nothing fresh to ask for: the first 401 fails the call."""
    token = tokens.issue("erin-token-1", "erin")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(McpServer.http(url, auth=Bearer(token), name="guarded"))
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "erin"
            tokens.revoke(token)
            before = len(tokens.presented)
            failed = runtime.execute("whoami", {}, ctx)
            assert failed.error_type == "McpAuthError"
            assert "fresh credentials" not in (failed.error or "")
            assert tokens.presented[before:] == [token]


def test_a_resolver_that_returns_the_wrong_type_fails_activation(
    url: str, service: dict[str, str]
) -> None:
    """Anything but HttpCredentials or a mapping is refused with a message saying what to return."""
    source = McpServer.http(url, headers=service, credentials=lambda ctx: 42, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            with pytest.raises(ToolActivationError, match="return HttpCredentials or a mapping"):
                runtime.activate("whoami", ctx)


def test_per_plan_credentials_need_plan_scope() -> None:
    """A runtime-wide connection cannot carry one plan's credentials."""
    with pytest.raises(ValueError, match="needs scope='plan'"):
        McpServer.http("http://127.0.0.1:1/mcp", credentials=lambda ctx: {}, scope="runtime")


def test_credentials_show_header_names_but_never_values() -> None:
    """The repr of HttpCredentials names the headers and the auth type only."""
    text = repr(HttpCredentials(headers={"Authorization": "Bearer s3cr3t"}, auth=Bearer("x")))
    assert text == "HttpCredentials(headers=['Authorization'], auth=Bearer)"


class _Leaky:
    """ASGI middleware: a call of ``leak`` is answered with a JSON-RPC error quoting the token."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) != ("POST", "/mcp"):
            return await self.app(scope, receive, send)
        body = await read_body(receive)
        request = json.loads(body)
        if request.get("method") == "tools/call" and request["params"]["name"] == "leak":
            quoted = "bad: " + dict(scope["headers"])[b"authorization"].decode()
            return await send_json_error(send, request["id"], -32001, quoted)
        return await self.app(scope, replay(body, receive), send)


def test_no_secret_reaches_errors_traces_spans_or_logs(
    tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    """A token the transport quotes back is scrubbed; nothing exported holds a header value."""
    secret = tokens.issue("frank-secret-token-9", "frank")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = ToolRuntime(instrumentation=OpenTelemetry(tracer_provider=provider))
    caplog.set_level(logging.DEBUG)
    with serve(tokens, wrap=_Leaky) as address, runtime:
        headers = {"Authorization": f"Bearer {secret}", "X-Api-Key": "key-abcdef-123"}
        source = McpServer.http(address, headers=headers, name="guarded")
        descriptor = runtime.register_source(source)[0]
        runtime.register(McpTool(source, descriptor.model_copy(update={"name": "leak"}), "leak"))
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "frank"
            failed = runtime.execute("leak", {}, ctx)
    assert failed.error_type == "McpCallError"
    assert failed.error is not None and "bad: [redacted]" in failed.error
    exported = [
        failed.error,
        failed.trace.model_dump_json(),
        caplog.text,
        *(json.dumps(dict(span.attributes or {})) for span in exporter.get_finished_spans()),
        *(str(event.attributes) for s in exporter.get_finished_spans() for event in s.events),
        *(s.status.description or "" for s in exporter.get_finished_spans()),
    ]
    assert exporter.get_finished_spans()
    for text in exported:
        assert secret not in text and "key-abcdef-123" not in text


def test_concurrent_plans_refresh_independently(url: str, tokens: Tokens) -> None:
    """Two users' plans on threads at once keep their own identities."""
    tokens.issue("gina-token-1", "gina")
    tokens.issue("hal-token-1", "hal")
    seen: dict[str, Any] = {}
    source = McpServer.http(
        url,
        auth=Bearer("gina-token-1"),
        credentials=lambda ctx: {"Authorization": f"Bearer {ctx.metadata['user']}-token-1"},
        name="guarded",
    )
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        barrier = threading.Barrier(2, timeout=10)

        def run(user: str) -> None:
            with runtime.plan(metadata={"user": user}) as ctx:
                barrier.wait()
                seen[user] = whoami(runtime, ctx)

        threads = [threading.Thread(target=run, args=(user,)) for user in ("gina", "hal")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    assert seen == {"gina": "gina", "hal": "hal"}


def _client_credentials(url: str, storage: Any) -> ClientCredentialsOAuthProvider:
    issuer = url.removesuffix("/mcp") + "/issuer"
    return ClientCredentialsOAuthProvider(
        server_url=url, storage=storage, client_id="svc", client_secret="svc-secret", issuer=issuer
    )


def test_the_sdk_client_credentials_provider_gets_and_renews_a_token_mid_plan(
    url: str, tokens: Tokens, tmp_path: Path
) -> None:
    """OAuth for a service: the SDK's provider fetches a token, and a fresh one after a 401."""
    storage = FileTokenStorage(tmp_path / "tokens" / "svc.json")
    source = McpServer.http(url, auth=_client_credentials(url, storage), name="guarded")
    before = len(tokens.granted)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "machine"
            first = tokens.granted[-1]
            tokens.revoke(first)  # it expires mid-plan
            assert whoami(runtime, ctx) == "machine"
            assert len(tokens.granted) == before + 2
            for granted in tokens.granted[before:]:  # no token is ever exported
                assert granted not in repr(storage) and granted not in repr(source)
    stored = asyncio.run(storage.get_tokens())
    assert stored is not None and stored.access_token == tokens.granted[-1]
    assert stat.S_IMODE((tmp_path / "tokens" / "svc.json").stat().st_mode) == 0o600


def test_an_oauth_token_the_server_quotes_back_is_scrubbed(tokens: Tokens) -> None:
    """The tokens an SDK OAuth provider holds count as secrets too."""
    with serve(tokens, wrap=_Leaky) as address, ToolRuntime(tracer=NullTracer()) as runtime:
        source = McpServer.http(
            address, auth=_client_credentials(address, MemoryTokenStorage()), name="guarded"
        )
        descriptor = runtime.register_source(source)[0]
        runtime.register(McpTool(source, descriptor.model_copy(update={"name": "leak"}), "leak"))
        with runtime.plan() as ctx:
            failed = runtime.execute("leak", {}, ctx)
    assert failed.error == "MCP server 'guarded' answered with error -32001: bad: Bearer [redacted]"


def test_a_plans_own_token_the_server_quotes_back_is_scrubbed(tokens: Tokens) -> None:
    """Headers from the resolver count as secrets, like the fixed ones."""
    secret = tokens.issue("ivy-secret-token-7", "ivy")
    with serve(tokens, wrap=_Leaky) as address, ToolRuntime(tracer=NullTracer()) as runtime:
        source = McpServer.http(
            address,
            headers={"Authorization": f"Bearer {secret}"},
            credentials=lambda ctx: {"Authorization": f"Bearer {secret}"},
            name="guarded",
        )
        descriptor = runtime.register_source(source)[0]
        runtime.register(McpTool(source, descriptor.model_copy(update={"name": "leak"}), "leak"))
        with runtime.plan() as ctx:
            failed = runtime.execute("leak", {}, ctx)
    assert failed.error is not None and secret not in failed.error


def test_a_token_the_server_quotes_in_its_error_data_is_scrubbed(
    url: str, tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    """McpCallError.data is scrubbed like the message: in its strings and keys, at any depth."""
    secret = tokens.issue("judy-secret-token-3", "judy")
    source = McpServer.http(url, headers={"Authorization": f"Bearer {secret}"}, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            failed = runtime.execute("quote", {}, ctx)
            clean = runtime.execute("quote", {"leak": False}, ctx)
    error = failed.exception
    assert isinstance(error, McpCallError) and error.code == -32001
    assert error.data == {
        "request": {"authorization": "[redacted]", "attempts": 2},  # the whole header value
        "seen": ["[redacted]", {"[redacted]": "as a key"}, None, True],
    }
    # The SDK's own error, which carries the raw data, is no longer reachable from it.
    assert error.__cause__ is None and error.__suppress_context__
    logging.getLogger("host").error("the call failed: %r", error.data, exc_info=error)
    (logged,) = [record for record in caplog.records if record.name == "host"]
    assert secret not in logging.Formatter().format(logged)  # the traceback included
    assert isinstance(clean.exception, McpCallError)  # nothing to hide: the data as sent
    assert clean.exception.data == {"hint": "try later", "attempts": [1, 2]}
    assert isinstance(clean.exception.__cause__, MCPError)


def test_a_resolver_that_raises_on_refresh_fails_the_call_naming_it_not_the_server(
    url: str, tokens: Tokens, service: dict[str, str]
) -> None:
    """The refusal stands with the resolver's error; the connection goes on for later calls."""
    current = {"token": tokens.issue("lena-token-1", "lena")}
    asked: list[str] = []

    def resolve(ctx: ToolExecutionContext) -> dict[str, str]:
        asked.append(current["token"])
        if len(asked) == 2:
            raise LookupError(f"the vault has no fresh token for {current['token']}")
        return {"Authorization": f"Bearer {current['token']}"}

    source = McpServer.http(url, headers=service, credentials=resolve, name="guarded")
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "lena"
            (opened,) = [share.connection for share in source._sharing._shares.values()]
            tokens.revoke("lena-token-1")
            failed = runtime.execute("whoami", {}, ctx)
            current["token"] = "lena-token-2"  # not valid either: a plain refusal this time
            refused = runtime.execute("whoami", {}, ctx)
            current["token"] = tokens.issue("lena-token-3", "lena")
            assert whoami(runtime, ctx) == "lena"  # asked again, on the same connection
            (still,) = [share.connection for share in source._sharing._shares.values()]
            assert still is opened and still is not None and still.usable
    assert failed.error_type == "McpAuthError" and isinstance(failed.exception, McpAuthError)
    assert "the credentials resolver raised LookupError" in (failed.error or "")
    assert "lena-token-1" not in (failed.error or "")  # a token it quotes is still hidden
    assert failed.exception.__cause__ is None
    assert refused.error_type == "McpAuthError" and "resolver raised" not in (refused.error or "")
    assert asked == ["lena-token-1", "lena-token-1", "lena-token-2", "lena-token-3"]
    assert _auth._describe(LookupError()) == "LookupError"  # no text: the type alone


def test_the_name_of_an_authorization_scheme_is_not_taken_for_a_secret(
    url: str, tokens: Tokens
) -> None:
    """Only the token of "Bearer <token>" is hidden; a server's own "Bearer" stays readable."""
    secret = tokens.issue("kim-secret-token-5", "kim")
    source = McpServer.http(url, headers={"Authorization": f"Bearer {secret}"}, name="guarded")
    hint = "send a Bearer token, not Basic or Token ones"
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            failed = runtime.execute("quote", {"leak": False, "hint": hint}, ctx)
    assert isinstance(failed.exception, McpCallError)
    assert failed.exception.data == {"hint": hint, "attempts": [1, 2]}
    assert _auth._words(f"Token {secret}") == {f"Token {secret}", secret}


def test_scrubbing_leaves_errors_without_a_text_message_and_providers_without_tokens() -> None:
    """An error with no text is returned as it is; a provider yet to sign in holds no secret."""
    bare = ValueError()
    assert _auth.scrub(bare, {"secret"}) is bare
    coded = ValueError(42)
    assert _auth.scrub(coded, {"secret"}).args == (42,)
    assert _auth.scrub(ValueError("clean"), {"secret"}).args == ("clean",)
    provider = _client_credentials("http://127.0.0.1:1/mcp", MemoryTokenStorage())
    assert _auth._tokens_of(provider) == set()


def _authorization_code(url: str, storage: Any, seen: list[str]) -> OAuthClientProvider:
    """The SDK's provider for a person, with a redirect handler that plays the browser.

    It follows the authorization URL on loopback, as a browser would, and reads
    the code and state from where the server redirects; nothing listens there.
    """
    redirect_uri = "http://127.0.0.1:9/callback"
    landed: dict[str, str] = {}

    async def redirect(authorization_url: str) -> None:
        seen.append(authorization_url)
        async with httpx2.AsyncClient(follow_redirects=False) as client:
            response = await client.get(authorization_url)
        assert response.status_code == 302, response.text
        query = parse_qs(urlsplit(response.headers["location"]).query)
        landed.update(code=query["code"][0], state=query["state"][0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=landed["code"], state=landed["state"])

    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method="none",
        grant_types=["authorization_code"],
        response_types=["code"],
        scope="tools",
    )
    asyncio.run(
        storage.set_client_info(
            OAuthClientInformationFull(client_id="app", **metadata.model_dump(exclude_none=True))
        )
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )


def test_the_sdk_authorization_code_provider_with_pkce_signs_a_persons_calls(
    url: str, tokens: Tokens
) -> None:
    """Authorization code with PKCE: the redirect handler gets a code, the token serves the plan."""
    storage = MemoryTokenStorage()
    seen: list[str] = []
    source = McpServer.http(url, auth=_authorization_code(url, storage, seen), name="guarded")
    before = len(tokens.authorized)
    with ToolRuntime(tracer=NullTracer()) as runtime:
        runtime.register_source(source)
        with runtime.plan() as ctx:
            assert whoami(runtime, ctx) == "person"
            assert whoami(runtime, ctx) == "person"
    # One person, asked once: the token is kept and reused for discovery and calls.
    assert len(seen) == 1 and "code_challenge_method=S256" in seen[0]
    assert len(tokens.authorized) == before + 1
    assert tokens.authorized[-1] not in repr(source) and tokens.authorized[-1] not in repr(storage)
    stored = asyncio.run(storage.get_tokens())
    assert stored is not None and stored.access_token == tokens.authorized[-1]
