"""What an undo handler is, and the two errors it raises to say why a change stays.

`UndoHandler` undoes one `Change`; it raises `RollbackConflictError` or
`RollbackUnsupportedError` to have the change reported ``conflict`` or
``unsupported`` rather than ``failed``. The rollback (``toolcycle.rollback``, which
makes all three public) and the built-in file handlers (``toolcycle._file_undo``)
both need them, so they sit below both.
"""

from collections.abc import Callable

from toolcycle.models import Change

__all__ = ["RollbackConflictError", "RollbackUnsupportedError", "UndoHandler"]

UndoHandler = Callable[[Change], None]
"""Undoes one change.

Raises `RollbackConflictError` if the target changed since (reported ``conflict``)
and `RollbackUnsupportedError` if the change records no way back (``unsupported``);
any other exception is reported ``failed``.
"""


class RollbackConflictError(Exception):
    """The target of a change was modified after the change; it is left as it is."""

    # Its public home: tracebacks, pickles and trace spans name it there.
    __module__ = "toolcycle.rollback"


class RollbackUnsupportedError(Exception):
    """The change recorded no way back (for example, previous bytes too large to keep).

    An undo handler raises it to have the change reported ``unsupported`` rather
    than ``failed``: nothing went wrong, there is just nothing to undo with.
    """

    __module__ = "toolcycle.rollback"  # as for RollbackConflictError
