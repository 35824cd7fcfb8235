"""Files people send, saved in the workspace's ``inbox/`` where the agent's file tools read them."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath

from gateway.contract.events import MODEL_IMAGE_TYPES, Attachment, SessionKey, sniff_image

log = logging.getLogger(__name__)

MAX_NAME_BYTES = 200
_UNSAFE = re.compile(r"[^\w.\- ()+,@]+")


def safe_name(name: str, fallback: str = "file") -> str:
    name = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])
    name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf"))
    name = _UNSAFE.sub("_", name).strip(" .")
    # File systems limit names in bytes (255 on most); leave room for a " (2)" suffix.
    stem, dot, ext = name.rpartition(".")
    if not dot or len(ext) > 10:
        stem, dot, ext = name, "", ""
    while len((stem + dot + ext).encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
    name = (stem.rstrip(" .") + dot + ext) if stem.strip(" .") else ""
    return name or fallback


def save(workspace: Path, data: bytes, name: str, folder: str) -> str:
    """Write ``data`` in the workspace folder ``folder`` and return its workspace-relative
    path. Anything planted on the way (a file where a folder belongs, a link) is moved
    aside first, so the upload is saved, and only there."""
    target_dir = _clear_way(workspace, PurePosixPath(folder))
    base = safe_name(name)
    stem, dot, ext = base.rpartition(".")
    if not dot:
        stem, ext = base, ""
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{stem} ({n}){dot}{ext}"
        try:
            fd = os.open(target_dir / candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return f"{folder}/{candidate}"
    raise FileExistsError(f"too many files named {base!r} in {folder}")


def _clear_way(workspace: Path, folder: PurePosixPath) -> Path:
    """``workspace / folder`` as real folders (mode 0700 when made here): a file or link
    planted where one of them belongs is moved aside, and logged."""
    path = workspace
    for part in folder.parts:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            aside = path.with_name(f"{path.name}.moved-{secrets.token_hex(3)}")
            os.rename(path, aside)
            log.warning("inbox: %s was not a folder; moved aside to %s", path.name, aside.name)
        if not path.exists():
            path.mkdir(mode=0o700)
            path.chmod(0o700)
    return path


def mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


@dataclass(frozen=True)
class Intake:
    """How a channel takes in files: where they go and how large they may be."""

    workspace: Path
    max_image_bytes: int
    max_file_bytes: int
    today: Callable[[], date]
    # The workspace folder a chat's files go to on a day (the audience rule).
    folder: Callable[[SessionKey, date], str]
    # Why a chat may not store ``size`` more bytes (its share of the disk), or None.
    room: Callable[[SessionKey, int], str | None] = lambda key, size: None

    async def take(
        self,
        key: SessionKey,
        name: str,
        mime: str,
        size: int,
        read: Callable[[], Awaitable[bytes]],
    ) -> Attachment | str:
        """An image for the model, a file saved to the inbox, or a note for the model saying
        why neither (``size`` is what the platform announced; the bytes are checked too)."""
        name = name or "file"
        mime = mime.split(";")[0].strip()
        if mime in MODEL_IMAGE_TYPES and size <= self.max_image_bytes:
            data = await read()
            sniffed = sniff_image(data)
            if sniffed is not None and len(data) <= self.max_image_bytes:
                return Attachment("image", sniffed, name=name, data=data)
        elif size > self.max_file_bytes:
            return self._too_large(name, size)
        else:
            if (full := self.room(key, size)) is not None:  # before downloading it
                return f"[The file {safe_name(name)} was not saved: {full}]"
            data = await read()
        if len(data) > self.max_file_bytes:
            return self._too_large(name, len(data))
        full = self.room(key, len(data))
        if full is not None:
            return f"[The file {safe_name(name)} was not saved: {full}]"
        folder = self.folder(key, self.today())
        path = await asyncio.to_thread(save, self.workspace, data, name, folder)
        return Attachment("document", mime or "application/octet-stream", name, path=path)

    def _too_large(self, name: str, size: int) -> str:
        return (
            f"[The file {safe_name(name)} ({mb(size)}) was not saved: files larger than "
            f"{mb(self.max_file_bytes)} are not accepted.]"
        )
