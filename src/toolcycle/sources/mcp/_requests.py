"""What a server may ask of its client during a call, in toolcycle's own types.

A server asks for an answer from a person (an *elicitation*), a completion
from the host's model (*sampling*), the client's *roots*, and it sends log
messages. The host answers with handlers given to `McpServer` (or one
`McpRequests` bundle shared by every server); this module holds the records
those handlers see and return, none of them the SDK's. `_handlers` calls
them, and `_answering` and `_rounds` carry their answers in either protocol era.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from toolcycle import ApprovalDecision
from toolcycle.errors import shown_value

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from toolcycle import CancellationToken, ToolExecutionContext

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "ElicitAnswer",
    "ElicitHandler",
    "Elicitation",
    "LogHandler",
    "LogMessage",
    "McpRequests",
    "RequestContext",
    "Root",
    "RootsSource",
    "SampleHandler",
    "SamplingAnswer",
    "SamplingRequest",
    "roots_problem",
]

DEFAULT_MAX_ROUNDS = 8
"""How many times a call is retried with answers before it fails (2026-07-28 era)."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The call a server's request belongs to, given to every handler.

    Attributes:
        server: the server's name.
        tool_name: the tool's name in the runtime (with its prefix), or None
            when the server asked outside any call toolcycle knows of, or (legacy
            era) on a connection with several calls in flight, which it cannot
            tell apart.
        call_id: the runtime's id of the call (its trace's ``call_id``).
        plan: the plan's context, or None outside a call.
        token: the call's cancellation token; None outside a call.
        era: ``"legacy"`` (the server sent a request of its own during the call)
            or ``"2026-07-28"`` (the call came back asking for input).
    """

    server: str
    tool_name: str | None = None
    call_id: str | None = None
    plan: ToolExecutionContext | None = field(default=None, repr=False)
    token: CancellationToken | None = field(default=None, repr=False)
    era: Literal["legacy", "2026-07-28"] = "legacy"


@dataclass(frozen=True, slots=True)
class Elicitation:
    """A server's question for a person.

    Attributes:
        message: what to ask.
        schema: for ``mode="form"``, the JSON Schema the answer's content must
            satisfy (a flat object of simple fields); None in URL mode.
        mode: ``"form"`` (answer in the client) or ``"url"`` (the person
            finishes at ``url``, out of band).
        url: where to send the person, in URL mode.
        elicitation_id: the server's id for a URL-mode elicitation.
    """

    message: str
    schema: dict[str, Any] | None = None
    mode: Literal["form", "url"] = "form"
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    """The answer to an `Elicitation`: accept (with content), decline, cancel, or defer.

    Build one with `accept`, `decline`, `cancel` or `defer`. A deferral makes
    the call come back pending (see docs/sources/mcp.md); `decision` turns the
    person's later answer into what ``runtime.resume`` takes.
    """

    action: Literal["accept", "decline", "cancel", "defer"]
    content: dict[str, Any] | None = None
    reason: str | None = None

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> ElicitAnswer:
        """The person answered; ``content`` must satisfy the requested schema."""
        return cls("accept", dict(content) if content is not None else None)

    @classmethod
    def decline(cls) -> ElicitAnswer:
        """The person said no."""
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitAnswer:
        """The person dismissed the question without answering."""
        return cls("cancel")

    @classmethod
    def defer(cls, reason: str | None = None) -> ElicitAnswer:
        """Nobody can answer now: the call comes back pending, to resume later."""
        return cls("defer", reason=reason)

    def decision(self) -> ApprovalDecision:
        """This answer as the decision ``runtime.resume`` continues a pending call with.

        Raises:
            ValueError: the answer defers, which cannot continue a call.
        """
        if self.action == "defer":
            raise ValueError("a deferral cannot resume a call; give the person's answer")
        return ApprovalDecision.approve(reply={"action": self.action, "content": self.content})


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a completion from the host's model.

    Attributes:
        messages: the conversation, oldest first: each a dict with ``role``
            (``"user"`` or ``"assistant"``) and ``text`` for text content, or
            ``content`` with MCP's JSON of any other block.
        max_tokens: the most tokens the server wants back.
        system_prompt: the server's system prompt, if any.
        temperature: the server's sampling temperature, if any.
        stop_sequences: where to stop, if any.
        model_preferences: MCP's model preferences as plain JSON (``hints``,
            ``costPriority``, ``speedPriority``, ``intelligencePriority``).
    """

    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_preferences: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SamplingAnswer:
    """The host model's completion for a `SamplingRequest`."""

    text: str
    model: str
    role: Literal["assistant", "user"] = "assistant"
    stop_reason: str | None = "endTurn"


