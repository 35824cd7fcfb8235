"""Whole-file writes: the old contents or the new, a temporary file of their own, the mode kept."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from gateway.infra import atomic
from gateway.infra.atomic import write_atomic


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_mode_asked_for(tmp_path):
    write_atomic(tmp_path / "a.json", "{}")
    write_atomic(tmp_path / "b.txt", b"\x00raw", mode=0o644)
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == "{}"
    assert (tmp_path / "b.txt").read_bytes() == b"\x00raw"
    assert (_mode(tmp_path / "a.json"), _mode(tmp_path / "b.txt")) == (0o600, 0o644)


def test_a_replaced_file_keeps_its_mode_unless_told_not_to(tmp_path):
    path = tmp_path / "MEMORY.md"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o640)
    write_atomic(path, "née")
    assert path.read_text(encoding="utf-8") == "née" and _mode(path) == 0o640
    write_atomic(path, "secret", keep_mode=False)
    assert _mode(path) == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "jobs.json"
    path.write_text("old", encoding="utf-8")

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.json"]


def test_writers_at_once_never_share_a_temporary_file(tmp_path):
    path = tmp_path / "pairing.json"
    texts = [str(n) * 50_000 for n in range(8)]
    failed: list[BaseException] = []

    def write(text: str) -> None:
        try:
            write_atomic(path, text)
        except BaseException as exc:  # a shared temporary name makes a rename miss its file
            failed.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads) and failed == []
    assert path.read_text(encoding="utf-8") in texts
    assert os.listdir(tmp_path) == ["pairing.json"]


def test_the_folder_is_made_durable_too(tmp_path, monkeypatch):
    synced: list[tuple[int, int]] = []  # (device, inode) of each file synced, in order
    real = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.append((st.st_dev, st.st_ino))
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)  # process-wide: other threads' are left out
    path = tmp_path / "state.json"
    write_atomic(path, "{}")
    file, folder = ((st.st_dev, st.st_ino) for st in (path.stat(), tmp_path.stat()))
    assert [f for f in synced if f in (file, folder)] == [file, folder]  # the file, then its entry
