"""Consolidation's marks: older log entries offered under each new one, and marks applied."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from agent.memory.hits import Hit
from agent.memory.links import (
    Newer,
    Offer,
    entry_body,
    marked,
    newer_at,
    own_log_day,
    reference,
    replaced_at,
)
from agent.memory.proposals import REFUSED, Item, Proposal, with_status
from agent.memory.recall import MAX_QUERY_CHARS
from agent.memory.store import Memory
from agent.memory.when import age
from agent.model.charge import Charge
from agent.model.port import LLM
from agent.sessions.state import Usage
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER

log = logging.getLogger(__name__)

# Added to consolidation's instructions when a run offers older entries.
REPLACING = """

Under "Earlier notes a new entry may make out of date", each new entry is followed by older \
entries of the logs that a search ranks near it. When the new entry makes one of them untrue \
(a new code, address, habit or plan in place of the old), add \
{"op": "replaces", "source": "<the new entry, as listed>", "old": "<the older entry, as \
listed>", "reason": "why"}: once the owner agrees, the older entry is marked out of date and \
search ranks the newer above it. An older note that is still true, or another event of the \
same kind, is not replaced. When a new entry changes a standing fact and its older version is \
not listed (or the entry has no list), look for it with earlier_notes, in your own words for \
the subject ("front door code", "Biscuit's vet"): a note it finds may be named like one \
listed."""
# New entries a run offers older ones for (the latest), and how much of each older one shows.
OFFERED_ENTRIES = 30
SHOWN_CHARS = 300
# The model's own searches in a run: at most so many, each listing so many older entries, in
# so many calls of the model (the last one must answer).
SEARCHES = 20
FOUND = 5
ROUNDS = 4
SEARCH = "earlier_notes"
# The end of a run's last call, asked without the tool after the model searched in every other.
LAST_CALL = "No more searches in this run: answer now, with the JSON."
TOOL: dict[str, Any] = {
    "name": SEARCH,
    "description": (
        "Search the owner's daily logs before a new entry of this run for the older note of "
        "the fact it changes, by the subject in your own words; the notes found may be named "
        "in a replaces change with that entry."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "entry": {"type": "string", "description": "the new entry: memory/YYYY-MM-DD.md:N"},
            "about": {"type": "string", "description": "the subject, in a few words"},
        },
        "required": ["entry", "about"],
    },
}
TOOLS = [TOOL]  # one list: a request's tools are serialised once per list


def offers(
    memory: Memory, entries: list[tuple[str, int]], today: date, texts: _Texts | None = None
) -> list[Offer]:
    """For the latest of the new ``entries`` (a log, its heading's line) of the owner's logs,
    the older entries a search with each one's text ranks first (``Memory.earlier``, which
    leaves out files with text from outside): what it may replace. The caller offers none
    when the prompt holds text from outside. ``texts``: the logs a run has read already."""
    texts = texts or _Texts(memory)
    found: list[Offer] = []
    for rel, line in entries[-OFFERED_ENTRIES:]:
        day = own_log_day(rel, OWNER)
        if day is None:
            continue
        start, end, body = entry_body(texts(rel), line)
        if not body:
            continue
        try:
            hits = memory.earlier(body[:MAX_QUERY_CHARS], OWNER, min(day, today))
        except Exception:  # the run's proposal is worth more than these
            log.warning("searching for what %s:%d may replace failed", rel, line, exc_info=True)
            return found
        found += texts.offers((rel, start, end, body), hits)
    return found


class _Texts:
    """The logs' lines, each log read once in a run."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.read: dict[str, list[str]] = {}

    def __call__(self, rel: str) -> list[str]:
        if rel not in self.read:
            self.read[rel] = self.memory.own_text(rel).splitlines()
        return self.read[rel]

    def offers(self, newer: tuple[str, int, int, str], hits: list[Hit]) -> list[Offer]:
        """The older entries ``hits`` hold, offered under the new entry ``newer`` (its log,
        heading's line, last line and text); a hit in no entry (a log written by hand
        without headings) offers nothing."""
        rel, start, end, body = newer
        found = []
        for hit in hits:
            try:
                old_start, old_end, old_body = entry_body(self(hit.path), hit.start_line)
            except ToolError:
                continue
            found.append(
                Offer(f"{rel}:{start}", end, body, f"{hit.path}:{old_start}", old_end, old_body)
            )
        return found


