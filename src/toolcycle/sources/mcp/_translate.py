"""From MCP's request types to the records handlers see, and from answers back.

`_handlers`, `_answering` and `_rounds` use these in both eras; they are kept
apart so that each direction of the translation can be read in one place.
"""

from __future__ import annotations

from typing import Any

import mcp_types

from toolcycle.sources.mcp._requests import ElicitAnswer, Elicitation, SamplingRequest

__all__ = ["elicit_result", "elicitation_of", "question_json", "sampling_of"]


def elicitation_of(params: mcp_types.ElicitRequestParams) -> Elicitation:
    """An elicitation request's params as an `Elicitation` (form or URL mode)."""
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return Elicitation(params.message, None, "url", params.url, params.elicitation_id)
    return Elicitation(params.message, dict(params.requested_schema), "form")


def question_json(question: Elicitation) -> dict[str, Any]:
    """An `Elicitation` as plain JSON, for a pending record."""
    return {
        "message": question.message,
        "schema": question.schema,
        "mode": question.mode,
        "url": question.url,
        "elicitation_id": question.elicitation_id,
    }


def elicit_result(answer: ElicitAnswer, question: Elicitation) -> mcp_types.ElicitResult:
    """An answer as the SDK's result; content only for an accepted form."""
    content = answer.content if answer.action == "accept" and question.mode == "form" else None
    return mcp_types.ElicitResult(action=answer.action, content=content)  # type: ignore[arg-type]


def sampling_of(params: mcp_types.CreateMessageRequestParams) -> SamplingRequest:
    """Sampling params as a `SamplingRequest` of plain Python values."""
    messages: list[dict[str, Any]] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        for block in blocks:
            if isinstance(block, mcp_types.TextContent):
                messages.append({"role": message.role, "text": block.text})
            else:
                dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
                messages.append({"role": message.role, "content": dumped})
    preferences = params.model_preferences
    return SamplingRequest(
        messages=tuple(messages),
        max_tokens=params.max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_preferences=None
        if preferences is None
        else preferences.model_dump(mode="json", by_alias=True, exclude_none=True),
    )
