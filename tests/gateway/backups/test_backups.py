"""Backups of a home and their restore: what goes in, what stays out, what is refused."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gateway.backups.archive import MANIFEST, BackupError, make_backup
from gateway.backups.job import SCHEDULED, ScheduledBackup, prune
from gateway.backups.restore import RestoreError, holding_home, restore, undo_restore
from gateway.config.home import init_home
from gateway.config.layout import Layout
from gateway.config.ops_sections import BackupConfig
from gateway.contract.errors import ConfigError


def _home(tmp_path: Path, name: str = "home") -> Layout:
    layout = Layout(tmp_path / name)
    init_home(layout.home, {})
    (layout.workspace / "MEMORY.md").write_text("Anna lives in Lisbon.\n")
    (layout.sessions / "telegram_private_42.jsonl").write_text('{"role": "user"}\n')
    (layout.state / "jobs.json").write_text('{"jobs": []}\n')
    return layout


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` by relative path, with its SHA-256 (but the run lock, which
    taking the home for a restore creates)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "run.lock"
    }


def _members(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        return {m.name for m in tar.getmembers() if m.isfile()}


def test_a_database_written_meanwhile_is_copied_whole_with_what_is_only_in_its_wal(tmp_path):
    layout = _home(tmp_path)
    # A database a later version might add, open in WAL mode with rows not yet checkpointed.
    db = sqlite3.connect(layout.state / "usage.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE spend (cents INTEGER)")
    db.executemany("INSERT INTO spend VALUES (?)", [(i,) for i in range(100)])
    db.commit()
    assert (layout.state / "usage.sqlite-wal").stat().st_size > 0
    archive = tmp_path / "b.tar.gz"
    manifest = make_backup(layout, archive, backup_dir=layout.backups)
    db.close()

    names = _members(archive)
    assert "state/usage.sqlite" in names
    assert not any(n.endswith(("-wal", "-shm")) for n in names)
    assert [e.path for e in manifest.files if e.sqlite] == ["state/usage.sqlite"]
    fresh = Layout(tmp_path / "fresh")
    restore(fresh, archive, fresh.backups)
    copy = sqlite3.connect(fresh.state / "usage.sqlite")
    assert copy.execute("SELECT count(*), sum(cents) FROM spend").fetchone() == (100, 4950)
    copy.close()


def test_secrets_stay_out_unless_asked_for(tmp_path):
    layout = _home(tmp_path)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-secret\n")
    layout.web_token.write_text("token\n")
    (layout.state / "control.sock").write_text("")  # stands for the socket: never kept
    plain, full = tmp_path / "plain.tar.gz", tmp_path / "full.tar.gz"
    make_backup(layout, plain, backup_dir=layout.backups)
    make_backup(layout, full, backup_dir=layout.backups, with_secrets=True)

    assert {"corvid.env", "state/web_token", "state/control.sock"}.isdisjoint(_members(plain))
    assert {"corvid.env", "state/web_token"} <= _members(full)
    assert "state/control.sock" not in _members(full)
    assert b"sk-secret" not in gzip.decompress(plain.read_bytes())
    assert oct(plain.stat().st_mode & 0o777) == oct(0o600)


def test_the_manifest_lists_every_file_with_its_checksum(tmp_path):
    layout = _home(tmp_path)
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile(MANIFEST))  # type: ignore[arg-type]
        for entry in manifest["files"]:
            data = tar.extractfile(entry["path"]).read()  # type: ignore[union-attr]
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    listed = {e["path"] for e in manifest["files"]}
    assert listed == set(_tree(layout.home))


def test_backups_are_not_backed_up_and_a_restore_leaves_them_in_place(tmp_path):
    layout = _home(tmp_path)
    first = layout.backups / "first.tar.gz"
    make_backup(layout, first, backup_dir=layout.backups)
    second = layout.backups / "second.tar.gz"
    make_backup(layout, second, backup_dir=layout.backups)
    assert not any(n.startswith("state/backups") for n in _members(second))

    restore(layout, second, layout.backups)
    assert first.exists() and second.exists()


def test_restore_into_a_fresh_home_gives_the_same_files(tmp_path):
    layout = _home(tmp_path)
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    fresh = Layout(tmp_path / "fresh")
    restore(fresh, archive, fresh.backups)
    before = _tree(layout.home)
    after = {k: v for k, v in _tree(fresh.home).items() if not k.startswith(".restore-undo/")}
    assert after == before
    assert fresh.state.stat().st_mode & 0o777 == 0o700
    assert (fresh.workspace / "MEMORY.md").stat().st_mode & 0o777 == 0o600


def test_restore_keeps_the_home_aside_and_undo_swaps_it_back_and_forth(tmp_path):
    layout = _home(tmp_path)
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    (layout.workspace / "MEMORY.md").write_text("Anna moved to Porto.\n")
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-kept\n")

    restore(layout, archive, layout.backups)
    memory = layout.workspace / "MEMORY.md"
    assert memory.read_text() == "Anna lives in Lisbon.\n"
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-kept\n"  # not in the backup
    assert (
        layout.restore_undo / "home/workspace/MEMORY.md"
    ).read_text() == "Anna moved to Porto.\n"

    undo_restore(layout, layout.backups)
    assert memory.read_text() == "Anna moved to Porto.\n"
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-kept\n"
    undo_restore(layout, layout.backups)
    assert memory.read_text() == "Anna lives in Lisbon.\n"


def test_undo_without_a_restore_is_refused(tmp_path):
    layout = _home(tmp_path)
    with pytest.raises(RestoreError, match="no restore to undo"):
        undo_restore(layout, layout.backups)


@pytest.mark.parametrize(
    ("lock", "refusal"),
    [("run_lock", r"Corvid is running"), ("chat_lock", r"a corvid chat is open")],
)
def test_restore_is_refused_while_corvid_runs_or_chats(tmp_path, lock, refusal):
    layout = _home(tmp_path)
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    (layout.workspace / "MEMORY.md").write_text("changed\n")
    # The lock `corvid run` (or `corvid chat`) holds, taken by another process.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, fcntl, os; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, b'4242\\n', 0); print('held', flush=True);"
         " sys.stdin.read()",
         str(getattr(layout, lock))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before = _tree(layout.home)
        with pytest.raises(RestoreError, match=refusal + r" for this home \(pid 4242\)"):
            restore(layout, archive, layout.backups)
    finally:
        holder.communicate("", timeout=30)
    assert _tree(layout.home) == before


def _rewrite(
    archive: Path, out: Path, change: dict[str, bytes], *, drop: str = "", add: str = ""
) -> None:
    """A copy of ``archive`` with some members' contents replaced, one member ``drop``ped and
    one ``add``ed (the manifest kept as it was)."""
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            if member.name == drop:
                continue
            data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if member.name in change:
                data = change[member.name]
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
        if add:
            info = tarfile.TarInfo(add)
            info.size, info.mode = 8, 0o600
            dst.addfile(info, io.BytesIO(b"planted\n"))


DAMAGE = ["flipped byte", "cut short", "altered file", "same size", "unlisted file",
          "missing file", "bad database"]  # fmt: skip


SAID = {
    "same size": "workspace/MEMORY.md does not match its checksum",
    "unlisted file": "files not in the manifest: workspace/planted.md",
    "missing file": "files listed in the manifest are missing: state/jobs.json",
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_backup_is_refused_before_anything_is_touched(tmp_path, damage):
    """Damage of every kind: to the archive itself, a file changed (in its size, or only in
    its bytes), a file its manifest does not list or one it lists missing, a database."""
    layout = _home(tmp_path)
    sqlite3.connect(layout.state / "usage.sqlite").execute("CREATE TABLE t (x)").connection.commit()
    good = tmp_path / "good.tar.gz"
    make_backup(layout, good, backup_dir=layout.backups)
    bad = tmp_path / "bad.tar.gz"
    raw = bytearray(good.read_bytes())
    if damage == "flipped byte":
        raw[len(raw) // 2] ^= 0xFF
        bad.write_bytes(bytes(raw))
    elif damage == "cut short":
        bad.write_bytes(bytes(raw[: len(raw) * 2 // 3]))
    elif damage == "altered file":
        _rewrite(good, bad, {"workspace/MEMORY.md": b"Planted.\n"})
    elif damage == "same size":  # a checker of sizes alone would take it
        _rewrite(good, bad, {"workspace/MEMORY.md": b"Anna lives in Tehran.\n"})
    elif damage == "unlisted file":
        _rewrite(good, bad, {}, add="workspace/planted.md")
    elif damage == "missing file":
        _rewrite(good, bad, {}, drop="state/jobs.json")
    else:
        db = (layout.state / "usage.sqlite").read_bytes()
        broken = db[:100] + b"\xff" * 200 + db[300:]
        with tarfile.open(good) as tar:
            manifest = json.load(tar.extractfile(MANIFEST))  # type: ignore[arg-type]
        for entry in manifest["files"]:
            if entry["path"] == "state/usage.sqlite":
                entry["sha256"] = hashlib.sha256(broken).hexdigest()
        _rewrite(good, bad, {"state/usage.sqlite": broken, MANIFEST: json.dumps(manifest).encode()})
    (layout.workspace / "MEMORY.md").write_text("Today's memory.\n")
    before = _tree(layout.home)

    with pytest.raises(RestoreError, match=SAID.get(damage)):
        restore(layout, bad, layout.backups)
    assert _tree(layout.home) == before
    assert not layout.restore_undo.exists()
    assert sorted(p.name for p in layout.home.iterdir()) == ["config.yaml", "state", "workspace"]


def test_an_archive_naming_a_path_outside_the_home_is_refused(tmp_path):
    layout = _home(tmp_path)
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(RestoreError, match="outside the home"):
        restore(layout, bad, layout.backups)
    assert not (tmp_path / "escaped").exists()


def test_the_lock_is_held_while_restoring(tmp_path):
    layout = _home(tmp_path)
    with holding_home(layout), pytest.raises(RestoreError, match="running"), holding_home(layout):
        pass


def test_scheduled_backups_keep_only_the_newest(tmp_path):
    from datetime import UTC, datetime, timedelta

    layout = _home(tmp_path)
    hand_made = layout.backups / "corvid-backup-20260101-000000.tar.gz"
    layout.backups.mkdir()
    hand_made.write_bytes(b"")
    job = ScheduledBackup(layout, BackupConfig(schedule="03:00", keep=2))
    start = datetime(2026, 11, 1, 3, tzinfo=UTC)
    made = [job.run_once(start + timedelta(days=d)) for d in range(4)]
    left = sorted(p.name for p in layout.backups.iterdir())
    assert left == sorted([hand_made.name, made[2].name, made[3].name])
    assert all(name.startswith(SCHEDULED) for name in left if name != hand_made.name)
    assert prune(layout.backups, 2) == []


def test_the_schedule_is_a_time_or_a_cron_expression():
    assert BackupConfig(schedule="3:30").cron() == "30 3 * * *"
    assert BackupConfig(schedule="0 4 * * sun").cron() == "0 4 * * sun"
    with pytest.raises(ConfigError, match=r"backup\.schedule"):
        BackupConfig(schedule="every night")


def test_cli_backup_and_restore(tmp_path, capsys):
    from gateway.ops.cli import main

    layout = _home(tmp_path)
    assert main(["backup", "--home", str(layout.home)], environ={}) == 0
    made = list(layout.backups.glob("corvid-backup-*.tar.gz"))
    assert len(made) == 1
    assert "Secrets are not in it" in capsys.readouterr().out
    fresh = tmp_path / "fresh"
    assert main(["restore", str(made[0]), "--home", str(fresh)], environ={}) == 0
    assert (fresh / "workspace/MEMORY.md").read_text() == "Anna lives in Lisbon.\n"
    made[0].write_bytes(b"not an archive")
    assert main(["restore", str(made[0]), "--home", str(fresh)], environ={}) == 1
    assert "nothing was changed" in capsys.readouterr().err
    os.remove(made[0])


def test_a_file_that_cannot_be_moved_leaves_the_home_as_it_was(tmp_path, monkeypatch):
    from gateway.backups import restore as restoring

    layout = _home(tmp_path)
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    (layout.workspace / "MEMORY.md").write_text("Today's memory.\n")
    before = _tree(layout.home)
    real = os.replace

    def refusing(src: object, dst: object) -> None:
        # Like a read-only mount in a container: the restored workspace cannot go in.
        if str(src).endswith("workspace") and ".restore-" in str(src) and "undo" not in str(src):
            raise OSError(16, "Device or resource busy")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(restoring.os, "replace", refusing)
    with pytest.raises(RestoreError, match="the home is as it was"):
        restore(layout, archive, layout.backups)
    assert _tree(layout.home) == before
    assert not layout.restore_undo.exists()


def _forged(archive: Path, out: Path, add: dict[str, bytes], *, with_secrets: bool) -> None:
    """A copy of ``archive`` with files added, listed in its manifest with their true
    checksums, and the manifest's word on secrets set to ``with_secrets``."""
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        manifest = json.load(src.extractfile(MANIFEST))  # type: ignore[arg-type]
        for member in src.getmembers():
            if member.name != MANIFEST:
                data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
                dst.addfile(member, io.BytesIO(data) if data is not None else None)
        for name, data in add.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            dst.addfile(info, io.BytesIO(data))
            manifest["files"].append({"path": name, "size": len(data), "mode": 0o600,
                "sha256": hashlib.sha256(data).hexdigest(), "sqlite": False})  # fmt: skip
        manifest["with_secrets"] = with_secrets
        body = json.dumps(manifest).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(body)
        dst.addfile(info, io.BytesIO(body))


