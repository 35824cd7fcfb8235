"""Reminders made in chat, end to end: a tool call schedules, the fake clock moves, the reply
lands in the chat that asked; jobs survive restarts."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent.sessions.compaction import FLUSH_GRANT
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from gateway.app import build_app
from gateway.config.loader import ScheduleConfig
from gateway.contract.events import SessionKey, telegram_group, telegram_private
from gateway.scheduling.ledger import Ledger
from gateway.scheduling.reminder_tools import reminder_tools
from gateway.scheduling.reminders import REMINDER_GRANT, JobStore
from gateway.scheduling.scheduler import Scheduler
from tests.conftest import OWNER, TG_GROUP, calls_by, make_config, running
from tests.fakes.anthropic_api import Reply, tool_results
from tests.fakes.clock import FakeClock
from tests.fakes.telegram_api import BOT_USERNAME

BERLIN = ZoneInfo("Europe/Berlin")
# A fixed day: every part of Corvid reads the time from the injected clock.
TODAY = date(2026, 3, 12)


def _config(home, fake_api, fake_telegram):
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    # The zone the gateway runs with is the one `corvid jobs` shows times in: its file says so.
    path = home / "config.yaml"
    text = re.sub(r"(?m)^timezone: .*$", "timezone: Europe/Berlin", path.read_text())
    path.write_text(text)
    return make_config(home, fake_api.base_url, channels={"telegram": tg})


def _today_at(hour: int, days: int = 0, base: date = TODAY) -> datetime:
    today = base + timedelta(days=days)
    return datetime(today.year, today.month, today.day, hour, 0, tzinfo=BERLIN)


async def _ask_for_a_reminder(fake_api, fake_telegram, at: datetime) -> None:
    fake_api.enqueue(
        Reply(tool_calls=[("schedule", {"instruction": "Remind Ada to call the bank",
                                        "at": f"{at:%Y-%m-%d %H:%M}"})]),
        Reply("Done: I'll remind you tomorrow at 9."),
    )  # fmt: skip
    fake_telegram.text("remind me tomorrow at 9 to call the bank")
    await fake_telegram.wait_sent(1)


async def test_remind_me_tomorrow_at_9(home, fake_api, fake_telegram):
    nine = _today_at(9, days=1)
    clock = FakeClock(_today_at(20))
    async with running(_config(home, fake_api, fake_telegram), clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, nine)
        result = tool_results(fake_api.message_requests[1].body)[0]["content"]
        assert "Scheduled job-" in result and f"{nine:%Y-%m-%d} 09:00" in result
        await clock.idle_until(nine)  # waiting for exactly that instant
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Good morning! Time to call the bank."))
        await clock.set(nine)
        sent = await fake_telegram.wait_sent(2)
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
    assert sent[1]["chat_id"] == str(OWNER)
    assert sent[1]["shown"] == "Good morning! Time to call the bank."
    assert "Remind Ada to call the bank" in fake_api.message_requests[-1].raw
    # The job's turn is told the time it runs at, by the clock the scheduler keeps.
    assert "[Fri 2026-03-13 09:00 CET]" in fake_api.message_requests[-1].raw
    # Delivered, so the one-shot job is gone; its turn never entered the chat's history.
    assert json.loads((home / "state" / "jobs.json").read_text())["jobs"] == []
    # Paid for as the reminder it is, under its job (whose caps it counts against).
    assert calls_by(home, "purpose") == {"chat": 2, "reminder": 1}
    assert calls_by(home, "job") == {None: 2, job_id: 1}
    chat = (home / "state" / "sessions" / f"telegram:private:{OWNER}.jsonl").read_text()
    assert "A job you scheduled" not in chat


async def test_a_reminders_turn_never_sees_memory_md(home, fake_api, fake_telegram):
    """A job runs on the owner's behalf, but nobody watches it: MEMORY.md stays out of its
    request, while the owner's own chat has it."""
    canary = "CANARY-long-term-5b1e"
    (home / "workspace" / "MEMORY.md").write_text(f"# Memory\n\n- {canary}\n")
    nine = _today_at(9, days=1)
    clock = FakeClock(_today_at(20))
    async with running(_config(home, fake_api, fake_telegram), clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, nine)
        await clock.idle_until(nine)
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Time to call the bank."))
        await clock.set(nine)
        await fake_telegram.wait_sent(2)
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
    asked, job_turn = fake_api.message_requests[0], fake_api.message_requests[-1]
    assert canary in asked.raw  # the owner's chat
    assert "Remind Ada to call the bank" in job_turn.raw and canary not in job_turn.raw


