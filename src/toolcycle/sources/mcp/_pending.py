"""The ``request`` of a pending elicitation: written when a call defers, read when it resumes.

The record is plain JSON that a host stores anywhere, so what comes back on
resume may have been edited or cut short. `read_pending` checks each field
it needs and refuses a record without one with `ToolApprovalError` (the
error ``runtime.resume`` raises for a changed record), naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolcycle import ToolApprovalError
from toolcycle.sources.mcp._requests import Elicitation
from toolcycle.sources.mcp._translate import question_json

__all__ = ["KIND", "Pending", "pending_request", "read_pending"]

KIND = "mcp.elicitation"
"""The ``kind`` of a pending elicitation's request, among the requests tools defer with."""


@dataclass(frozen=True, slots=True)
class Pending:
    """What a resumed call needs from its record."""

    question: Elicitation
    answered: dict[str, Any]
    """The answers given earlier in the same round, by input key."""
    key: str
    """The input key the person's answer goes under."""
    state: str | None
    """The server's sealed ``request_state``, sent back with the answers."""


def pending_request(
    server: str,
    tool: str,
    key: str,
    question: Elicitation,
    answered: dict[str, Any],
    state: str | None,
) -> dict[str, Any]:
    """The ``PendingApproval.request`` of a call waiting on ``question``."""
    return {
        "kind": KIND,
        "server": server,
        "tool": tool,
        "key": key,
        "question": question_json(question),
        "answered": answered,
        "state": state,
    }


def read_pending(request: dict[str, Any], server: str, tool: str, plan_id: str) -> Pending:
    """The parts of a pending record that resuming needs.

    Raises:
        ToolApprovalError: a field is missing or of the wrong kind; the message
            names it.
    """
    reader = _Reader(server, tool, plan_id)
    question = reader.field(request, "question", dict, "an object")
    message = reader.field(question, "message", str, "text", "question.")
    known = ("schema", "mode", "url", "elicitation_id")
    rest = {name: question[name] for name in known if question.get(name) is not None}
    return Pending(
        question=Elicitation(message, **rest),
        answered=dict(reader.field(request, "answered", dict, "an object")),
        key=reader.field(request, "key", str, "text"),
        state=reader.field(request, "state", (str, type(None)), "text or null"),
    )


@dataclass(frozen=True, slots=True)
class _Reader:
    """Reads a record's fields, refusing it for the first one missing or of the wrong kind."""

    server: str
    tool: str
    plan_id: str

    def field(
        self,
        record: dict[str, Any],
        name: str,
        kind: type | tuple[type, ...],
        wanted: str,
        prefix: str = "",
    ) -> Any:
        """``record[name]``, when it is there and of ``kind``."""
        if name not in record:
            problem = f"has no {prefix + name!r}"
        elif not isinstance(record[name], kind):
            found = type(record[name]).__name__
            problem = f"is not as stored: {prefix + name!r} is {found}, not {wanted}"
        else:
            return record[name]
        raise ToolApprovalError(
            f"the pending elicitation of MCP server {self.server!r} {problem} (the record "
            f"was edited or cut short); this pending call is spent: call {self.tool!r} "
            "again to be asked anew, and store pending records unchanged",
            tool_name=self.tool,
            plan_id=self.plan_id,
        )
