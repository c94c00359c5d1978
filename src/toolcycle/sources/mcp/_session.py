"""The SDK's client session, showing each protocol era only the capabilities it can honour.

A session's callbacks are given when it is made, and with ``protocol="auto"``
that is before the ``server/discover`` probe tells which era the server speaks.
toolcycle declares elicitation in the 2026-07-28 era even with no handler: a
question nobody answers there defers the call, which is an answer. A
handshake-era session cannot defer (the question cannot outlive the call), so
when the probe falls back to ``initialize`` the handshake declares elicitation
only with a handler, as ``protocol="legacy"`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.client import ClientSession
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    import mcp_types

__all__ = ["Session"]


class Session(ClientSession):
    """A `ClientSession` whose handshake may leave elicitation out.

    Args:
        *args: as for `ClientSession`.
        handshake_elicitation: whether the ``initialize`` handshake declares
            elicitation when the session has an elicitation callback.
        **kwargs: as for `ClientSession`.
    """

    def __init__(self, *args: Any, handshake_elicitation: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handshake_elicitation = handshake_elicitation

    def _build_capabilities(self, version: str) -> mcp_types.ClientCapabilities:
        # The SDK's one place that turns callbacks into the capabilities a version is shown.
        capabilities = super()._build_capabilities(version)
        if version in HANDSHAKE_PROTOCOL_VERSIONS and not self._handshake_elicitation:
            return capabilities.model_copy(update={"elicitation": None})
        return capabilities
