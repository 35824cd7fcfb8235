"""Memory as files: daily logs in ``memory/YYYY-MM-DD.md`` and the curated ``MEMORY.md``.

The session snapshot (today's and yesterday's logs, plus ``MEMORY.md`` in private sessions
only) is built here, each part capped; the tools the model reads and writes memory with are in
``memory_tools.py``. ``MEMORY.md`` is refused to shared sessions by code, whatever the model
asks for.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta
from pathlib import Path

from agent.files import MAX_WRITE_CHARS, atomic_write, is_long_term
from agent.memory_index import LONG_TERM, MemoryIndex
from agent.settings import MemorySettings
from gateway.errors import PathRefused, ToolError
from gateway.events import SessionKey


class Memory:
    def __init__(self, workspace: Path, index: MemoryIndex, cfg: MemorySettings) -> None:
        self.workspace = workspace
        self.index = index
        self.cfg = cfg

    def log_rel(self, day: date) -> str:
        return f"memory/{day.isoformat()}.md"

    # -- the snapshot in the system prompt ----------------------------------------------------

    def snapshot(self, key: SessionKey, now: datetime) -> str:
        """The memory section of a session's system prompt, taken once when the session starts."""
        today = now.date()
        parts = [
            "# Memory\n\n"
            f"Loaded when this session started ({now:%Y-%m-%d %H:%M %Z}). Notes are true as of "
            "when they were written; newer entries may exist: use memory_search."
        ]
        for day, label in ((today, "today"), (today - timedelta(days=1), "yesterday")):
            rel = self.log_rel(day)
            text = self.read_visible(rel, key.private)
            if text.strip():
                body = cap_log(text, self.cfg.daily_log_max_chars, rel)
                parts.append(f"## {rel} ({label})\n\n{body}")
        if key.private:
            text = self.read_visible(LONG_TERM, private=True)
            if text.strip():
                body = cap_head(text, self.cfg.long_term_max_chars, LONG_TERM)
                parts.append(f"## {LONG_TERM} (long-term memory; private chats only)\n\n{body}")
        return "\n\n".join(parts)

    def _inside(self, rel: str) -> Path | None:
        """``rel`` with links resolved, or None when a link leads it out of the workspace."""
        try:
            path = (self.workspace / rel).resolve()
        except RuntimeError:  # a loop of links (Python < 3.13)
            return None
        return path if path.is_relative_to(self.workspace) else None

    def read_visible(self, rel: str, private: bool) -> str:
        """A memory file as the file tools would show it to this session: nothing through a
        link out of the workspace, and in a shared session not MEMORY.md under another name."""
        path = self._inside(rel)
        if path is None or (not private and is_long_term(self.workspace, path)):
            return ""
        return read_text(path)

    # -- writing ------------------------------------------------------------------------------

    def append(self, text: str, now: datetime, source: str = "") -> str:
        """Append a time-stamped entry to today's log; returns its workspace-relative path."""
        rel = self.log_rel(now.date())
        path = self._inside(rel)
        # The log is opened by name and O_APPEND follows links: a link planted in its place
        # must not carry entries out of the workspace, or into MEMORY.md.
        if path is None or is_long_term(self.workspace, path):
            raise PathRefused(f"{rel} is a link to a file that is not a daily log; not written.")
        path.parent.mkdir(parents=True, exist_ok=True)
        heading = f"## {now:%H:%M}" + (f" · {source}" if source else "")
        entry = f"{heading}\n\n{text.strip()}\n\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size == 0:
                entry = f"# {now.date().isoformat()}\n\n" + entry
            os.write(fd, entry.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return rel

    def update_long_term(self, action: str, text: str, old_text: str = "") -> str:
        path = self.workspace / LONG_TERM
        current = read_text(path)
        if action == "append":
            if not text.strip():
                raise ToolError("text must not be empty.")
            new = current.rstrip("\n") + ("\n\n" if current.strip() else "") + text.strip() + "\n"
        elif action in ("replace", "remove"):
            if not old_text:
                raise ToolError(f"{action} needs old_text: the exact passage to change.")
            count = current.count(old_text)
            if count != 1:
                where = "not found" if count == 0 else f"found {count} times"
                raise ToolError(f"old_text was {where} in MEMORY.md; quote one passage exactly.")
            new = current.replace(old_text, text if action == "replace" else "")
        else:
            raise ToolError("action must be append, replace or remove.")
        if len(new) > MAX_WRITE_CHARS and len(new) > len(current):
            raise ToolError(f"MEMORY.md would be too long ({len(new)} characters).")
        atomic_write(path, new)
        return f"MEMORY.md updated ({action}); it now has {len(new)} characters."


def read_text(path: Path) -> str:
    if path.exists() and not path.is_file():  # a FIFO would block the process on open
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return ""
    except UnicodeDecodeError:
        return path.read_bytes().decode("utf-8", errors="replace")


def cap_log(text: str, limit: int, rel: str) -> str:
    """Keep the newest part of a log, starting at an entry heading; say how to read the rest."""
    if len(text) <= limit:
        return text.strip()
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    total = len(text)
    keep_from = None
    consumed = 0
    offsets = []
    for line in lines:
        offsets.append(consumed)
        consumed += len(line)
    for i in starts:
        if total - offsets[i] <= limit:
            keep_from = i
            break
    if keep_from is None:  # the newest entry alone is too long: keep its end, whole lines
        keep_from = len(lines) - 1
        while keep_from > 0 and total - offsets[keep_from - 1] <= limit:
            keep_from -= 1
    kept = "".join(lines[keep_from:]).strip()
    note = (
        f"[Older part of this log not shown: lines 1-{keep_from} ({offsets[keep_from]} "
        f'characters). Read it with memory_get(path="{rel}", from=1, lines={keep_from}).]'
    )
    return f"{note}\n\n{kept}"


def cap_head(text: str, limit: int, rel: str) -> str:
    """Keep the beginning of a file, cut at a line; say where the rest starts."""
    if len(text) <= limit:
        return text.strip()
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    next_line = text.count("\n", 0, cut) + 2
    return (
        text[:cut].strip() + f"\n\n[{rel} continues: {len(text) - cut} more characters from line "
        f'{next_line}. Use memory_search, or memory_get(path="{rel}", from={next_line}).]'
    )
