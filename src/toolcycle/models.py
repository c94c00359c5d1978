"""Immutable records that cross the runtime's boundaries.

They are frozen pydantic models because they are serialised (traces go to logs,
changes are persisted by plan executors) and validated when users build them.
None of them has behaviour beyond small conveniences.
"""

from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator
from pydantic.json_schema import SkipJsonSchema

from toolcycle._lazy_trace import INSTANCE_DICT, TraceField, settled_dict
from toolcycle._trace_records import (
    ApprovalRecord,
    GuardrailRecord,
    ProgressEvent,
    RetryAttempt,
    ToolExecutionTrace,
    TraceStatus,
)
from toolcycle._validation_records import Validation, ValidationIssue
from toolcycle.agent._messages import chosen_format, result_message
from toolcycle.agent._parts import content_messages
from toolcycle.content import ContentPart
from toolcycle.errors import ToolExecutionError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "ApprovalRecord",
    "BoundResource",
    "Change",
    "GuardrailRecord",
    "PendingApproval",
    "ProgressEvent",
    "ProviderFormat",
    "RetryAttempt",
    "SourceKind",
    "Tool",
    "ToolCall",
    "ToolCapability",
    "ToolDescriptor",
    "ToolExecutionTrace",
    "ToolResult",
    "ToolSearchMode",
    "TraceStatus",
    "Validation",
    "ValidationIssue",
]

SourceKind: TypeAlias = Literal["builtin", "mcp", "skill", "custom", "wrapped"]
"""Where a tool comes from."""

ProviderFormat: TypeAlias = Literal["openai", "openai-responses", "anthropic", "gemini", "mcp"]
"""A model provider's wire format for tool definitions, calls and results."""

ToolSearchMode: TypeAlias = Literal["auto", "native", "local", "bm25", "regex", "hosted"]
"""How ``tool_definitions`` offers deferred tools: the provider's own tool search
(``"native"``; ``"bm25"`` or ``"regex"`` pick Anthropic's, ``"hosted"`` OpenAI's),
toolcycle's ``search_tools`` meta-tool (``"local"``), or native where the format
has it and local elsewhere (``"auto"``). See docs/tool-search.md."""


# defer_build: a model's validator and serializer are built the first time it
# validates or dumps, not when this module is imported. The runtime builds its own
# records without validating them (`toolcycle._construct.trusted`), so most processes never pay for
# the models they do not use, and `import toolcycle` stays cheap.
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ToolCapability(BaseModel):
    """What a tool may do, as the capability check sees it.

    The defaults are the safe assumption about a tool nobody described: it writes,
    and it cannot be rolled back. A read-only plan and a checkpoint plan both refuse
    such a tool until its author says otherwise.
    """

    model_config = _FROZEN

    writes: bool = True
    """The tool changes state outside itself (files, remote systems)."""
    checkpointable: bool = False
    """Every change the tool makes can be undone from what it records."""
    sequential: bool = False
    """In a batch of calls (``call_many``), nothing else runs while this tool does."""
    requires_approval: bool | None = None
    """True: a call needs the plan's approver's yes, whatever the plan's rule (and a
    plan without an approver refuses it). False: the default rule (tools that write)
    does not ask for this tool. None: the plan's rule decides."""
    idempotent: bool = False
    """Running the tool twice with the same input has the effect of running it once, so
    a transient fault may be retried within one call (see `toolcycle.RetryPolicy`)."""


class Tool(BaseModel):
    """The provider-neutral definition of a tool: what a model is shown."""

    model_config = _FROZEN

    name: str = Field(min_length=1, max_length=256)
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _name_is_printable(cls, value: str) -> str:
        if value != value.strip() or not value.isprintable():
            raise ValueError(
                f"a tool name must be printable and have no surrounding whitespace, got {value!r}"
            )
        return value


class ToolDescriptor(Tool):
    """What ``discover()`` returns: the definition plus capability and provenance."""

    capability: ToolCapability = Field(default_factory=ToolCapability)
    source: SourceKind = "custom"
    source_name: str | None = None
    """Which source of its kind the tool comes from, such as the MCP server's name."""
    tags: frozenset[str] = frozenset()
    annotations: dict[str, Any] = Field(default_factory=dict)
    """Hints from the tool's source that the runtime keeps but does not enforce, such
    as MCP's ``destructiveHint``, ``idempotentHint`` and ``openWorldHint``."""
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds one call may take unless the caller passes a smaller ``timeout``;
    None for no limit of the tool's own."""
    defer_loading: bool = False
    """Keep the tool out of a model's definitions until a tool search finds it
    (or the model calls it by name); see docs/tool-search.md."""


class BoundResource(BaseModel):
    """A resource a plan binds for its tools, such as a workspace directory."""

    model_config = _FROZEN

    kind: str = Field(min_length=1)
    """What sort of resource it is, for example ``"workspace"``."""
    name: str = Field(min_length=1)
    """How tools and users refer to it within the plan."""
    location: str = ""
    """Where it is: a path, a URL, a connection string without secrets."""
    read_only: bool = False
    """Tools must not change this resource, even in a plan that may write."""
    metadata: dict[str, str] = Field(default_factory=dict)