async def test_a_reminders_turn_recalls_nothing_from_memory_md(home, fake_api, fake_telegram):
    """Nor does the search before a turn bring MEMORY.md into a job's, though its one note is
    about just what the reminder says and the bar is set so that any note found is recalled."""
    canary = "CANARY-long-term-9d3c"
    (home / "workspace" / "MEMORY.md").write_text(f"# Memory\n\n- Locker code {canary}\n")
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    config = make_config(
        home, fake_api.base_url, channels={"telegram": tg}, memory={"recall": {"min_words": 0}}
    )
    nine = _today_at(9, days=1)
    clock = FakeClock(_today_at(20))
    async with running(config, clock) as gateway:
        fake_api.enqueue(
            Reply(tool_calls=[("schedule", {"instruction": "Say the locker code",
                                            "at": f"{nine:%Y-%m-%d %H:%M}"})]),
            Reply("Done."),
        )  # fmt: skip
        fake_telegram.text("tell me the locker code tomorrow at 9")
        await fake_telegram.wait_sent(1)
        await clock.idle_until(nine)
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Time for the locker."))
        await clock.set(nine)
        await fake_telegram.wait_sent(2)
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
    job_turn = fake_api.message_requests[-1]
    assert "Say the locker code" in job_turn.raw and canary not in job_turn.raw


async def test_a_reminder_due_while_down_is_delivered_on_start_within_grace(
    home, fake_api, fake_telegram
):
    nine = _today_at(9, days=1)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(_today_at(20))
    async with running(config, clock):
        await _ask_for_a_reminder(fake_api, fake_telegram, nine)
    # Down from 20:00 until 09:20 the next day (grace: one hour).
    fake_api.enqueue(Reply("Sorry I'm late: call the bank!"))
    clock = FakeClock(nine + timedelta(minutes=20))
    async with running(config, clock):
        sent = await fake_telegram.wait_sent(2)
    assert sent[1]["shown"] == "Sorry I'm late: call the bank!"


async def test_a_groups_job_sees_neither_the_groups_notes_nor_recalls_them(
    home, fake_api, fake_telegram
):
    """The shared chat's version of the two above: the group's own conversation starts with
    its notes; a job it scheduled runs unattended and gets neither the notes in its prompt
    nor a search of them before its turn, though the notes are about just what it says."""
    canary = "CANARY-group-notes-3f7a"
    notes = home / "workspace" / "memory" / "chats" / f"telegram-group-{TG_GROUP}" / "NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text(f"# Notes\n\n- Locker code {canary}\n")
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], groups=[str(TG_GROUP)])
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": tg},
        schedule={"allow_shared": True},
        memory={"recall": {"min_words": 0}},
    )
    nine = _today_at(9, days=1)
    clock = FakeClock(_today_at(20))
    async with running(config, clock) as gateway:
        fake_api.enqueue(
            Reply(tool_calls=[("schedule", {"instruction": "Say the locker code",
                                            "at": f"{nine:%Y-%m-%d %H:%M}"})]),
            Reply("Done."),
        )  # fmt: skip
        fake_telegram.text(
            f"@{BOT_USERNAME} tell us the locker code tomorrow at 9",
            chat=TG_GROUP,
            chat_type="supergroup",
        )
        await fake_telegram.wait_sent(1)
        await clock.idle_until(nine)
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Time for the locker."))
        await clock.set(nine)
        await fake_telegram.wait_sent(2)
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
    asked, job_turn = fake_api.message_requests[0], fake_api.message_requests[-1]
    assert canary in asked.body["system"][0]["text"]  # the group's own conversation
    assert "Session: cron:shared:" in job_turn.raw and "Say the locker code" in job_turn.raw
    assert canary not in job_turn.raw


