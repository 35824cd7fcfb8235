"""``corvid restore``: a backup put back in place of a home, checked whole first, and undoable."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from gateway.backups.archive import CHUNK, FORMAT, FORMAT_VERSION, MANIFEST, excluded
from gateway.config.layout import Layout

UNDO_NOTE = "restored.json"


class RestoreError(Exception):
    """The archive cannot be restored (damaged, altered, not a Corvid backup, newer), or the
    home is in use; nothing was changed."""


@contextlib.contextmanager
def holding_home(layout: Layout) -> Iterator[None]:
    """The home's locks, which ``corvid run`` and ``corvid chat`` hold while they run, held by
    us instead; if what holds them fails, the folders and lock made to hold them go again."""
    made = _not_there(layout)
    layout.home.mkdir(parents=True, exist_ok=True)
    layout.state.mkdir(mode=0o700, exist_ok=True)
    held: list[int] = []
    try:
        for path, who in (
            (layout.run_lock, "Corvid is running"),
            (layout.chat_lock, "a corvid chat is open"),
        ):
            try:
                # The chat's lock is made by the first chat: none yet, no chat to wait for.
                flags = os.O_RDWR | (os.O_CREAT if path == layout.run_lock else 0)
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                continue
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise RestoreError(
                    f"{who} for this home (pid {holder}); stop it first "
                    "(systemctl stop corvid, docker stop corvid, or Ctrl-C)"
                ) from None
        yield
    except BaseException:
        for fd in held:
            os.close(fd)
        held.clear()
        _remove(made)
        raise
    finally:
        for fd in held:
            os.close(fd)


def _not_there(layout: Layout) -> list[Path]:
    """What taking the home would make, innermost first: the run lock, ``state/``, the home
    and the folders above it that are missing."""
    wanted = (layout.run_lock, layout.state, layout.home, *layout.home.parents)
    return [p for p in wanted if not os.path.lexists(p)]


def _remove(made: list[Path]) -> None:
    """Remove what ``_not_there`` listed, each folder only if nothing else is in it now."""
    for path in made:
        with contextlib.suppress(OSError):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()


def restore(
    layout: Layout, archive: Path, backup_dir: Path, *, with_secrets: bool = False
) -> dict[str, Any]:
    """Put ``archive`` in place of ``layout``'s home; returns its manifest. The backup's secrets
    are taken only ``with_secrets`` (and only when its manifest says it has them)."""
    with holding_home(layout):
        staging = Path(tempfile.mkdtemp(prefix=".restore-", dir=layout.home))
        try:
            manifest = unpack(archive, staging)
            secrets = _only_what_it_may(layout, staging, manifest, backup_dir, with_secrets)
            keep = excluded(layout, backup_dir, secrets) | {staging}
            undo = layout.restore_undo
            if undo.exists():
                shutil.rmtree(undo)  # the undo of an earlier restore: this one replaces it
            undo.mkdir(mode=0o700)
            (undo / "home").mkdir(mode=0o700)
            note = {
                "archive": str(archive),
                "restored": _now(),
                "created": manifest["created"],
                "secrets": secrets,
            }
            (undo / UNDO_NOTE).write_text(json.dumps(note) + "\n", encoding="utf-8")
            _swap_in(layout, staging, undo, keep | {undo, layout.run_lock, layout.chat_lock})
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        layout.state.chmod(0o700)
    return {**manifest, "secrets_taken": secrets}


def _only_what_it_may(
    layout: Layout, staging: Path, manifest: dict[str, Any], backup_dir: Path, asked: bool
) -> bool:
    """Refuse an archive that holds what no backup holds, or secrets its manifest denies; leave
    out the secrets it holds unless ``asked``. Returns whether its secrets are taken."""
    secret = excluded(layout, backup_dir, with_secrets=False) - excluded(
        layout, backup_dir, with_secrets=True
    )
    for path in sorted(excluded(layout, backup_dir, with_secrets=True)):
        if path.is_relative_to(layout.home) and os.path.lexists(
            staging / path.relative_to(layout.home)
        ):
            rel = path.relative_to(layout.home).as_posix()
            raise RestoreError(f"the archive holds {rel}, which no backup holds")
    has = bool(manifest.get("with_secrets"))
    for path in sorted(secret):
        staged = staging / path.relative_to(layout.home)
        if not os.path.lexists(staged):
            continue
        if not has:
            rel = path.relative_to(layout.home).as_posix()
            raise RestoreError(f"the archive holds {rel}, but its manifest says it has no secrets")
        if not asked:
            staged.unlink()  # the home's own stay where they are
    return has and asked


def _swap_in(layout: Layout, staging: Path, undo: Path, keep: set[Path]) -> None:
    """The home's contents to ``undo/home``, the staged ones in their place; if a move fails
    (a file the system will not move, such as a read-only mount), the home is put back."""
    try:
        _move_out(layout.home, undo / "home", keep)
        _move_in(staging, layout.home, undo / "home")
    except OSError as exc:
        try:
            _move_out(layout.home, staging, keep)  # what came in goes back out
            _move_in(undo / "home", layout.home, staging)
        except OSError:
            raise RestoreError(
                f"a file could not be moved ({exc}); the home as it was is in {undo / 'home'}"
            ) from None
        shutil.rmtree(undo, ignore_errors=True)
        raise RestoreError(f"a file could not be moved ({exc}); the home is as it was") from None


def undo_restore(layout: Layout, backup_dir: Path) -> dict[str, Any]:
    """Swap the home with what the last restore moved aside; returns that restore's note."""
    undo = layout.restore_undo
    if not (undo / "home").is_dir():
        raise RestoreError(f"there is no restore to undo in {layout.home}")
    with holding_home(layout):
        note: dict[str, Any] = json.loads((undo / UNDO_NOTE).read_text(encoding="utf-8"))
        swapped = undo.with_name(undo.name + ".new")
        shutil.rmtree(swapped, ignore_errors=True)
        swapped.mkdir(mode=0o700)
        (swapped / "home").mkdir(mode=0o700)
        # The secrets were swapped only if the restore took the backup's: then they go back.
        secrets = bool(note.get("secrets", (undo / "home" / layout.env_file.name).exists()))
        keep = excluded(layout, backup_dir, with_secrets=secrets)
        _move_out(
            layout.home, swapped / "home", keep | {undo, swapped, layout.run_lock, layout.chat_lock}
        )
        _move_in(undo / "home", layout.home, swapped / "home")
        (swapped / UNDO_NOTE).write_text(
            json.dumps({**note, "undone": _now()}) + "\n", encoding="utf-8"
        )
        shutil.rmtree(undo)
        os.replace(swapped, undo)
        layout.state.chmod(0o700)
    return note