@pytest.mark.parametrize(
    "planted",
    ["corvid.env", "state/web_sessions.json", "state/web_token", "state/run.lock", "models/x.bin"],
)
def test_an_archive_that_holds_more_than_its_manifest_says_is_refused(tmp_path, planted):
    """Secrets in a backup whose manifest says it has none, or what no backup holds: refused,
    and the home's own secrets and sign-ins stay as they were."""
    layout = _home(tmp_path)
    good = tmp_path / "good.tar.gz"
    make_backup(layout, good, backup_dir=layout.backups)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-mine\n")
    bad = tmp_path / "bad.tar.gz"
    _forged(good, bad, {planted: b"ANTHROPIC_API_KEY=sk-theirs\n"}, with_secrets=False)
    before = _tree(layout.home)
    with pytest.raises(RestoreError, match=f"the archive holds {planted.split('/x')[0]}"):
        restore(layout, bad, layout.backups)
    assert _tree(layout.home) == before
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-mine\n"


def test_a_backups_secrets_are_taken_only_when_asked_and_what_they_replace_is_kept(tmp_path):
    layout = _home(tmp_path)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-old\n")
    archive = tmp_path / "full.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups, with_secrets=True)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-mine\n")
    (layout.state / "web_sessions.json").write_text('{"mine": 1}\n')

    done = restore(layout, archive, layout.backups)  # not asked for: the home's stay
    assert done["with_secrets"] and not done["secrets_taken"]
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-mine\n"
    assert (layout.state / "web_sessions.json").read_text() == '{"mine": 1}\n'

    done = restore(layout, archive, layout.backups, with_secrets=True)
    assert done["secrets_taken"]
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-old\n"
    # What was replaced is in the undo folder, and the undo brings it back.
    assert (
        layout.restore_undo / "home" / "corvid.env"
    ).read_text() == "ANTHROPIC_API_KEY=sk-mine\n"
    undo_restore(layout, layout.backups)
    assert layout.env_file.read_text() == "ANTHROPIC_API_KEY=sk-mine\n"
    assert (layout.state / "web_sessions.json").read_text() == '{"mine": 1}\n'


