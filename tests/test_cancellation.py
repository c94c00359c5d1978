"""CancellationToken: one-way, idempotent, thread-safe, with callbacks."""

from __future__ import annotations

import threading

import pytest

from toolcycle import CancellationToken, ToolCancelledError


def test_new_token_is_not_cancelled_and_check_passes() -> None:
    """A fresh token is active and check() does nothing."""
    token = CancellationToken()
    assert not token.is_cancelled and token.reason is None
    token.check()
    assert "active" in repr(token)


def test_cancel_is_idempotent_and_the_first_reason_wins() -> None:
    """Only the first cancel() changes the token."""
    token = CancellationToken()
    assert token.cancel("first") is True
    assert token.cancel("second") is False
    assert token.is_cancelled and token.reason == "first"
    assert "first" in repr(token)


def test_check_raises_with_the_reason() -> None:
    """check() on a cancelled token raises ToolCancelledError carrying the reason."""
    token = CancellationToken()
    token.cancel("user asked")
    with pytest.raises(ToolCancelledError, match="user asked") as info:
        token.check()
    assert info.value.reason == "user asked"


def test_callbacks_run_once_on_cancel_and_unregister_works() -> None:
    """Registered callbacks run once; an unregistered one never runs."""
    token = CancellationToken()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("a"))
    remove = token.on_cancel(lambda: calls.append("b"))
    remove()
    remove()
    token.cancel()
    token.cancel()
    assert calls == ["a"]


def test_callback_registered_after_cancel_runs_at_once() -> None:
    """A late callback runs immediately, on the registering thread."""
    token = CancellationToken()
    token.cancel()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append(threading.current_thread().name))()
    assert calls == [threading.current_thread().name]


def test_a_raising_callback_does_not_stop_the_others() -> None:
    """A callback that raises is logged and the next one still runs."""
    token = CancellationToken()
    calls: list[int] = []

    def broken() -> None:
        raise RuntimeError("bug")

    token.on_cancel(broken)
    token.on_cancel(lambda: calls.append(1))
    token.cancel()
    assert calls == [1]


def test_concurrent_cancels_run_each_callback_exactly_once() -> None:
    """Many threads cancelling at once still run every callback once."""
    token = CancellationToken()
    counts = [0] * 10
    lock = threading.Lock()

    def bump(i: int) -> None:
        with lock:
            counts[i] += 1

    for i in range(10):
        token.on_cancel(lambda i=i: bump(i))
    start = threading.Barrier(8)

    def cancel() -> None:
        start.wait(5)
        token.cancel()

    threads = [threading.Thread(target=cancel) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert counts == [1] * 10