def unpack(archive: Path, into: Path) -> dict[str, Any]:
    """Unpack ``archive`` into the empty folder ``into``, checking every file against the
    manifest; raises ``RestoreError`` for anything wrong. Returns the manifest."""
    found: dict[str, tuple[int, str]] = {}
    changed: dict[str, float] = {}
    manifest: Any = None
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                if member.name == MANIFEST:
                    manifest = json.loads(_read(tar, member))
                    continue
                rel = _safe(member.name)
                target = into / rel
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True, mode=0o700)
                    target.chmod(member.mode & 0o777 | 0o700)
                elif member.isreg():
                    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    found[rel] = _extract(tar, member, target)
                    changed[rel] = member.mtime
                else:
                    raise RestoreError(f"{member.name} is neither a file nor a folder")
    except FileNotFoundError:
        raise RestoreError(f"{archive} does not exist") from None
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as exc:
        raise RestoreError(f"{archive} is damaged or not a Corvid backup ({exc})") from None
    _check(manifest, found, into)
    for rel, when in changed.items():  # once checked: a database's check may touch it
        os.utime(into / rel, (when, when))
    return dict(manifest)


def _check(manifest: Any, found: dict[str, tuple[int, str]], into: Path) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RestoreError(f"not a Corvid backup (no {MANIFEST} in it)")
    if int(manifest.get("format_version", 0)) > FORMAT_VERSION:
        raise RestoreError(
            f"the backup was made by a newer Corvid ({manifest.get('corvid')}); "
            "upgrade Corvid to restore it"
        )
    listed = {e["path"]: e for e in manifest["files"]}
    if missing := sorted(set(listed) - set(found)):
        raise RestoreError(f"files listed in the manifest are missing: {', '.join(missing[:5])}")
    if extra := sorted(set(found) - set(listed)):
        raise RestoreError(f"files not in the manifest: {', '.join(extra[:5])}")
    for rel, (size, digest) in sorted(found.items()):
        entry = listed[rel]
        if size != entry["size"] or digest != entry["sha256"]:
            raise RestoreError(f"{rel} does not match its checksum: the archive is damaged")
        os.chmod(into / rel, int(entry["mode"]) & 0o777)
        if entry.get("sqlite"):
            _check_database(into / rel, rel)


def _check_database(path: Path, rel: str) -> None:
    try:
        db = sqlite3.connect(path)  # the staged copy, ours to open
        try:
            verdict = db.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    if verdict != "ok":
        raise RestoreError(f"the database {rel} in the backup is damaged ({verdict})")


def _safe(name: str) -> str:
    """A member's path, refused unless it stays inside the home."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or "\\" in name:
        raise RestoreError(f"the archive names a path outside the home: {name!r}")
    return path.as_posix()


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    f = tar.extractfile(member)
    if f is None or member.size > 64 << 20:
        raise RestoreError(f"{member.name} is not a manifest")
    return f.read()


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> tuple[int, str]:
    source: IO[bytes] | None = tar.extractfile(member)
    assert source is not None  # a regular file
    digest, size = hashlib.sha256(), 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return size, digest.hexdigest()


def _move_out(root: Path, aside: Path, keep: set[Path]) -> None:
    """Move everything under ``root`` into ``aside`` but ``keep``; a folder holding something
    kept is moved entry by entry."""
    for child in sorted(root.iterdir()):
        if child in keep:
            continue
        st = child.lstat()
        if stat.S_ISDIR(st.st_mode) and any(k.is_relative_to(child) for k in keep):
            (aside / child.name).mkdir(mode=stat.S_IMODE(st.st_mode), exist_ok=True)
            _move_out(child, aside / child.name, keep)
        else:
            os.replace(child, aside / child.name)


def _move_in(source: Path, root: Path, aside: Path) -> None:
    """Move everything under ``source`` into ``root``, into folders that are already there;
    whatever it replaces goes to ``aside`` first, so nothing is lost."""
    for child in sorted(source.iterdir()):
        target = root / child.name
        if target.is_dir() and not target.is_symlink() and child.is_dir():
            target.chmod(stat.S_IMODE(child.stat().st_mode))
            _move_in(child, target, aside / child.name)
            continue
        if os.path.lexists(target):
            aside.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.replace(target, aside / child.name)
        os.replace(child, target)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
