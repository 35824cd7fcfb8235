"""A backup made while ``corvid run`` answers a burst of messages, restored into a fresh home:
the same memory, sessions, jobs and ledger, and a Corvid that carries on from there.

``corvid run`` and ``corvid backup`` are real processes against the fake Bot API and the fake
Messages API; the restore is ``corvid restore`` too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from gateway.scheduling.jobs import Job, JobKind
from gateway.scheduling.reminders import JobStore
from tests.fakes.anthropic_api import FakeAnthropic, Reply, last_user_text
from tests.fakes.process import API_KEY, FIRST_CALL, corvid_process
from tests.fakes.telegram_api import FakeTelegram

USERS = (42, 43, 44, 45)


def _brain(body: dict[str, Any]) -> Reply:
    """Notes go to memory with a tool; everything else is answered by naming it."""
    last = body["messages"][-1]
    text = last_user_text(body).rsplit("\n", 1)[-1]
    if isinstance(last["content"], list) and last["content"][0].get("type") == "tool_result":
        return Reply(f"noted {text}", delay=0.02)
    if text.startswith("note"):
        return Reply(tool_calls=[("memory_append", {"text": f"remember {text}"})], delay=0.02)
    return Reply(f"got {text}", delay=0.02)


async def _cli(home: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "CORVID_HOME": str(home), "ANTHROPIC_API_KEY": API_KEY}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.ops.cli", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def _files(home: Path) -> dict[str, str]:
    """Every file of a home by path, with its SHA-256: what a restore must give back (not the
    run lock, the control page's token, a secret left out, the databases, compared by content,
    or what the restore set aside)."""
    out = {}
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home).as_posix()
        if (
            not path.is_file()
            or rel.startswith(".restore-undo")
            or path.name in ("run.lock", "web_token")
        ):
            continue
        if path.name.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm")):
            continue
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _rows(db_path: Path) -> list[str]:
    db = sqlite3.connect(db_path)
    try:
        return list(db.iterdump())
    finally:
        db.close()


def _set_up(home: Path, tg: FakeTelegram, api: FakeAnthropic) -> None:
    tg.write_corvid_config(home, api.base_url)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["channels"]["telegram"]["allow_from"] = list(USERS)
    config["schedule"]["daily_summary"].update(enabled=True, target="telegram:private:42")
    config["backup"] = {"schedule": "04:00", "keep": 3}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    (home / "workspace" / "MEMORY.md").write_text("Anna lives in Lisbon.\n")
    later = datetime.now(UTC) + timedelta(days=3)
    JobStore(home / "state" / "jobs.json").add(
        Job("call-bank", JobKind.ONCE, later.isoformat(), "UTC", "telegram:private:42",
            datetime.now(UTC), instruction="remind me to call the bank")
    )  # fmt: skip


async def _wave(tg: FakeTelegram, i: int) -> None:
    """A message from every user (every third one a note for memory), until all are answered."""
    for user in USERS:
        tg.text(f"{'note' if i % 3 == 0 else 'msg'} {i} from {user}", user=user)
    for user in USERS:
        await tg.wait_for(lambda u=user: _answered(tg, u, f" {i} from {u}"), FIRST_CALL)


def _answered(tg: FakeTelegram, user: int, text: str) -> bool:
    return any(int(m["chat_id"]) == user and text in m["shown"] for m in tg.sent)


async def test_a_backup_during_a_burst_restores_the_same_home(tmp_path):
    api, tg = FakeAnthropic(brain=_brain), FakeTelegram()
    await api.start()
    await tg.start()
    home, during, after = tmp_path / "home", tmp_path / "during.tar.gz", tmp_path / "after.tar.gz"
    try:
        _set_up(home, tg, api)
        secrets = {"TELEGRAM_BOT_TOKEN": tg.token}
        async with corvid_process(home, secrets, watch=True) as proc:
            await proc.wait_line("is polling")
            await _wave(tg, 0)
            backup = asyncio.create_task(_cli(home, "backup", str(during)))
            waves = 1
            while not backup.done():  # messages keep coming while the backup is made
                await _wave(tg, waves)
                waves += 1
            code, out = await backup
            assert code == 0, out
            await _wave(tg, waves)
            code, out = await _cli(home, "restore", str(during))
            assert code == 1 and "Corvid is running" in out, out  # not beside a running one
            assert await proc.stop() == 0
        code, out = await _cli(home, "backup", str(after))
        assert code == 0, out

        # Taken mid-burst: every database whole, every transcript what it was at some moment.
        mid = tmp_path / "mid"
        code, out = await _cli(mid, "restore", str(during))
        assert code == 0, out
        for path in (home / "state" / "sessions").glob("*.jsonl"):
            copy = mid / "state" / "sessions" / path.name
            if copy.exists():
                assert path.read_bytes().startswith(copy.read_bytes())
        assert (mid / "state/jobs.json").read_bytes() == (home / "state/jobs.json").read_bytes()
        assert (mid / "workspace/MEMORY.md").read_text() == "Anna lives in Lisbon.\n"
        planned = [r for r in _rows(mid / "state/scheduler.sqlite") if "planned" in r]
        assert any("daily-summary" in r for r in planned) and any("backup" in r for r in planned)

        # Taken once it was quiet: exactly the same home.
        fresh = tmp_path / "fresh"
        code, out = await _cli(fresh, "restore", str(after))
        assert code == 0, out
        assert _files(fresh) == _files(home)
        logs = list((fresh / "workspace" / "memory").glob("*.md"))
        assert logs and "remember note 0 from 42" in logs[0].read_text()
        for name in ("gateway.sqlite", "scheduler.sqlite"):
            assert _rows(fresh / "state" / name) == _rows(home / "state" / name), name
        assert [j["id"] for j in json.loads((fresh / "state/jobs.json").read_text())["jobs"]] == [
            "call-bank"
        ]

        # And the restored home carries on: the next message is answered in the same session.
        asked = len(api.message_requests)
        async with corvid_process(fresh, secrets, watch=True) as proc:
            await proc.wait_line("is polling")
            tg.text("after the restore", user=42)
            await tg.wait_for(lambda: _answered(tg, 42, "after the restore"), FIRST_CALL)
            assert await proc.stop() == 0
        body = next(
            r.body
            for r in api.message_requests[asked:]
            if "after the restore" in json.dumps(r.body)
        )
        assert "msg 1 from 42" in json.dumps(body["messages"])
    finally:
        await tg.close()
        await api.close()
