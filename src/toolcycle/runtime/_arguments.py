"""A call's arguments at step 4: checked against the input schema, their secrets learnt.

`check_input` normalises and validates the arguments (the result of a refusal is
`_results`' business), and, when the runtime redacts, teaches the call's record
how to scrub the arguments' secrets from every message it exports; `learn_secrets`
does only the latter, for arguments that are never validated. The secrets are
looked for lazily, so a call that exports no message never pays for the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolcycle.models import Validation, ValidationIssue

if TYPE_CHECKING:
    from toolcycle.redaction import RedactionPolicy
    from toolcycle.runtime._record import CallRecord
    from toolcycle.validation import CompiledSchema

__all__ = ["check_input", "learn_secrets"]


def check_input(
    record: CallRecord,
    schema: CompiledSchema,
    params: Any,
    redaction: RedactionPolicy | None = None,
) -> Any:
    """Step 4: return the normalised input, or the `Validation` that refused it.

    With a ``redaction`` policy, the call's record learns the secrets of the
    arguments first, so that every message exported for the call hides them
    (the refusal's issues are scrubbed already). `_results.invalid_result`
    makes a refusal the call's result.
    """
    if type(params) is dict or isinstance(params, Mapping):
        if redaction is not None:
            record.scrub = _scrubber(redaction, params, schema)
        data, validation = schema.validate(params)
        if validation.valid:
            return data
        if record.scrub is not None:
            validation = _scrubbed(validation, record.scrub)
        return validation
    issue = ValidationIssue(
        pointer="",
        keyword="type",
        message=f"the arguments must be a JSON object, got {type(params).__name__}",
    )
    return Validation(valid=False, issues=(issue,))


def learn_secrets(
    record: CallRecord,
    params: Mapping[str, Any],
    schema: CompiledSchema,
    redaction: RedactionPolicy | None,
) -> None:
    """Teach the call's record the secrets of ``params`` without validating them.

    For a call whose arguments are known but never validated (a resumed denial):
    its messages must hide the same secrets as those of a call that ran.
    """
    if redaction is not None:
        record.scrub = _scrubber(redaction, params, schema)


def _scrubber(
    redaction: RedactionPolicy, params: Mapping[str, Any], schema: CompiledSchema
) -> Callable[[str], str]:
    """A scrub function that looks for the arguments' secrets only when first asked.

    A successful call exports no message, so it never pays for the walk. The
    walk reads the arguments as the messages show them, normalised (a
    dataclass as an object), or as given when they cannot be. Arguments the
    walk cannot read at all (a container that raises, say) fail closed: every
    message of the call is withheld rather than risk showing a secret.

    The commonest arguments, one object of plain values that nothing marks,
    are judged as they are, with no copy and no walk (normalising them would
    change nothing); and when the call has no secrets, every text comes back
    as it is at once. A call that returns content parts asks once per text
    part, so this is what it costs when there is nothing to hide.
    """
    found: list[tuple[str, ...] | None] = []

    def scrub(text: str) -> str:
        if not found:
            found.append(_secrets(redaction, params, schema))
        secrets = found[0]
        if not secrets:
            return _WITHHELD if secrets is None else text
        return redaction.scrub(text, secrets)

    return scrub


def _secrets(
    redaction: RedactionPolicy, params: Mapping[str, Any], schema: CompiledSchema
) -> tuple[str, ...] | None:
    """The secrets of the arguments, or None if they cannot be searched."""
    if redaction.hides_nothing(params, schema.schema):
        return ()
    try:
        data = schema.normalize(params)
    except Exception:  # refused: its issues say why; look in the value as given
        data = params
    try:
        return redaction.secrets(data, schema.schema)
    except Exception:
        return None


_WITHHELD = (
    "[withheld: the arguments could not be searched for secrets, so no message quoting "
    "them is shown; send plain JSON data]"
)


def _scrubbed(validation: Validation, scrub: Callable[[str], str]) -> Validation:
    # The pointer too: it names the keys on the way, and a key may be a secret.
    issues = tuple(
        issue.model_copy(update={"pointer": scrub(issue.pointer), "message": scrub(issue.message)})
        for issue in validation.issues
    )
    return validation.model_copy(update={"issues": issues})
