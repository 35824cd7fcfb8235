"""The memory page's lists: the files and who reads them, the daily logs, the chats' logs."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, tzinfo
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from agent.workspace.audience import NOTES
from gateway.chat_names import Guests, Titles, audience_name
from gateway.infra.times import local_time
from gateway.web.html import esc, table

# What each file of the workspace is for, and who reads it.
ABOUT = {
    "MEMORY.md": "Long-term memory: facts worth keeping. Your private chats only.",
    "USER.md": "Who you are. Your private chats.",
    "SOUL.md": "The assistant's manner. Every chat.",
    "IDENTITY.md": "The assistant's name and nature. Every chat.",
    "AGENTS.md": "How the assistant works: its rules. Every chat.",
    "TOOLS.md": "Notes on tools and your setup. Your private chats.",
    "HEARTBEAT.md": "The heartbeat's checklist.",
}
CHAT_NOTES = "A shared chat's long-term notes. That chat only."


def link(rel: str, action: str = "file") -> str:
    return f"/memory/{action}?path={quote(rel)}"


def _facts(path: Path, tz: tzinfo) -> tuple[str, str, int]:
    """A file's size, when it last changed, and its entries (``## `` headings), or blanks."""
    with contextlib.suppress(OSError):
        st = path.stat()
        changed = local_time(datetime.fromtimestamp(st.st_mtime, UTC), tz)
        entries = 0
        with contextlib.suppress(OSError, UnicodeDecodeError):
            entries = sum(line.startswith("## ") for line in path.read_text().splitlines())
        return _size(st.st_size), changed, entries
    return "", "", 0


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1024:,.0f} KB"


def files_table(workspace: Path, rels: list[str], tz: tzinfo) -> str:
    rows = []
    for rel in rels:
        size, changed, _ = _facts(workspace / rel, tz)
        name = f'<a href="{link(rel)}">{esc(rel)}</a>'
        actions = f'<a href="{link(rel, "edit")}">Edit</a>'
        if size:
            actions += f' · <a href="/memory/history?path={quote(rel)}">History</a>'
        rows.append((name, esc(_about(rel)), esc(size or "not written yet"), esc(changed), actions))
    return table(("File", "What it is", "Size", "Last changed", ""), rows, "No files yet.")


def _about(rel: str) -> str:
    path = PurePosixPath(rel)
    if path.name == NOTES and path.parent.parent == PurePosixPath("memory/chats"):
        return CHAT_NOTES
    return ABOUT.get(rel, "")


def logs_table(workspace: Path, rels: list[str], tz: tzinfo) -> str:
    rows = []
    for rel in rels:
        size, changed, entries = _facts(workspace / rel, tz)
        day = PurePosixPath(rel).stem
        rows.append(
            (f'<a href="{link(rel)}">{esc(day)}</a>', str(entries), esc(size), esc(changed))
        )
    return table(("Day", "Entries", "Size", "Last changed"), rows, "No daily logs yet.")


def chats_table(workspace: Path, rels: list[str], tz: tzinfo, known: Guests, titles: Titles) -> str:
    rows = []
    for rel in rels:
        size, changed, entries = _facts(workspace / rel, tz)
        path = PurePosixPath(rel)
        who = audience_name(path.parent.name, known, titles)
        rows.append(
            (
                f"{esc(who)}",
                f'<a href="{link(rel)}">{esc(path.stem)}</a>',
                str(entries),
                esc(size),
                esc(changed),
            )
        )
    return table(
        ("Chat", "Day", "Entries", "Size", "Last changed"), rows, "No shared chat has a log."
    )
