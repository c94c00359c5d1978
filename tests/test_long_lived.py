"""A runtime that runs plan after plan keeps nothing of the plans that have ended."""

from __future__ import annotations

import asyncio

from toolcycle import CancellationToken, ToolRuntime, tool
from toolcycle.execution._inflight import Flights

PLANS = 200


@tool
async def pause(x: int) -> int:
    """Return ``x`` after giving the event loop a turn."""
    await asyncio.sleep(0)
    return x


def test_plans_sharing_one_token_leave_no_callbacks_on_it() -> None:
    """A token the host passes to plan after plan holds nothing of the plans that ended."""
    shared = CancellationToken()
    with ToolRuntime() as runtime:
        runtime.register(pause)
        for number in range(PLANS):
            with runtime.plan(cancellation_token=shared) as ctx:
                assert runtime.execute("pause", {"x": number}, ctx).output == number
    assert len(shared._callbacks) == 0


async def test_async_plans_sharing_one_token_leave_no_callbacks_on_it() -> None:
    """The same holds for plans opened and ended from async code."""
    shared = CancellationToken()
    with ToolRuntime() as runtime:
        runtime.register(pause)
        for number in range(PLANS):
            async with runtime.aplan(cancellation_token=shared) as ctx:
                result = await runtime.aexecute("pause", {"x": number}, ctx)
                assert result.output == number
    assert len(shared._callbacks) == 0
    assert not shared.is_cancelled


def test_a_plans_flights_leave_its_token_once_closed_and_empty() -> None:
    """The listener on the plan's token goes when the plan is closed and its last call ends."""
    token = CancellationToken()
    flights = Flights(token)
    flight = flights.admit(record=None, owner=None)
    assert flight is not None
    flight.on_cancel(lambda: None)
    assert len(token._callbacks) == 1
    assert flights.close() == (flight,)
    assert len(token._callbacks) == 1  # the call still runs: a cancellation must reach it
    flights.release(flight)
    assert len(token._callbacks) == 0


def test_flights_that_start_listening_after_their_last_call_leave_the_token_at_once() -> None:
    """A listener added once the plan is closed and empty is taken back at once."""
    token = CancellationToken()
    flights = Flights(token)
    flights.close()
    flights.listen()
    assert len(token._callbacks) == 0
