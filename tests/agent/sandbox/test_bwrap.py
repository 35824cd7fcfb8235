"""The sandbox against escapes, with the real bubblewrap: reading Corvid's state and config,
writing outside the workspace, reaching a port of this machine, a fork bomb, a gigabyte of
output, a memory hog, and Corvid's environment."""

from __future__ import annotations

import gc
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from agent.sandbox import bwrap
from agent.sandbox.bwrap import Sandbox
from agent.settings import ExecSettings

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="no bubblewrap for the sandbox tests: apt-get install bubblewrap (.ci/run does)",
)
STATE_CANARY = "CANARY-state-5d1e"
CONFIG_CANARY = "CANARY-config-77ab"
ENV_CANARY = "CANARY-env-c0de"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "corvid"
    (home / "state").mkdir(parents=True)
    (home / "workspace").mkdir()
    (home / "state" / "secret.txt").write_text(STATE_CANARY)
    (home / "config.yaml").write_text(f"llm:\n  api_key: {CONFIG_CANARY}\n")
    return home


def sandbox(home: Path, **settings: object) -> Sandbox:
    box = Sandbox(ExecSettings(enabled=True, **settings), home / "workspace")  # type: ignore[arg-type]
    if box.problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {box.problem()}")
    return box


def groups_made(box: Sandbox) -> list[Path]:
    """The pids control groups ``box`` makes, as it makes them: other tests' boxes, running at
    the same time, have groups of their own under the same root."""
    made: list[Path] = []
    make = box._group

    def recorded() -> Path | None:
        group = make()
        if group is not None:
            made.append(group)
        return group

    box._group = recorded  # type: ignore[method-assign]
    return made


async def test_state_config_and_the_home_folder_are_not_there(home: Path):
    ran = await sandbox(home).run(
        f"cat ../state/secret.txt ../config.yaml {home}/state/secret.txt {home}/config.yaml; "
        f"ls -a .. / {home} /root /home; grep -rs CANARY /tmp /workspace /etc | head -5; pwd"
    )
    assert STATE_CANARY not in ran.output and CONFIG_CANARY not in ran.output
    assert ran.output.strip().endswith("/workspace")
    assert "No such file or directory" in ran.output


