"""An ``MCPServer`` whose tools ask their client things during a call, for the request tests.

Its tools elicit (form and URL mode), sample, list roots, log and report
progress. Form elicitation, sampling and roots use the SDK's resolvers, which
work in both protocol eras; the URL tool builds its ``InputRequiredResult`` by
hand in the 2026-07-28 era. Run this file to serve it over stdio; its request
state is sealed with a fixed key, so a call deferred against one process can be
resumed against another.
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel

KEY = b"toolcycle-test-request-state-key-32b"


class Person(BaseModel):
    """The answer the greeting tool asks for."""

    name: str
    age: int


def ask_person(ctx: Context) -> Elicit[Person]:
    """The form question: who are you?"""
    return Elicit("Who is asking?", Person)


def ask_model(topic: str) -> Sample:
    """A sampling request about ``topic``."""
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=topic))],
        max_tokens=50,
        system_prompt="Answer in one word.",
    )


def ask_roots() -> ListRoots:
    """The client's roots."""
    return ListRoots()


# A resolver's wire key is its module and name: fixed here, so that the state sealed by
# a server imported under one module name is read by one imported under another.
for _resolver in (ask_person, ask_model, ask_roots):
    _resolver.__module__ = "asking_server"


def build(name: str = "asking") -> MCPServer:
    """The server, ready to embed in process or serve."""
    server = MCPServer(name, request_state_security=RequestStateSecurity(keys=[KEY]))

    @server.tool()
    async def greet(person: Annotated[Person, Resolve(ask_person)]) -> str:
        """Greet whoever answers the question."""
        return f"hello {person.name}, {person.age}"

    @server.tool()
    async def summarise(
        topic: str, answer: Annotated[types.CreateMessageResult, Resolve(ask_model)]
    ) -> str:
        """Ask the client's model about a topic."""
        content = answer.content
        text = content.text if isinstance(content, types.TextContent) else "?"
        return f"{answer.model}: {text}"

    @server.tool()
    async def roots(listed: Annotated[types.ListRootsResult, Resolve(ask_roots)]) -> list[str]:
        """List the client's roots."""
        return [f"{root.name}={root.uri}" for root in listed.roots]

    @server.tool()
    async def chatty(ctx: Context, steps: int = 2) -> str:
        """Log a message and report progress (legacy era)."""
        with warnings.catch_warnings():  # logging is deprecated in the 2026-07-28 era
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.info("starting the chatty tool")
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        return "done"

    @server.tool()
    async def sign_in(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Send the person to a URL, in either era."""
        message, url = "Sign in to continue", "https://example.invalid/sign-in"
        if ctx.protocol_version is not None and ctx.protocol_version >= "2026-07-28":
            answered = (ctx.input_responses or {}).get("sign_in")
            if answered is None:
                request = types.ElicitRequest(
                    params=types.ElicitRequestURLParams(
                        message=message, url=url, elicitation_id="e-1"
                    )
                )
                return types.InputRequiredResult(input_requests={"sign_in": request})
            action = answered.action if isinstance(answered, types.ElicitResult) else "?"
        else:
            action = (await ctx.elicit_url(message, url, "e-1")).action
        return types.CallToolResult(content=[types.TextContent(type="text", text=action)])

    @server.tool()
    async def nag(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Ask for a URL visit again on every round (2026-07-28 era): it never finishes."""
        request = types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message="Again", url="https://x.invalid", elicitation_id="n"
            )
        )
        return types.InputRequiredResult(input_requests={"again": request})

    return server


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else "asking").run("stdio")
