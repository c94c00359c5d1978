"""A loopback MCP server that requires a bearer token, built with the SDK's own auth support.

Tokens live in a `Tokens` table the test changes while the server runs:
issue one, revoke it (as when it expires mid-plan), look at which were used.
The ``whoami`` tool answers with the identity the server's token verifier
found for the request; ``quote`` quotes the token back in an error's data.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response


@dataclass
class Tokens:
    """The tokens the server accepts, by value, each naming its user."""

    valid: dict[str, str] = field(default_factory=dict)
    presented: list[str] = field(default_factory=list)
    granted: list[str] = field(default_factory=list)
    """Tokens the token endpoint handed out (client credentials grant), in order."""
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Authorization codes not yet exchanged: the PKCE challenge and redirect URI of each."""
    authorized: list[str] = field(default_factory=list)
    """Tokens handed out for an authorization code whose PKCE verifier matched, in order."""

    def issue(self, token: str, user: str) -> str:
        """Accept ``token`` as ``user`` from now on."""
        self.valid[token] = user
        return token

    def revoke(self, token: str) -> None:
        """Refuse ``token`` from now on (it expired)."""
        self.valid.pop(token, None)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's TokenVerifier protocol: the identity of a known token, else None (401)."""
        self.presented.append(token)
        user = self.valid.get(token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=user, scopes=["tools"])


def build(tokens: Tokens, port: int) -> MCPServer:
    """The server: ``whoami`` behind bearer auth."""
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "guarded",
        token_verifier=tokens,
        auth=AuthSettings(
            issuer_url=f"{base}/issuer",  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
            required_scopes=["tools"],
        ),
    )

    @server.custom_route("/.well-known/oauth-authorization-server/issuer", methods=["GET"])
    async def metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": f"{base}/issuer",
                "authorization_endpoint": f"{base}/issuer/authorize",
                "token_endpoint": f"{base}/issuer/token",
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials", "authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            }
        )

    @server.custom_route("/issuer/authorize", methods=["GET"])
    async def authorize(request: Request) -> Response:
        # A person who always consents: the public client "app" gets a code at once.
        query = request.query_params
        if query.get("client_id") != "app" or query.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = secrets.token_urlsafe(16)
        tokens.codes[code] = (query["code_challenge"], query["redirect_uri"])
        target = f"{query['redirect_uri']}?code={code}&state={query['state']}"
        return RedirectResponse(target, status_code=302)

    @server.custom_route("/issuer/token", methods=["POST"])
    async def token(request: Request) -> Response:
        # The client credentials grant for one client, "svc" with secret "svc-secret".
        form = await request.form()
        if form.get("grant_type") == "authorization_code":
            return _exchange(tokens, form)
        basic = "Basic " + base64.b64encode(b"svc:svc-secret").decode()
        if (
            form.get("grant_type") != "client_credentials"
            or request.headers.get("authorization") != basic
        ):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        issued = tokens.issue(f"granted-token-{len(tokens.granted) + 1}", "machine")
        tokens.granted.append(issued)
        body = {"access_token": issued, "token_type": "Bearer", "expires_in": 3600}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    @server.tool()
    def whoami() -> str:
        """The user the request's token belongs to."""
        access = get_access_token()
        return access.client_id if access is not None else "nobody"

    @server.tool()
    def echo(text: str) -> str:
        """Say ``text`` back."""
        return text

    @server.tool()
    def quote(leak: bool = True, hint: str = "try later") -> str:
        """Refuse with a JSON-RPC error whose ``data`` quotes the request's bearer token."""
        access = get_access_token()
        if access is None or not leak:
            raise MCPError(-32001, "refused", {"hint": hint, "attempts": [1, 2]})
        token = access.token
        raise MCPError(
            -32001,
            "refused",
            {
                "request": {"authorization": f"Bearer {token}", "attempts": 2},
                "seen": [token, {token: "as a key"}, None, True],
            },
        )

    return server


def _exchange(tokens: Tokens, form: Any) -> Response:
    """The authorization code grant: a known code, its redirect URI and a matching verifier."""
    challenge, redirect_uri = tokens.codes.pop(str(form.get("code")), ("", ""))
    verifier = str(form.get("code_verifier", ""))
    digest = hashlib.sha256(verifier.encode()).digest()
    expected = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    if not challenge or expected != challenge or form.get("redirect_uri") != redirect_uri:
        return JSONResponse({"error": "invalid_grant"}, status_code=400)
    issued = tokens.issue(f"person-token-{len(tokens.authorized) + 1}", "person")
    tokens.authorized.append(issued)
    body = {"access_token": issued, "token_type": "Bearer", "expires_in": 3600}
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


@contextmanager
def serve(tokens: Tokens, wrap: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """Run the server on a free loopback port in a thread; yield its MCP URL.

    ``wrap`` wraps the ASGI app (middleware a test needs).
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app: Any = build(tokens, port).streamable_http_app()
    if wrap is not None:
        app = wrap(app)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
