"""The memory tools: search, read, append to today's log, and edit ``MEMORY.md`` (private only)."""

from __future__ import annotations

import asyncio
import logging
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from agent.memory.catchup import LONG_TERM
from agent.memory.hits import Hit, dated
from agent.memory.links import entry_at, holding, newer_at, own_log_day, reference
from agent.memory.sections import dated as learned_on
from agent.memory.sections import kind_of
from agent.memory.store import Memory, read_text
from agent.memory.when import DaySpan, dates_in
from agent.tools.context import TurnContext
from agent.tools.paths import check_single_name, resolve_in_workspace
from agent.tools.registry import Tool
from agent.workspace.audience import (
    guest_notes,
    log_path,
    notes_path,
    unquotes,
    untrusted,
)
from gateway.contract.errors import PathRefused, ToolError

log = logging.getLogger(__name__)

MAX_ENTRY_CHARS = 8000
MAX_QUERY_CHARS = 1000


class SearchArgs(TypedDict):
    query: Annotated[str, "Keywords or a question; a time in it ('in March') comes first."]
    max_results: NotRequired[Annotated[int, "At most this many hits."]]
    since: NotRequired[Annotated[str, "Only notes written on or after this day, YYYY-MM-DD."]]
    until: NotRequired[Annotated[str, "Only notes written on or before this day, YYYY-MM-DD."]]


# Functional syntax: "from" is a keyword.
GetArgs = TypedDict(
    "GetArgs",
    {
        "path": Annotated[str, "MEMORY.md or memory/<date>.md"],
        "from": NotRequired[Annotated[int, "First line (1-based)."]],
        "lines": NotRequired[Annotated[int, "How many lines (default 200)."]],
    },
)


class AppendArgs(TypedDict):
    text: Annotated[str, "The entry, Markdown."]
    replaces: NotRequired[
        Annotated[
            str,
            "A note this entry makes out of date, as memory_search or memory_append lists "
            "it ('memory/2026-02-25.md lines 4-6'): it is marked so, and searches put this "
            "entry above it.",
        ]
    ]


class UpdateArgs(TypedDict):
    action: Literal["append", "replace", "remove"]
    text: NotRequired[Annotated[str, "New text (append, replace)."]]
    old_text: NotRequired[Annotated[str, "Exact passage to change."]]
    section: NotRequired[
        Annotated[
            str,
            "MEMORY.md's section for an appended note: About the owner, Preferences and "
            "feedback, People (a card: '### Name' and its lines), Projects or References.",
        ]
    ]


def _memory_path(ctx: TurnContext, raw: Any) -> Path:
    path = resolve_in_workspace(ctx, raw)
    rel = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
    if not (
        rel == PurePosixPath(LONG_TERM) or (rel.parts[:1] == ("memory",) and rel.suffix == ".md")
    ):
        raise PathRefused("memory_get reads MEMORY.md and memory/*.md; use read_file for others.")
    return path


