"""SIGKILL at the worst moments: ``corvid run`` as a real process against the fake Bot API and
the fake Messages API, killed during a model call, after a tool ran, during a send and during
the daily summary, then started again on the same home.

Each time: every user message is answered (or the person is told a reply may be missing), no
reply is sent twice, no daily summary twice, and every transcript line still parses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from gateway.runtime.delivery import UNCERTAIN_NOTE
from gateway.scheduling.jobs import Job
from gateway.scheduling.ledger import Ledger
from tests.conftest import OWNER
from tests.fakes.anthropic_api import FakeAnthropic, Reply
from tests.fakes.process import FIRST_CALL, CorvidProcess, corvid_process
from tests.fakes.telegram_api import FakeTelegram


@contextlib.asynccontextmanager
async def _fakes(
    tmp_path: Path, **config: Any
) -> AsyncIterator[tuple[FakeAnthropic, FakeTelegram, Path]]:
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "home"
    tg.write_corvid_config(home, api.base_url)
    if config:
        data = yaml.safe_load((home / "config.yaml").read_text())
        data.update(config)
        (home / "config.yaml").write_text(yaml.safe_dump(data))
    try:
        yield api, tg, home
    finally:
        await tg.close()
        await api.close()


@contextlib.asynccontextmanager
async def _corvid(home: Path, tg: FakeTelegram) -> AsyncIterator[CorvidProcess]:
    async with corvid_process(home, {"TELEGRAM_BOT_TOKEN": tg.token}, watch=True) as proc:
        await proc.wait_line("is polling")
        yield proc


class Gate:
    """Model calls that wait until released; a killed client never gets their answer."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def __call__(self, body: dict[str, Any]) -> Reply:
        await self.release.wait()
        return Reply("too late")


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [
        block["text"].rsplit("\n", 1)[-1]
        for msg in body["messages"]
        if msg["role"] == "user" and isinstance(msg["content"], list)
        for block in msg["content"]
        if block.get("type") == "text"
    ]


def _echo_all(body: dict[str, Any]) -> Reply:
    return Reply("answering: " + ", ".join(_user_texts(body)))


async def _received(tg: FakeTelegram) -> None:
    """Until Telegram is told that every update so far was received, which Corvid does only
    once its gateway has them."""
    last = tg.last_update_id()
    await tg.wait_for(
        lambda: any(int(c.params.get("offset") or 0) > last for c in tg.calls_to("getUpdates"))
    )


async def _settled(tg: FakeTelegram, count: int) -> list[dict[str, Any]]:
    """The chat's messages once a final ping has been answered: turns in a chat run in order,
    so anything still owed to it has been sent by then."""
    tg.text("ping")
    await tg.wait_for(lambda: any(m["shown"].endswith("ping") for m in tg.sent), FIRST_CALL)
    assert len(tg.sent) == count, [m["shown"] for m in tg.sent]
    return tg.sent


def _transcripts_parse(home: Path) -> int:
    lines = 0
    for path in (home / "state" / "sessions").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            json.loads(line)
            lines += 1
    return lines


async def test_killed_during_a_model_call_loses_none_of_the_messages(tmp_path):
    async with _fakes(tmp_path) as (api, tg, home):
        gate = api.brain = Gate()
        async with _corvid(home, tg) as proc:
            tg.text("first")
            await api.wait_for_requests(1, FIRST_CALL)
            tg.text("second")  # these two wait behind the running turn
            tg.text("third")
            await _received(tg)
            await proc.kill()
        gate.release.set()
        assert tg.sent == []

        api.brain = _echo_all
        async with _corvid(home, tg):
            sent = await _settled(tg, 2)
        # One turn answers all three after the restart, each recorded once.
        assert sent[0]["shown"] == "answering: first, second, third"
        assert _transcripts_parse(home) > 0


