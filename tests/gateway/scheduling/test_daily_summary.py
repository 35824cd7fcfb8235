"""The daily summary end to end: fake clock, real python-telegram-bot ↔ fake Bot API, real
anthropic ↔ fake Messages API."""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import OWNER, make_config, running
from tests.fakes.anthropic_api import Reply, last_user_text
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")
# A fixed day: every part of Corvid reads the time from the injected clock.
TODAY = date(2026, 3, 12)


def _config(home, fake_api, fake_telegram):
    return make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        schedule={"daily_summary": {"enabled": True, "time": "21:00",
                                    "target": f"telegram:private:{OWNER}"}},
    )  # fmt: skip


async def test_the_summary_reaches_the_chat_once_and_goes_into_the_log(
    home, fake_api, fake_telegram
):
    today = TODAY
    nine = datetime(today.year, today.month, today.day, 21, 0, tzinfo=BERLIN)
    clock = FakeClock(nine - timedelta(minutes=30))
    config = _config(home, fake_api, fake_telegram)
    async with running(config, clock):
        fake_telegram.text("I promised to send Bob the slides")
        await fake_telegram.wait_sent(1)
        await clock.idle_until(nine)
        assert len(fake_telegram.sent) == 1  # nothing before 21:00
        fake_api.enqueue(Reply("**Promised:** send Bob the slides."))
        await clock.set(nine)
        sent = await fake_telegram.wait_sent(2)
        await clock.idle_until(nine + timedelta(days=1))
    assert sent[1]["chat_id"] == str(OWNER)
    assert sent[1]["shown"] == "Promised: send Bob the slides."
    digest_request = fake_api.message_requests[-1]
    assert "I promised to send Bob the slides" in last_user_text(digest_request.body)
    log = (home / "workspace" / "memory" / f"{today.isoformat()}.md").read_text()
    assert "Daily summary sent to telegram:private:42" in log
    assert "send Bob the slides" in log
    # The digest did not enter the owner's chat as a message.
    chat = (home / "state" / "sessions" / f"telegram:private:{OWNER}.jsonl").read_text()
    assert "Write the owner's daily summary" not in chat

    # Restarted the same evening: nothing is sent again.
    requests = len(fake_api.message_requests)
    clock = FakeClock(nine + timedelta(minutes=5))
    async with running(config, clock):
        await clock.idle_until(nine + timedelta(days=1))
    assert len(fake_telegram.sent) == 2
    assert len(fake_api.message_requests) == requests


async def test_a_quiet_day_sends_nothing(home, fake_api, fake_telegram):
    today = TODAY
    nine = datetime(today.year, today.month, today.day, 21, 0, tzinfo=BERLIN)
    clock = FakeClock(nine)
    async with running(_config(home, fake_api, fake_telegram), clock) as gateway:
        await clock.idle_until(nine + timedelta(days=1))
        assert gateway.scheduler.ledger.history("daily-summary")[0]["status"] == "skipped"
    assert fake_telegram.sent == []
    assert fake_api.message_requests == []


async def test_a_crash_between_claim_and_send_gives_one_message_after_restart(
    home, fake_api, fake_telegram
):
    from gateway.scheduling.jobs import Job
    from gateway.scheduling.ledger import Ledger

    today = TODAY
    nine = datetime(today.year, today.month, today.day, 21, 0, tzinfo=BERLIN)
    config = _config(home, fake_api, fake_telegram)
    # Earlier that day there was a conversation...
    clock = FakeClock(nine - timedelta(hours=1))
    async with running(config, clock):
        fake_telegram.text("Book the dentist for Tuesday")
        await fake_telegram.wait_sent(1)
    # ...and at 21:00 the run was claimed, then the process died before sending.
    ledger = Ledger(home / "state" / "scheduler.sqlite")
    job = Job("daily-summary", "cron", "0 21 * * *", "Europe/Berlin",
              f"telegram:private:{OWNER}", nine)  # fmt: skip
    assert ledger.claim(job, job.slot(nine), nine, nine)
    ledger.close()
    # Back up at 21:40: the summary goes out once; a further restart sends nothing.
    for minutes in (40, 45):
        fake_api.enqueue(Reply("Dentist to book for Tuesday."))
        clock = FakeClock(nine + timedelta(minutes=minutes))
        async with running(config, clock):
            await clock.idle_until(nine + timedelta(days=1))
    summaries = [s for s in fake_telegram.sent if s["shown"] == "Dentist to book for Tuesday."]
    assert len(summaries) == 1


