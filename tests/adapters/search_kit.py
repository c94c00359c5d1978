"""The tools the adapters' search tests share: one shown, two deferred (found by search_tools)."""

from __future__ import annotations

from collections.abc import Iterator

from toolcycle import ToolRuntime, tool

ISSUE = "github_create_issue_e877a647"
"""The name github.create_issue is offered under, in every adapter (OpenAI's rules)."""


@tool(writes=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="github.create_issue", writes=False, defer_loading=True)
def create_issue(repo: str, title: str) -> str:
    """Create an issue in a GitHub repository."""
    return f"created {title!r} in {repo}"


@tool(writes=False, defer_loading=True)
def slack_post(channel: str, text: str) -> str:
    """Post a message to a Slack channel."""
    return "posted"


def deferred_runtime() -> Iterator[ToolRuntime]:
    """A runtime with the three tools, closed when the fixture that yields from it ends."""
    with ToolRuntime(keep_traces=10) as runtime:
        runtime.register(add)
        runtime.register(create_issue)
        runtime.register(slack_post)
        yield runtime
