"""`Validation` and `ValidationIssue`: what checking a value against a schema found.

They sit below both `errors` (whose `ToolSchemaValidationError` carries a
`Validation`) and `models` (whose `ToolResult` does too), so neither of those
two needs the other for them. Both names are public through `toolcycle` and
`toolcycle.models`.
"""

from pydantic import BaseModel, ConfigDict

__all__ = ["Validation", "ValidationIssue"]

# Frozen like every record in `models`; the validator is built on first use.
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ValidationIssue(BaseModel):
    """One reason a value does not satisfy a schema."""

    model_config = _FROZEN

    pointer: str
    """JSON Pointer (RFC 6901) of the failing value; ``""`` is the whole value."""
    keyword: str
    """The schema keyword that failed, for example ``"type"`` or ``"required"``."""
    message: str
    """A short sentence saying what is wrong, meant for a person or a model."""


class Validation(BaseModel):
    """The outcome of checking one value against one schema."""

    model_config = _FROZEN

    valid: bool
    issues: tuple[ValidationIssue, ...] = ()

    def summary(self) -> str:
        """Return the issues as one line each, ``pointer: message``."""
        return "\n".join(f"{issue.pointer or '/'}: {issue.message}" for issue in self.issues)