class Finder:
    """The searches a run's model makes for the older version of a fact a new entry changes
    (``earlier_notes``); what they find is offered too, as if listed under that entry."""

    def __init__(self, memory: Memory, entries: list[tuple[str, int]], today: date) -> None:
        self.memory, self.today = memory, today
        self.entries = entries
        self.new = set(entries)
        self.offers: list[Offer] = []  # those listed in the prompt, then those found
        self.listed = 0
        self.searches = 0
        self.texts = _Texts(memory)

    def list_offers(self) -> None:
        """The older entries listed under the new ones in the prompt (``offers``)."""
        self.offers = offers(self.memory, self.entries, self.today, self.texts)
        self.listed = len(self.offers)

    def find(self, args: object) -> tuple[str, bool]:
        """The tool's answer to ``args`` (the model's input), and whether it is an error."""
        if self.searches >= SEARCHES:
            return f"This run's {SEARCHES} searches are used up: answer with what was found.", True
        entry = args.get("entry") if isinstance(args, dict) else None
        about = args.get("about") if isinstance(args, dict) else None
        about = " ".join(str(about or "").split())[:MAX_QUERY_CHARS]
        newer = self._entry(entry)
        if newer is None:
            return (
                f'"entry" names one of the new entries above as it is numbered there '
                f"(memory/YYYY-MM-DD.md:N), not {str(entry)[:80]!r}.",
                True,
            )
        if not newer[3]:
            return f"{entry} is an empty entry: it replaces nothing.", True
        if not about:
            return '"about" names the subject in a few words.', True
        self.searches += 1
        day = own_log_day(newer[0], OWNER)
        assert day is not None, "_entry keeps to the owner's logs"
        try:
            hits = self.memory.earlier(about, OWNER, min(day, self.today), FOUND)
            found = self.texts.offers(newer, hits)
        except Exception:  # the run's proposal is worth more than one search
            log.warning("consolidation: searching %r for %s failed", about, entry, exc_info=True)
            return "The search failed; answer with what was found.", True
        self.offers += [o for o in dict.fromkeys(found) if o not in self.offers]
        return listed(found, self.today) or f"No earlier note found for {about!r}.", False

    def folded(self, prompt: str) -> str:
        """The run's prompt with what the searches found, for its last call, which is asked
        without the tool: it must answer."""
        searched = sorted(self.offers[self.listed :], key=lambda o: o.newer)
        found = listed(searched, self.today) or "(nothing)\n"
        return f"{prompt}\n\n## Earlier notes your searches found\n\n{found}\n{LAST_CALL}"

    def _entry(self, named: object) -> tuple[str, int, int, str] | None:
        """A new entry of the run, named by any of its lines: its log, heading's line, last
        line and text; None for anything else."""
        try:
            rel, line = reference(named)
            if own_log_day(rel, OWNER) is None:
                return None
            start, end, body = entry_body(self.texts(rel), line)
        except ToolError:
            return None
        return (rel, start, end, body) if (rel, start) in self.new else None