class Change(BaseModel):
    """One change a tool made, recorded in its plan's context in order."""

    model_config = _FROZEN

    kind: str = Field(min_length=1)
    """What happened, for example ``"write"`` or ``"delete"``."""
    target: str
    """What it happened to, for example a path inside the workspace."""
    tool_name: str | None = None
    description: str = ""
    recorded_at: str | None = None
    """ISO-8601 UTC time the change was made, when the tool knows it."""
    data: dict[str, Any] = Field(default_factory=dict)
    """JSON-compatible details, such as what is needed to undo the change."""


class ToolCall(BaseModel):
    """A tool call as a model sent it, read from any provider's format."""

    model_config = _FROZEN

    id: str | None = None
    """The provider's id of the call, which its result message must quote back."""
    name: str
    """The tool's name as the model wrote it (a provider-safe name maps back to ours)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    format: ProviderFormat | Literal["plain"] = "plain"
    """Which format the call came in; ``"plain"`` for ``{"name", "arguments"}``."""


class PendingApproval(BaseModel):
    """A call that waits for a decision, to be given later to ``runtime.resume``.

    It is plain JSON (``model_dump_json()`` / ``model_validate_json()``), so an
    executor can store it and resume in another process. It holds the exact
    arguments the tool will receive, secrets included: store it as carefully as
    the arguments themselves. Its repr leaves them out.
    """

    model_config = _FROZEN

    approval_id: str
    """Unique per deferred call; a ledger claims it when the call is resumed."""
    tool_name: str
    arguments: dict[str, Any] = Field(repr=False)
    fingerprint: str
    """The fingerprint of ``tool_name`` and ``arguments``, checked again at resume."""
    plan_id: str
    call_id: str
    """The call id of the deferred call's trace."""
    reason: str | None = None
    """What the approver said when it deferred."""
    call: ToolCall | None = None
    """The model's tool call, when it came through ``runtime.call`` (secrets masked),
    so that the resumed result can answer it."""
    request: dict[str, Any] | None = None
    """Set when the tool itself deferred the call to ask a question (an MCP server's
    elicitation, say): the question, as plain JSON. Resume with the answer in
    ``ApprovalDecision.approve(reply=...)``."""