@pytest.mark.parametrize("late", [timedelta(minutes=61), timedelta(hours=3)])
async def test_a_reminder_missed_beyond_grace_is_recorded_not_sent(
    home, fake_api, fake_telegram, late
):
    """The grace of a reminder is one hour: a minute more, and it is missed."""
    nine = _today_at(9, days=1)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(_today_at(20))
    async with running(config, clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, nine)
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
    requests = len(fake_api.message_requests)
    clock = FakeClock(nine + late)
    async with running(config, clock) as gateway:
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
        history = gateway.scheduler.ledger.history(job_id)
    assert history[0]["status"] == "missed"
    assert len(fake_telegram.sent) == 1
    assert len(fake_api.message_requests) == requests


async def test_corvid_jobs_lists_next_and_last_runs(home, fake_api, fake_telegram, capsys):
    from gateway.ops.cli import main

    # `corvid jobs` is its own process and reads the real clock: the reminder is set for
    # tomorrow as the real calendar has it.
    real_today = datetime.now(BERLIN).date()
    nine = _today_at(9, days=1, base=real_today)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(_today_at(20, base=real_today))
    async with running(config, clock):
        await _ask_for_a_reminder(fake_api, fake_telegram, nine)
    capsys.readouterr()
    assert main(["jobs", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert f"→ telegram:private:{OWNER}" in out
    assert "does: Remind Ada to call the bank" in out
    assert f"next run: {nine:%Y-%m-%d} 09:00" in out
    assert "last run: never" in out


async def test_corvid_jobs_run_triggers_a_job_in_the_running_gateway(
    home, fake_api, fake_telegram, capsys
):
    from gateway.ops.cli import main

    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(_today_at(20))
    async with running(config, clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, _today_at(9, days=1))
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Call the bank (early, as asked)."))
        capsys.readouterr()
        # The CLI is synchronous (its own event loop); run it beside this test's loop.
        rc = await asyncio.to_thread(main, ["jobs", "run", job_id, "--home", str(home)], {})
        out = capsys.readouterr().out
        sent = await fake_telegram.wait_sent(2)
        assert rc == 0 and f"{job_id}: sent" in out
        assert sent[1]["shown"] == "Call the bank (early, as asked)."
        # The scheduled run is still to come: a run by hand does not consume it.
        assert gateway.scheduler.next_run(gateway.scheduler.jobs()[0]) == _today_at(9, days=1)
    capsys.readouterr()
    rc = await asyncio.to_thread(main, ["jobs", "run", job_id, "--home", str(home)], {})
    assert rc == 1
    assert "not running" in capsys.readouterr().err


async def test_a_chat_beside_the_bot_does_not_run_jobs(home, fake_api):
    from tests.conftest import PRIVATE, RecordingChannel

    channel = RecordingChannel()
    config = make_config(home, fake_api.base_url)
    gateway = build_app(config, [channel], with_scheduler=False)
    await gateway.start()
    try:
        fake_api.enqueue(
            Reply(tool_calls=[("schedule", {"instruction": "x", "every_minutes": 5})]),
            Reply("I can't schedule from here."),
        )
        await channel.push("every 5 minutes, ping me", key=PRIVATE)
    finally:
        await gateway.stop()
    assert (
        "not in this terminal chat" in tool_results(fake_api.message_requests[1].body)[0]["content"]
    )
    assert not (home / "state" / "control.sock").exists()
    assert not (home / "state" / "jobs.json").exists()


# -- who may schedule, how much, how often ------------------------------------------------------


class _Tools:
    """The schedule tools on a started scheduler (its runs never come: the clock stands)."""

    def __init__(self, tmp_path, **rules):
        self.clock = FakeClock(_today_at(20))
        self.store = JobStore(tmp_path / "jobs.json")
        self.ledger = Ledger(tmp_path / "scheduler.sqlite")
        self.scheduler = Scheduler(self.ledger, self.clock)
        tools = reminder_tools(self.store, self.scheduler, self.clock.now, ScheduleConfig(**rules))
        self.registry = ToolRegistry(tools)

    async def call(self, key, grant=None, **args):
        return await self.use("schedule", key, grant, **args)

    async def use(self, tool, key, grant=None, **args):
        ctx = TurnContext(key, Path("/nonexistent"), self.clock.now(), BERLIN, grant=grant)
        return await self.registry.call(tool, args, ctx)


async def _started(tools: _Tools):
    async def never(job, slot):  # pragma: no cover - the fake clock never reaches a run
        raise AssertionError("no run expected")

    tools.scheduler.start([], never)


async def test_only_the_owner_schedules_unless_shared_chats_are_allowed(tmp_path):
    tools = _Tools(tmp_path)
    await _started(tools)
    at = f"{_today_at(9, days=1):%Y-%m-%d %H:%M}"
    shared = (
        telegram_group(-5),
        SessionKey.parse("telegram:group:-5:topic:7"),  # a forum topic
        SessionKey.parse("telegram:guest:1003"),  # someone the owner paired
        SessionKey.parse("discord:channel:77"),
        SessionKey.parse("discord:thread:78"),
        SessionKey.parse("discord:guest:79"),
    )
    for key in shared:
        refused = await tools.call(key, instruction="spam", at=at)
        assert refused.is_error and "Only the owner schedules" in refused.text, key
    assert not (await tools.call(telegram_private(42), instruction="tea", at=at)).is_error
    # Nothing the silent memory flush or a scheduled job can do: it could post later, unseen.
    flush = await tools.call(telegram_private(42), FLUSH_GRANT, instruction="x", at=at)
    assert flush.is_error and "memory flush" in flush.text
    job = await tools.call(telegram_private(42), REMINDER_GRANT, instruction="x", at=at)
    assert job.is_error and "scheduled job" in job.text
    assert len(tools.store.load()) == 1  # only the owner's own
    await tools.scheduler.stop()
    tools.ledger.close()

    allowed = _Tools(tmp_path / "allowed", allow_shared=True)
    await _started(allowed)
    made = await allowed.call(telegram_group(-5), instruction="standup", at=at)
    assert not made.is_error and "post in this chat" in made.text
    [job] = allowed.store.load()
    assert job.target == "telegram:group:-5"  # it runs in, and posts to, that chat
    await allowed.scheduler.stop()
    allowed.ledger.close()


async def test_jobs_are_capped_and_never_fire_too_often(tmp_path):
    tools = _Tools(tmp_path, max_jobs=3, max_jobs_per_chat=2, min_interval_minutes=10)
    await _started(tools)
    me, other = telegram_private(1), telegram_private(2)
    crons = (
        "* * * * *",
        "*/5 * * * *",
        "0,30-59 * * * *",  # the first gap is 30 minutes, the rest one
        "0,55 0,23 * * *",  # 23:55 and then 00:00, five minutes later
    )
    for args in ({"every_minutes": 5}, *({"cron": c} for c in crons)):
        too_often = await tools.call(me, instruction="ping", **args)
        assert too_often.is_error and "more often than every 10 minutes" in too_often.text
    assert not (await tools.call(me, instruction="a", every_minutes=10)).is_error
    assert not (await tools.call(me, instruction="b", cron="0 9 * * *")).is_error
    per_chat = await tools.call(me, instruction="c", every_minutes=60)
    assert per_chat.is_error and "This chat already has 2 jobs" in per_chat.text
    assert not (await tools.call(other, instruction="d", every_minutes=60)).is_error
    total = await tools.call(telegram_private(3), instruction="e", every_minutes=60)
    assert total.is_error and "There are 3 scheduled jobs already" in total.text
    assert len(tools.store.load()) == 3
    await tools.scheduler.stop()
    tools.ledger.close()


async def test_a_group_s_topics_share_its_count_and_the_owner_always_has_room(tmp_path):
    tools = _Tools(tmp_path, allow_shared=True, max_jobs=10, max_jobs_per_chat=3)
    await _started(tools)
    at = f"{_today_at(9, days=1):%Y-%m-%d %H:%M}"
    group = telegram_group(-5)
    topics = [SessionKey(group.channel, group.scope, group.id, str(t)) for t in range(1, 5)]
    for topic in topics[:3]:
        assert not (await tools.call(topic, instruction="standup", at=at)).is_error
    full = await tools.call(topics[3], instruction="standup", at=at)
    assert full.is_error and "This chat already has 3 jobs" in full.text
    # Other shared chats fill what shared chats may have (10 less the owner's 3)...
    for chat in (-6, -7):
        for _ in range(2):
            assert not (await tools.call(telegram_group(chat), instruction="x", at=at)).is_error
    shared_full = await tools.call(telegram_group(-8), instruction="x", at=at)
    assert shared_full.is_error and "Shared chats have 7 scheduled jobs already" in shared_full.text
    # ...and the owner can still schedule.
    assert not (await tools.call(telegram_private(42), instruction="tea", at=at)).is_error
    assert len(tools.store.load()) == 8
    await tools.scheduler.stop()
    tools.ledger.close()


async def test_corvid_jobs_cancel_removes_a_job_made_in_chat(home, fake_api, fake_telegram, capsys):
    from gateway.ops.cli import main

    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(_today_at(20))
    async with running(config, clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, _today_at(9, days=1))
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        capsys.readouterr()
        rc = await asyncio.to_thread(main, ["jobs", "cancel", job_id, "--home", str(home)], {})
        assert rc == 0 and f"Cancelled {job_id}." in capsys.readouterr().out
        assert gateway.scheduler.jobs() == []  # the running gateway stopped scheduling it
    assert json.loads((home / "state" / "jobs.json").read_text())["jobs"] == []
    rc = await asyncio.to_thread(main, ["jobs", "cancel", "daily-summary", "--home", str(home)], {})
    assert rc == 1 and "turn it off there" in capsys.readouterr().err
    rc = await asyncio.to_thread(main, ["jobs", "cancel", job_id, "--home", str(home)], {})
    assert rc == 1 and "no job" in capsys.readouterr().err


async def test_a_reminder_that_fired_stays_listed_for_a_day_with_its_outcome(
    home, fake_api, fake_telegram, capsys
):
    from gateway.ops.cli import main
    from tests.gateway.web.conftest import WEB, ControlClient

    # `corvid jobs` reads the real clock: the reminder fires a little before real now.
    start = datetime.now(BERLIN).replace(second=0, microsecond=0) - timedelta(hours=2)
    due = start + timedelta(hours=1)
    _config(home, fake_api, fake_telegram)  # config.yaml's zone: the gateway's
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)])
    config = make_config(home, fake_api.base_url, channels={"telegram": tg}, web=WEB)
    clock = FakeClock(start)
    async with running(config, clock) as gateway:
        await _ask_for_a_reminder(fake_api, fake_telegram, due)
        job_id = json.loads((home / "state" / "jobs.json").read_text())["jobs"][0]["id"]
        fake_api.enqueue(Reply("Time to call the bank."))
        await clock.idle_until(due)
        await clock.set(due)
        await fake_telegram.wait_sent(2)
        async with asyncio.timeout(5):
            await gateway.scheduler.join(job_id)
        client = ControlClient(gateway.web.url, gateway.web.token)
        await client.sign_in()
        try:
            _, page, _ = await client.get("/jobs")
            row = re.search(rf"<tr><td[^>]*><code>{job_id}</code>.*?</tr>", page).group(0)
            assert "Remind Ada to call the bank" in row
            assert f"none: finished {due:%Y-%m-%d %H:%M}" in row
            assert ": sent (attempts 1)" in row
            assert "Run now" not in row and "Cancel" not in row
            capsys.readouterr()
            assert await asyncio.to_thread(main, ["jobs", "--home", str(home)], {}) == 0
            out = capsys.readouterr().out
            assert f"{job_id}  → telegram:private:{OWNER}" in out
            assert f"finished: {due:%Y-%m-%d %H:%M}" in out
            assert "sent (attempts 1)" in out
            # A day later it is gone from the page.
            await clock.set(due + timedelta(days=1, minutes=1))
            _, page, _ = await client.get("/jobs")
            assert job_id not in page and "No scheduled jobs" in page
        finally:
            await client.close()


