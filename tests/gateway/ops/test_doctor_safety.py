"""``corvid doctor`` on the exec sandbox, and the tool left out when it cannot be boxed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent.sandbox import bwrap
from gateway.app import build_app
from gateway.contract.ports import Status
from gateway.ops.doctor.safety import check_exec, check_links
from tests.conftest import RecordingChannel, make_config

EXEC_ON = {"exec": {"enabled": True}}


def test_exec_off_is_not_checked(home: Path, fake_api) -> None:
    assert check_exec(make_config(home, fake_api.base_url)) == []


async def test_without_bubblewrap_exec_is_not_offered_and_doctor_says_why(
    home: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bwrap, "bwrap_path", lambda: None)
    config = make_config(home, fake_api.base_url, tools=EXEC_ON)
    [check] = check_exec(config)
    assert check.status is Status.FAIL and "bubblewrap (bwrap) is not installed" in check.message
    app = build_app(config, [RecordingChannel()])
    try:
        assert "exec" not in app.agent.tools
    finally:
        await app.stop()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")
async def test_with_bubblewrap_exec_is_offered_in_private_chats_only(home: Path, fake_api) -> None:
    config = make_config(home, fake_api.base_url, tools=EXEC_ON)
    [check] = check_exec(config)
    if check.status is not Status.OK:
        pytest.skip(check.message)
    assert check.message == "commands run under bubblewrap (no network)"
    app = build_app(config, [RecordingChannel()])
    try:
        tools = app.agent.tools
        assert "exec" in [s["name"] for s in tools.schemas(private=True)]
        assert "exec" not in [s["name"] for s in tools.schemas(private=False)]
    finally:
        await app.stop()


def test_doctor_names_the_owners_skills_and_each_that_breaks_the_format(
    home: Path, fake_api
) -> None:
    from gateway.ops.doctor.safety import check_skills
    from tests.agent.skills.test_catalog import write_skill

    config = make_config(home, fake_api.base_url)
    assert check_skills(config) == []  # the bundled ones alone: nothing to say
    write_skill(home / "workspace" / "skills", "packing", "Pack for a trip.", "Steps.")
    write_skill(home / "workspace" / "skills", "Broken", "No good name.", "Steps.")
    ok, broken = check_skills(config)
    assert (ok.status, ok.message) == (Status.OK, "yours: packing")
    assert broken.status is Status.WARN and "Broken: name must be lowercase" in broken.message


def test_doctor_names_every_link_and_fifo_in_the_workspace(home: Path) -> None:
    ws = home / "workspace"
    assert check_links(ws) == []  # a fresh workspace holds none
    (ws / "notes").mkdir()
    (ws / "notes" / "me.md").symlink_to("../USER.md")
    assert [(c.status, c.message.split(":")[0]) for c in check_links(ws)] == [
        (Status.WARN, "notes/me.md → USER.md")
    ]
    (ws / "AGENTS.md").unlink()
    (ws / "AGENTS.md").symlink_to("../corvid.env")
    os.mkfifo(ws / "SOUL.md.pipe")
    [check] = check_links(ws)
    assert check.status is Status.FAIL
    assert "AGENTS.md → outside the workspace" in check.message
    assert "SOUL.md.pipe (not a regular file)" in check.message
    assert "notes/me.md → USER.md" in check.message
