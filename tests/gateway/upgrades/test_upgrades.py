"""config.yaml and the state files carried forward from an older Corvid, and refused from a
newer one."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC
from pathlib import Path

import pytest
import yaml

from gateway.config.home import init_home
from gateway.config.layout import Layout
from gateway.config.loader import load_config
from gateway.contract.errors import ConfigError
from gateway.scheduling import ledger
from gateway.upgrades import state as state_versions
from gateway.upgrades.config_steps import CONFIG_VERSION, Step, rewrite, upgrade
from gateway.upgrades.home import upgrade_home
from gateway.upgrades.state import NewerState, upgrade_state

# config.yaml as the first Corvids wrote it (no version), with an option since removed.
EARLY = """\
# Corvid configuration. Every option is listed with its default.

# Your time zone (IANA name). Daily logs and the dates the assistant sees use it.
timezone: Europe/Berlin

llm:
  # Anthropic API key, read from the environment.
  api_key: ${ANTHROPIC_API_KEY}
  # Model id.
  model: claude-sonnet-5-5
  # Model calls in flight at once, across all chats; more wait for a free one. Each holds its
  # whole conversation in memory while it runs, so this bounds what a burst takes.
  parallel_calls: 4

agent:
  # Most model calls in one turn (each tool round trip is one).
  max_iterations: 12

channels:
  telegram:
    enabled: false
    # Telegram user ids allowed to talk to the bot.
    allow_from: [42]
