"""A call's stage hears of its plan's cancellation or end exactly once."""

from __future__ import annotations

import threading

from toolcycle.cancellation import CancellationToken
from toolcycle.execution._inflight import Flight, Flights


def _flight(token: CancellationToken | None = None) -> tuple[Flights, Flight]:
    flights = Flights(token or CancellationToken())
    flight = flights.admit(record=None, owner=None)
    assert flight is not None
    return flights, flight


def test_a_stage_hears_of_its_plans_cancellation_once() -> None:
    """Cancelling the plan's token runs the registered stage's callback, once."""
    token = CancellationToken()
    _, flight = _flight(token)
    heard: list[str] = []
    flight.on_cancel(lambda: heard.append("stop"))
    token.cancel("bye")
    token.cancel("again")
    assert heard == ["stop"]


def test_a_stage_registered_on_a_cancelled_plan_hears_at_once() -> None:
    """A stage that starts after the cancellation is told at once, and only then."""
    token = CancellationToken()
    token.cancel()
    _, flight = _flight(token)
    heard: list[int] = []
    unregister = flight.on_cancel(lambda: heard.append(1))
    unregister()
    assert heard == [1]


def test_a_stage_over_before_the_cancellation_hears_nothing() -> None:
    """Unregistering a stage keeps a later cancellation from reaching it."""
    token = CancellationToken()
    _, flight = _flight(token)
    heard: list[int] = []
    unregister = flight.on_cancel(lambda: heard.append(1))
    unregister()
    token.cancel()
    flight.cancel("ended")
    assert heard == []


def test_the_plans_end_reaches_the_running_stage_once() -> None:
    """Ending the plan runs the running stage's callback once, even if the token is cancelled too."""
    token = CancellationToken()
    flights, flight = _flight(token)
    heard: list[int] = []
    flight.on_cancel(lambda: heard.append(1))
    for running in flights.close():
        running.cancel("the plan ended")
    token.cancel()
    assert heard == [1]


def _race_once() -> list[int]:
    """Eight stages register while the plan's token is cancelled; how often each heard."""
    token = CancellationToken()
    flights = Flights(token)
    counts = [0] * 8
    lock = threading.Lock()
    start = threading.Barrier(9, timeout=10)

    def stage(index: int) -> None:
        flight = flights.admit(record=None, owner=None)
        assert flight is not None

        def heard() -> None:
            with lock:
                counts[index] += 1

        start.wait()
        flight.on_cancel(heard)

    threads = [threading.Thread(target=stage, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    start.wait()
    token.cancel()
    for thread in threads:
        thread.join(timeout=10)
    return counts


def test_stages_racing_a_cancellation_each_hear_of_it_exactly_once() -> None:
    """Whichever comes first, registration or cancellation, every stage's callback runs once."""
    for _ in range(200):
        assert _race_once() == [1] * 8