def test_a_file_kept_in_place_that_the_archive_also_holds_is_kept_aside(tmp_path, monkeypatch):
    """Whatever a restore would write over is moved to the undo folder first, even a file the
    home keeps in place (here the secrets, as if the manifest's word were not checked)."""
    from gateway.backups import restore as restoring

    layout = _home(tmp_path)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-old\n")
    archive = tmp_path / "full.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups, with_secrets=True)
    layout.env_file.write_text("ANTHROPIC_API_KEY=sk-mine\n")
    monkeypatch.setattr(restoring, "_only_what_it_may", lambda *args: False)
    restore(layout, archive, layout.backups)
    assert (
        layout.restore_undo / "home" / "corvid.env"
    ).read_text() == "ANTHROPIC_API_KEY=sk-mine\n"


def test_a_restore_keeps_when_each_session_was_last_active(tmp_path, capsys):
    """``corvid status`` after ``corvid restore`` names each session's own last activity, not
    the moment of the restore."""
    from agent.sessions.transcript import SessionStore
    from gateway.ops.cli import main
    from tests.conftest import PRIVATE

    layout = _home(tmp_path)
    store = SessionStore(layout.sessions)
    state = store.create(PRIVATE, "system prompt")
    store.append_message(state, {"role": "user", "content": "hi"})
    store.end_turn(state, "ok")
    then = 1767323045  # 2026-01-02T03:04:05Z
    os.utime(store.path(PRIVATE), (then, then))
    archive = tmp_path / "b.tar.gz"
    assert main(["backup", str(archive), "--home", str(layout.home)], environ={}) == 0
    fresh = tmp_path / "fresh"
    assert main(["restore", str(archive), "--home", str(fresh)], environ={}) == 0
    capsys.readouterr()

    assert main(["status", "--json", "--home", str(fresh)], environ={}) == 0
    sessions = json.loads(capsys.readouterr().out)["sessions"]
    assert [s["last_active"] for s in sessions] == ["2026-01-02T03:04:05+00:00"]


