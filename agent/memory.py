"""Memory as files: daily logs in ``memory/YYYY-MM-DD.md`` and the curated ``MEMORY.md``.

The session snapshot (today's and yesterday's logs, plus ``MEMORY.md`` in private sessions
only) is built here, each part capped. The memory tools are here too; ``MEMORY.md`` is refused
to shared sessions by code, whatever the model asks for.
"""

from __future__ import annotations

import asyncio
import os
from datetime import date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from agent.files import MAX_WRITE_CHARS, atomic_write, is_long_term, resolve_in_workspace
from agent.memory_index import LONG_TERM, MemoryIndex
from agent.settings import MemorySettings
from agent.tools import Tool, TurnContext
from gateway.errors import PathRefused, ToolError
from gateway.events import SessionKey

MAX_ENTRY_CHARS = 8000
MAX_QUERY_CHARS = 1000


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
        return _read(path)

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
        current = _read(path)
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


def _read(path: Path) -> str:
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


def _memory_path(ctx: TurnContext, raw: Any) -> Path:
    path = resolve_in_workspace(ctx, raw)
    rel = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
    if not (
        rel == PurePosixPath(LONG_TERM) or (rel.parts[:1] == ("memory",) and rel.suffix == ".md")
    ):
        raise PathRefused("memory_get reads MEMORY.md and memory/*.md; use read_file for others.")
    return path


def memory_tools(memory: Memory) -> tuple[Tool, ...]:
    async def search(ctx: TurnContext, args: dict[str, Any]) -> str:
        query = args["query"].strip()
        if not query:
            raise ToolError("query must not be empty.")
        if len(query) > MAX_QUERY_CHARS:
            # Every word costs a lookup, under the index lock every session shares.
            raise ToolError(f"query is too long; use a few keywords (at most {MAX_QUERY_CHARS}).")
        limit = max(1, min(int(args.get("max_results", memory.cfg.search_max_results)), 50))
        hits = await asyncio.to_thread(
            memory.index.search, query, limit, include_long_term=ctx.private
        )
        if not hits:
            return "Nothing in memory matches that query."
        out = []
        for n, h in enumerate(hits, 1):
            snippet = h.snippet.replace("\n", "\n   ")
            out.append(
                f"{n}. {h.path} lines {h.start_line}-{h.end_line} (score {h.score})\n   {snippet}"
            )
        return "\n".join(out)

    def get(ctx: TurnContext, args: dict[str, Any]) -> str:
        path = _memory_path(ctx, args["path"])
        if not path.is_file():
            raise ToolError(f"{args['path']!r} does not exist.")
        lines = _read(path).splitlines()
        start = max(1, int(args.get("from", 1)))
        count = max(1, min(int(args.get("lines", 200)), 1000))
        window = lines[start - 1 : start - 1 + count]
        end = start - 1 + len(window)
        rel = path.relative_to(ctx.workspace).as_posix()
        return f"[{rel}: lines {start}-{end} of {len(lines)}]\n" + "\n".join(window)

    def append(ctx: TurnContext, args: dict[str, Any]) -> str:
        text = args["text"]
        if not text.strip():
            raise ToolError("text must not be empty.")
        if len(text) > MAX_ENTRY_CHARS:
            raise ToolError(f"An entry may have at most {MAX_ENTRY_CHARS} characters.")
        source = "" if ctx.private else str(ctx.key)
        rel = memory.append(text, ctx.now, source)
        return f"Appended to {rel}."

    def update(ctx: TurnContext, args: dict[str, Any]) -> str:
        if not ctx.private:
            raise ToolError(
                "memory_update works only in a private chat with the owner. In a shared chat, "
                "use memory_append (today's log) for what should be kept."
            )
        return memory.update_long_term(
            args["action"], args.get("text", ""), args.get("old_text", "")
        )

    return (
        Tool(
            "memory_search",
            "Search your memory (daily logs, and MEMORY.md in private chats) by keywords. Use it "
            "before answering about past events, people, preferences or decisions.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Keywords to look for."},
                    "max_results": {"type": "integer", "description": "At most this many hits."},
                },
                "required": ["query"],
            },
            search,
        ),
        Tool(
            "memory_get",
            "Read lines of a memory file (MEMORY.md or memory/YYYY-MM-DD.md), e.g. around a "
            "memory_search hit.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "MEMORY.md or memory/<date>.md"},
                    "from": {"type": "integer", "description": "First line (1-based)."},
                    "lines": {"type": "integer", "description": "How many lines (default 200)."},
                },
                "required": ["path"],
            },
            get,
        ),
        Tool(
            "memory_append",
            "Append an entry to today's daily log (memory/YYYY-MM-DD.md) with a time heading: "
            "events, decisions, promises, things to remember. Daily logs are visible in group "
            "chats too.",
            {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The entry, Markdown."}},
                "required": ["text"],
            },
            append,
        ),
        Tool(
            "memory_update",
            "Edit MEMORY.md, the curated long-term memory (private chats only): append a fact, "
            "or replace/remove an exact passage that is out of date.",
            {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["append", "replace", "remove"]},
                    "text": {"type": "string", "description": "New text (append, replace)."},
                    "old_text": {"type": "string", "description": "Exact passage to change."},
                },
                "required": ["action"],
            },
            update,
        ),
    )
