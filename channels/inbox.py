"""Files people send land in the workspace's ``inbox/``, where the agent's file tools can read them.

Files from private chats go to ``inbox/private/``, which shared sessions cannot see (like
``MEMORY.md``); files from groups go to ``inbox/shared/``. Names are made safe for every file
system and for the file tools (no hidden names, no path separators), and never overwrite.
"""

from __future__ import annotations

import asyncio
import os
import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from gateway.events import Attachment, SessionKey

# Media types the model reads as images.
MODEL_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_MAGIC = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}

MAX_NAME_BYTES = 200
_UNSAFE = re.compile(r"[^\w.\- ()+,@]+")


def sniff_image(data: bytes) -> str | None:
    """The media type of an image the model can read (JPEG, PNG, GIF, WebP), by its bytes."""
    for magic, mime in _MAGIC.items():
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


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


def save(workspace: Path, data: bytes, name: str, *, private: bool, day: date) -> str:
    """Write ``data`` under the inbox and return its workspace-relative path."""
    folder = Path("inbox") / ("private" if private else "shared") / day.isoformat()
    target_dir = workspace / folder
    target_dir.mkdir(parents=True, exist_ok=True)
    base = safe_name(name)
    stem, dot, ext = base.rpartition(".")
    if not dot:
        stem, ext = base, ""
    for n in range(1, 1000):
        candidate = base if n == 1 else f"{stem} ({n}){dot}{ext}"
        try:
            fd = os.open(target_dir / candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return str(folder / candidate)
    raise FileExistsError(f"too many files named {base!r} in {folder}")


def mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


@dataclass(frozen=True)
class Intake:
    """How a channel takes in files: where they go and how large they may be."""

    workspace: Path
    max_image_bytes: int
    max_file_bytes: int
    today: Callable[[], date]

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
            data = await read()
        if len(data) > self.max_file_bytes:
            return self._too_large(name, len(data))
        path = await asyncio.to_thread(
            save, self.workspace, data, name, private=key.private, day=self.today()
        )
        return Attachment("document", mime or "application/octet-stream", name, path=path)

    def _too_large(self, name: str, size: int) -> str:
        return (
            f"[The file {safe_name(name)} ({mb(size)}) was not saved: files larger than "
            f"{mb(self.max_file_bytes)} are not accepted.]"
        )
