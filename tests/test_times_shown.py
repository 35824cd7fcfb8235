"""Every time a person reads is in the configured time zone, named: the status report and the
overview, /status, /undo and the history, the actions and the jobs. Stored times stay UTC."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml

from agent.approvals.audit import AuditLog
from gateway.app import build_app
from gateway.config.loader import load_config
from gateway.ops.cli import main
from gateway.web.overview import fragment
from tests.conftest import PRIVATE, RecordingChannel
from tests.fakes.anthropic_api import FakeAnthropic, Reply

ZONE = "America/New_York"  # never UTC's wall time, all year
# A minute as people read it here: "2026-11-28 04:15 EST" (or EDT in summer).
LOCAL = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? E[SD]T")


def local_now() -> str:
    return f"{datetime.now(UTC).astimezone(ZoneInfo(ZONE)):%Y-%m-%d %H}"


async def test_times_are_in_the_configured_zone_and_named(
    home: Path, fake_api: FakeAnthropic, capsys
):
    raw = {
        "timezone": ZONE,
        "llm": {"api_key": "sk-test-0123456789", "base_url": fake_api.base_url},
        "web": {"enabled": False},
        "memory": {"embeddings": {"provider": "none"}, "consolidation": {"enabled": False}},
        "schedule": {"daily_summary": {"enabled": True, "target": str(PRIVATE)}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(raw))  # what the commands read
    config = load_config(home, {})
    audit = AuditLog(config.layout.actions)
    audit.record("ran", "exec", str(PRIVATE), arguments="ls")
    audit.close()
    channel = RecordingChannel()
    app = build_app(config, [channel])
    await app.start()
    try:
        fake_api.enqueue(
            Reply(tool_calls=[("memory_append", {"text": "Likes tea."})]), Reply("Noted.")
        )
        await asyncio.wait_for(channel.push("remember that I like tea"), 10)  # a change
        home_arg = ["--home", str(home)]
        capsys.readouterr()
        for argv in (["memory", "history"], ["status"], ["actions"], ["jobs"]):
            assert await asyncio.to_thread(main, [*argv, *home_arg], {}) == 0
        cli = capsys.readouterr().out
        await asyncio.wait_for(channel.push("/status"), 10)
        await asyncio.wait_for(channel.push("/undo"), 10)
        status, undo = channel.texts()[-2:]
        report = app._status()
        overview = fragment(report)
    finally:
        await app.stop()
    since = next(line for line in status.splitlines() if line.startswith("Turns:"))
    assert LOCAL.search(since) and local_now() in since, since
    assert LOCAL.search(undo.splitlines()[1]), undo
    assert LOCAL.search(overview) and " UTC" not in overview
    assert " UTC" not in cli and "+00:00" not in cli
    sessions = cli[cli.index("Sessions:") :].splitlines()[1]
    assert LOCAL.search(sessions), sessions
    history = next(line for line in cli.splitlines() if line.startswith("#1 "))
    assert LOCAL.search(history) and local_now() in history, history
    ran = next(line for line in cli.splitlines() if " ran " in line)
    assert LOCAL.search(ran) and local_now() in ran, ran
    next_run = next(line for line in cli.splitlines() if "next run:" in line)
    assert LOCAL.search(next_run), next_run
    # What is stored stays UTC.
    assert report["sessions"][0]["last_active"].endswith("+00:00")
