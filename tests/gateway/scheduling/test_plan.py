"""One plan of scheduled jobs: the running gateway, ``corvid jobs`` and ``corvid doctor`` list the
same jobs, every kind included (the daily summary, the heartbeat, a job made in chat)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import yaml

from gateway.config.loader import load_config
from gateway.ops.cli import main
from gateway.ops.doctor.report import run_checks
from gateway.scheduling.jobs import Job, JobKind
from gateway.scheduling.plan import CONSOLIDATION, DAILY_SUMMARY, HEARTBEAT
from gateway.scheduling.reminders import JobStore
from tests.conftest import OWNER, make_config, running
from tests.fakes.anthropic_api import Reply, last_user_text
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
    # Memory consolidation is on by default, proposing to the daily summary's chat.
    expected = {DAILY_SUMMARY, HEARTBEAT, CONSOLIDATION, "job-abc123"}

    async with running(config, FakeClock(now)) as app:
        assert app.scheduler is not None
        assert {job.id for job in app.scheduler.jobs()} == expected

    capsys.readouterr()
    assert await asyncio.to_thread(main, ["jobs", "--home", str(home)], {}) == 0
    out = capsys.readouterr().out
    assert {line.split()[0] for line in out.splitlines() if " → " in line} == expected

    checks = {c.name: c for c in await run_checks(home, {}, limit=5)}
    assert {line.split(" → ")[0] for line in checks["jobs"].details} == expected
    assert checks["jobs"].message.startswith("4 scheduled")


async def test_corvid_jobs_run_works_for_every_kind_of_job(home, fake_api, fake_telegram, capsys):
    """The obvious way to try a new summary: run it by hand. A slot named 'manual ...' must
    reach every kind of job as a time, and a failure must be logged and said."""
    target = f"telegram:private:{OWNER}"
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        schedule={
            "daily_summary": {"enabled": True, "target": target, "skip_inactive": False},
            "heartbeat": {"enabled": True, "target": target, "active_hours": "00:00-00:00"},
        },
    )
    (home / "workspace" / "HEARTBEAT.md").write_text("# Checks\n\n- [ ] water the plants\n")
    now = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    JobStore(config.state / "jobs.json").add(
        Job("job-abc123", JobKind.ONCE, (now + timedelta(days=1)).isoformat(), "UTC", target, now,
            instruction="call the bank")
    )  # fmt: skip
    answers = {  # what each job's prompt says → what the model answers
        "daily summary": (DAILY_SUMMARY, "Today: a quiet day."),
        "Heartbeat check": (HEARTBEAT, "Water the plants."),
        "A job you scheduled": ("job-abc123", "Call the bank now."),
    }
    fake_api.brain = lambda body: Reply(
        next(a for k, (_, a) in answers.items() if k in last_user_text(body))
    )
    async with running(config, FakeClock(now)):
        for job_id, answer in answers.values():
            capsys.readouterr()
            rc = await asyncio.to_thread(main, ["jobs", "run", job_id, "--home", str(home)], {})
            assert (rc, capsys.readouterr().out.strip()) == (0, f"{job_id}: sent")
            assert fake_telegram.sent[-1]["shown"] == answer


async def test_a_job_run_by_hand_that_rightly_skips_is_no_failure(
    home, fake_api, fake_telegram, capsys
):
    """A daily summary on a day with nothing in it skips (skip_inactive): corvid jobs run says
    so and why, and exits 0; nothing is sent and the model is not asked."""
    target = f"telegram:private:{OWNER}"
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        schedule={"daily_summary": {"enabled": True, "target": target, "skip_inactive": True}},
    )
    async with running(config, FakeClock(datetime(2026, 3, 12, 10, 0, tzinfo=UTC))):
        capsys.readouterr()
        argv = ["jobs", "run", DAILY_SUMMARY, "--home", str(home)]
        rc = await asyncio.to_thread(main, argv, {})
        out = capsys.readouterr().out.strip()
    assert rc == 0, out
    assert out.startswith(f"{DAILY_SUMMARY}: skipped, ")
    assert fake_telegram.sent == [] and fake_api.message_requests == []
