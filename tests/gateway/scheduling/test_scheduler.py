"""The scheduler core: exactly once per slot, catch-up after downtime, DST, retries, with a
fake clock so nothing waits for 21:00."""

from __future__ import annotations

import asyncio
import gc
import weakref
from datetime import UTC, datetime, timedelta
from typing import ClassVar
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


class _RunFailed(Exception):
    made: ClassVar[list[weakref.ref[_RunFailed]]] = []  # every one made, weakly

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.made.append(weakref.ref(self))


async def test_a_run_waiting_to_be_retried_holds_no_failure(ledger):
    """The failure (its traceback's frames: whatever the run was holding) is let go before
    the retry's wait, which lasts minutes: reference counting frees it, collector or not."""
    failures = _RunFailed.made
    failures.clear()

    async def run(job: Job, slot: str) -> None:
        if not failures:
            raise _RunFailed("model unreachable")

    clock = FakeClock(local(2026, 11, 21, 21, 0))
    sched = Scheduler(ledger, clock)
    gc.disable()
    try:
        sched.start([daily()], run)
        await clock.next_wake()  # the run failed; the retry's wait has begun
        assert failures and failures[0]() is None
    finally:
        gc.enable()
        await clock.advance()  # the retry runs and succeeds
        await sched.stop()
    assert ledger.history("daily-summary")[0]["status"] == "sent"


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


# -- running by hand, adding and removing, one-shots, the edges of grace -------------------------


class Outcome:
    """A job run that does what it is told: succeed, skip or fail."""

    def __init__(self) -> None:
        self.next = "sent"

    async def __call__(self, job: Job, slot: str) -> None:
        from gateway.scheduling.jobs import Skip

        if self.next == "skip":
            raise Skip("a quiet day")
        if self.next == "fail":
            raise ConnectionError("channel down")


async def test_a_run_by_hand_records_what_happened_and_leaves_the_schedule(ledger):
    from gateway.scheduling.jobs import RunStatus

    clock = FakeClock(local(2026, 11, 21, 10, 0))
    outcome = Outcome()
    sched = Scheduler(ledger, clock)
    assert await sched.run_now("daily-summary") == (
        None,
        "no job 'daily-summary' (see `corvid jobs`)",
    )
    sched.start([daily()], outcome)
    assert await sched.run_now("nothing-like-it") == (
        None,
        "no job 'nothing-like-it' (see `corvid jobs`)",
    )
    results = []
    for what in ("sent", "skip", "fail"):
        outcome.next = what
        results.append(await sched.run_now("daily-summary"))
        clock.tick(1)
    assert results == [
        (RunStatus.SENT, None),
        (RunStatus.SKIPPED, "a quiet day"),
        (RunStatus.FAILED, "ConnectionError: channel down"),
    ]
    history = ledger.history("daily-summary", limit=5)
    assert [h["status"] for h in history] == ["failed", "skipped", "sent"]
    assert all(h["slot"].startswith("manual 2026-11-21T10:00:0") for h in history)
    assert ledger.history("daily-summary", scheduled_only=True) == []
    assert sched.next_run(daily()) == local(2026, 11, 21, 21, 0)
    await sched.stop()


async def test_a_job_that_cannot_be_scheduled_is_left_out_and_the_rest_run(ledger):
    clock = FakeClock(local(2026, 11, 21, 20, 0))
    broken = Job("broken", "weekly", "mon", "UTC", "telegram:private:42", clock.now())  # type: ignore[arg-type]
    bad_zone = Job(
        "zone", JobKind.CRON, "0 9 * * *", "Mars/Olympus", "telegram:private:42", clock.now()
    )
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([broken, bad_zone, daily()], runs)
    assert [j.id for j in sched.jobs()] == ["daily-summary"]
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    await clock.advance()
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]


async def test_a_removed_job_no_longer_runs_and_a_stopped_scheduler_runs_nothing(ledger):
    clock = FakeClock(local(2026, 11, 21, 20, 0))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    sched.remove("daily-summary")
    assert sched.jobs() == []
    await clock.set(local(2026, 11, 21, 21, 0))
    sched.add(daily(hour=22))
    await clock.idle_until(local(2026, 11, 21, 22, 0))
    await sched.stop()
    assert sched.running is False
    await clock.set(local(2026, 11, 21, 22, 0))
    await asyncio.sleep(0)  # a task left running would wake now
    assert runs.slots == []


