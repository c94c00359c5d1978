"""Where the SDK's OAuth providers keep their tokens: in memory, or in a private file.

The SDK's ``OAuthClientProvider`` (and its client-credentials variant) reads
and writes tokens and its client registration through a small protocol,
``mcp.client.auth.TokenStorage``: four coroutines. Both stores here satisfy it.
`FileTokenStorage` keeps one JSON file per identity, written whole and
atomically (a temporary file in the same folder, then a rename) with mode
0600 from its creation, so the tokens are never readable by other users, not
even for a moment, and a crash never leaves half a file. Every folder it has to
create on the way is made 0700 as it is created; folders that exist already
are left as they are.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mcp.client.auth import TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["FileTokenStorage", "MemoryTokenStorage", "TokenStorage"]

_MODE = 0o600
_FOLDER_MODE = 0o700


class MemoryTokenStorage:
    """Tokens and client registration held by this object, gone with the process."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None

    def __repr__(self) -> str:
        return f"MemoryTokenStorage(has_tokens={self._tokens is not None})"

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, or None."""
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep ``tokens``, replacing any before."""
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The stored client registration, or None."""
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep ``client_info``, replacing any before."""
        self._client = client_info


class FileTokenStorage:
    """Tokens and client registration in one JSON file, readable by its owner only.

    Args:
        path: the file; its folder, and each folder above it that is missing,
            is created with mode 0700. Give each user (each identity) a file
            of its own.

    A file that cannot be read as stored tokens (damaged, or from elsewhere)
    counts as empty: the provider then signs in again and overwrites it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, or None."""
        data = self._read().get("tokens")
        return None if data is None else _load(OAuthToken, data)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Store ``tokens``, keeping the client registration."""
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The stored client registration, or None."""
        data = self._read().get("client_info")
        return None if data is None else _load(OAuthClientInformationFull, data)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Store ``client_info``, keeping the tokens."""
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        _make_folders(self.path.parent)
        # mkstemp creates the file with mode 0600; the rename replaces the old one whole.
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.chmod(temporary, _MODE)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _make_folders(folder: Path) -> None:
    """Create ``folder`` and every missing folder above it, each with mode 0700.

    ``Path.mkdir(parents=True)`` gives only the last folder the mode asked for;
    the ones above it would get the default mode, readable by everyone. Folders
    that exist already are not touched.

    Raises:
        FileExistsError: something on the way exists and is not a folder.
    """
    missing: list[Path] = []
    while folder != folder.parent and not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, _FOLDER_MODE)
        except FileExistsError:
            if not path.is_dir():  # a file where a folder should be
                raise
            # Created by someone else in the meantime: theirs, left as it is.


def _load(model: Any, data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValueError:
        return None
