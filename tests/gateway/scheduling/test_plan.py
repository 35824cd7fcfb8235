"""One plan of scheduled jobs: the running gateway, ``corvid jobs`` and ``corvid doctor`` list the
same jobs, every kind included (the daily summary, the heartbeat, a job made in chat)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import yaml

from gateway.config import load_config
from gateway.ops.cli import main
from gateway.ops.doctor import run_checks
from gateway.scheduling.jobs import Job, JobKind
from gateway.scheduling.plan import DAILY_SUMMARY, HEARTBEAT
from gateway.scheduling.reminders import JobStore
from tests.conftest import OWNER, running
from tests.fakes.clock import FakeClock


async def test_the_gateway_corvid_jobs_and_doctor_list_the_same_jobs(
    home, fake_api, fake_telegram, capsys
):
    target = f"telegram:private:{OWNER}"
    raw = {
        "llm": {"api_key": "sk-test-0123456789", "base_url": fake_api.base_url},
        "channels": {"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        "schedule": {
            "daily_summary": {"enabled": True, "target": target},
            "heartbeat": {"enabled": True, "target": target, "every_minutes": 30},
        },
    }
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    config = load_config(home, {})
    now = datetime.now(UTC)
    tomorrow = (now + timedelta(days=1)).isoformat()
    JobStore(config.state / "jobs.json").add(
        Job("job-abc123", JobKind.ONCE, tomorrow, "UTC", target, now, instruction="water")
    )
    expected = {DAILY_SUMMARY, HEARTBEAT, "job-abc123"}

    async with running(config, FakeClock(now)) as app:
        assert app.scheduler is not None
        assert {job.id for job in app.scheduler.jobs()} == expected

    capsys.readouterr()
    assert await asyncio.to_thread(main, ["jobs", "--home", str(home)], {}) == 0
    out = capsys.readouterr().out
    assert {line.split()[0] for line in out.splitlines() if " → " in line} == expected

    checks = {c.name: c for c in await run_checks(home, {}, limit=5)}
    assert {line.split(" → ")[0] for line in checks["jobs"].details} == expected
    assert checks["jobs"].message.startswith("3 scheduled")