async def test_writes_land_in_the_workspace_and_nowhere_else(home: Path, tmp_path: Path):
    ran = await sandbox(home).run(
        f"echo kept > note.txt; echo out > ../escape.txt; echo out > {tmp_path}/escape.txt; "
        "echo out > /usr/escape.txt; echo out > /etc/escape.txt; echo out > /tmp/gone.txt"
    )
    assert (home / "workspace" / "note.txt").read_text() == "kept\n"
    assert not (home / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    for system in ("/usr", "/etc"):  # the machine's own
        assert not os.path.exists(f"{system}/escape.txt")  # noqa: ASYNC240
    assert "Read-only file system" in ran.output
    # A scratch box writes into a folder that is gone afterwards.
    await sandbox(home, writable="scratch").run("echo lost > scratch.txt")
    assert not (home / "workspace" / "scratch.txt").exists()


@pytest.fixture
async def harness_port() -> AsyncIterator[tuple[int, list[str]]]:
    """A port on this machine's loopback, as a test harness (or a local service) has."""
    hits: list[str] = []

    async def seen(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="reached")

    app = web.Application()
    app.router.add_get("/{tail:.*}", seen)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield site._server.sockets[0].getsockname()[1], hits  # type: ignore[union-attr]
    await runner.cleanup()


async def test_the_machines_loopback_cannot_be_reached(home: Path, harness_port):
    port, hits = harness_port
    ran = await sandbox(home).run(
        f"python3 -c \"import urllib.request as u; print('GOT', u.urlopen('http://127.0.0.1:{port}"
        f"/x', timeout=3).read())\"; bash -c 'echo > /dev/tcp/127.0.0.1/{port}' && echo OPEN"
    )
    assert "GOT" not in ran.output and "OPEN" not in ran.output
    assert "Connection refused" in ran.output
    assert hits == []


async def test_a_fork_bomb_is_contained_and_cleaned_up(home: Path):
    box = sandbox(home, max_processes=16, timeout=3)
    made = groups_made(box)
    began = time.monotonic()
    ran = await box.run(":(){ :|:& };:")
    assert time.monotonic() - began < 15
    assert ran.stopped == "time" or ran.status != 0
    assert len(made) == (os.geteuid() == 0)  # a group of its own where one is needed (root)
    assert [g for g in made if g.exists()] == []
    gc.collect()  # nothing of the stopped box is left open (a ResourceWarning fails it)
    # Bounded, not merely slow: more than the limit of processes at once cannot be made.
    ran = await sandbox(home, max_processes=8, timeout=10).run(
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 2 & done; wait; echo done"
    )
    assert "fork" in ran.output.lower() or "resource temporarily unavailable" in ran.output.lower()


async def test_a_gigabyte_of_output_is_cut_and_stopped(home: Path):
    began = time.monotonic()
    ran = await sandbox(home, max_output_kb=64, timeout=60).run("head -c 1000000000 /dev/zero")
    assert ran.stopped == "output" and ran.status is None
    assert len(ran.output.encode()) == 64 * 1024 and ran.cut > 0
    assert time.monotonic() - began < 10  # stopped at the limit, not after the gigabyte
    gc.collect()  # nothing of the stopped process is left open (a ResourceWarning fails it)


async def test_memory_is_limited(home: Path):
    ran = await sandbox(home, memory_mb=128).run(
        "python3 -c 'x = bytearray(400 * 1024 * 1024); print(\"allocated\")'"
    )
    assert "MemoryError" in ran.output and "allocated" not in ran.output
    assert ran.status not in (0, None)


async def test_corvids_environment_is_not_passed(home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_CANARY)
    ran = await sandbox(home).run("env")
    assert ENV_CANARY not in ran.output and "ANTHROPIC" not in ran.output
    assert "HOME=/workspace" in ran.output
    assert os.environ["ANTHROPIC_API_KEY"] == ENV_CANARY  # Corvid's own is untouched


async def test_a_command_that_runs_too_long_is_stopped(home: Path):
    ran = await sandbox(home, timeout=1).run("echo started; sleep 30")
    assert ran.stopped == "time" and ran.output == "started\n" and ran.seconds < 10
    gc.collect()  # nothing of the stopped process is left open (a ResourceWarning fails it)


async def test_only_public_files_of_etc_are_there(home: Path):
    """The box has from /etc only what every user may read: run as root (where the owner's
    bits would let it read them), no password hashes, no secrets kept there."""
    ran = await sandbox(home).run(
        "cat /etc/shadow /etc/gshadow; ls /etc/ssl/private /etc/corvid; ls /etc; id -un"
    )
    assert "root:" not in ran.output
    assert "/etc/shadow: No such file or directory" in ran.output
    assert "passwd" in ran.output and "ld.so.cache" in ran.output


def test_a_folder_is_public_only_when_everything_in_it_is(tmp_path: Path):
    folder = tmp_path / "conf.d"
    folder.mkdir(mode=0o755)
    (folder / "a.conf").write_text("x")
    (folder / "a.conf").chmod(0o644)
    folder.chmod(0o755)
    assert bwrap._public(folder) and bwrap._public(folder / "a.conf")
    (folder / "key").write_text("secret")
    (folder / "key").chmod(0o600)
    assert not bwrap._public(folder) and not bwrap._public(folder / "key")
    assert not bwrap._public(tmp_path / "missing")


async def test_tmp_is_bounded_and_nothing_else_outside_the_workspace_is_writable(home: Path):
    ran = await sandbox(home, memory_mb=32).run(
        "head -c 100000000 /dev/zero > /tmp/big; du -m /tmp/big; "
        "echo x > /planted; echo x > /dev/shm/planted; echo x > /dev/planted; echo ok > kept.txt"
    )
    assert "No space left on device" in ran.output
    size = int(next(line for line in ran.output.splitlines() if "/tmp/big" in line).split()[0])
    assert size <= 32
    assert ran.output.count("Read-only file system") == 3
    assert (home / "workspace" / "kept.txt").read_text() == "ok\n"
