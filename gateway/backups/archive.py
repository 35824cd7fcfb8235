"""``corvid backup``: one archive of a home, consistent while Corvid runs, with its checksums."""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import logging
import os
import sqlite3
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from gateway.config.layout import Layout

log = logging.getLogger(__name__)

MANIFEST = "corvid-backup.json"
FORMAT = "corvid-backup"
FORMAT_VERSION = 1
SQLITE_HEADER = b"SQLite format 3\x00"
# Beside a database: what SQLite keeps while it is open; the backup API has read it already.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
CHUNK = 1 << 20


class BackupError(Exception):
    """A backup could not be made; the message says why, and no archive was left behind."""


@dataclass
class Entry:
    path: str  # relative to the home, with "/"
    size: int
    sha256: str
    mode: int
    sqlite: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "mode": self.mode,
            "sqlite": self.sqlite,
        }


@dataclass
class Manifest:
    created: str
    corvid: str
    with_secrets: bool
    files: list[Entry] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created": self.created,
            "corvid": self.corvid,
            "with_secrets": self.with_secrets,
            "files": [e.as_dict() for e in self.files],
            "dirs": self.dirs,
            "skipped": self.skipped,
        }


def excluded(layout: Layout, backup_dir: Path, with_secrets: bool) -> set[Path]:
    """The paths a backup leaves out (and a restore leaves where they are)."""
    # Never kept: what only a running gateway means, and the model memory search fetches again.
    out = {*layout.only_while_running, layout.models}
    out |= {backup_dir.absolute(), layout.restore_undo}
    if not with_secrets:
        out |= {layout.env_file, *layout.secret_state}
    return out


def make_backup(
    layout: Layout, dest: Path, *, backup_dir: Path, with_secrets: bool = False
) -> Manifest:
    """Write the archive of ``layout``'s home to ``dest`` (through a temporary file beside it,
    renamed when whole; mode 0600, since it holds the owner's memory)."""
    if not layout.home.is_dir():
        raise BackupError(f"there is no Corvid home at {layout.home}")
    dest = dest.absolute()
    dest.parent.mkdir(parents=True, exist_ok=True)
    skip = excluded(layout, backup_dir, with_secrets) | {dest}
    manifest = Manifest(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        corvid=_version(),
        with_secrets=with_secrets,
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar,
        ):
            _add_tree(tar, layout.home, skip, manifest, scratch=dest.parent)
            body = _manifest_bytes(manifest)
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mode, info.mtime = len(body), 0o600, int(datetime.now(UTC).timestamp())
            tar.addfile(info, io.BytesIO(body))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return manifest


def _manifest_bytes(manifest: Manifest) -> bytes:
    import json

    return (json.dumps(manifest.as_dict(), indent=1, sort_keys=True) + "\n").encode()


def _walk(home: Path, skip: set[Path]) -> Iterator[tuple[Path, os.stat_result]]:
    """Every file and folder under ``home`` but the skipped ones, parents before children,
    never following a link."""
    stack = [home]
    while stack:
        folder = stack.pop()
        try:
            children = sorted(folder.iterdir(), reverse=True)
        except OSError as exc:
            raise BackupError(f"cannot read {folder}: {exc.strerror}") from None
        for child in children:
            if child in skip or child.name.endswith(".partial"):
                continue
            st = child.lstat()
            yield child, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(child)


# Other files are copied as they are: state is replaced whole and transcripts only appended, so
# a copy is a file before or after a write (a torn last line is skipped on loading).
def _add_tree(
    tar: tarfile.TarFile, home: Path, skip: set[Path], manifest: Manifest, scratch: Path
) -> None:
    databases: set[Path] = set()
    found = list(_walk(home, skip))
    for path, st in found:
        if stat.S_ISREG(st.st_mode) and _is_sqlite(path):
            databases.add(path)
    for path, st in found:
        rel = path.relative_to(home).as_posix()
        if stat.S_ISDIR(st.st_mode):
            info = tarfile.TarInfo(rel)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, st.st_mode & 0o777, int(st.st_mtime)
            tar.addfile(info)
            manifest.dirs.append(rel)
        elif not stat.S_ISREG(st.st_mode):
            manifest.skipped.append(rel)  # a link, socket or FIFO: not Corvid's to keep
            log.info("backup: left out %s (not a regular file)", rel)
        elif _companion(path, databases):
            continue  # the database's own copy already holds it
        elif path in databases:
            manifest.files.append(_add_database(tar, path, rel, st, scratch))
        else:
            entry = _add_file(tar, path, rel)
            if entry is not None:
                manifest.files.append(entry)


def _companion(path: Path, databases: set[Path]) -> bool:
    """Whether ``path`` is a database's -wal, -shm or -journal."""
    return any(
        path.name.endswith(end) and path.with_name(path.name.removesuffix(end)) in databases
        for end in SQLITE_COMPANIONS
    )


# Found by its header, not by a list of names, so a database a later version adds is kept too.
def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _add_database(
    tar: tarfile.TarFile, path: Path, rel: str, st: os.stat_result, scratch: Path
) -> Entry:
    fd, tmp = tempfile.mkstemp(prefix=".db-", suffix=".partial", dir=scratch)
    os.close(fd)
    try:
        # Read only: a backup never creates a -wal or -shm the gateway (another user) must use.
        source = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
        target = sqlite3.connect(tmp)
        try:
            # The backup API reads a consistent state while the gateway writes, WAL included.
            source.backup(target)
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{rel} cannot be copied: {exc}") from None
        finally:
            target.close()
            source.close()
        # The original's mode and time: the copy is new, what it holds is not.
        entry = _add_file(tar, Path(tmp), rel, mode=st.st_mode & 0o777, mtime=int(st.st_mtime))
        assert entry is not None  # our own copy does not vanish
        entry.sqlite = True
        return entry
    finally:
        Path(tmp).unlink(missing_ok=True)


def _add_file(
    tar: tarfile.TarFile, path: Path, rel: str, mode: int | None = None, mtime: int | None = None
) -> Entry | None:
    """Add one file as it is now: the size read at open is what is kept (a transcript that
    grows meanwhile is kept up to there), and its modification time, which a restore gives
    back (a session's last activity is its transcript's)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below, after the tar has read it)
    except FileNotFoundError:
        return None  # replaced or removed since it was listed
    with f:
        st = os.fstat(f.fileno())
        reader = _Hashing(f, st.st_size)
        info = tarfile.TarInfo(rel)
        info.size, info.mtime = st.st_size, int(st.st_mtime) if mtime is None else mtime
        info.mode = (st.st_mode & 0o777) if mode is None else mode
        try:
            tar.addfile(info, reader)
        except OSError as exc:  # tarfile's "unexpected end of data"
            raise BackupError(f"{rel} changed while it was copied ({exc}); try again") from None
        if reader.read_bytes != st.st_size:
            raise BackupError(f"{rel} shrank while it was copied; try again")
        return Entry(rel, st.st_size, reader.digest.hexdigest(), info.mode)


class _Hashing(io.RawIOBase):
    """Reads at most ``limit`` bytes of ``f``, hashing them on the way into the archive."""

    def __init__(self, f: IO[bytes], limit: int) -> None:
        self.f, self.left, self.read_bytes = f, limit, 0
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self.left if size < 0 else min(size, self.left)
        data = self.f.read(want)
        self.left -= len(data)
        self.read_bytes += len(data)
        self.digest.update(data)
        return data


def _version() -> str:
    try:
        return importlib.metadata.version("corvid")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