async def test_a_summary_the_platform_refuses_is_failed_and_retried_never_sent(
    home, fake_api, fake_telegram
):
    from tests.fakes.telegram_api import Fault

    nine = datetime(TODAY.year, TODAY.month, TODAY.day, 21, 0, tzinfo=BERLIN)
    clock = FakeClock(nine - timedelta(minutes=30))
    async with running(_config(home, fake_api, fake_telegram), clock) as gateway:
        fake_telegram.text("I promised to send Bob the slides")
        await fake_telegram.wait_sent(1)
        blocked = Fault(403, "Forbidden: bot was blocked by the user")
        fake_telegram.fail("sendMessage", *[blocked] * 5)
        fake_api.brain = lambda body: Reply("Promised: send Bob the slides.")
        await clock.set(nine)
        ledger = gateway.scheduler.ledger
        await clock.idle_until(nine + timedelta(seconds=30))  # a retry is scheduled
        first = ledger.history("daily-summary")[0]
        assert first["status"] != "sent" and first["attempts"] == 1
        # The retries (30 s, 2, 10 and 30 min) are refused too: the run ends failed, not sent.
        for _ in range(4):
            await clock.advance()
        await clock.idle_until(nine + timedelta(days=1))
        last = ledger.history("daily-summary")[0]
        assert last["status"] == "failed" and last["attempts"] == 5
    assert len(fake_telegram.sent) == 1  # only the answer to the owner's message


async def test_a_groups_digest_reads_only_that_group(home, fake_api):
    """Two groups and the owner talk on the same day; the digest for group A reads A's log and
    conversations, and nothing of group B's or the owner's."""
    import asyncio

    from agent.workspace.audience import log_path
    from gateway.app import build_app
    from gateway.contract.events import SessionKey, audience_of
    from tests.conftest import GROUP, PRIVATE, RecordingChannel

    other = SessionKey.parse("test:group:200")
    day = TODAY
    nine = datetime(day.year, day.month, day.day, 21, 0, tzinfo=BERLIN)
    said = {GROUP: "CANARY-group-a-talk", other: "CANARY-group-b-talk", PRIVATE: "CANARY-own-talk"}
    logged = {GROUP: "CANARY-group-a-log", other: "CANARY-group-b-log", PRIVATE: "CANARY-own-log"}
    for key, canary in logged.items():
        path = home / "workspace" / log_path(audience_of(key), day)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {day}\n\n## 10:00\n\n{canary}\n")
    config = make_config(
        home,
        fake_api.base_url,
        schedule={"daily_summary": {"enabled": True, "time": "21:00", "target": str(GROUP)}},
    )
    clock = FakeClock(nine - timedelta(hours=1))
    channel = RecordingChannel()
    app = build_app(config, [channel], clock=clock)
    await app.start()
    try:
        for key, canary in said.items():
            await asyncio.wait_for(channel.push(canary, key=key), 10)
        await clock.idle_until(nine)
        fake_api.enqueue(Reply("Group A agreed on Sunday."))
        await clock.set(nine)
        await channel.wait_sent(4)
        await clock.idle_until(nine + timedelta(days=1))
    finally:
        await app.stop()
    assert channel.texts(GROUP)[-1] == "Group A agreed on Sunday."
    digest = fake_api.message_requests[-1].raw
    assert said[GROUP] in digest and logged[GROUP] in digest
    for key in (other, PRIVATE):
        assert said[key] not in digest and logged[key] not in digest


async def test_a_digest_telegram_took_but_never_confirmed_is_not_sent_again_after_a_restart(
    home, fake_api, fake_telegram
):
    """Telegram showed the digest, but Corvid died before the answer came back (its outbox row
    still "sending"). Telegram cannot drop a repeat, so after the restart the digest is neither
    sent again nor written again: it is recorded as one that may not have arrived, for
    corvid status."""
    import sqlite3

    today = TODAY
    nine = datetime(today.year, today.month, today.day, 21, 0, tzinfo=BERLIN)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(nine - timedelta(minutes=30))
    async with running(config, clock):
        fake_telegram.text("Book the dentist for Tuesday")
        await fake_telegram.wait_sent(1)
        await clock.idle_until(nine)
        fake_api.enqueue(Reply("Dentist to book for Tuesday."))
        await clock.set(nine)
        await fake_telegram.wait_sent(2)
        await clock.idle_until(nine + timedelta(days=1))
    with sqlite3.connect(home / "state" / "gateway.sqlite") as db:  # as the crash left it
        changed = db.execute(
            "UPDATE outbox SET status = 'sending' WHERE text = 'Dentist to book for Tuesday.'"
        ).rowcount
    assert changed == 1
    requests = len(fake_api.message_requests)
    clock = FakeClock(nine + timedelta(minutes=5))
    async with running(config, clock) as gateway:
        await clock.idle_until(nine + timedelta(days=1))
        [uncertain] = gateway.undelivered()
    assert uncertain.status == "uncertain" and uncertain.out.text == "Dentist to book for Tuesday."
    digests = [s for s in fake_telegram.sent if s["shown"] == "Dentist to book for Tuesday."]
    assert len(digests) == 1 and len(fake_api.message_requests) == requests