async def test_a_chat_lists_and_cancels_its_own_jobs_only(tmp_path):
    tools = _Tools(tmp_path)
    await _started(tools)
    me, other = telegram_private(42), telegram_group(-5)
    assert (await tools.use("list_schedules", me)).text == "No jobs are scheduled in this chat."
    made = await tools.call(me, instruction="stretch", cron="10 * * * *")
    assert not made.is_error and made.text.startswith("Scheduled job-")
    assert "first run Thu 2026-03-12 20:10 CET" in made.text
    tea = await tools.call(me, instruction="tea", at=f"{_today_at(9, days=1):%Y-%m-%d %H:%M}")
    stretch = re.search(r"job-\w+", made.text)[0]
    listed = (await tools.use("list_schedules", me)).text.splitlines()
    assert len(listed) == 2 and listed[0].startswith(stretch)
    assert listed[0].endswith("(Europe/Berlin); next 2026-03-12 20:10; stretch")
    assert listed[1].endswith("; next 2026-03-13 09:00; tea")
    assert (await tools.use("list_schedules", other)).text == "No jobs are scheduled in this chat."
    refused = await tools.use("cancel_schedule", other, id=stretch)
    assert refused.is_error and f"No job '{stretch}' in this chat" in refused.text
    unknown = await tools.use("cancel_schedule", me, id="job-000000")  # mine are others
    assert unknown.is_error and "No job 'job-000000' in this chat" in unknown.text
    assert len(tools.store.load()) == 2
    done = await tools.use("cancel_schedule", me, id=stretch)
    assert done.text == f"Cancelled {stretch}."
    assert [j.instruction for j in tools.store.load()] == ["tea"]
    assert [j.instruction for j in tools.scheduler.jobs()] == ["tea"]
    assert not tea.is_error
    await tools.scheduler.stop()
    tools.ledger.close()


