"""The inbox: safe names that never overwrite, private modes, and uploads that survive whatever
was planted where their folder belongs."""

from __future__ import annotations

import stat
from pathlib import Path

from channels.inbox import safe_name, save

FOLDER = "inbox/chats/telegram-group--5/2026-11-21"


def test_inbox_names_are_safe_and_fit_the_file_system(tmp_path: Path):
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name(".bashrc") == "bashrc"
    assert safe_name("a\u202egnp.exe") == "agnp.exe"
    assert safe_name("...") == "file"
    long = "文" * 100 + ".pdf"
    name = safe_name(long)
    assert name.endswith(".pdf") and len(name.encode()) <= 200
    first = save(tmp_path, b"one", long, "inbox/private/2026-11-21")
    second = save(tmp_path, b"two", long, "inbox/private/2026-11-21")
    assert first != second and second.endswith(" (2).pdf")
    assert first.startswith("inbox/private/2026-11-21/")
    assert (tmp_path / second).read_bytes() == b"two"


def test_uploads_are_private_to_the_owners_user(tmp_path: Path):
    saved = tmp_path / save(tmp_path, b"x", "m.txt", FOLDER)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    for folder in (saved.parent, saved.parent.parent, tmp_path / "inbox"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_file_or_link_planted_where_the_folder_belongs_is_moved_aside(tmp_path: Path):
    day = tmp_path / FOLDER
    day.parent.mkdir(parents=True)
    day.write_text("planted")  # a file where today's folder must go
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "inbox" / "private").symlink_to(outside)  # a link where a folder must go
    saved = save(tmp_path, b"menu", "menu.txt", FOLDER)
    assert (tmp_path / saved).read_bytes() == b"menu" and (tmp_path / saved).parent.is_dir()
    moved = [p.name for p in day.parent.iterdir() if p.name.startswith("2026-11-21.moved-")]
    assert len(moved) == 1 and (day.parent / moved[0]).read_text() == "planted"
    private = save(tmp_path, b"scan", "id.pdf", "inbox/private/2026-11-21")
    assert (tmp_path / private).read_bytes() == b"scan"
    assert list(outside.iterdir()) == []  # nothing went through the link
