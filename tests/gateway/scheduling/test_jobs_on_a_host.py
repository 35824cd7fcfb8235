"""The scheduled jobs' own logic on a fake JobHost: when a job asks for a turn, what it sends
and where, and when it stays silent; no gateway, no model, no network."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.model.charge import Purpose
from gateway.contract.events import SessionKey, job_key
from gateway.scheduling.heartbeat import HEARTBEAT_GRANT, Heartbeat
from gateway.scheduling.jobs import Job, JobKind, Skip, run_origin
from gateway.scheduling.reminders import REMINDER_GRANT, Reminder
from tests.fakes.job_host import FakeJobHost

OWNER_CHAT = SessionKey.parse("telegram:private:42")
GROUP_CHAT = SessionKey.parse("telegram:group:-100500")
NOON = "2026-11-23T12:00:00"  # a slot inside the active hours
NIGHT = "2026-11-23T23:30:00"


def _job(job_id: str, target: SessionKey, instruction: str = "") -> Job:
    created = datetime(2026, 11, 1, tzinfo=UTC)
    return Job(job_id, JobKind.INTERVAL, "1800", "UTC", str(target), created,
               instruction=instruction)  # fmt: skip


@pytest.fixture
def beat(tmp_path):
    (tmp_path / "HEARTBEAT.md").write_text("# Heartbeat\n\n- [ ] water the plants\n")
    host = FakeJobHost()
    return host, Heartbeat(host, tmp_path, "08:00-22:00"), _job("heartbeat", OWNER_CHAT)


async def test_a_heartbeat_with_news_reaches_the_owner_once_per_slot(beat):
    host, heartbeat, job = beat
    host.reply("The plants need water.\n\nHEARTBEAT_OK")
    await heartbeat(job, NOON)
    (turn,) = host.turns
    assert turn.key == job_key("heartbeat", OWNER_CHAT) and turn.key.job
    assert turn.grant == HEARTBEAT_GRANT and "water the plants" in turn.prompt
    assert turn.purpose is Purpose.HEARTBEAT
    assert [(out.key, out.text, origin) for out, origin in host.sent] == [
        (OWNER_CHAT, "The plants need water", run_origin(job, NOON))
    ]


@pytest.mark.parametrize("answer", ["HEARTBEAT_OK", "**HEARTBEAT_OK**", "NO_REPLY", "  "])
async def test_a_quiet_heartbeat_sends_nothing(beat, answer):
    host, heartbeat, job = beat
    host.reply(answer)
    with pytest.raises(Skip, match="nothing needs the owner"):
        await heartbeat(job, NOON)
    assert len(host.turns) == 1 and host.sent == []


async def test_a_heartbeat_asks_no_model_at_night_nor_while_the_owner_is_talking(beat, tmp_path):
    host, heartbeat, job = beat
    with pytest.raises(Skip, match="outside active hours"):
        await heartbeat(job, NIGHT)
    host.busy_chats.add(OWNER_CHAT)
    with pytest.raises(Skip, match="mid-turn"):
        await heartbeat(job, NOON)
    host.busy_chats.clear()
    (tmp_path / "HEARTBEAT.md").write_text("# Heartbeat\n\n- [ ]\n")
    with pytest.raises(Skip, match="nothing to check"):
        await heartbeat(job, NOON)
    assert host.turns == [] and host.sent == []


async def test_a_reminder_posts_its_answer_to_the_chat_that_made_it():
    host = FakeJobHost()
    job = _job("call-bank", GROUP_CHAT, "Remind everyone to call the bank")
    host.reply("Time to call the bank!")
    await Reminder(host)(job, NOON)
    (turn,) = host.turns
    assert turn.key == job_key("call-bank", GROUP_CHAT) and not turn.key.private
    assert turn.grant == REMINDER_GRANT and "call the bank" in turn.prompt
    assert turn.purpose is Purpose.REMINDER
    assert [(out.key, out.text) for out, _ in host.sent] == [(GROUP_CHAT, "Time to call the bank!")]


async def test_a_reminder_with_nothing_to_say_stays_silent():
    host = FakeJobHost()
    host.reply("NO_REPLY")
    with pytest.raises(Skip, match="nothing to send"):
        await Reminder(host)(_job("r1", OWNER_CHAT, "check the weather"), NOON)
    assert host.sent == []