async def test_a_digest_telegram_is_slow_to_confirm_is_delivered_once_across_a_restart(
    home, fake_api, fake_telegram, monkeypatch
):
    """Telegram posted the digest but answered after the read timeout. Neither the run tried
    again nor a restart sends it again: it is kept as one that may not have arrived."""
    from channels.telegram.transport import Transport

    # The send's read timeout, short (the long poll's own is set apart and stays long).
    monkeypatch.setitem(Transport.__init__.__kwdefaults__, "read_timeout", 2.0)
    nine = datetime(TODAY.year, TODAY.month, TODAY.day, 21, 0, tzinfo=BERLIN)
    tomorrow = nine + timedelta(days=1)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(nine - timedelta(minutes=30))
    async with running(config, clock):
        fake_telegram.text("Book the dentist for Tuesday")
        await fake_telegram.wait_sent(1)
        await clock.idle_until(nine)
        fake_api.brain = lambda body: Reply("Dentist to book for Tuesday.")
        release = fake_telegram.hold("sendMessage")
        await clock.set(nine)
        await fake_telegram.wait_sent(2)
        # Through the run's retries, if any, to tomorrow's slot.
        for _ in range(10):
            if await clock.next_wake(timeout=10) == tomorrow:
                break
            await clock.advance(timeout=10)
        release.set()
    clock = FakeClock(nine + timedelta(minutes=5))
    async with running(config, clock) as gateway:
        await clock.idle_until(tomorrow)
        [uncertain] = gateway.undelivered()
    assert uncertain.status == "uncertain" and uncertain.out.text == "Dentist to book for Tuesday."
    digests = [s for s in fake_telegram.sent if s["shown"] == "Dentist to book for Tuesday."]
    assert len(digests) == 1


def _touched(path, when: datetime) -> None:
    """config.yaml as the owner left it: last changed at ``when``."""
    os.utime(path, (when.timestamp(), when.timestamp()))


async def test_a_first_summary_missed_while_down_is_sent_though_config_yaml_changed_since(
    home, fake_api, fake_telegram
):
    """Corvid ran that afternoon with the summary set up, was down at 21:00, and the owner
    edited config.yaml at 21:30 while it was down: the first summary is still owed, once."""
    nine = datetime(TODAY.year, TODAY.month, TODAY.day, 21, 0, tzinfo=BERLIN)
    config = _config(home, fake_api, fake_telegram)
    clock = FakeClock(nine - timedelta(hours=1))
    async with running(config, clock):
        fake_telegram.text("Book the dentist for Tuesday")
        await fake_telegram.wait_sent(1)
    _touched(config.layout.config_file, nine + timedelta(minutes=30))
    for minutes in (60, 65):  # back at 22:00, and again at 22:05
        fake_api.enqueue(Reply("Dentist to book for Tuesday."))
        clock = FakeClock(nine + timedelta(minutes=minutes))
        async with running(config, clock):
            await clock.idle_until(nine + timedelta(days=1))
    summaries = [s for s in fake_telegram.sent if s["shown"] == "Dentist to book for Tuesday."]
    assert len(summaries) == 1


@pytest.mark.parametrize("written", [timedelta(hours=1), timedelta(days=90)])
async def test_a_new_install_sends_no_summary_for_a_slot_before_corvid_first_ran(
    home, fake_api, fake_telegram, written
):
    """config.yaml written (or copied with its date kept) before 21:00, Corvid first started
    at 21:30: the day's summary was never owed; the first one is tomorrow's."""
    nine = datetime(TODAY.year, TODAY.month, TODAY.day, 21, 0, tzinfo=BERLIN)
    config = _config(home, fake_api, fake_telegram)
    _touched(config.layout.config_file, nine - written)
    owners_log = home / "workspace" / "memory" / f"{TODAY.isoformat()}.md"
    owners_log.write_text("- Promised Bob the slides\n")  # a day with something to summarise
    fake_api.brain = lambda body: Reply("Promised: send Bob the slides.")
    clock = FakeClock(nine + timedelta(minutes=30))
    async with running(config, clock) as gateway:
        await clock.idle_until(nine + timedelta(days=1))
        assert gateway.scheduler is not None
        assert gateway.scheduler.ledger.history("daily-summary") == []
    assert fake_telegram.sent == []
    assert fake_api.message_requests == []
