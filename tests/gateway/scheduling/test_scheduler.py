"""The scheduler core: exactly once per slot, catch-up after downtime, DST, retries, with a
fake clock so nothing waits for 21:00."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from gateway.scheduling.jobs import Job, JobKind
from gateway.scheduling.ledger import Ledger
from gateway.scheduling.scheduler import Scheduler
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")


def local(y, mo, d, h=0, mi=0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=BERLIN)


def daily(
    hour: int = 21,
    minute: int = 0,
    grace_hours: float = 12,
    created: datetime = datetime(2026, 1, 1, tzinfo=UTC),
) -> Job:
    return Job(
        id="daily-summary",
        kind=JobKind.CRON,
        spec=f"{minute} {hour} * * *",
        timezone="Europe/Berlin",
        target="telegram:private:42",
        created=created,
        grace=timedelta(hours=grace_hours),
    )


class Runs:
    def __init__(self, fail: int = 0) -> None:
        self.slots: list[str] = []
        self.fail = fail
        self.event = asyncio.Event()

    async def __call__(self, job: Job, slot: str) -> None:
        self.slots.append(slot)
        self.event.set()
        if self.fail:
            self.fail -= 1
            raise ConnectionError("channel down")

    async def wait(self, n: int, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.slots) < n:
                self.event.clear()
                await self.event.wait()


@pytest.fixture
def ledger(tmp_path):
    led = Ledger(tmp_path / "scheduler.sqlite")
    yield led
    led.close()


async def test_the_daily_job_fires_at_21_berlin_time_once(ledger):
    clock = FakeClock(local(2026, 11, 21, 20, 0))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    assert runs.slots == []
    await clock.set(local(2026, 11, 21, 21, 0))
    await runs.wait(1)
    await clock.idle_until(local(2026, 11, 22, 21, 0))  # and on to tomorrow
    assert runs.slots == ["2026-11-21T21:00"]
    assert ledger.status("daily-summary", "2026-11-21T21:00") == "sent"
    await sched.stop()


async def test_a_crash_between_claim_and_send_sends_once_after_restart(ledger):
    job = daily()
    fire = local(2026, 11, 21, 21, 0)
    assert ledger.claim(job, "2026-11-21T21:00", fire, fire)  # then the process died
    clock = FakeClock(local(2026, 11, 21, 21, 5))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]
    # A second restart the same evening sends nothing more.
    again = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], again)
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert again.slots == []


async def test_downtime_across_21_gives_one_catch_up_on_start(ledger):
    job = daily()
    yesterday = local(2026, 11, 20, 21, 0)
    ledger.settle(job, job.slot(yesterday), yesterday, "sent", yesterday)
    clock = FakeClock(local(2026, 11, 21, 23, 30))  # was down from 20:00 to 23:30
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]


async def test_runs_missed_beyond_the_grace_period_are_recorded_not_sent(ledger):
    job = daily(grace_hours=12)
    long_ago = local(2026, 11, 17, 21, 0)
    ledger.settle(job, job.slot(long_ago), long_ago, "sent", long_ago)
    clock = FakeClock(local(2026, 11, 21, 10, 0))  # down for days
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    await sched.stop()
    assert runs.slots == []
    assert ledger.status(job.id, "2026-11-20T21:00") == "missed"
    assert ledger.status(job.id, "2026-11-18T21:00") == "missed"


@pytest.mark.parametrize(
    ("start", "hour", "minute"),
    [
        (local(2026, 3, 25, 12), 21, 0),  # spring forward on 29 March
        (local(2026, 3, 25, 12), 2, 30),  # 02:30 does not exist on 29 March
        (local(2026, 10, 22, 12), 21, 0),  # fall back on 25 October
        (local(2026, 10, 22, 12), 2, 30),  # 02:30 happens twice on 25 October
    ],
)
async def test_a_dst_week_neither_skips_nor_doubles_a_day(ledger, start, hour, minute):
    job = daily(hour, minute, created=start)  # set up as the week starts: nothing owed yet
    clock = FakeClock(start)
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    while await clock.next_wake() < start + timedelta(days=7):
        await clock.advance()
    await sched.stop()
    dates = [slot[:10] for slot in runs.slots]
    assert len(dates) == 7 and len(set(dates)) == 7, runs.slots
    assert all(slot.endswith(f"T{hour:02d}:{minute:02d}") or slot.endswith("T03:30")
               for slot in runs.slots)  # fmt: skip


async def test_a_failing_run_is_retried_then_recorded(ledger):
    clock = FakeClock(local(2026, 11, 21, 21, 0))
    runs = Runs(fail=2)
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    await runs.wait(1)
    await clock.advance()  # first retry, after 30 s
    await clock.advance()  # second retry, after 2 min
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"] * 3
    last = ledger.history("daily-summary")[0]
    assert last["status"] == "sent" and last["attempts"] == 3


async def test_the_first_slot_is_caught_up_when_corvid_was_down_at_that_time(ledger):
    """Set up at 20:00, down at 21:00, up again at 21:00:05 with no run ever recorded: the
    missed summary is owed, once."""
    clock = FakeClock(local(2026, 11, 21, 21, 0) + timedelta(seconds=5))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily(created=local(2026, 11, 21, 20, 0))], runs)
    await runs.wait(1)
    await clock.idle_until(local(2026, 11, 22, 21, 0))  # then waits for tomorrow
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]


async def test_a_job_is_owed_from_its_first_sighting_not_from_a_later_change(ledger):
    """The ledger keeps when a job was first planned: a later restart that says the job was
    made just now (config.yaml edited at 21:00:02) still owes the 21:00 slot."""
    first = FakeClock(local(2026, 11, 21, 20, 0))
    sched = Scheduler(ledger, first)
    sched.start([daily(created=local(2026, 11, 21, 20, 0))], Runs())
    await first.idle_until(local(2026, 11, 21, 21, 0))
    await sched.stop()  # down before 21:00
    clock = FakeClock(
        local(
            2026,
            11,
            21,
            21,
            0,
        )
        + timedelta(seconds=5)
    )
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily(created=local(2026, 11, 21, 21, 0) + timedelta(seconds=2))], runs)
    await runs.wait(1)
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]


async def test_a_job_never_set_up_before_its_slot_owes_nothing(ledger):
    clock = FakeClock(local(2026, 11, 21, 21, 30))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily(created=local(2026, 11, 21, 21, 10))], runs)  # made after 21:00
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert runs.slots == []