class MemoryTools:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    async def search(self, ctx: TurnContext, args: SearchArgs) -> str:
        query = args["query"].strip()
        if not query:
            raise ToolError("query must not be empty.")
        if len(query) > MAX_QUERY_CHARS:
            # Every word costs a lookup, under the index lock every session shares.
            raise ToolError(f"query is too long; use a few keywords (at most {MAX_QUERY_CHARS}).")
        wanted = args.get("max_results", self.memory.cfg.search_max_results)
        limit = max(1, min(int(wanted), 50))
        span = _span(args.get("since"), args.get("until"))
        hits = await asyncio.to_thread(self._search, query, limit, ctx, span)
        today = ctx.now.date()
        asked = dates_in(query, today)[0]
        read = f"Notes written {asked} come first.\n" if asked is not None else ""
        if not hits:
            within = f" among the notes written {span}" if span is not None else ""
            return f"{read}Nothing in memory matches that query{within}."
        out = []
        for n, h in enumerate(hits, 1):
            snippet = h.snippet.replace("\n", "\n   ")
            whose = ""
            if h.chat and ctx.private:
                # In the owner's chats, a hit from a shared chat's log is what others wrote:
                # quoted like any text from outside, so it cannot pose as instructions.
                whose = f", written in the shared chat {h.chat}"
                snippet = untrusted(f"chat {h.chat}", h.snippet)
            out.append(
                f"{n}. {h.path} lines {h.start_line}-{h.end_line} "
                f"({dated(h, today)}; {why(h)}{whose})\n   {snippet}"
            )
        return read + "\n".join(out)

    def _search(self, query: str, limit: int, ctx: TurnContext, span: DaySpan | None) -> list[Hit]:
        """The hits, the session marked for what their files bring from outside (a snippet
        may show part of a quoted passage without its opening)."""
        hits = self.memory.search(query, limit, ctx.audience, span)
        for rel in dict.fromkeys(h.path for h in hits):
            ctx.saw_file(PurePosixPath(rel), read_text(self.memory.workspace / rel))
        return hits

    def get(self, ctx: TurnContext, args: GetArgs) -> str:
        path = _memory_path(ctx, args["path"])
        where = PurePosixPath(path.relative_to(ctx.workspace).as_posix())
        if ctx.private and guest_notes(where) and not self.memory.cfg.owner_reads_guest_notes:
            raise ToolError("A guest's notes are read in their own chat only (a setting).")
        if not path.is_file():
            raise ToolError(f"{args['path']!r} does not exist.")
        check_single_name(ctx, path)
        text = read_text(path)
        lines = text.splitlines()
        start = max(1, int(args.get("from", 1)))
        count = max(1, min(int(args.get("lines", 200)), 1000))
        window = lines[start - 1 : start - 1 + count]
        end = start - 1 + len(window)
        rel = path.relative_to(ctx.workspace).as_posix()
        ctx.saw_file(PurePosixPath(rel), text)
        body = self.memory.quoted(rel, "\n".join(window)) if ctx.private else "\n".join(window)
        return f"[{rel}: lines {start}-{end} of {len(lines)}]\n" + body

    def append(self, ctx: TurnContext, args: AppendArgs) -> str:
        text = args["text"]
        if not text.strip():
            raise ToolError("text must not be empty.")
        if len(text) > MAX_ENTRY_CHARS:
            raise ToolError(f"An entry may have at most {MAX_ENTRY_CHARS} characters.")
        source = "" if ctx.private else str(ctx.key)
        old = self._replaced(ctx, args.get("replaces"))  # checked before anything is written
        today = log_path(ctx.audience, ctx.now.date())
        if self.memory.holds(today, text, ctx.audience):
            if old is None:
                return f"That is already in {today} word for word; nothing was added."
            # The second step after an append listed the notes its entry may replace.
            time = self._mark(today, text, old)
            return (
                f"That is already in {today} (the entry of {time}); the note at {old[0]} line "
                f"{old[1]} is marked out of date, replaced by it."
            )
        ctx.check_room(len(text.encode()) + 40 + (80 if old else 0))  # with its heading, a mark
        rel = self.memory.append(ctx.marked(text), ctx.now, ctx.audience, source)
        if old is None:
            return f"Appended to {rel}." + self._earlier(ctx, text)
        try:
            self._mark(rel, text, old)
        except (OSError, ToolError) as exc:  # the entry is kept; a second call can still mark
            log.warning("marking %s line %d out of date failed: %s", *old, exc)
            return (
                f"Appended to {rel}, but the note at {old[0]} line {old[1]} could not be "
                "marked out of date; call memory_append again with the same text and "
                "replaces to try again."
            )
        return f"Appended to {rel}; the note at {old[0]} line {old[1]} is marked out of date."

    def _mark(self, today: str, text: str, old: tuple[str, int]) -> str:
        """Mark ``old`` as replaced by the last entry of ``today``'s log that holds ``text``;
        returns that entry's time."""
        log_text = self.memory.own_text(today)
        found = holding(log_text, text)
        if found is None:  # its words run across two entries, or it was edited since
            raise ToolError(f"No one entry of {today} holds that text; append it anew.")
        line, time = found
        if old[0] == today and entry_at(log_text.splitlines(), old[1])[0] == line - 1:
            raise ToolError("An entry cannot replace itself; name the older note in replaces.")
        if old[0] == today and old[1] > line:
            raise ToolError("replaces names a note written before this entry, not after it.")
        self.memory.mark_replaced(*old, newer_at(today, log_text, line))
        return time

    def _earlier(self, ctx: TurnContext, text: str) -> str:
        """The older entries of this chat's logs that the new one may make out of date, for
        the model to judge: it alone can tell a changed fact from a like one."""
        if not ctx.exposure.clean or not ctx.private:
            # Such a turn may not mark notes (``_replaced``); a shared chat's own log counts
            # as read from outside (``Memory.earlier``): either way there is nothing to offer.
            return ""
        try:
            hits = self.memory.earlier(text[:MAX_QUERY_CHARS], ctx.audience, ctx.now.date())
        except Exception:  # the entry is written; a search that fails must not undo that
            log.warning("searching for the notes a new entry may replace failed", exc_info=True)
            return ""
        if not hits:
            return ""
        today = ctx.now.date()
        listed = "\n".join(
            f"{n}. {h.path} lines {h.start_line}-{h.end_line} ({dated(h, today)}): "
            + " ".join(h.snippet.split())[:160]
            for n, h in enumerate(hits, 1)
        )
        return (
            "\nEarlier notes on a like subject; if the new entry makes one out of date, call "
            "memory_append again with the same text and replaces naming it (nothing is added "
            "twice):\n" + listed
        )

    def _replaced(self, ctx: TurnContext, raw: object) -> tuple[str, int] | None:
        """The log and line of the note an entry replaces, once it is known to be an entry of
        this chat's own logs; None when none is named."""
        if raw is None or not str(raw).strip():
            return None
        if not ctx.exposure.clean:
            # Text from outside could otherwise make a true note look out of date.
            raise ToolError(
                "This conversation has read text from outside itself, so it may not mark "
                "notes out of date; append the entry without replaces."
            )
        named, line = reference(raw)
        path = _memory_path(ctx, named)
        rel = path.relative_to(ctx.workspace).as_posix()
        if own_log_day(rel, ctx.audience) is None:
            raise ToolError(
                "replaces names an entry of this chat's own daily logs; a fact in long-term "
                "memory is changed with memory_update."
            )
        text = self.memory.own_text(rel)
        if not text:
            raise ToolError(f"{rel} does not exist.")
        entry_at(text.split("\n"), line)
        return rel, line

    def update(self, ctx: TurnContext, args: UpdateArgs) -> str:
        text = args.get("text", "")
        if not ctx.private:
            notes = notes_path(ctx.audience)
            if notes is None:
                raise ToolError(
                    "memory_update has no notes to change here: a job that posts to no chat "
                    "keeps what matters with memory_append (its log)."
                )
            # A shared chat's own notes (a guest's, a group's): what is said here stays here.
            current = len(self.memory.own_text(notes).encode())
            ctx.check_room(len(text.encode()) + (current if args["action"] != "append" else 0))
            return self.memory.update_long_term(
                args["action"], text, args.get("old_text", ""), notes
            )
        if args["action"] == "append" and self.memory.holds(LONG_TERM, text, ctx.audience):
            # Checked before the text is marked: a fact is the same whoever had been read.
            return "MEMORY.md already holds that word for word; nothing was added."
        section = kind_of(args.get("section", "")) if args["action"] == "append" else None
        if section is not None and text.strip():
            text = learned_on(text.strip(), ctx.now.date().isoformat(), f"in {ctx.key}")
        kept = ctx.marked(text) if text.strip() else text
        old = args.get("old_text", "")
        if args["action"] != "append" and old and not ctx.exposure.clean:
            now = self.memory.own_text(LONG_TERM)
            if unquotes(now, now.replace(old, kept if args["action"] == "replace" else "", 1)):
                # An order planted in a quote would then read as the owner's own note.
                raise ToolError(
                    "That change would take away the quoting that marks text in MEMORY.md as "
                    "written after reading from outside; this conversation has read text from "
                    "outside itself, so it may not. The owner can edit MEMORY.md by hand."
                )
        return self.memory.update_long_term(args["action"], kept, old, section=section or "")


