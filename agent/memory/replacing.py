"""The older entries of the owner's logs consolidation offers under each new one, to mark."""

from __future__ import annotations

import logging
from datetime import date
from pathlib import PurePosixPath

from agent.memory.links import Offer, entry_body, own_log_day
from agent.memory.recall import MAX_QUERY_CHARS
from agent.memory.store import Memory
from agent.memory.when import age
from agent.workspace.audience import read_from_outside, written_after_outside
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
    the older entries a search with each one's text ranks first (``Memory.earlier``): what it
    may replace. None for a log with text from outside in it: such text could make true notes
    look out of date, which is why a turn that read it may not mark them either."""
    after_outside = written_after_outside(memory.workspace)
    texts: dict[str, list[str]] = {}
    found: list[Offer] = []
    for rel, line in entries[-OFFERED_ENTRIES:]:
        day = own_log_day(rel, OWNER)
        if day is None or rel in after_outside:
            continue
        if rel not in texts:
            text = memory.own_text(rel)
            texts[rel] = [] if read_from_outside(PurePosixPath(rel), text) else text.splitlines()
        if not texts[rel]:
            continue
        start, end, body = entry_body(texts[rel], line)
        if not body:
            continue
        try:
            hits = memory.earlier(body[:MAX_QUERY_CHARS], OWNER, min(day, today))
        except Exception:  # the run's proposal is worth more than these
            log.warning(
                "searching for the notes %s:%d may replace failed", rel, line, exc_info=True
            )
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
