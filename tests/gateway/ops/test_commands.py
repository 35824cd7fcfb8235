"""The corvid subcommands that look at or change a home (gateway/ops/commands.py)."""

from __future__ import annotations

from pathlib import Path

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
