"""Memory consolidation is on by default: without a target of its own or a daily summary's it
proposes to the owner's private chat, and with no chat at all it says it cannot run, in
``corvid jobs`` and ``corvid doctor``."""

from __future__ import annotations

from pathlib import Path

import yaml

from gateway.config.loader import load_config
from gateway.contract.ports import SystemClock
from gateway.ops.cli import main
from gateway.ops.doctor.schedule import check_jobs
from gateway.scheduling.plan import CONSOLIDATION, planned_jobs
from gateway.scheduling.reminders import JobStore


def _home(tmp_path: Path, **sections: object) -> Path:
    home = tmp_path / "h"
    main(["init", "--home", str(home)], environ={})
    config = yaml.safe_load((home / "config.yaml").read_text())
    for name, values in sections.items():
        config[name] = {**(config.get(name) or {}), **values}  # type: ignore[dict-item]
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def _target(home: Path) -> str | None:
    config = load_config(home, {"TELEGRAM_BOT_TOKEN": "1:x", "DISCORD_BOT_TOKEN": "d"})
    jobs = planned_jobs(config, JobStore(config.layout.jobs), SystemClock().now())
    return next((j.target for j in jobs if j.id == CONSOLIDATION), None)


def test_without_a_target_it_goes_to_the_owners_private_chat(tmp_path):
    telegram = {"telegram": {"enabled": True, "allow_from": [42]}}
    assert _target(_home(tmp_path / "tg", channels=telegram)) == "telegram:private:42"
    discord = {"discord": {"enabled": True, "allow_from": [7]}}
    assert _target(_home(tmp_path / "dc", channels=discord)) == "discord:dm:7"
    # No chat platform: the control page's chat (on by default) is the owner's.
    assert _target(_home(tmp_path / "web")) == "web:private:owner"


def test_with_no_chat_at_all_jobs_and_doctor_say_it_cannot_run(tmp_path, capsys):
    home = _home(tmp_path, web={"enabled": False})
    assert _target(home) is None
    capsys.readouterr()
    assert main(["jobs", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert "memory-consolidation\n  cannot run: on, but has no chat to send its proposals" in out
    assert "memory.consolidation.target" in out
    check = check_jobs(load_config(home, {}))
    assert check.status.value == "warn" and "memory-consolidation cannot run" in check.message
    assert any("memory.consolidation.target" in line for line in check.details)
