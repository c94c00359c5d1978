"""The token stores for the SDK's OAuth providers: in memory, and in a private file."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from toolcycle.sources.mcp import FileTokenStorage, MemoryTokenStorage

TOKEN = OAuthToken(access_token="access-1", refresh_token="refresh-1", expires_in=60)
CLIENT = OAuthClientInformationFull(client_id="client-1", redirect_uris=None)


def test_memory_storage_keeps_tokens_and_client_and_hides_them_in_its_repr() -> None:
    """What is set is what is got; the repr says only whether tokens are held."""
    storage = MemoryTokenStorage()
    assert asyncio.run(storage.get_tokens()) is None
    assert asyncio.run(storage.get_client_info()) is None
    asyncio.run(storage.set_tokens(TOKEN))
    asyncio.run(storage.set_client_info(CLIENT))
    assert asyncio.run(storage.get_tokens()) == TOKEN
    assert asyncio.run(storage.get_client_info()) == CLIENT
    assert repr(storage) == "MemoryTokenStorage(has_tokens=True)"


def test_file_storage_round_trips_and_writes_owner_only_files(tmp_path: Path) -> None:
    """Tokens and client survive a new object on the same file, which has mode 0600."""
    path = tmp_path / "new" / "user.json"
    storage = FileTokenStorage(path)
    assert asyncio.run(storage.get_tokens()) is None
    asyncio.run(storage.set_tokens(TOKEN))
    asyncio.run(storage.set_client_info(CLIENT))
    again = FileTokenStorage(str(path))
    assert asyncio.run(again.get_tokens()) == TOKEN
    assert asyncio.run(again.get_client_info()) == CLIENT
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    assert "access-1" not in repr(again)
    assert [p.name for p in path.parent.iterdir()] == ["user.json"]  # no temporary left


def test_file_storage_tightens_a_file_that_was_readable_by_others(tmp_path: Path) -> None:
    """Rewriting replaces the file whole, so an old 0644 file ends up 0600."""
    path = tmp_path / "user.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    asyncio.run(FileTokenStorage(path).set_tokens(TOKEN))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"tokens": {"nope": 1}}'])
def test_a_damaged_file_reads_as_empty(tmp_path: Path, text: str) -> None:
    """Unreadable content counts as no tokens, so the provider signs in again."""
    path = tmp_path / "user.json"
    path.write_text(text)
    assert asyncio.run(FileTokenStorage(path).get_tokens()) is None


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the rename fails, the temporary file is removed and the error raised."""
    path = tmp_path / "user.json"
    storage = FileTokenStorage(path)
    asyncio.run(storage.set_tokens(TOKEN))

    def refuse(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(storage.set_client_info(CLIENT))
    assert [p.name for p in tmp_path.iterdir()] == ["user.json"]
    assert asyncio.run(storage.get_client_info()) is None
