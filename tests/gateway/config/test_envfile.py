"""The home's environment file: read under the environment, updated in place, kept private."""

from __future__ import annotations

from gateway.config.envfile import read_env_file, update_env_file, with_env_file
from gateway.ops.cli import main


def test_the_environment_wins_over_the_file(tmp_path):
    path = tmp_path / "corvid.env"
    path.write_text("# secrets\nexport A='from file'\nB=\"quoted\"\nnot a line\n")
    assert read_env_file(path) == {"A": "from file", "B": "quoted"}
    assert with_env_file(path, {"A": "from env"}) == {"A": "from env", "B": "quoted"}
    assert with_env_file(tmp_path / "missing.env", {"C": "1"}) == {"C": "1"}


def test_an_update_changes_only_its_lines_and_keeps_the_file_private(tmp_path):
    path = tmp_path / "corvid.env"
    path.write_text("# mine\nA=1\nOTHER=keep\n")
    path.chmod(0o644)
    assert update_env_file(path, {"A": "2", "B": "3"}) == ["A", "B"]
    assert path.read_text() == "# mine\nA=2\nOTHER=keep\nB=3\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert update_env_file(path, {"A": "2"}) == []


def test_commands_read_the_homes_env_file(tmp_path, monkeypatch):
    from gateway.ops import cli

    home = tmp_path / "home"
    home.mkdir()
    (home / "corvid.env").write_text("ANTHROPIC_API_KEY=sk-from-the-file\nB=file\n")
    seen = {}
    monkeypatch.setattr(cli, "cmd_init", lambda args, home, environ: seen.update(environ))
    assert main(["init", "--home", str(home)], environ={"B": "env"}) == 0
    assert seen == {"ANTHROPIC_API_KEY": "sk-from-the-file", "B": "env"}