def test_a_refused_restore_into_a_new_home_leaves_nothing_behind(tmp_path, capsys):
    from gateway.ops.cli import main

    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not an archive")
    where = tmp_path / "new" / "home"
    assert main(["restore", str(bad), "--home", str(where)], environ={}) == 1
    assert "nothing was changed" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tar.gz"]


def test_a_refused_restore_leaves_no_lock_or_folder_it_made(tmp_path):
    """A home that exists but was never run (a fresh volume): the run lock and ``state/`` the
    restore made to hold it go again when the restore is refused."""
    home = tmp_path / "volume"
    home.mkdir()
    (home / "notes.txt").write_text("mine\n")
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(RestoreError):
        restore(Layout(home), bad, Layout(home).backups)
    assert [p.name for p in home.iterdir()] == ["notes.txt"]


# -- each rule of the archive at its edge (the mutation bench's survivors) --------------------


def test_an_archive_keeps_folders_modes_and_says_what_it_left_out(tmp_path):
    from importlib.metadata import version

    layout = _home(tmp_path)
    empty = layout.workspace / "empty"
    empty.mkdir(mode=0o750)
    empty.chmod(0o750)
    (layout.workspace / "link.md").symlink_to(layout.workspace / "MEMORY.md")
    db = sqlite3.connect(layout.state / "notes.sqlite")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    (layout.state / "notes.sqlite").chmod(0o640)
    archive = tmp_path / "new" / "deeper" / "b.tar.gz"  # folders made on the way
    manifest = make_backup(layout, archive, backup_dir=layout.backups)
    assert manifest.corvid == version("corvid")
    assert "workspace/empty" in manifest.dirs and manifest.skipped == ["workspace/link.md"]
    assert {e.path: e.mode for e in manifest.files if e.sqlite} == {"state/notes.sqlite": 0o640}
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["workspace/empty"].isdir() and members["workspace/empty"].mode == 0o750
    assert members[MANIFEST].mode == 0o600 and "workspace/link.md" not in members
    assert sorted(p.name for p in archive.parent.iterdir()) == ["b.tar.gz"]  # no copy left
    fresh = Layout(tmp_path / "fresh")
    restore(fresh, archive, fresh.backups)
    assert ((fresh.workspace / "empty").stat().st_mode & 0o777) == 0o750


