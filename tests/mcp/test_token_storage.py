"""The token stores for the SDK's OAuth providers: in memory, and in a private file."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common umask 022, under which a folder made with the default mode is 0755."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_folder_the_file_storage_creates_is_owner_only(
    tmp_path: Path, open_umask: None
) -> None:
    """Each missing folder on the way to the file is made 0700, not only the last one."""
    existing = tmp_path / "home"
    existing.mkdir(mode=0o755)
    path = existing / "config" / "app" / "tokens" / "user.json"
    asyncio.run(FileTokenStorage(path).set_tokens(TOKEN))
    created = [existing / "config", existing / "config" / "app", path.parent]
    assert [_mode(folder) for folder in created] == [0o700, 0o700, 0o700]
    assert _mode(existing) == 0o755  # it was there before: left as it was
    assert _mode(path) == 0o600


def test_a_folder_made_by_someone_else_meanwhile_is_used_and_left_as_it_is(
    tmp_path: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When another process creates a folder between the look and the mkdir, the write goes on."""
    path = tmp_path / "shared" / "mine" / "user.json"
    real_mkdir = os.mkdir

    def racing_mkdir(folder: Any, mode: int = 0o777) -> None:
        if Path(folder).name == "shared":
            real_mkdir(folder, 0o755)  # the other process wins the race
        real_mkdir(folder, mode)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    asyncio.run(FileTokenStorage(path).set_tokens(TOKEN))
    assert _mode(tmp_path / "shared") == 0o755
    assert _mode(path.parent) == 0o700
    assert asyncio.run(FileTokenStorage(path).get_tokens()) == TOKEN


def test_a_file_where_a_folder_should_be_fails_the_write(tmp_path: Path) -> None:
    """A file in the way of the folders is an error, and nothing is written in its place."""
    (tmp_path / "taken").write_text("a file")
    path = tmp_path / "taken" / "tokens" / "user.json"
    with pytest.raises(OSError, match="taken"):
        asyncio.run(FileTokenStorage(path).set_tokens(TOKEN))
    assert (tmp_path / "taken").read_text() == "a file"