async def test_what_the_schedule_tool_refuses_and_why(tmp_path):
    tools = _Tools(tmp_path, min_interval_minutes=10)
    await _started(tools)
    me = telegram_private(42)
    now = f"{tools.clock.now():%Y-%m-%d %H:%M}"
    for args, said in (
        ({"instruction": "x"}, "Give exactly one of: at, every_minutes, cron."),
        ({"instruction": "x", "at": now, "cron": "0 9 * * *"}, "Give exactly one of"),
        ({"instruction": "x", "at": "tomorrow at nine"}, "at must look like 2026-11-22 09:00"),
        ({"instruction": "x", "at": now}, "2026-03-12 20:00 is in the past (now: 2026-03-12"),
        ({"instruction": "x", "cron": "0 9 * *"}, "Not a valid schedule"),
        ({"instruction": "x", "cron": "0 0 30 2 *"}, "That schedule never fires."),
        (
            {"instruction": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"},
            "Unknown time zone 'Mars/Olympus'",
        ),
        ({"instruction": "  ", "cron": "0 9 * * *"}, "instruction is required"),
        ({"instruction": "x", "every_minutes": 9.9}, "more often than every 10 minutes"),
    ):
        refused = await tools.call(me, **args)
        assert refused.is_error and said in refused.text, (args, refused.text)
    from gateway.contract.events import job_key

    in_a_job = await tools.call(job_key("job-abc", me), instruction="x", cron="0 9 * * *")
    assert in_a_job.is_error and "Scheduled jobs cannot schedule further jobs." in in_a_job.text
    assert tools.store.load() == []
    await tools.scheduler.stop()
    tools.ledger.close()


async def test_shared_chats_leave_the_owner_half_the_jobs_at_most(tmp_path):
    """The owner's room is the smaller of a chat's cap and half of all jobs."""
    tools = _Tools(tmp_path, allow_shared=True, max_jobs=10, max_jobs_per_chat=6)
    await _started(tools)
    at = f"{_today_at(9, days=1):%Y-%m-%d %H:%M}"
    for _ in range(5):
        assert not (await tools.call(telegram_group(-6), instruction="x", at=at)).is_error
    full = await tools.call(telegram_group(-7), instruction="x", at=at)
    assert full.is_error and "Shared chats have 5 scheduled jobs already" in full.text
    await tools.scheduler.stop()
    tools.ledger.close()
