"""Steps for MCP servers over HTTP with credentials, using tests/mcp/auth_server.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from behave import given, then, when

AUTH_SERVER = Path(__file__).resolve().parents[2] / "tests" / "mcp" / "auth_server.py"


def _auth_server() -> Any:
    """tests/mcp/auth_server.py, loaded once from its file (it is not an installed module)."""
    name = "toolcycle_test_auth_server"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, AUTH_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


@given("an MCP server over HTTP that requires a bearer token")
def step_auth_server(context: Any) -> None:
    module = _auth_server()
    context.tokens = module.Tokens()
    served = module.serve(context.tokens)
    context.auth_url = served.__enter__()
    context.add_cleanup(served.__exit__, None, None, None)
    # Each user's current token; a test changes it as tokens expire.
    context.current_tokens = {}


@given('the tokens "{first}" for "{first_user}" and "{second}" for "{second_user}"')
def step_tokens(context: Any, first: str, first_user: str, second: str, second_user: str) -> None:
    context.tokens.issue(first, first_user)
    context.tokens.issue(second, second_user)
    context.current_tokens.setdefault(first_user, first)
    context.current_tokens.setdefault(second_user, second)


@given("I register that server with per-plan credentials from the plan's user")
def step_register_with_credentials(context: Any) -> None:
    from toolcycle.sources.mcp import HttpCredentials, McpServer

    service = context.tokens.issue("service-token", "service")

    def per_user(ctx: Any) -> HttpCredentials:
        token = context.current_tokens[ctx.metadata["user"]]
        return HttpCredentials(headers={"Authorization": f"Bearer {token}"})

    context.mcp_source = McpServer.http(
        context.auth_url,
        headers={"Authorization": f"Bearer {service}"},
        credentials=per_user,
        name="guarded",
    )
    context.runtime.register_source(context.mcp_source)


@given('a plan of "{user}"')
def step_plan_of(context: Any, user: str) -> None:
    context.plan = context.runtime.new_context(metadata={"user": user})
    context.add_cleanup(context.runtime.end_plan, context.plan)


@when('"{first}" and "{second}" each ask the server who they are in their own plans')
def step_two_users(context: Any, first: str, second: str) -> None:
    runtime = context.runtime
    plans = {user: runtime.new_context(metadata={"user": user}) for user in (first, second)}
    context.answers = {
        user: runtime.execute("whoami", {}, ctx).output["result"] for user, ctx in plans.items()
    }
    context.connections = {
        id(share.connection) for share in context.mcp_source._sharing._shares.values()
    }
    for ctx in plans.values():
        runtime.end_plan(ctx)


@then('the server answered "{first}" to alice and "{second}" to bob')
def step_answers(context: Any, first: str, second: str) -> None:
    assert context.answers == {"alice": first, "bob": second}, context.answers


@then("the two plans used two connections")
def step_two_connections(context: Any) -> None:
    assert len(context.connections) == 2, context.connections


@when('the token "{token}" expires and the next call asks for a fresh one')
def step_expire_and_renew(context: Any, token: str) -> None:
    runtime = context.runtime
    assert runtime.execute("whoami", {}, context.plan).output["result"] == "carol"
    context.tokens.revoke(token)
    context.current_tokens["carol"] = "carol-token-2"
    context.result = runtime.execute("whoami", {}, context.plan)


@then('the server still answers "{user}"')
def step_still_answers(context: Any, user: str) -> None:
    assert context.result.success, context.result.error
    assert context.result.output["result"] == user


@when('the token "{token}" expires too and no fresh one comes')
def step_expire_for_good(context: Any, token: str) -> None:
    context.tokens.revoke(token)
    context.result = context.runtime.execute("whoami", {}, context.plan)


@then('the call fails with McpAuthError naming the server "{name}"')
def step_auth_error(context: Any, name: str) -> None:
    result = context.result
    assert not result.success and result.error_type == "McpAuthError", result
    assert f"MCP server {name!r} refused the credentials" in result.error


@then("the error shows no token")
def step_no_token(context: Any) -> None:
    assert "carol-token" not in context.result.error
    assert "carol-token" not in context.result.trace.model_dump_json()