@dataclass(frozen=True, slots=True)
class Root:
    """A directory or file the client lets servers work in (``file://`` URI).

    Raises:
        ValueError: ``uri`` is not a ``file:`` URI (MCP's roots are files only).
    """

    uri: str
    name: str | None = None

    def __post_init__(self) -> None:
        # Checked here, once: the SDK refuses any other URI each time a server asks.
        if not isinstance(self.uri, str) or not self.uri.lower().startswith("file:"):
            raise ValueError(
                f"a root's uri must be a file:// URI such as 'file:///srv/data' "
                f"(pathlib's Path.as_uri() makes one), got {self.uri!r}"
            )


@dataclass(frozen=True, slots=True)
class LogMessage:
    """A log message a server sent (``notifications/message``)."""

    level: str
    data: Any
    logger: str | None = None


ElicitHandler: TypeAlias = (
    "Callable[[Elicitation, RequestContext], ElicitAnswer | Awaitable[ElicitAnswer]]"
)
"""Answers a server's elicitation; plain (run on a worker thread) or async."""
SampleHandler: TypeAlias = (
    "Callable[[SamplingRequest, RequestContext], SamplingAnswer | Awaitable[SamplingAnswer]]"
)
"""Runs the host's model for a server; plain (run on a worker thread) or async."""
RootsSource: TypeAlias = (
    "Sequence[Root] | Callable[[RequestContext], Sequence[Root] | Awaitable[Sequence[Root]]]"
)
"""The client's roots: a fixed list, or a function of the call that lists them."""
LogHandler: TypeAlias = "Callable[[LogMessage, str], object]"
"""Called with each log message and the server's name, besides the standard logging.

Plain or async, it runs on the connection's loop, in the order the messages came.
"""


@dataclass(frozen=True, slots=True)
class McpRequests:
    """The handlers for servers' requests, given once and shared by every server.

    Pass one bundle as ``requests=`` to each `McpServer` for runtime-wide
    defaults; a server's own ``on_elicit=`` (and the others) win over it.

    Attributes:
        on_elicit: answers elicitations; None defers them (see docs).
        on_sample: runs the host's model; None declines sampling.
        roots: the roots to list; None declares no roots capability.
        on_log: sees every log message (they go to `logging` regardless).
        max_rounds: in the 2026-07-28 era, how many times one call may come
            back asking for input before it fails.
    """

    on_elicit: ElicitHandler | None = None
    on_sample: SampleHandler | None = None
    roots: RootsSource | None = None
    on_log: LogHandler | None = None
    max_rounds: int = DEFAULT_MAX_ROUNDS

    def __post_init__(self) -> None:
        rounds = self.max_rounds
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(
                f"max_rounds must be a positive integer, got {shown_value(self.max_rounds)}"
            )
        for name in ("on_elicit", "on_sample", "on_log"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"{name} must be callable or None, got {value!r}")
        if self.roots is not None and not callable(self.roots):
            problem = roots_problem(self.roots)
            if problem is not None:
                raise TypeError(f"roots must be a list of Root, a function or None: {problem}")

    def with_overrides(self, **handlers: Any) -> McpRequests:
        """A copy with every handler given that is not None put in."""
        given = {name: value for name, value in handlers.items() if value is not None}
        return replace(self, **given) if given else self


def roots_problem(listed: object) -> str | None:
    """What keeps ``listed`` from being a list of roots, or None when it is one.

    A string is refused although it is iterable: its characters are not roots.
    """
    if isinstance(listed, str | bytes) or not isinstance(listed, Iterable):
        return f"got {type(listed).__name__}"
    for index, root in enumerate(listed):
        if not isinstance(root, Root):
            return f"item {index} is {type(root).__name__}, not a Root"
    return None
