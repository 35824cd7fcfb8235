"""How much of the disk shared chats may fill, each chat and all together; the owner's uncounted."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.workspace.audience import own_folders
from gateway.contract.events import Audience


@dataclass(frozen=True)
class Quota:
    workspace: Path
    chat_bytes: int
    all_chats_bytes: int
    chat_files: int

    def refusal(self, audience: Audience, adding: int) -> str | None:
        """Why ``adding`` more bytes in this audience's places would be too much, or None."""
        if audience.chat is None:
            return None
        used, files = self._usage(own_folders(audience))
        if used + adding > self.chat_bytes or files + 1 > self.chat_files:
            return (
                f"This chat's files and notes are full ({_mb(used)} in {files} files; the limit "
                f"is {_mb(self.chat_bytes)} and {self.chat_files} files). Delete some first, "
                "or ask the owner to raise agent.chat_quota_mb."
            )
        everyone, _ = self._usage(("chats", "memory/chats", "inbox/chats"))
        if everyone + adding > self.all_chats_bytes:
            return (
                f"The shared chats together have filled their space ({_mb(everyone)}); the owner "
                "can raise agent.all_chats_quota_mb."
            )
        return None

    def _usage(self, folders: tuple[str, ...]) -> tuple[int, int]:
        total = files = 0
        for folder in folders:
            for dirpath, _dirnames, filenames in os.walk(self.workspace / folder):
                for name in filenames:
                    try:
                        total += (Path(dirpath) / name).lstat().st_size
                    except OSError:
                        continue
                    files += 1
        return total, files


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"