class ToolResult(BaseModel):
    """The outcome of a call: output on success, error details on failure.

    A tool may also return a ``ToolResult`` itself to report its own failure
    without raising; the runtime then adds the trace.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        defer_build=True,
        ser_json_bytes="base64",  # a content part's raw bytes, in a JSON dump
        val_json_bytes="base64",  # and back from it
    )

    success: bool
    output: Any = None
    error: str | None = None
    """The failure in one message; None on success."""
    error_type: str | None = None
    """The class name of the exception behind the failure, when there was one."""
    validation: Validation | None = None
    """The problems of a rejected input, when that is why the call failed."""
    trace: ToolExecutionTrace | None = None
    changes: tuple[Change, ...] = ()
    """The changes this call recorded, in order."""
    truncated: bool = False
    """The output was over ``max_result_bytes`` and is a cut JSON text with a marker."""
    exception: SkipJsonSchema[BaseException | None] = Field(default=None, exclude=True, repr=False)
    """The exception behind the failure, when there was one; never serialised.

    The tool's own object, its text not scrubbed of secret arguments (``error`` is).
    """
    call: ToolCall | None = None
    """The model's tool call this result answers, when it came from ``runtime.call``."""
    pending: PendingApproval | None = None
    """Set when the call waits for approval: pass it to ``runtime.resume`` later."""
    retryable: bool = False
    """The model may fix its call and try again: an invalid input or `toolcycle.ModelRetry`
    with retries left (see ``retries_left``)."""
    retries_left: int | None = None
    """For a model-fixable failure, how many more such failures the tool allows in the
    plan (0: the limit is reached); None for every other result."""
    content: tuple[ContentPart, ...] = ()
    """What the model sees instead of ``output`` when the tool returned content parts
    (see `toolcycle.content`); empty for a plain output."""
    metadata: dict[str, Any] | None = Field(default=None, repr=False)
    """A `ToolReturn`'s metadata (or that of a `ToolResult` the tool returned), for the
    host alone: in no message, trace or span; None when the tool gave none."""
    _text: str | None = PrivateAttr(default=None)
    # The output as the compact JSON text the runtime measured, kept for to_message.

    if not TYPE_CHECKING:
        # Every reader of a result's data (pydantic's dump, copy, pickle, repr and
        # equality, pydantic-core's serialiser, ``vars``) goes through ``__dict__``;
        # as a property it builds a lazy trace first, so none of them sees one.
        __dict__ = property(settled_dict, INSTANCE_DICT.__set__)

    def __eq__(self, other: object) -> bool:
        # The fields decide; the cached text is not part of what a result says.
        if not isinstance(other, ToolResult):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:  # as a frozen model's: the field values, in order
        return hash(tuple(self.__dict__.values()))

    def to_message(self, format: ProviderFormat | None = None) -> dict[str, Any]:
        """The provider's tool-result message for this result, as plain JSON data.

        Args:
            format: the provider format; by default the one the call came in
                (``"openai"`` for a plain call).

        Raises:
            ValueError: the result has no tool call (it came from ``execute``,
                not ``call``), so there is no call id to answer; or it needs
                more than one message in this format (OpenAI Chat takes images
                and files only in a user message): use `to_messages`; or
                ``format`` is not one of the provider formats.
        """
        call = self.call
        if call is None:
            raise _no_call()
        chosen = chosen_format(format, call.format)
        if self.content and self.success:
            messages = content_messages(
                chosen,
                call_id=call.id,
                name=call.name,
                parts=self.content,
                output=self.output,
                truncated=self.truncated,
                output_valid=self._output_valid(chosen),
            )
            if len(messages) > 1:
                raise ValueError(
                    f"this result needs {len(messages)} messages in the {chosen!r} format "
                    "(its content has parts a tool message cannot hold); "
                    "use result.to_messages(format) and send them all"
                )
            return messages[0]
        return result_message(
            chosen,
            call_id=call.id,
            name=call.name,
            success=self.success,
            output=self.output,
            error=self.error,
            # Read from the private slot directly: `self._text` goes through
            # pydantic's `__getattr__`, which costs more than the rest of this.
            text=(self.__pydantic_private__ or {}).get("_text"),
            truncated=self.truncated,
            output_valid=self._output_valid(chosen),
        )

    def to_messages(self, format: ProviderFormat | None = None) -> list[dict[str, Any]]:
        """Every message that hands this result to the model, in order, as plain JSON data.

        One message, except where the provider cannot take a content part in
        a tool result: OpenAI Chat gets images, audio and files in a user
        message after the tool message. Binary data is base64-encoded here,
        once per message built.

        Args:
            format: the provider format; by default the one the call came in
                (``"openai"`` for a plain call).

        Raises:
            ValueError: the result has no tool call (it came from ``execute``),
                or ``format`` is not one of the provider formats.
        """
        call = self.call
        if not self.content or not self.success or call is None:
            return [self.to_message(format)]
        chosen = chosen_format(format, call.format)
        return content_messages(
            chosen,
            call_id=call.id,
            name=call.name,
            parts=self.content,
            output=self.output,
            truncated=self.truncated,
            output_valid=self._output_valid(chosen),
        )

    @staticmethod
    def batch_messages(
        results: "Iterable[ToolResult]",
        format: ProviderFormat | None = None,
    ) -> list[dict[str, Any]]:
        """The messages that hand a batch of results (one model turn) back, in a valid order.

        OpenAI Chat wants a tool message for every call of the turn right after
        the assistant's message, with nothing between them: the user messages that
        carry attachments (see `to_messages`) come after all the tool messages,
        in the batch's order. In the other formats this is each result's
        `to_messages`, one after the other (for Anthropic, the ``tool_result``
        blocks of one user message).

        Args:
            results: the batch's results, as ``call_many`` returns them.
            format: the provider format; by default each call's own.

        Raises:
            ValueError: a result has no tool call (it came from ``execute``).
        """
        answers: list[dict[str, Any]] = []
        attachments: list[dict[str, Any]] = []
        for result in results:
            first, *rest = result.to_messages(format)
            answers.append(first)
            attachments.extend(rest)
        return answers + attachments

    def _output_valid(self, format: str) -> bool | None:
        """Whether the output met its schema, where the message depends on it (MCP)."""
        if format != "mcp" or not self.success:
            return None  # only an MCP client checks the output against a declared schema
        trace = self.trace
        return None if trace is None else trace.output_valid

    def raise_for_error(self) -> None:
        """Raise `ToolExecutionError` if the call failed, chaining the original exception.

        The error's message is ``self.error``, with secret arguments scrubbed; the
        chained exception is the tool's own, as it raised it (see docs/security.md).

        Raises:
            ToolExecutionError: when ``success`` is false.
        """
        if not self.success:
            self._raise()

    def _raise(self) -> NoReturn:
        tool_name = self.trace.tool_name if self.trace else None
        plan_id = self.trace.plan_id if self.trace else None
        error = ToolExecutionError(
            self.error or "the tool call failed", tool_name=tool_name, plan_id=plan_id
        )
        raise error from self.exception


def _no_call() -> ValueError:
    return ValueError(
        "this result answers no tool call (it came from execute); "
        "use runtime.call(tool_call, ctx) to get a result with a message"
    )


# Set after the class is made, so that pydantic sees a plain field.
type.__setattr__(ToolResult, "trace", TraceField())
