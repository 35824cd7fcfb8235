"""Consolidation's marks: older log entries offered under each new one, and marks applied."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import date
from pathlib import PurePosixPath

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
same kind, is not replaced."""
# New entries a run offers older ones for (the latest), and how much of each older one shows.
OFFERED_ENTRIES = 30
SHOWN_CHARS = 300


def offers(memory: Memory, entries: list[tuple[str, int]], today: date) -> list[Offer]:
    """For the latest of the new ``entries`` (a log, its heading's line) of the owner's logs,
    the older entries a search with each one's text ranks first (``Memory.earlier``, which
    leaves out files with text from outside): what it may replace. The caller offers none
    when the prompt holds text from outside."""
    texts: dict[str, list[str]] = {}
    found: list[Offer] = []
    for rel, line in entries[-OFFERED_ENTRIES:]:
        day = own_log_day(rel, OWNER)
        if day is None:
            continue
        if rel not in texts:
            texts[rel] = memory.own_text(rel).splitlines()
        start, end, body = entry_body(texts[rel], line)
        if not body:
            continue
        try:
            hits = memory.earlier(body[:MAX_QUERY_CHARS], OWNER, min(day, today))
        except Exception:  # the run's proposal is worth more than these
            log.warning("searching for what %s:%d may replace failed", rel, line, exc_info=True)
            return found
        for hit in hits:
            if hit.path not in texts:
                texts[hit.path] = memory.own_text(hit.path).splitlines()
            old_start, old_end, old_body = entry_body(texts[hit.path], hit.start_line)
            found.append(
                Offer(f"{rel}:{start}", end, body, f"{hit.path}:{old_start}", old_end, old_body)
            )
    return found


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