"""


def test_an_early_config_is_read_and_rewritten_with_its_comments():
    raw = yaml.safe_load(EARLY)
    upgraded, changes = upgrade(raw)
    assert "parallel_calls" not in upgraded["llm"]
    assert changes == [
        "llm.parallel_calls was removed: model calls are admitted by the size of the "
        "conversations in flight now, not by a count (version 2)"
    ]
    text = rewrite(EARLY)
    assert yaml.safe_load(text) == {**upgraded, "version": CONFIG_VERSION}
    assert "parallel_calls" not in text and "Model calls in flight" not in text
    assert "  # Most model calls in one turn (each tool round trip is one).\n" in text
    assert "    # Telegram user ids allowed to talk to the bot.\n" in text
    assert text.startswith("# Corvid configuration.")
    assert rewrite(text) == text  # current already: left as it is


def test_an_early_config_loads(tmp_path):
    (tmp_path / "config.yaml").write_text(EARLY)
    config = load_config(tmp_path, {})
    assert config.agent.max_iterations == 12
    assert config.channels.telegram.allow_from == ["42"]


def test_a_new_home_is_current():
    template = (Path(__file__).parents[3] / "gateway/config/template.yaml").read_text()
    assert yaml.safe_load(template.replace("@", ""))["version"] == CONFIG_VERSION


STEPS = (
    Step(2, renamed=(("llm.model", "llm.model_id"),)),
    Step(3, renamed=(("agent.max_iterations", "llm.max_steps"),), dropped=(("gone", "why"),)),
)


def test_renamed_and_moved_options_follow_the_table():
    text = EARLY.replace("timezone:", "gone: 1\ntimezone:")
    raw = yaml.safe_load(text)
    upgraded, changes = upgrade(raw, STEPS, current=3)
    assert upgraded["llm"]["model_id"] == "claude-sonnet-5-5"
    assert upgraded["llm"]["max_steps"] == 12 and "agent" in upgraded
    assert "max_iterations" not in upgraded["agent"] and "gone" not in upgraded
    assert changes[0] == "llm.model is now llm.model_id (version 2)"
    # Only what is newer than the file's own version is applied.
    again, _ = upgrade({**raw, "version": 2, "llm": {"model": "x"}}, STEPS, current=3)
    assert again["llm"] == {"model": "x", "max_steps": 12}
    written = rewrite(text, STEPS, current=3)
    assert yaml.safe_load(written) == {**upgraded, "version": 3}


def test_a_rename_within_a_section_keeps_the_comments():
    steps = (Step(2, renamed=(("llm.model", "llm.model_id"),)),)
    written = rewrite(EARLY, steps, current=2)
    assert "  # Model id.\n  model_id: claude-sonnet-5-5\n" in written
    assert "parallel_calls: 4" in written  # not dropped by this table


def test_a_config_from_a_newer_corvid_is_refused(tmp_path):
    (tmp_path / "config.yaml").write_text(f"version: {CONFIG_VERSION + 1}\n")
    with pytest.raises(
        ConfigError, match=r"^version: config\.yaml is version 3, written for a newer"
    ):
        load_config(tmp_path, {})
    with pytest.raises(ConfigError, match="whole number"):
        upgrade({"version": "two"})


def _database(path: Path, version: int) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE IF NOT EXISTS t (x)")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


def _version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_state_from_before_versions_is_stamped(tmp_path):
    layout = Layout(tmp_path)
    layout.state.mkdir()
    _database(layout.journal, 0)
    _database(layout.ledger, 0)
    _database(layout.embeddings, 0)  # a cache: not versioned
    changes = upgrade_state(layout)
    assert changes == [
        "state/gateway.sqlite: schema 0 → 1",
        "state/scheduler.sqlite: schema 0 → 1",
        "state/: layout 0 → 1",
    ]
    assert _version(layout.journal) == _version(layout.ledger) == 1
    assert json.loads((layout.state / "layout.json").read_text()) == {"layout": 1}
    assert upgrade_state(layout) == []


def test_a_state_folder_made_just_now_is_stamped_without_a_word(tmp_path, capsys):
    """A first `corvid run` makes the home, then takes its lock: no upgrade to speak of."""
    from gateway.ops.cli import main

    assert main(["run", "--home", str(tmp_path / "h")], environ={}) == 2  # no API key yet
    capsys.readouterr()
    layout = Layout(tmp_path / "h")
    layout.run_lock.touch()
    assert upgrade_state(layout) == []
    assert json.loads(layout.state_version.read_text()) == {"layout": 1}


def test_newer_state_is_refused_before_anything_changes(tmp_path):
    layout = Layout(tmp_path)
    layout.state.mkdir()
    _database(layout.journal, 0)
    _database(layout.ledger, 7)
    with pytest.raises(NewerState, match=r"state/scheduler\.sqlite has schema 7, this Corvid"):
        upgrade_state(layout)
    assert _version(layout.journal) == 0
    assert not (layout.state / "layout.json").exists()
    (layout.state / "layout.json").write_text('{"layout": 9}')
    _database(layout.ledger, 1)
    with pytest.raises(NewerState, match=r"layout\.json says 9"):
        upgrade_state(layout)


@pytest.mark.parametrize("name", ["usage.sqlite", "history.sqlite"])
def test_a_newer_usage_ledger_or_history_is_refused(tmp_path, name):
    layout = Layout(tmp_path)
    layout.state.mkdir()
    _database(layout.state / name, 5)
    with pytest.raises(NewerState, match=rf"state/{name.replace('.', '[.]')} has schema 5"):
        upgrade_state(layout)


def test_database_steps_run_in_order(tmp_path, monkeypatch):
    layout = Layout(tmp_path)
    layout.state.mkdir()
    _database(layout.ledger, 1)
    ran: list[int] = []
    monkeypatch.setattr(ledger, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(
        state_versions,
        "DATABASE_STEPS",
        {
            ("scheduler.sqlite", 2): lambda db: ran.append(2),
            ("scheduler.sqlite", 3): lambda db: (ran.append(3), db.execute("ALTER TABLE t ADD y")),
        },
    )
    upgrade_state(layout)
    assert ran == [2, 3] and _version(layout.ledger) == 3


def test_upgrade_home_keeps_the_old_config_beside_it(tmp_path):
    layout = Layout(tmp_path)
    init_home(layout.home, {})
    layout.config_file.write_text(EARLY)
    layout.config_file.chmod(0o640)
    changes = upgrade_home(layout)
    assert changes[0] == (
        "config.yaml carried from version 1 to 2; the old file is kept as config.yaml.v1"
    )
    assert any("llm.parallel_calls was removed" in c for c in changes)
    assert (tmp_path / "config.yaml.v1").read_text() == EARLY
    assert yaml.safe_load(layout.config_file.read_text())["version"] == 2
    assert layout.config_file.stat().st_mode & 0o777 == 0o640
    assert upgrade_home(layout) == []


def test_a_database_made_now_has_its_version(tmp_path):
    from agent.usage.ledger import UsageLedger
    from agent.workspace.history import History
    from gateway.runtime.journal import Journal
    from gateway.scheduling.ledger import Ledger

    Ledger(tmp_path / "scheduler.sqlite").close()
    Journal(tmp_path / "gateway.sqlite").close()
    UsageLedger(tmp_path / "usage.sqlite", UTC).close()
    History(tmp_path / "ws", tmp_path / "history.sqlite").close()
    made = ("scheduler.sqlite", "gateway.sqlite", "usage.sqlite", "history.sqlite")
    assert [_version(tmp_path / name) for name in made] == [1, 1, 1, 1]
