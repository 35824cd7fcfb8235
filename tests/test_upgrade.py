"""A home made by the oldest supported Corvid (a config.yaml without a version, with an option
since removed; state from before schema versions) started by today's ``corvid run``: carried
forward, the changes named in the log, the old config kept, the conversation going on; and a
home from a newer Corvid refused."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import yaml

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.process import FIRST_CALL, corvid_process
from tests.fakes.telegram_api import FakeTelegram

SESSION = "telegram:private:42"


def _early_config(tg: FakeTelegram, api: FakeAnthropic) -> str:
    telegram = {k: v for k, v in tg.channel_config().items() if k != "token"}
    return f"""\
# Corvid configuration. Every option is listed with its default.

# Your time zone (IANA name). Daily logs and the dates the assistant sees use it.
timezone: UTC

llm:
  # Anthropic API key, read from the environment.
  api_key: ${{ANTHROPIC_API_KEY}}
  base_url: {api.base_url}
  # Model calls in flight at once, across all chats; more wait for a free one.
  parallel_calls: 4

# (not in early files: keeps this test from fetching the local embedding model)
memory:
  embeddings:
    provider: none

# (not in early files either: the control page on a free port, as other tests run at once)
web:
  port: 0

channels:
  telegram:
    # Bot token from @BotFather.
    token: ${{TELEGRAM_BOT_TOKEN}}
    # Telegram user ids allowed to talk to the bot.
    allow_from: [42]
{"".join(f"    {key}: {json.dumps(value)}{chr(10)}" for key, value in telegram.items())}"""


def _early_state(home: Path) -> None:
    workspace, state = home / "workspace", home / "state"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("# Agents\n\nDaily logs are visible in group chats too.\n")
    (workspace / "MEMORY.md").write_text("# Memory\n")
    (workspace / "memory" / "2026-11-20.md").write_text("## 10:00\nBought a bike.\n")
    (state / "sessions").mkdir(parents=True)
    lines = [
        {"t": "session", "id": "s1", "key": SESSION, "created": "2026-11-20T10:00:00.000+00:00",
         "system": "You are Corvid."},
        {"t": "msg", "ts": "2026-11-20T10:00:01.000+00:00",
         "msg": {"role": "user", "content": "My sister Anna lives in Lisbon."}},
        {"t": "msg", "ts": "2026-11-20T10:00:02.000+00:00",
         "msg": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]}},
    ]  # fmt: skip
    (state / "sessions" / f"{SESSION}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    # The ledger before it recorded when jobs were first planned.
    db = sqlite3.connect(state / "scheduler.sqlite")
    db.execute(
        "CREATE TABLE runs (job TEXT, slot TEXT, fire TEXT, target TEXT, status TEXT, "
        "attempts INTEGER DEFAULT 0, error TEXT, updated TEXT, PRIMARY KEY (job, slot))"
    )
    db.commit()
    db.close()


def _user_version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


async def _refused(home: Path, secrets: dict[str, str]) -> str:
    async with corvid_process(home, secrets, watch=True) as proc:
        await proc.wait_line("newer Corvid", timeout=60)
        code = await asyncio.wait_for(proc.proc.wait(), 60)
    assert code == 2, proc.lines
    return "\n".join(proc.lines)


async def test_a_home_of_the_oldest_layout_is_carried_forward(tmp_path):
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp_path / "home"
    secrets = {"TELEGRAM_BOT_TOKEN": tg.token}
    try:
        _early_state(home)
        early = _early_config(tg, api)
        (home / "config.yaml").write_text(early)
        async with corvid_process(home, secrets, watch=True) as proc:
            await proc.wait_line("is polling")
            await proc.wait_line(r"upgraded: config\.yaml carried from version 1 to 2")
            await proc.wait_line(r"upgraded: llm\.parallel_calls was removed")
            await proc.wait_line(r"upgraded: state/scheduler\.sqlite: schema 0 → 1")
            tg.text("Where does my sister live?")
            await tg.wait_for(lambda: any("sister live" in m["shown"] for m in tg.sent), FIRST_CALL)
            assert await proc.stop() == 0
        # The conversation went on from the old transcript.
        body = json.dumps(api.message_requests[-1].body["messages"])
        assert "My sister Anna lives in Lisbon." in body

        assert (home / "config.yaml.v1").read_text() == early
        config = (home / "config.yaml").read_text()
        assert yaml.safe_load(config)["version"] == 2 and "parallel_calls" not in config
        assert "    # Telegram user ids allowed to talk to the bot.\n" in config
        state = home / "state"
        assert _user_version(state / "scheduler.sqlite") == 1
        assert _user_version(state / "gateway.sqlite") == 1  # made by this start
        assert json.loads((state / "layout.json").read_text()) == {"layout": 1}
        tables = sqlite3.connect(state / "scheduler.sqlite").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
        assert {"runs", "planned"} <= {name for (name,) in tables}
        agents = (home / "workspace" / "AGENTS.md").read_text()
        assert "visible in group chats" not in agents

        # A second start has nothing to carry forward.
        async with corvid_process(home, secrets, watch=True) as proc:
            await proc.wait_line("is polling")
            assert await proc.stop() == 0
        assert not any("upgraded:" in line for line in proc.lines)

        # State from a newer Corvid is refused by name, and nothing is started.
        db = sqlite3.connect(state / "scheduler.sqlite")
        db.execute("PRAGMA user_version = 5")
        db.commit()
        db.close()
        out = await _refused(home, secrets)
        assert "state/scheduler.sqlite has schema 5, this Corvid knows up to 1" in out
        assert "corvid restore" in out
        (home / "config.yaml").write_text(config.replace("version: 2", "version: 3"))
        out = await _refused(home, secrets)
        assert "config.yaml is version 3, written for a newer Corvid" in out
    finally:
        await tg.close()
        await api.close()
