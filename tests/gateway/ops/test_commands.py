"""The corvid subcommands that look at or change a home (gateway/ops/: commands.py, home.py,
pairing.py)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from channels.pairing import PairingStore
from gateway.config.home import init_home
from gateway.ops.cli import main


def test_pairing_list_shows_a_strangers_name_without_its_escapes(tmp_path: Path, capsys):
    home = tmp_path / "home"
    init_home(home, {})
    store = PairingStore(home / "state" / "pairing.json")
    hostile = "Eve\x1b[2J\x1b[31m\nApproved:\n  telegram user Owner (id 1)\u202e"
    req, _ = store.request("telegram", "666", hostile)
    assert req is not None
    capsys.readouterr()
    assert main(["pairing", "list", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert out.count("\n") == 3  # header, one request, the hint: no forged line
    assert "Eve\\x1b[2J" in out and f"{req.code}  telegram user" in out


def test_the_owner_denies_one_request_or_clears_all(tmp_path: Path, capsys):
    home = tmp_path / "home"
    init_home(home, {})
    store = PairingStore(home / "state" / "pairing.json")
    first, _ = store.request("telegram", "1", "A")
    store.request("discord", "2", "B")
    assert first is not None
    assert main(["pairing", "deny", first.code, "--home", str(home)], environ={}) == 0
    assert [p.user_id for p in store.pending()] == ["2"]
    assert main(["pairing", "approve", first.code, "--home", str(home)], environ={}) == 1
    assert main(["pairing", "clear", "--home", str(home)], environ={}) == 0
    assert "Dropped 1 pending" in capsys.readouterr().out
    assert store.pending() == []


SERVER = str(Path(__file__).parents[2] / "fakes" / "mcp_server.py")
BROKEN_FILES = {
    # The manual's systemd set-up: the server's secret is in the gateway's own environment
    # (a root-only env file), not in the shell the owner types into.
    "a variable only the gateway has": "mcp:\n  servers:\n    cal:\n      command: x\n"
    "      env: {TOKEN: '${CAL_TOKEN}'}\n",
    # An edit in progress, while the gateway runs on what it read at its start.
    "a file broken while the gateway runs": "timezone: Europe/Berlin\nllm: [\n",
}


@pytest.mark.parametrize("broken", BROKEN_FILES.values(), ids=list(BROKEN_FILES))
async def test_the_looking_commands_work_beside_a_config_they_cannot_read(
    home: Path, start_gateway, capsys, broken: str
):
    servers = {"cal": {"command": sys.executable, "args": [SERVER], "env": {"TOKEN": "t0k"}}}
    app, _channel = await start_gateway(mcp={"servers": servers}, web={"enabled": True})
    assert app.mcp is not None and app.web is not None
    await app.mcp.settle()  # bounded; "ready" is asserted below
    (home / "config.yaml").write_text(broken)
    store = PairingStore(home / "state" / "pairing.json")
    req, _ = store.request("telegram", "77", "Eve")
    assert req is not None

    async def corvid(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = await asyncio.to_thread(main, [*argv, "--home", str(home)], {})
        out, err = capsys.readouterr()
        assert "cannot be used as it is" in err, err  # warned, not silently defaulted
        return code, out, err

    code, out, _ = await corvid("status")
    assert code == 0 and out.startswith("Corvid is running (pid ")
    assert "cal (stdio, private chats only): ready" in out
    code, out, _ = await corvid("pairing", "list")
    assert code == 0 and req.code in out
    code, _, _ = await corvid("pairing", "approve", req.code)
    assert code == 0 and store.is_approved("telegram", "77")
    code, out, _ = await corvid("jobs")
    assert code == 0
    code, out, _ = await corvid("web")
    assert code == 0 and out.startswith(f"{app.web.url}login?token=")
    code, out, _ = await corvid("mcp", "list")
    assert code == 0 and "from the running gateway" in out and "cal__echo" in out


def test_the_control_page_address_of_a_home_that_does_not_exist_is_refused(tmp_path: Path, capsys):
    typo = tmp_path / "corivd"
    assert main(["web", "--home", str(typo)], environ={}) == 2
    captured = capsys.readouterr()
    assert f"there is no Corvid home at {typo}" in captured.err
    assert "token=" not in captured.out
    assert not typo.exists()
    typo.mkdir()
    (typo / "config.yaml").write_text("timezone: UTC\n")  # a home written by hand, never run
    assert main(["web", "--home", str(typo)], environ={}) == 1
    assert "has no state/ yet" in capsys.readouterr().err
