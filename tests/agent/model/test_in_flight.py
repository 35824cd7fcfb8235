"""Model calls are admitted while the conversations they carry fit the budget, in order."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from agent.model.in_flight import InFlight


async def _enter(budget: InFlight, size: int, entered: list[int], leave: asyncio.Event) -> None:
    async with budget.hold(size):
        entered.append(size)
        await leave.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)  # yields only: the tasks run up to their next wait


async def test_short_calls_go_at_once_long_ones_take_turns():
    budget = InFlight(budget=4000, floor=100)
    leave = asyncio.Event()
    entered: list[int] = []
    short = [asyncio.create_task(_enter(budget, 10, entered, leave)) for _ in range(31)]
    await _settle()
    assert len(entered) == 31 and budget.used == 3100  # each counts the floor
    long = [asyncio.create_task(_enter(budget, 50_000, entered, leave)) for _ in range(3)]
    await _settle()
    # A long call counts a quarter of the budget: none fits beside the 31 short ones.
    assert len(entered) == 31 and budget.waiting == 3
    leave.set()
    await asyncio.wait_for(asyncio.gather(*short, *long), 5)
    assert entered[31:] == [50_000] * 3 and budget.used == 0 and budget.waiting == 0


async def test_first_come_first_served_a_short_call_does_not_pass_a_long_one():
    budget = InFlight(budget=4000, floor=100)
    leaves = [asyncio.Event() for _ in range(35)]
    entered: list[int] = []
    shorts = [asyncio.create_task(_enter(budget, 100, entered, e)) for e in leaves]
    await _settle()
    assert budget.used == 3500
    long = asyncio.create_task(_enter(budget, 9000, entered, asyncio.Event()))
    await _settle()
    late = asyncio.create_task(_enter(budget, 100, entered, asyncio.Event()))
    await _settle()
    # The late short call would fit (3,600), but the long one (counted 1,000) came first.
    assert len(entered) == 35 and budget.waiting == 2
    for event in leaves[:5]:
        event.set()
    await _settle()
    assert entered[35:] == [9000] and budget.used == 4000 and budget.waiting == 1
    leaves[5].set()
    await _settle()
    assert entered[36:] == [100] and budget.waiting == 0
    for task in (*shorts, long, late):
        task.cancel()
    await asyncio.gather(*shorts, long, late, return_exceptions=True)
    assert budget.used == 0


async def test_a_call_cancelled_while_waiting_takes_nothing_and_lets_the_next_in():
    budget = InFlight(budget=400, floor=100)
    leave, entered = asyncio.Event(), []
    holders = [asyncio.create_task(_enter(budget, 100, entered, leave)) for _ in range(4)]
    await _settle()
    waiting = asyncio.create_task(_enter(budget, 100, entered, asyncio.Event()))
    after = asyncio.create_task(_enter(budget, 100, entered, leave))
    await _settle()
    assert budget.waiting == 2
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert budget.waiting == 1 and budget.used == 400
    holders[0].cancel()  # one leaves: the call behind the cancelled one is admitted
    await asyncio.gather(holders[0], return_exceptions=True)
    await _settle()
    assert budget.waiting == 0 and len(entered) == 5
    leave.set()
    await asyncio.wait_for(asyncio.gather(*holders[1:], after), 5)
    assert budget.used == 0


async def test_cancelling_a_long_call_that_waits_admits_the_short_one_behind_it():
    budget = InFlight(budget=4000, floor=100)
    leave, entered = asyncio.Event(), []
    holders = [asyncio.create_task(_enter(budget, 100, entered, leave)) for _ in range(35)]
    await _settle()
    long = asyncio.create_task(_enter(budget, 9000, entered, leave))
    await _settle()
    short = asyncio.create_task(_enter(budget, 100, entered, leave))
    await _settle()
    assert budget.waiting == 2
    long.cancel()
    await asyncio.gather(long, return_exceptions=True)
    await _settle()
    assert budget.waiting == 0 and entered[35:] == [100] and budget.used == 3600
    leave.set()
    await asyncio.wait_for(asyncio.gather(*holders, short), 5)
    assert budget.used == 0


async def test_a_call_admitted_and_cancelled_in_the_same_moment_gives_its_share_back():
    """The call that frees room admits the one waiting, which is cancelled before it runs:
    it must give back what it was granted, or the budget shrinks for good."""
    budget = InFlight(budget=400, floor=100)
    entered: list[int] = []
    full, last = contextlib.AsyncExitStack(), contextlib.AsyncExitStack()
    for _ in range(3):
        await full.enter_async_context(budget.hold(100))
    await last.enter_async_context(budget.hold(100))  # the budget is full
    waiting = asyncio.create_task(_enter(budget, 100, entered, asyncio.Event()))
    await _settle()
    assert budget.waiting == 1
    await last.aclose()  # admits the waiting call, which has not run since
    assert budget.used == 400 and budget.waiting == 0
    waiting.cancel()  # in the same moment
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert entered == [] and budget.used == 300
    await full.aclose()
    assert budget.used == 0
    # The whole budget is there again: four calls at once.
    async with asyncio.timeout(5), contextlib.AsyncExitStack() as again:
        for _ in range(4):
            await again.enter_async_context(budget.hold(100))
        assert budget.used == 400 and budget.waiting == 0


async def test_a_call_cancelled_as_room_is_made_is_passed_over_and_leaves_the_queue():
    """Room made in the moment a waiting call is cancelled (its own handler not run yet) goes
    to the call behind it; and a cancelled call behind another leaves the queue at once."""
    budget = InFlight(budget=400, floor=100)
    entered: list[int] = []
    full, last = contextlib.AsyncExitStack(), contextlib.AsyncExitStack()
    for _ in range(3):
        await full.enter_async_context(budget.hold(100))
    await last.enter_async_context(budget.hold(100))
    leave = asyncio.Event()
    first, second, third = (
        asyncio.create_task(_enter(budget, size, entered, leave)) for size in (100, 101, 102)
    )
    await _settle()
    assert budget.waiting == 3
    third.cancel()  # behind the others
    await asyncio.gather(third, return_exceptions=True)
    assert budget.waiting == 2
    first.cancel()  # at the head; room is made before its handler runs
    await last.aclose()
    await asyncio.gather(first, return_exceptions=True)
    await _settle()
    assert entered == [101] and budget.used == 400 and budget.waiting == 0
    leave.set()
    await asyncio.wait_for(second, 5)
    await full.aclose()
    assert budget.used == 0


async def test_by_default_256_kib_of_conversation_fly_at_once_each_call_a_kib_at_least():
    """The sizes the README gives: at least 1 KiB a call, at most a quarter of 256 KiB."""
    budget = InFlight()
    assert budget.weight(10) == 1024 and budget.weight(10**6) == 64 * 1024
    async with asyncio.timeout(5), contextlib.AsyncExitStack() as held:
        for _ in range(256):
            await held.enter_async_context(budget.hold(1000))
        assert budget.used == 256 * 1024 and budget.waiting == 0
        late = asyncio.create_task(_enter(budget, 1, [], asyncio.Event()))
        await _settle()
        assert budget.waiting == 1  # the 257th waits
        late.cancel()
        await asyncio.gather(late, return_exceptions=True)
