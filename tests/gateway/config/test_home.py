"""corvid init: creates the home folder and never overwrites the user's files."""

from __future__ import annotations

import stat
from pathlib import Path

from gateway.config.home import init_home, mend_workspace, resolve_home

TEMPLATE_FILES = {
    "AGENTS.md",
    "SOUL.md",
    "USER.md",
    "IDENTITY.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
}


def test_init_creates_config_workspace_and_private_state(tmp_path):
    home = tmp_path / "h"
    created = init_home(home, {})
    assert str(home / "config.yaml") in created
    names = {p.name for p in (home / "workspace").iterdir()}
    assert TEMPLATE_FILES | {"memory", "inbox"} <= names
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o600
    modes = {n: stat.S_IMODE((home / "workspace" / n).stat().st_mode) for n in TEMPLATE_FILES}
    assert modes == dict.fromkeys(TEMPLATE_FILES, 0o600)
    text = (home / "config.yaml").read_text()
    for option in (
        "api_key",
        "base_url",
        "model",
        "max_tokens",
        "context_window",
        "timeout",
        "retries",
        "max_iterations",
        "shutdown_grace",
        "allow_from",
        "groups",
        "group_context_messages",
        "max_image_bytes",
        "max_file_bytes",
        "base_url",
        "poll_timeout",
        "secret_token",
        "level",
    ):
        assert f"  {option}:" in text, option


def test_init_never_overwrites(tmp_path):
    home = tmp_path / "h"
    init_home(home, {})
    (home / "config.yaml").write_text("timezone: Asia/Tokyo\n")
    (home / "workspace" / "SOUL.md").write_text("my own soul")
    (home / "workspace" / "USER.md").unlink()
    created = init_home(home, {})
    assert created == [str(home / "workspace" / "USER.md")]
    assert (home / "config.yaml").read_text() == "timezone: Asia/Tokyo\n"
    assert (home / "workspace" / "SOUL.md").read_text() == "my own soul"


def test_home_resolution_order(tmp_path):
    assert resolve_home(str(tmp_path / "a"), {"CORVID_HOME": "/b"}) == tmp_path / "a"
    assert resolve_home(None, {"CORVID_HOME": str(tmp_path / "b")}) == tmp_path / "b"
    assert resolve_home(None, {}) == Path.home() / ".corvid"


def test_a_false_sentence_of_an_earlier_template_is_corrected_and_nothing_else(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    old = "# How you work\n\n- Logs. Daily logs are visible in group chats too.\n- My own rule.\n"
    (ws / "AGENTS.md").write_text(old)
    (ws / "AGENTS.md").chmod(0o640)
    assert mend_workspace(ws) == ["AGENTS.md"]
    text = (ws / "AGENTS.md").read_text()
    assert text == old.replace(
        "Daily logs are visible in group chats too.",
        "Each chat has its own log; your owner's log stays private.",
    )
    assert stat.S_IMODE((ws / "AGENTS.md").stat().st_mode) == 0o640
    assert mend_workspace(ws) == []  # once
    assert (ws / "AGENTS.md").read_text() == text