def test_a_backup_that_fails_leaves_nothing_and_holds_no_file_open(tmp_path):
    import os

    layout = _home(tmp_path)
    with pytest.raises(BackupError, match="there is no Corvid home"):
        make_backup(Layout(tmp_path / "nobody"), tmp_path / "x.tar.gz", backup_dir=tmp_path)
    db = sqlite3.connect(layout.state / "notes.sqlite")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    out = tmp_path / "out"
    out.mkdir()
    open_before = len(os.listdir("/proc/self/fd"))
    make_backup(layout, out / "good.tar.gz", backup_dir=layout.backups)
    assert len(os.listdir("/proc/self/fd")) == open_before
    # A file that says it is a database and is not one cannot be copied: no archive, no part.
    (layout.state / "broken.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    with pytest.raises(BackupError, match=r"state/broken\.sqlite cannot be copied"):
        make_backup(layout, out / "bad.tar.gz", backup_dir=layout.backups)
    assert sorted(p.name for p in out.iterdir()) == ["good.tar.gz"]
    assert len(os.listdir("/proc/self/fd")) == open_before


# -- each rule of the restore at its edge (the mutation bench's survivors) --------------------


def _manifest_of(archive: Path) -> dict:
    with tarfile.open(archive) as tar:
        return json.load(tar.extractfile(MANIFEST))  # type: ignore[arg-type]


@pytest.mark.parametrize("what", ["none", "a folder", "another format", "a newer version"])
def test_an_archive_without_a_manifest_restore_can_read_is_refused(tmp_path, what):
    layout = _home(tmp_path)
    good, bad = tmp_path / "good.tar.gz", tmp_path / "bad.tar.gz"
    make_backup(layout, good, backup_dir=layout.backups)
    manifest = _manifest_of(good)
    if what in ("none", "a folder"):
        _rewrite(good, bad, {}, drop=MANIFEST)
        if what == "a folder":
            with tarfile.open(bad) as src:
                members = [(m, src.extractfile(m).read() if m.isfile() else None) for m in src]  # type: ignore[union-attr]
            with tarfile.open(bad, "w:gz") as dst:
                for m, data in members:
                    dst.addfile(m, io.BytesIO(data) if data is not None else None)
                folder = tarfile.TarInfo(MANIFEST)
                folder.type = tarfile.DIRTYPE
                dst.addfile(folder)
    elif what == "another format":
        manifest["format"] = "someone-else-backup"
        _rewrite(good, bad, {MANIFEST: json.dumps(manifest).encode()})
    else:
        manifest["format_version"] += 1
        manifest["corvid"] = "99.0"
        _rewrite(good, bad, {MANIFEST: json.dumps(manifest).encode()})
    said = {
        "none": "not a Corvid backup",
        "a folder": f"{MANIFEST} is not a manifest",
        "another format": "not a Corvid backup",
        "a newer version": r"made by a newer Corvid \(99.0\); upgrade Corvid",
    }[what]
    before = _tree(layout.home)
    open_before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(RestoreError, match=said):
        restore(layout, bad, layout.backups)
    assert _tree(layout.home) == before
    assert len(os.listdir("/proc/self/fd")) == open_before  # the locks let go
    with pytest.raises(RestoreError, match="does not exist"):
        restore(layout, tmp_path / "nowhere.tar.gz", layout.backups)
    (tmp_path / "notes.txt").write_text("not an archive at all\n")
    with pytest.raises(RestoreError, match="is damaged or not a Corvid backup"):
        restore(layout, tmp_path / "notes.txt", layout.backups)


def test_a_restore_gives_back_modes_and_keeps_state_private_and_undo_says_what_it_undid(tmp_path):
    from datetime import datetime

    layout = _home(tmp_path)
    (layout.workspace / "shared.md").write_text("for the group\n")
    (layout.workspace / "shared.md").chmod(0o640)
    layout.state.chmod(0o755)  # loosened by hand: a restore makes it private again
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    (layout.workspace / "shared.md").unlink()
    (layout.workspace / "later.md").write_text("written after the backup\n")
    before = _tree(layout.home)
    restore(layout, archive, layout.backups)
    assert ((layout.workspace / "shared.md").stat().st_mode & 0o777) == 0o640
    assert (layout.state.stat().st_mode & 0o777) == 0o700
    assert not (layout.workspace / "later.md").exists()
    for kept_aside in (layout.restore_undo, layout.restore_undo / "home"):
        assert (kept_aside.stat().st_mode & 0o777) == 0o700
    layout.state.chmod(0o755)
    leftover = layout.restore_undo.with_name(layout.restore_undo.name + ".new")
    leftover.mkdir()  # an undo cut off before it finished
    note = undo_restore(layout, layout.backups)
    assert note["archive"] == str(archive)
    assert datetime.fromisoformat(note["restored"]).tzinfo is not None
    now = {k: v for k, v in _tree(layout.home).items() if not k.startswith(".restore-undo")}
    assert now == before  # what the backup brought in went with the undo
    assert (layout.state.stat().st_mode & 0o777) == 0o700
    for kept_aside in (layout.restore_undo, layout.restore_undo / "home"):
        assert (kept_aside.stat().st_mode & 0o777) == 0o700
    again = json.loads((layout.restore_undo / "restored.json").read_text())
    assert datetime.fromisoformat(again["undone"]) >= datetime.fromisoformat(again["restored"])


def test_a_new_home_is_locked_while_it_is_restored_into(tmp_path):
    import fcntl

    fresh = Layout(tmp_path / "fresh")
    with holding_home(fresh):
        assert (fresh.state.stat().st_mode & 0o777) == 0o700
        fd = os.open(fresh.run_lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


def test_a_folder_holding_something_kept_is_emptied_of_the_rest_and_takes_the_backups_mode(
    tmp_path,
):
    layout = _home(tmp_path)
    layout.web_token.write_text("token\n")  # kept in place: not in a backup without secrets
    archive = tmp_path / "b.tar.gz"
    make_backup(layout, archive, backup_dir=layout.backups)
    (layout.state / "later.json").write_text("{}\n")  # beside the token, after the backup
    restore(layout, archive, layout.backups)
    assert layout.web_token.read_text() == "token\n"
    assert not (layout.state / "later.json").exists()
    assert (layout.restore_undo / "home/state/later.json").read_text() == "{}\n"


def test_an_archive_holding_a_link_is_refused(tmp_path):
    layout = _home(tmp_path)
    good, bad = tmp_path / "good.tar.gz", tmp_path / "bad.tar.gz"
    make_backup(layout, good, backup_dir=layout.backups)
    with tarfile.open(good) as src:
        members = [(m, src.extractfile(m).read() if m.isfile() else None) for m in src]  # type: ignore[union-attr]
    with tarfile.open(bad, "w:gz") as dst:
        for m, data in members:
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
        link = tarfile.TarInfo("workspace/secrets.md")
        link.type, link.linkname = tarfile.SYMTYPE, "../corvid.env"
        dst.addfile(link)
    before = _tree(layout.home)
    with pytest.raises(RestoreError, match=r"workspace/secrets\.md is neither a file nor a folder"):
        restore(layout, bad, layout.backups)
    assert _tree(layout.home) == before


def test_a_file_or_folder_gone_while_a_backup_walks_is_no_database_and_a_clear_error(tmp_path):
    from gateway.backups.archive import _is_sqlite, _walk

    assert _is_sqlite(tmp_path / "gone.sqlite") is False  # listed, then removed
    with pytest.raises(BackupError, match=r"cannot read .*gone"):
        list(_walk(tmp_path / "gone", set()))