async def test_killed_after_a_tool_ran_the_turn_resumes_without_running_it_again(tmp_path):
    async with _fakes(tmp_path) as (api, tg, home):
        gate = Gate()

        async def brain(body: dict[str, Any]) -> Reply:
            if len(api.message_requests) == 1:
                return Reply(tool_calls=[("memory_append", {"text": "Dentist on Friday 10:00"})])
            return await gate(body)

        api.brain = brain
        async with _corvid(home, tg) as proc:
            tg.text("note: dentist on Friday at 10")
            await api.wait_for_requests(2, FIRST_CALL)  # the tool ran; its result is with the model
            await proc.kill()
        gate.release.set()

        api.brain = _echo_all
        api.enqueue(Reply("Noted."))
        async with _corvid(home, tg):
            sent = await _settled(tg, 2)
        assert sent[0]["shown"] == "Noted."
        resumed = api.message_requests[2].body
        results = [
            b
            for m in resumed["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [])
            if b.get("type") == "tool_result"
        ]
        assert len(results) == 1 and not results[0].get("is_error")
        logs = "".join(p.read_text() for p in (home / "workspace" / "memory").glob("*.md"))
        assert logs.count("Dentist on Friday 10:00") == 1
        _transcripts_parse(home)


async def test_killed_during_a_send_the_reply_is_not_sent_twice(tmp_path):
    async with _fakes(tmp_path) as (api, tg, home):
        api.enqueue(Reply("The capital of Australia is Canberra."))
        release = tg.hold("sendMessage")
        async with _corvid(home, tg) as proc:
            tg.text("capital of australia?")
            await tg.wait_sent(1, FIRST_CALL)  # Telegram has it; Corvid never hears back
            await proc.kill()
        release.set()

        api.brain = _echo_all
        async with _corvid(home, tg) as proc:
            sent = await _settled(tg, 3)
            await proc.stop()  # so the last send has been settled too
        shown = [m["shown"] for m in sent]
        assert shown[:2] == ["The capital of Australia is Canberra.", UNCERTAIN_NOTE]
        with sqlite3.connect(home / "state" / "gateway.sqlite") as db:
            statuses = [r[0] for r in db.execute("SELECT status FROM outbox ORDER BY id")]
        assert statuses == ["uncertain", "sent", "sent"]


def _ran_yesterday(home: Path, due: datetime, target: str) -> None:
    """The ledger of a Corvid that sent yesterday's summary, so today's, due a moment ago, is
    caught up as soon as it starts."""
    job = Job(
        "daily-summary",
        "cron",
        f"{due.minute} {due.hour} * * *",
        "UTC",
        target,
        due - timedelta(days=2),
    )
    ledger = Ledger(home / "state" / "scheduler.sqlite")
    yesterday = due - timedelta(days=1)
    ledger.settle(job, job.slot(yesterday), yesterday, "sent", yesterday)
    ledger.close()


async def test_killed_during_the_daily_summary_it_is_sent_exactly_once(tmp_path):
    due = (datetime.now(UTC) - timedelta(minutes=2)).replace(second=0, microsecond=0)
    schedule = {
        "daily_summary": {
            "enabled": True,
            "time": due.strftime("%H:%M"),
            "timezone": "UTC",
            "target": f"telegram:private:{OWNER}",
            "skip_inactive": False,
        }
    }
    async with _fakes(tmp_path, schedule=schedule) as (api, tg, home):
        _ran_yesterday(home, due, f"telegram:private:{OWNER}")
        gate = api.brain = Gate()
        async with _corvid(home, tg) as proc:
            await api.wait_for_requests(1, FIRST_CALL)  # writing the summary
            await proc.kill()
        gate.release.set()

        # Killed while writing it: the next start writes and sends it.
        api.brain = lambda body: Reply("Today: nothing much.")
        release = tg.hold("sendMessage")
        async with _corvid(home, tg) as proc:
            await tg.wait_sent(1, FIRST_CALL)
            await proc.kill()  # ... and is killed while sending it
        release.set()

        # It may have arrived: the third start does not send it again.
        api.brain = _echo_all
        async with _corvid(home, tg) as proc:
            await proc.wait_line(r"daily-summary: run .* already produced its message")
            sent = await _settled(tg, 2)
        assert sent[0]["shown"] == "Today: nothing much."
