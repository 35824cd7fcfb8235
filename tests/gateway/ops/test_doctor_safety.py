"""``corvid doctor`` on the exec sandbox, and the tool left out when it cannot be boxed."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from agent.sandbox import bwrap
from gateway.app import build_app
from gateway.contract.ports import Status
from gateway.ops.doctor.safety import check_exec, check_links
from tests.conftest import RecordingChannel, make_config

EXEC_ON = {"exec": {"enabled": True}}


def test_exec_off_is_not_checked(home: Path, fake_api) -> None:
    assert check_exec(make_config(home, fake_api.base_url), {}) == []


async def test_without_bubblewrap_exec_is_not_offered_and_doctor_says_why(
    home: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bwrap, "bwrap_path", lambda: None)
    config = make_config(home, fake_api.base_url, tools=EXEC_ON)
    [check] = check_exec(config, {})
    assert check.status is Status.FAIL and "bubblewrap (bwrap) is not installed" in check.message
    app = build_app(config, [RecordingChannel()])
    try:
        assert "exec" not in app.agent.tools
    finally:
        await app.stop()


# What bubblewrap says when it may not make a user namespace (Debian's build), as under the
# systemd service's RestrictNamespaces=yes.
REFUSED = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or "
    "<file:///usr/share/doc/bubblewrap/README.Debian.gz>."
)


def _fake_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A ``bwrap`` first on PATH that does what ``script`` (sh) says."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bwrap").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


async def test_under_systemd_a_box_refused_says_why_and_names_the_drop_in(
    home: Path, fake_api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    _fake_bwrap(tmp_path, monkeypatch, f"echo '{REFUSED}' >&2; exit 1")
    config = make_config(home, fake_api.base_url, tools=EXEC_ON)
    [check] = check_exec(config, {"INVOCATION_ID": "0123abcd"})
    assert check.status is Status.FAIL
    assert check.message == (
        "tools.exec is on but the tool is not offered: bubblewrap cannot make its box here "
        "(No permissions to create new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces)"
    )
    assert "Corvid runs under systemd" in check.fix
    assert "/etc/systemd/system/corvid.service.d/exec.conf" in check.fix
    [elsewhere] = check_exec(config, {})
    assert "systemd" not in elsewhere.fix and "kernel.unprivileged_userns_clone" in elsewhere.fix

    # The running gateway says the same in its log, where the service's journal shows it.
    monkeypatch.setenv("INVOCATION_ID", "0123abcd")
    app = build_app(config, [RecordingChannel()])
    try:
        assert "exec" not in app.agent.tools
    finally:
        await app.stop()
    [said] = [r.getMessage() for r in caplog.records if "exec is on" in r.getMessage()]
    assert "No permissions to create new namespace" in said and "exec.conf" in said


def test_a_trial_run_that_hangs_is_a_clear_problem_and_leaves_nothing_running(
    home: Path, fake_api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As bubblewrap does when capset is refused it: it waits for a box never made."""
    pid_file = tmp_path / "child.pid"
    _fake_bwrap(tmp_path, monkeypatch, f"sleep 300 & echo $! > {pid_file}; wait")
    monkeypatch.setattr(bwrap, "TRIAL_SECONDS", 0.5)
    [check] = check_exec(make_config(home, fake_api.base_url, tools=EXEC_ON), {})
    assert check.message.endswith("bubblewrap did not finish a trial run in 0.5 s")
    child = int(pid_file.read_text())
    for _ in range(200):  # bounded: the kernel finishing off the killed child
        if not _alive(child):
            break
        time.sleep(0.01)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")
async def test_with_bubblewrap_exec_is_offered_in_private_chats_only(home: Path, fake_api) -> None:
    config = make_config(home, fake_api.base_url, tools=EXEC_ON)
    [check] = check_exec(config, {})
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