async def test_a_one_shot_runs_once_and_is_then_finished(ledger):
    clock = FakeClock(local(2026, 11, 21, 8, 0))
    done: list[str] = []
    at = local(2026, 11, 21, 9, 0)
    job = Job("job-once", JobKind.ONCE, at.isoformat(), "Europe/Berlin", "telegram:private:42",
              clock.now())  # fmt: skip
    runs = Runs()
    sched = Scheduler(ledger, clock, finished=lambda j: done.append(j.id))
    sched.start([job], runs)
    await clock.idle_until(at)
    await clock.set(at)
    await asyncio.wait_for(sched.join("job-once"), 5)
    assert runs.slots == ["2026-11-21T09:00"] and done == ["job-once"]
    assert sched.jobs() == []
    await sched.stop()


async def test_a_slot_exactly_at_the_end_of_its_grace_still_runs(ledger):
    # Down from before 21:00 until exactly 12 hours later: the slot is still owed.
    clock = FakeClock(local(2026, 11, 21, 21, 0) + timedelta(hours=12))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily(created=local(2026, 11, 20, 12, 0))], runs)
    await runs.wait(1)
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]
    assert sched.next_run(daily()) is not None


async def test_no_retry_is_scheduled_past_the_grace_period(ledger):
    # Failing 11 h 59 min into a 12-hour grace: the next retry (30 s) still fits, the one after
    # (2 min) would not; the run then ends failed.
    start = local(2026, 11, 21, 21, 0) + timedelta(hours=11, minutes=59)
    clock = FakeClock(start)
    runs = Runs(fail=5)
    sched = Scheduler(ledger, clock)
    sched.start([daily(created=local(2026, 11, 20, 12, 0))], runs)
    await runs.wait(1)
    await clock.idle_until(start + timedelta(seconds=30))
    await clock.advance()
    await clock.idle_until(local(2026, 11, 22, 21, 0))
    await sched.stop()
    assert len(runs.slots) == 2
    last = ledger.history("daily-summary")[0]
    assert last["status"] == "failed" and last["attempts"] == 2


# -- what a mutation audit found no test defending ---------------------------------------------


def _every_minute(grace_seconds: int, created: datetime) -> Job:
    return Job(id="pulse", kind=JobKind.CRON, spec="* * * * *", timezone="UTC",
               target="telegram:private:42", created=created,
               grace=timedelta(seconds=grace_seconds))  # fmt: skip


async def test_after_a_short_downtime_only_the_newest_due_slot_runs(ledger):
    t0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    clock = FakeClock(t0 + timedelta(seconds=200))  # three slots came due while down
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([_every_minute(300, t0)], runs)
    await runs.wait(1)
    await clock.idle_until(t0 + timedelta(seconds=240))
    assert runs.slots == ["2026-11-22T12:03"]
    assert [r["status"] for r in ledger.history("pulse", limit=10)] == ["sent", *["missed"] * 3]
    await sched.stop()


async def test_stop_ends_every_job_and_start_schedules_them_again(ledger):
    clock = FakeClock(local(2026, 11, 21, 20, 0))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    tasks = list(sched._tasks.values())
    await sched.stop()
    assert tasks and all(t.done() for t in tasks)  # stopped, not left sleeping
    sched.start([daily()], runs)  # a second start (a reload) schedules it anew
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    await clock.set(local(2026, 11, 21, 21, 0))
    await runs.wait(1)
    assert runs.slots == ["2026-11-21T21:00"]
    await sched.stop()


async def test_a_job_added_again_replaces_the_old_one_and_runs_once(ledger):
    clock = FakeClock(local(2026, 11, 21, 20, 0))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    sched.add(daily(hour=22))  # the time changed: the 21:00 run is gone
    await clock.idle_until(local(2026, 11, 21, 22, 0))
    await clock.set(local(2026, 11, 21, 22, 0))
    await runs.wait(1)
    await clock.idle_until(local(2026, 11, 22, 22, 0))
    assert runs.slots == ["2026-11-21T22:00"]
    await sched.stop()


async def test_a_run_started_by_hand_is_recorded(ledger):
    clock = FakeClock(local(2026, 11, 21, 10, 0))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([daily()], runs)
    assert await sched.run_now("daily-summary") == ("sent", None)
    (row,) = ledger.history("daily-summary")
    # Claimed before it ran (a crash mid-run leaves it visible as claimed), then settled.
    assert (row["slot"], row["status"], row["attempts"]) == (
        "manual 2026-11-21T10:00:00",
        "sent",
        1,
    )
    await sched.stop()


async def test_a_claim_older_than_the_grace_period_is_settled_as_missed(ledger):
    job = daily(grace_hours=1)
    fire = local(2026, 11, 20, 21, 0)
    ledger.claim(job, job.slot(fire), fire, fire)  # the process died while sending
    clock = FakeClock(local(2026, 11, 21, 20, 0))  # a day later
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await clock.idle_until(local(2026, 11, 21, 21, 0))
    assert runs.slots == [] and ledger.status(job.id, job.slot(fire)) == "missed"
    await sched.stop()