def _span(since: object, until: object) -> DaySpan | None:
    """The days ``since`` and ``until`` give (either may be left out), or None for neither."""
    if since is None and until is None:
        return None
    days = []
    for name, value, default in (("since", since, date.min), ("until", until, date.max)):
        if value is None or value == "":
            days.append(default)
            continue
        try:
            days.append(date.fromisoformat(str(value).strip()))
        except ValueError:
            raise ToolError(f"{name} must be a day written YYYY-MM-DD, not {value!r}.") from None
    if days[0] > days[1]:
        raise ToolError("since must not be after until.")
    return DaySpan(days[0], days[1])


def why(h: Hit) -> str:
    """Why a hit ranked, in a few words: its keyword score alone, or the fused score with its
    parts (the text score, the cosine, and a daily log's age factor when decay is on)."""
    if h.text_score is None:
        return f"score {h.score}"
    vector = "no vector yet" if h.vector_score is None else f"vector {h.vector_score:.2f}"
    age = f", age ×{h.recency:.2f}" if h.recency is not None and h.recency < 1 else ""
    return f"score {h.score:.2f}: text {h.text_score:.2f}, {vector}{age}"


def memory_tools(memory: Memory) -> tuple[Tool, ...]:
    tools = MemoryTools(memory)
    return (
        Tool.typed(
            "memory_search",
            "Search your memory by keywords and meaning: in a private chat MEMORY.md and every "
            "log; in a shared chat that chat's own log. Use it before answering about past "
            "events, people, preferences or decisions. Each hit says when it was written and "
            "names a newer note on the same subject when there is one: treat an old fact with "
            "care (it may have changed; say when it was noted), and prefer the newer note. A "
            "time in the query ('in March', 'two weeks ago') puts the notes of then first; "
            "since/until keep to those days.",
            SearchArgs,
            tools.search,
        ),
        Tool.typed(
            "memory_get",
            "Read lines of a memory file (MEMORY.md, memory/YYYY-MM-DD.md, or a chat's log in "
            "memory/chats/), e.g. around a memory_search hit.",
            GetArgs,
            tools.get,
        ),
        Tool.typed(
            "memory_append",
            "Append an entry to today's log of this chat's audience, with a time heading: events, "
            "decisions, promises, things to remember. In a private chat it goes to the owner's "
            "log; in a shared chat to that chat's own log, which only it and the owner read. "
            "When the entry changes a fact an earlier entry holds (a new code, address, "
            "habit), name that entry in replaces, as memory_search showed it.",
            AppendArgs,
            tools.append,
        ),
        Tool.typed(
            "memory_update",
            "Edit this chat's curated long-term memory (MEMORY.md in the owner's private chats, "
            "in sections by kind; in a shared chat, that chat's own notes): append a fact (to "
            "its section), or replace/remove an exact passage that is out of date.",
            UpdateArgs,
            tools.update,
        ),
    )