async def answered(
    llm: LLM, system: str, prompt: str, finder: Finder | None, charge: Charge
) -> tuple[str, Usage, int]:
    """The model's answer to a run, after the searches it asks ``finder`` for (None: it may
    make none); the usage of all its calls, and the characters they were sent."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    tools = TOOLS if finder is not None else []
    usage, sent = Usage(), 0
    for call in range(1, ROUNDS + 1):
        if call == ROUNDS and finder is not None:
            # Still searching: the last call has no tool to call, and what was found in its
            # prompt (a history with tool calls in it needs the tools beside it).
            messages, tools = [{"role": "user", "content": finder.folded(prompt)}], []
        response = await llm.complete(system, messages, tools, charge=charge)
        usage += response.usage
        sent += len(system) + sum(map(_chars, messages))
        uses = [b for b in response.content if b.get("type") == "tool_use"]
        if finder is None or not tools or not uses:
            break
        results: list[dict[str, Any]] = []
        for use in uses:
            # Each search embeds its words: off the event loop.
            text, failed = await asyncio.to_thread(finder.find, use.get("input"))
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": text})
            results[-1].update({"is_error": True} if failed else {})
        messages += [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": results},
        ]
    answer = "".join(b.get("text", "") for b in response.content if b.get("type") == "text")
    return answer, usage, sent


def _chars(message: dict[str, Any]) -> int:
    content = message["content"]
    return len(content) if isinstance(content, str) else len(json.dumps(content))


def listed(offered: list[Offer], today: date) -> str:
    """The offers as the prompt shows them: each new entry, the older ones under it."""
    parts: list[str] = []
    for offer in offered:
        if not parts or not parts[-1].startswith(f"### {offer.newer}\n"):
            parts.append(f"### {offer.newer}\n")
        day = PurePosixPath(offer.older.partition(":")[0]).stem
        text = " ".join(offer.older_text.split())[:SHOWN_CHARS]
        parts[-1] += f"- {offer.older} ({day}, {age(day, today)}): {text}\n"
    return "\n".join(parts)


def marked_by(memory: Memory, item: Item) -> tuple[str, str, str]:
    """The log a ``replaces`` item marks an entry of, its text now and marked; ToolError when
    either entry is no longer as the proposal showed it, or the older one has been marked
    since (a newer note than this one may have replaced it)."""
    rel, line, newer, text = _checked(memory, item)
    return rel, text, marked(text, line, newer)


def mark(memory: Memory, item: Item) -> str | None:
    """Mark the older entry a ``replaces`` item names out of date; its log, or None (logged)
    when it cannot be marked as proposed."""
    try:
        rel, line, newer, _ = _checked(memory, item)
    except ToolError as exc:
        log.info("memory proposal: %s not marked: %s", item.replaces, exc)
        return None
    memory.mark_replaced(rel, line, newer)
    return rel


def _checked(memory: Memory, item: Item) -> tuple[str, int, Newer, str]:
    newer_rel, newer_line = reference(item.sources[0])
    rel, line = reference(item.replaces)
    newer_text, text = memory.own_text(newer_rel), memory.own_text(rel)
    for log_text, at, was in ((newer_text, newer_line, item.text), (text, line, item.was)):
        if entry_body(log_text.splitlines(), at)[::2] != (at, was):  # or no such line
            raise ToolError("the note is no longer as it was when proposed")
    if replaced_at(text, line):
        raise ToolError("the older note has been marked out of date since")
    return rel, line, newer_at(newer_rel, newer_text, newer_line), text


def refused_whole(proposal: Proposal) -> Proposal:
    """``proposal`` with what is pending refused, because its file changed after it was made."""
    rest = with_status(proposal, proposal.pending(), REFUSED)
    return replace(rest, status=REFUSED, note="its file changed after it was made")


# Each file written is one change in the workspace's history, taken back one at a time.
UNDO = (
    "To take it back: corvid memory undo, once for each file written, or the file's History page."
)


@dataclass(frozen=True)
class Applied:
    """What one answer applying a proposal did."""

    proposal: Proposal
    whole: bool  # every pending change was asked for
    done: tuple[int, ...]
    refused: tuple[int, ...]  # marks not made: a note changed, or was marked, since
    files: tuple[str, ...]  # written, in order
    stale: bool  # its file had changed: its changes to it were refused

    def said(self) -> str:
        """The answer, as the owner reads it wherever they answered."""
        pid, target = self.proposal.id, self.proposal.target
        if self.done:
            which = "change(s) " + ", ".join(map(str, self.done))
            if self.whole and not self.refused and not self.stale:
                which = "all changes"
            text = f"Applied {which} of memory proposal {pid} to {', '.join(self.files)}."
        else:
            text = f"Nothing of memory proposal {pid} was applied."
        if self.refused:
            text += (
                f" Not {', '.join(map(str, self.refused))}: a note it names changed, or was "
                "marked out of date, after the proposal was made."
            )
        if self.stale:
            text += (
                f" {target} changed after the proposal was made, so its changes to it were "
                "refused; the next consolidation proposes again from the new text."
            )
        return text

    def closing(self) -> str:
        """The answer that leaves nothing to decide: what it did, and how to take back the
        files it wrote."""
        return self.said() + (f" {UNDO}" if self.files else "")
