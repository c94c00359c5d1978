"""Approvals: asking someone before a tool runs, and binding the answer to one exact call.

A plan that carries an *approver* asks it before every call that needs approval
(by default, calls of tools that write). The approver answers with an
`ApprovalDecision`: approve, deny with a reason, or defer. A deferred call
returns a pending result whose `PendingApproval` can be stored (it is plain
JSON) and resumed later, in this process or another, with ``runtime.resume``.

Two rules make approvals safe to automate:

- **An approval names one call.** Every request carries a `fingerprint` of the
  tool's name and its exact, validated arguments. A decision may carry the
  fingerprint the reviewer saw; the runtime refuses to apply it to a call with
  another fingerprint, and refuses a pending record whose arguments were changed
  after it was made.
- **A call resumes at most once.** Resuming claims the pending call's id in an
  `ApprovalLedger` before the tool runs. The default ledger lives in the runtime;
  `FileApprovalLedger` shares claims between processes through a directory.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict

from toolcycle._approval_rule import ApprovalRule, needs_approval
from toolcycle._value import FrozenValue

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from toolcycle.models import ToolDescriptor

__all__ = [
    "ApprovalDecision",
    "ApprovalLedger",
    "ApprovalRequest",
    "ApprovalRule",
    "Approver",
    "FileApprovalLedger",
    "MemoryApprovalLedger",
    "Resumption",
    "current_resumption",
    "fingerprint",
    "needs_approval",
]


def fingerprint(tool_name: str, arguments: Any) -> str:
    """The fingerprint of one call: SHA-256 of its tool name and canonical JSON arguments.

    The JSON is canonical (sorted keys, no spaces, UTF-8), so two calls have the
    same fingerprint exactly when they name the same tool with equal arguments.
    It is written without recursion, so arguments of any depth have one; an
    integer of any length is written in full (without changing the process's
    own limit on converting integers to text); and a lone surrogate, which no
    UTF-8 text can hold, is hashed as the code unit it is.

    Raises:
        TypeError: ``arguments`` holds something that is not JSON data (a set,
            say), or an object key that is not a string.
    """
    hasher = hashlib.sha256()
    for piece in _canonical([tool_name, arguments]):
        hasher.update(piece.encode("utf-8", "surrogatepass"))
    return "sha256:" + hasher.hexdigest()


_encode_text: Callable[[str], str] = (
    getattr(json.encoder, "c_encode_basestring", None) or json.encoder.py_encode_basestring
)


def _canonical(value: Any) -> Iterator[str]:
    """The canonical JSON text of ``value``, in pieces, by a loop rather than recursion.

    The text is what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` writes, so fingerprints of stored pending calls keep
    their value; only what that call cannot write (too deep, too long an
    integer) is written here and not there.
    """
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if type(node) is _Punctuation:
            yield node.text
        elif isinstance(node, str):
            yield _encode_text(node)
        elif node is None:
            yield "null"
        elif node is True:
            yield "true"
        elif node is False:
            yield "false"
        elif isinstance(node, int):
            yield _integer_text(node)
        elif isinstance(node, float):
            yield _float_text(node)
        elif isinstance(node, dict):
            stack.extend(_object_pieces(node))
        elif isinstance(node, list | tuple):
            stack.extend(_array_pieces(node))
        else:
            raise TypeError(f"Object of type {type(node).__name__} is not JSON serializable")


class _Punctuation:
    """Text written as it is (brackets, commas, colons and keys already encoded)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_OPEN_OBJECT, _CLOSE_OBJECT = _Punctuation("{"), _Punctuation("}")
_OPEN_ARRAY, _CLOSE_ARRAY = _Punctuation("["), _Punctuation("]")
_COMMA = _Punctuation(",")


def _object_pieces(node: dict[Any, Any]) -> list[Any]:
    """The pieces of an object, last first (they go on a stack), keys sorted.

    Keys are sorted as they are, then written as ``json.dumps`` writes them
    (a number, boolean or None key as its JSON text).
    """
    pieces: list[Any] = [_CLOSE_OBJECT]
    for index, (key, item) in enumerate(sorted(node.items(), key=_first, reverse=True)):
        if index:
            pieces.append(_COMMA)
        pieces.append(item)
        pieces.append(_Punctuation(_encode_text(_key_text(key)) + ":"))
    pieces.append(_OPEN_OBJECT)
    return pieces


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _key_text(key: Any) -> str:
    """An object key as text, as ``json.dumps`` converts it."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int):
        return _integer_text(key)
    if isinstance(key, float):
        return _float_text(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _array_pieces(node: list[Any] | tuple[Any, ...]) -> list[Any]:
    """The pieces of an array, last first."""
    pieces: list[Any] = [_CLOSE_ARRAY]
    for index, item in enumerate(reversed(node)):
        if index:
            pieces.append(_COMMA)
        pieces.append(item)
    pieces.append(_OPEN_ARRAY)
    return pieces


def _float_text(value: float) -> str:
    """A float as ``json.dumps`` writes it (NaN and the infinities by name)."""
    if math.isnan(value):
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_CHUNK_DIGITS = 256
"""Decimal digits per piece of a long integer: far under any limit a process may set."""


def _integer_text(value: int) -> str:
    """An integer in decimal, whatever its length and the process's conversion limit."""
    if value.bit_length() < 1024:  # about 308 digits: under the smallest limit allowed
        return int.__repr__(value)
    sign, value = ("-", -value) if value < 0 else ("", value)
    base = 10**_CHUNK_DIGITS
    pieces: list[str] = []
    while value >= base:
        value, chunk = divmod(value, base)
        pieces.append(f"{chunk:0{_CHUNK_DIGITS}d}")
    pieces.append(int.__repr__(value))
    return sign + "".join(reversed(pieces))


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class ApprovalRequest(FrozenValue):
    """What an approver is asked about: one call, before it runs.

    Attributes:
        tool_name: the tool the call would run.
        arguments: the validated arguments the tool would receive, secrets included
            (the approver is the host's own code).
        display_arguments: the same with secret values replaced by ``[redacted]``
            under the runtime's redaction policy: the ones to show a person.
        fingerprint: the call's `fingerprint`; put it in the decision to bind it.
        descriptor: the tool's descriptor.
        plan_id: the plan the call belongs to.
        call_id: the runtime's id of the call (its trace's ``call_id``).
        tool_call_id: the model's id of the call, when it came through ``call``.
    """

    tool_name: str
    arguments: dict[str, Any] = field(repr=False)
    display_arguments: dict[str, Any]
    fingerprint: str
    descriptor: ToolDescriptor = field(repr=False)
    plan_id: str
    call_id: str
    tool_call_id: str | None = None


class ApprovalDecision(BaseModel):
    """An approver's answer: approve, deny or defer one call.

    Build one with `approve`, `deny` or `defer`. A decision that carries a
    ``fingerprint`` applies only to the call with that fingerprint.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    outcome: Literal["approve", "deny", "defer"]
    reason: str | None = None
    """Why; shown to the model for a denial and kept in the trace."""
    fingerprint: str | None = None
    """The call the decision is about, when the reviewer bound it to one."""
    reply: Any = None
    """For a call its own tool deferred to ask a question (``PendingApproval.request``),
    the answer, given back to the tool when the call resumes (see `current_resumption`)."""

    @classmethod
    def approve(
        cls, *, reason: str | None = None, fingerprint: str | None = None, reply: Any = None
    ) -> ApprovalDecision:
        """Let the call run; ``reply`` answers the question of a tool that deferred itself."""
        return cls(outcome="approve", reason=reason, fingerprint=fingerprint, reply=reply)

    @classmethod
    def deny(cls, reason: str, *, fingerprint: str | None = None) -> ApprovalDecision:
        """Refuse the call; ``reason`` reaches the model in the failed result."""
        return cls(outcome="deny", reason=reason, fingerprint=fingerprint)

    @classmethod
    def defer(cls, reason: str | None = None) -> ApprovalDecision:
        """Decide later: the call returns a pending result to resume with ``runtime.resume``."""
        return cls(outcome="defer", reason=reason)


Approver: TypeAlias = (
    "Callable[[ApprovalRequest], ApprovalDecision | bool | Awaitable[ApprovalDecision | bool]]"
)
"""A plan's approver: a function or coroutine function of an `ApprovalRequest`.

``True`` means approve and ``False`` deny (with a generic reason).
"""


class ApprovalLedger(Protocol):
    """Remembers which pending calls were resumed, so that none runs twice.

    A ledger may also have ``release(approval_id) -> None``, which forgets a claim
    so that the id can be claimed again. The runtime calls it only for a resume
    it refused right after the claim, before anything ran (its plan ended or was
    cancelled meanwhile), so that the call stays resumable. A ledger without it
    keeps such a claim, and the call can no longer be resumed. Both ledgers here
    have it.
    """

    def claim(self, approval_id: str) -> bool:
        """Record ``approval_id`` as resumed; False if it already was (atomically)."""
        ...


class MemoryApprovalLedger:
    """An `ApprovalLedger` in memory: claims last as long as the object."""

    __slots__ = ("_claimed", "_lock")

    def __init__(self) -> None:
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def claim(self, approval_id: str) -> bool:
        """Record ``approval_id``; False if it was recorded before."""
        with self._lock:
            if approval_id in self._claimed:
                return False
            self._claimed.add(approval_id)
            return True

    def release(self, approval_id: str) -> None:
        """Forget the claim of ``approval_id`` (nothing if there is none)."""
        with self._lock:
            self._claimed.discard(approval_id)


class FileApprovalLedger:
    """An `ApprovalLedger` in a directory, shared by every process that uses it.

    Each claim creates one empty file named after the id, with an exclusive
    create, so two processes that resume the same call race for one file and
    exactly one wins. A claim is on disk (its directory synced) before it is
    granted, so a crash of the machine right after the call ran cannot forget
    it. The directory is created if needed. Ids are made by the runtime (hex
    digits and dashes); any other character is refused. Nothing is ever removed
    but by `release`: the directory grows by one empty file per resumed call.
    """

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def claim(self, approval_id: str) -> bool:
        """Create the id's file; False if it exists already.

        Raises:
            ValueError: the id is not one the runtime makes.
        """
        try:
            descriptor = os.open(self._file(approval_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(descriptor)
        self._sync()
        return True

    def release(self, approval_id: str) -> None:
        """Remove the id's file, so that the id can be claimed again (nothing if it has none).

        Raises:
            ValueError: the id is not one the runtime makes.
        """
        self._file(approval_id).unlink(missing_ok=True)

    def _sync(self) -> None:
        """Flush the directory, so that a new claim's file outlives a crash of the machine.

        Only the file's name matters (it is empty), and the name is the directory's.
        """
        if not hasattr(os, "O_DIRECTORY"):  # pragma: no cover - Windows opens no directory
            return
        descriptor = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _file(self, approval_id: str) -> Path:
        """The id's file; only an id the runtime makes names one (no path can sneak in)."""
        if not approval_id or not all(c in "0123456789abcdef-" for c in approval_id):
            raise ValueError(f"{approval_id!r} is not an approval id made by toolcycle")
        return self.path / approval_id


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class Resumption(FrozenValue):
    """A call that its tool deferred, being resumed with the answer to its question.

    Attributes:
        request: the tool's question, as it put it in ``PendingApproval.request``.
        reply: the answer, from ``ApprovalDecision.reply``.
        approval_id: the pending call's id.
    """

    request: dict[str, Any]
    reply: Any
    approval_id: str


_resumption: ContextVar[Resumption | None] = ContextVar("toolcycle_resumption", default=None)


def current_resumption() -> Resumption | None:
    """The resumption of the call running now, if ``runtime.resume`` is continuing one.

    A tool that deferred itself (by returning a `ToolResult` whose ``pending``
    carries a ``request``) reads it in ``execute`` to continue where it stopped.
    None for every other call.
    """
    return _resumption.get()
