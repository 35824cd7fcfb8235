"""settle: a stop's wait for tasks that may be started while it waits."""

from __future__ import annotations

import asyncio

from gateway.infra.tasks import settle


def _tracked(tasks: set[asyncio.Future[None]], coro) -> asyncio.Future[None]:
    task = asyncio.ensure_future(coro)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def test_a_task_started_while_waiting_is_waited_for_too():
    tasks: set[asyncio.Future[None]] = set()
    gate, second_done = asyncio.Event(), asyncio.Event()

    async def second() -> None:
        await gate.wait()
        second_done.set()

    async def first() -> None:
        _tracked(tasks, second())
        await asyncio.sleep(0)
        gate.set()

    _tracked(tasks, first())
    assert await asyncio.wait_for(settle(tasks, 10), 10)
    assert second_done.is_set() and not tasks


async def test_cancelling_reaches_a_task_started_as_another_was_cancelled():
    tasks: set[asyncio.Future[None]] = set()
    later_cancelled = asyncio.Event()

    async def later() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            later_cancelled.set()
            raise

    async def first() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            _tracked(tasks, later())
            raise

    _tracked(tasks, first())
    await asyncio.sleep(0)  # first is running
    assert await asyncio.wait_for(settle(tasks, 10, cancel=True), 10)
    assert later_cancelled.is_set() and not tasks


async def test_the_wait_is_bounded_in_all_and_says_what_is_left():
    tasks: set[asyncio.Future[None]] = set()
    release = asyncio.Event()
    stuck = _tracked(tasks, release.wait())
    assert not await asyncio.wait_for(settle(tasks, 0.2), 10)
    assert not stuck.done()
    release.set()
    assert await asyncio.wait_for(settle(tasks, 10), 10)


async def test_done_tasks_left_in_a_collection_are_not_waited_for():
    done = asyncio.get_running_loop().create_future()
    done.set_result(None)
    assert await asyncio.wait_for(settle([done], None), 10)


async def test_tasks_done_but_not_yet_taken_out_are_let_go_before_it_returns():
    """A task that has just ended is still in its set until its done callback runs: the wait
    lets it run, so that a caller asking again finds the set empty."""
    tasks: set[asyncio.Future[None]] = set()
    ended = asyncio.get_running_loop().create_future()
    tasks.add(ended)
    ended.add_done_callback(tasks.discard)
    ended.set_result(None)  # done now; the callback is only scheduled
    assert tasks == {ended}
    assert await settle(tasks, 10)  # awaited directly: wait_for's own task would give the turn
    assert not tasks
