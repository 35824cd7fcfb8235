"""Once, for a workspace from before logs by audience: shared entries copied to each chat's log."""

from __future__ import annotations

import logging
import re
from datetime import date
from pathlib import Path

from agent.memory.store import read_text
from agent.tools.files import atomic_write, ensure_dir
from agent.workspace.audience import log_path
from gateway.contract.events import Audience, SessionKey, audience_of

log = logging.getLogger(__name__)

_ENTRY = re.compile(r"^## (\d\d:\d\d)(?: · (.+))?$", re.M)


def migrate_shared_entries(workspace: Path) -> int:
    """Once, for a workspace from before logs by audience: the entries of the one shared log
    that came from a shared chat (their heading names its session) are copied to that chat's
    own log. Everything stays in the owner's log, where entries of unknown origin belong.
    Returns how many entries were copied."""
    marker = workspace / "memory" / ".logs-by-audience"
    if marker.exists() or not (workspace / "memory").is_dir():
        return 0
    copied = 0
    for path in sorted(
        (workspace / "memory").glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md")
    ):
        if not path.is_file() or path.is_symlink():
            continue
        for source, entry in _entries(read_text(path)):
            chat = _shared_chat(source)
            if chat is None:
                continue
            target = workspace / log_path(Audience(chat), date.fromisoformat(path.stem))
            ensure_dir(target.parent)
            if not target.exists():
                atomic_write(target, f"# {path.stem}\n\n")
            with target.open("a", encoding="utf-8") as f:
                f.write(entry)
            copied += 1
    ensure_dir(marker.parent)
    atomic_write(marker, "Logs are kept by audience since this file was written.\n")
    if copied:
        log.info("copied %d entries from shared chats to their own logs", copied)
    return copied


def _entries(text: str) -> list[tuple[str, str]]:
    """(source, entry text with its heading) of each entry of a log."""
    heads = list(_ENTRY.finditer(text))
    return [
        (m.group(2) or "", text[m.start() : heads[i + 1].start() if i + 1 < len(heads) else None])
        for i, m in enumerate(heads)
    ]


def _shared_chat(source: str) -> str | None:
    """The shared chat an entry's source names (``telegram:group:-100`` or ``session summary ·
    telegram:group:-100``), or None."""
    try:
        key = SessionKey.parse(source.rpartition(" · ")[2].strip())
    except ValueError:
        return None
    audience = audience_of(key)
    return None if audience.private else audience.chat