async def test_next_run_never_names_a_slot_already_out_of_grace(ledger):
    clock = FakeClock(local(2026, 11, 21, 10, 0))
    sched = Scheduler(ledger, clock)
    old = daily(created=datetime(2026, 11, 1, tzinfo=UTC))  # many slots ago, none recorded
    assert sched.next_run(old) == local(2026, 11, 21, 21, 0)


async def test_a_run_cancelled_by_stop_is_not_recorded_as_sent_or_retried(ledger):
    clock = FakeClock(local(2026, 11, 21, 21, 0))
    started = asyncio.Event()
    calls = 0

    async def hang(job: Job, slot: str) -> None:
        nonlocal calls
        calls += 1
        started.set()
        await asyncio.Event().wait()

    sched = Scheduler(ledger, clock)
    sched.start([daily()], hang)
    async with asyncio.timeout(5):
        await started.wait()
        await sched.stop()
    assert calls == 1 and ledger.status("daily-summary", "2026-11-21T21:00") == "claimed"


async def test_next_run_skips_slots_missed_since_the_last_recorded_run(ledger):
    job = daily()
    old = local(2026, 11, 1, 21, 0)
    ledger.settle(job, job.slot(old), old, "sent", old)  # the last run, weeks ago
    clock = FakeClock(local(2026, 11, 21, 10, 0))
    assert Scheduler(ledger, clock).next_run(job) == local(2026, 11, 21, 21, 0)


async def test_a_run_by_hand_does_not_hide_a_slot_a_crash_left_claimed(ledger):
    job = daily()
    fire = local(2026, 11, 21, 21, 0)
    ledger.claim(job, job.slot(fire), fire, fire)  # the process died while sending at 21:00
    by_hand = local(2026, 11, 21, 21, 3)  # and the owner ran the job by hand after
    ledger.claim(job, "manual 2026-11-21T21:03:00", by_hand, by_hand)
    ledger.settle(job, "manual 2026-11-21T21:03:00", by_hand, "sent", by_hand)
    clock = FakeClock(local(2026, 11, 21, 21, 5))
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    assert runs.slots == ["2026-11-21T21:00"]  # still owed, so sent once
    await sched.stop()


# -- the last instant of the grace period still counts -------------------------------------------


async def test_a_claimed_run_is_owed_until_the_last_instant_of_its_grace(ledger):
    job = daily(grace_hours=12)
    fire = local(2026, 11, 21, 21, 0)
    assert ledger.claim(job, job.slot(fire), fire, fire)  # then the process died
    clock = FakeClock(fire + job.grace)  # back at 09:00 sharp, as the grace ends
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"]


async def test_a_never_claimed_slot_is_owed_until_the_last_instant_of_its_grace(ledger):
    job = daily(grace_hours=12, created=local(2026, 11, 21, 20, 0))
    clock = FakeClock(local(2026, 11, 21, 21, 0) + job.grace)
    assert Scheduler(ledger, clock).next_run(job) == local(2026, 11, 21, 21, 0)
    clock.tick(1)
    assert Scheduler(ledger, clock).next_run(job) == local(2026, 11, 22, 21, 0)


async def test_back_exactly_at_a_slot_only_that_slot_runs(ledger):
    t0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    job = _every_minute(300, t0)
    ledger.settle(job, job.slot(t0), t0, "sent", t0)
    clock = FakeClock(t0 + timedelta(minutes=2))  # 12:01 came while down; 12:02 is now
    runs = Runs()
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    await clock.idle_until(t0 + timedelta(minutes=3))
    await sched.stop()
    assert runs.slots == ["2026-11-22T12:02"]
    assert ledger.status(job.id, "2026-11-22T12:01") == "missed"


async def test_a_retry_that_falls_as_the_grace_ends_is_still_made(ledger):
    """Retries come 30 s and then 2 min after a failure: with 150 s of grace the second falls
    on its last instant, and is made."""
    job = daily(grace_hours=150 / 3600)
    fire = local(2026, 11, 21, 21, 0)
    clock = FakeClock(fire)
    runs = Runs(fail=2)
    sched = Scheduler(ledger, clock)
    sched.start([job], runs)
    await runs.wait(1)
    assert await clock.advance() == fire + timedelta(seconds=30)
    assert await clock.advance() == fire + timedelta(seconds=150)
    await sched.stop()
    assert runs.slots == ["2026-11-21T21:00"] * 3
    assert ledger.status(job.id, "2026-11-21T21:00") == "sent"
